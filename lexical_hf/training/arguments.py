"""The command line of `lexical-hf train` (and `examples/run_lexical.py`): four argument dataclasses beside
`Seq2SeqTrainingArguments`, presets, and the checks of what the flags say together.

A preset is a named recipe (`presets/<backbone>.json`): a table of flag values per benchmark, with an optional
``"<benchmark>/<config>"`` entry for one config, an optional ``"<entry>+<method>"`` entry for training with
``--augment <method>`` (Colors with GECA trains with the GECA reference's recipe), and ``"base": "<preset>/<entry>"``
to start from another entry.
Its values become the parser's defaults, so every flag on the command line overrides them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from importlib import resources

import torch
from transformers import HfArgumentParser, Seq2SeqTrainingArguments

from ..data import canonical_benchmark_name
from ..lexicon.lexicon import REPLACEABLE_FALLBACKS

LEXICON_CHOICES = ("none", "copy", "simple", "pmi", "ibm2", "bayesian", "uniform")
DEFAULT_PRESET = {"lstm": "paper"}  # other backbones: "cpu"


@dataclass
class DataArguments:
    benchmark: str | None = field(default=None, metadata={"help": "colors (the default without --train_file) | scan | cogs | eng_cmn; leave out (or none) with --train_file"})
    benchmark_config: str | None = field(default=None, metadata={"help": "e.g. addprim_jump, template_around_right"})
    data_dir: str | None = field(default=None, metadata={"help": "local mirror of the raw files (else LEXICAL_HF_DATA_DIR, else download)"})
    benchmark_splits: str | None = field(default=None, metadata={"help": "comma-separated splits to load, e.g. train,validation,test (COGS without gen.tsv)"})
    benchmark_params: str | None = field(default=None, metadata={"help": "fields of the benchmark config NAME=VALUE,…, e.g. train_lengths=[8,16],train_size=75000 for transduction (lexical_hf.data.config_fields lists them)"})
    train_file: str | None = field(default=None, metadata={"help": "your own training pairs: TSV (source<TAB>target) or JSONL"})
    validation_file: str | None = field(default=None, metadata={"help": "your own validation pairs (TSV/JSONL)"})
    test_file: str | None = field(default=None, metadata={"help": "your own test pairs (TSV/JSONL)"})
    validation_fraction: float | None = field(default=None, metadata={"help": "hold out this fraction of train (a benchmark's or --train_file's) as validation, seeded (SCAN paper protocol: 0.01)"})
    source_bos: bool = field(default=False, metadata={"help": "encode sources as <s> x </s> (the paper's code): <s> maps to <unk>, never generated, so attending it writes nothing"})
    max_train_samples: int | None = field(default=None, metadata={"help": "truncate the training set (debugging)"})
    max_eval_samples: int | None = field(default=None, metadata={"help": "truncate every evaluation split (debugging)"})
    augment: str | None = field(default=None, metadata={"help": "geca: augment the training data, composed anew for each seed (GECA, Andreas 2020; docs/guide.md)"})
    augment_preset: str | None = field(default=None, metadata={"help": "GECA settings of a benchmark: scan | cogs | colors | eng_cmn (default: the benchmark's own; none for your own data: the reference's defaults)"})
    augment_params: str | None = field(default=None, metadata={"help": "GECA settings NAME=VALUE,…, e.g. wug_size=1,n_sample=500 (override the preset)"})
    augment_mixing: str = field(default="ratio", metadata={"help": "ratio: each training example is drawn from the augmented pairs with probability --aug_ratio (the reference's protocol) | concatenate: original then augmented pairs"})
    aug_ratio: float = field(default=0.3, metadata={"help": "with --augment_mixing ratio: the probability that an example is an augmented one"})


@dataclass
class LexiconArguments:
    lexicon: str | None = field(default=None, metadata={"help": "none | copy | simple (default) | pmi | ibm2 | bayesian | uniform; with --lexicon_path, leave out (the saved lexicon names its learner)"})
    lexicon_temperature: float | None = field(default=None, metadata={"help": "τ of L (default 0 = hard, the paper's main setting; with --lexicon_path, the saved lexicon's)"})
    learn_lexicon: bool = field(default=False, metadata={"help": "fine-tune L with the model (the paper's 'soft and fine-tuned')"})
    lexicon_seed: int = field(default=0, metadata={"help": "seed of sampling learners (bayesian); the lexicon is learned once"})
    lexicon_fallback: str | None = field(default=None, metadata={"help": "rows of inputs without entries, for learners that use mutual exclusivity (all but uniform, whose fallback defines it): mutual_exclusivity (default) | mutual_exclusivity_or_abstain (the paper's code)"})
    lexicon_params: str | None = field(default=None, metadata={"help": "learner hyperparameters NAME=VALUE,…, e.g. variant=code for ibm2 (the paper's released aligner)"})
    lexicon_tie_break: str | None = field(default=None, metadata={"help": "how the hard lexicon chooses among outputs tied for an input's highest score: cooccurrence (default: the one seen with the input in the most training examples) | first_appearance (the one seen first in the training data, the paper code's argmax) | string (the smallest string)"})
    lexicon_path: str | None = field(default=None, metadata={"help": "use this saved lexicon (a folder or file with lexicon.json, or a Hub repo id) instead of learning one, e.g. your own dictionary; it keeps its learner's name, temperature and fallback unless --lexicon_temperature / --lexicon_fallback are given"})


@dataclass
class ModelArguments:
    backbone: str = field(default="lstm", metadata={"help": "lstm | transformer (presets: cpu, none) | syntactic_attention (presets: cpu, paper, none) | stack_lstm, queue_lstm, deque_lstm, deep_lstm (presets: cpu, paper, none; --lexicon none)"})
    embedding_size: int | None = field(default=None, metadata={"help": "preset: 512"})
    hidden_size: int | None = field(default=None, metadata={"help": "preset: 512"})
    num_layers: int | None = field(default=None, metadata={"help": "preset: 2"})
    bidirectional_encoder: bool = field(default=False)
    dropout: float | None = field(default=None, metadata={"help": "preset: 0.4"})
    output_dropout: float | None = field(default=None, metadata={"help": "extra dropout before p_write (paper: 0.5 on SCAN, Colors)"})
    # the paper's code details (LSTM only; None: the preset's value, else off)
    feed_dropout: bool | None = field(default=None, metadata={"help": "lstm: drop the fed-back output vector as the paper's code does"})
    combine_decoder_input: bool | None = field(default=None, metadata={"help": "lstm: W_o also reads [emb(y_{i-1}); o_{i-1}] (paper's code)"})
    attention_query_bias: bool | None = field(default=None, metadata={"help": "lstm: attention query with a bias (paper's code)"})
    gate: str | None = field(default=None, metadata={"help": "sigmoid (paper; default; preset cpu) | copy_token (paper's code; preset paper)"})
    loss_normalization: str | None = field(default=None, metadata={"help": "tokens (transformers; default) | sequences (paper's code: summed NLL / batch size)"})
    mixture_normalization: str | None = field(default=None, metadata={"help": "paper (default: p_write over the generatable ids) | code (paper's code; preset paper on SCAN: mix, then renormalise without <unk>, dropping abstaining tokens' lexical mass)"})
    probability_floor: float | None = field(default=None, metadata={"help": "ε added to each token's probability with a lexicon, p = (p + ε) / (1 + Gε) (paper's code and preset paper on SCAN: 1e-7; default 0: off)"})
    max_decode_length: int = field(default=128)
    # Transformer only (None: the preset's value, else LexicalSeq2SeqConfig's default)
    num_attention_heads: int | None = field(default=None, metadata={"help": "transformer: heads per attention (cpu preset: 4)"})
    ffn_size: int | None = field(default=None, metadata={"help": "transformer: feed-forward size (cpu preset: 256)"})
    norm_first: bool | None = field(default=None, metadata={"help": "transformer: pre-norm (true) or post-norm"})
    position_encoding: str | None = field(default=None, metadata={"help": "transformer: sinusoidal | learned | relative"})
    relative_attention_max_distance: int | None = field(default=None, metadata={"help": "transformer: clip distance k"})
    attention_source: str | None = field(default=None, metadata={"help": "transformer: cross_attention_mean | dedicated_head"})
    attention_dropout: float | None = field(default=None, metadata={"help": "transformer: dropout on attention weights"})
    # Syntactic Attention only (None: the preset's value, else LexicalSeq2SeqConfig's default)
    syntax_encoder: str | None = field(default=None, metadata={"help": "syntactic_attention: paper (v1's neighbour-only biLSTM; default) | code (the authors' code: own syntax embedding, learned start/end annotations, a second biLSTM)"})
    syntax_action: bool | None = field(default=None, metadata={"help": "syntactic_attention: write from [d_i; c_i], semantics and syntax (the paper's ablation)"})
    sequential_semantics: bool | None = field(default=None, metadata={"help": "syntactic_attention: the semantic stream from a biLSTM (the paper's ablation)"})
    # Stack-, Queue-, DeQue-LSTM and deep LSTM only (None: the preset's value, else LexicalSeq2SeqConfig's default)
    memory_width: int | None = field(default=None, metadata={"help": "stack_lstm | queue_lstm | deque_lstm: width m of a memory row (paper: 256; cpu preset: 64)"})
    separate_target_lstm: bool | None = field(default=None, metadata={"help": "stack_lstm | queue_lstm | deque_lstm | deep_lstm: the target side runs LSTM weights of its own (false: the paper's one LSTM over source ||| target)"})
    memory_push_bias: float | None = field(default=None, metadata={"help": "stack_lstm | queue_lstm | deque_lstm: initial push bias of every end (default: nn.Linear's initialisation, the paper's; -1 starts pushes as small as pops)"})
    memory_bottom_push_bias: float | None = field(default=None, metadata={"help": "deque_lstm: initial push bias of the bottom end alone (default: as the top end's; -3 starts the DeQue out as a queue)"})


# ModelArguments whose None means "LexicalSeq2SeqConfig's default" (the presets fill in the rest)
OPTIONAL_MODEL_FIELDS = ("gate", "loss_normalization", "mixture_normalization", "probability_floor", "feed_dropout",
                         "combine_decoder_input", "attention_query_bias", "num_attention_heads", "ffn_size", "norm_first",
                         "position_encoding", "relative_attention_max_distance", "attention_source", "attention_dropout",
                         "syntax_encoder", "syntax_action", "sequential_semantics",
                         "memory_width", "separate_target_lstm", "memory_push_bias", "memory_bottom_push_bias")


@dataclass
class ExperimentArguments:
    preset: str | None = field(default=None, metadata={"help": "a recipe that fills every setting not given: paper | cpu | none for the lstm (default: paper), cpu | none for the transformer (default: cpu); see docs/guide.md"})
    seeds: str = field(default="0", metadata={"help": "e.g. 0-9 or 0,3,7: one training per seed"})
    selection: str = field(default="validation", metadata={"help": "validation: the checkpoint with the best validation exact match | final: the last weights. Without a validation split (Colors) it is always final"})
    keep_seed_checkpoints: bool = field(default=False, metadata={"help": "keep every seed's Trainer checkpoints"})
    overwrite_output_dir: bool = field(default=False, metadata={"help": "train a seed again from scratch when OUTPUT_DIR holds an earlier run of it (its seed folder is removed); without it such a run is refused unless --resume_from_checkpoint true continues it"})
    model_card_template: str | None = field(default=None, metadata={"help": "default: model_cards/lexical_model_card.md (installed as lexical_hf.model_cards)"})
    group_by_target_length: bool = field(default=False, metadata={"help": "with train_sampling_strategy=group_by_length, group batches by source + target length instead of the source alone (faster, but SCAN jump generalised worse: see docs/ARCHITECTURE.md)"})
    parallel_seeds: int = field(default=1, metadata={"help": "train this many seeds at once, one CPU process each (not under accelerate launch)"})
    max_train_minutes: float | None = field(default=None, metadata={"help": "stop each seed's training after this many minutes of wall-clock time (a lent machine's time limit); the weights reached are evaluated (and saved, as a selection candidate), and metrics.json records the updates done. A seed stopped early is a reduced run: say so"})
    stop_at_train_loss: float | None = field(default=None, metadata={"help": "end each seed's training once a logged training loss (the mean over the last --logging_steps updates) is at most this value: training to convergence, with max_steps as the cap; the weights reached are evaluated, and metrics.json records the updates done"})
    curriculum_max_source_length: int | None = field(default=None, metadata={"help": "a length curriculum, short sequences first: for the first --curriculum_steps updates, train only on the training examples whose source has at most this many symbols (special tokens not counted), then on all of them"})
    curriculum_steps: int | None = field(default=None, metadata={"help": "updates of the length curriculum (with --curriculum_max_source_length)"})
    monitor_splits: str | None = field(default=None, metadata={"help": "comma-separated splits (e.g. test) decoded as the test evaluation does every --monitor_steps updates and after the last; their metrics go to the log history (seeds/seed-K/log_history.json) as <split>_exact_match, <split>_token_accuracy, …. Monitoring only: selection never reads it"})
    monitor_steps: int | None = field(default=None, metadata={"help": "updates between --monitor_splits decodings (default: a tenth of max_steps)"})
    cuda_graphs: bool = field(default=False, metadata={"help": "train with the model's loss captured into CUDA graphs, one per padded batch shape (batches padded to multiples of 16): no kernel launches and no host synchronisation in the forward and backward; CUDA, the LSTM backbone and --gradient_accumulation_steps 1 only, not with --torch_compile. The same recipe; other float rounding and dropout draws than the default step"})
    seed_worker: bool = field(default=False, metadata={"help": "internal: train the given seed only, no aggregation"})
    publish_seed: int | None = field(default=None, metadata={"help": "internal: the seed whose weights are published"})


DESCRIPTION = ("Train and evaluate a lexical seq2seq model with Seq2SeqTrainer, one run per seed, and write a Hub-ready "
               "folder. Every Seq2SeqTrainingArguments flag works as usual; a preset fills in every flag you do not "
               "give (docs/guide.md).")
ARGUMENT_CLASSES = (DataArguments, LexiconArguments, ModelArguments, ExperimentArguments, Seq2SeqTrainingArguments)


# ---------------------------------------------------------------------------------------------------- presets
def load_presets(backbone: str) -> dict[str, dict[str, dict]]:
    """The preset tables of a backbone (`presets/<backbone>.json`), or ``{"none": {"default": {}}}`` without one."""
    path = resources.files(__package__) / "presets" / f"{backbone}.json"
    if not path.is_file():
        return {"none": {"default": {}}}
    return json.loads(path.read_text(encoding="utf-8"))


def preset_entry(tables: dict, preset: str, key: str) -> dict:
    """One preset entry with its ``"base"`` chain resolved (the entry's own values win)."""
    entry = dict(tables[preset][key])
    base = entry.pop("base", None)
    if base is None:
        return entry
    base_preset, base_key = base.split("/", 1)
    return {**preset_entry(tables, base_preset, base_key), **entry}


def preset_defaults(backbone: str, preset: str | None, benchmark: str | None, config: str | None,
                    augment: str | None = None, lexicon: str | None = None) -> tuple[str, dict]:
    """The preset's name (the backbone's default when None) and the flag values it gives for this benchmark/config
    (and augmentation method: its ``+<method>`` entry when the preset has one). With ``lexicon="none"`` the
    settings of the lexical mixture (``probability_floor``) are left out: there is no mixture to set."""
    tables = load_presets(backbone)
    preset = preset or DEFAULT_PRESET.get(backbone, "cpu" if "cpu" in tables else "none")
    if preset not in tables:
        raise ValueError(f"--preset for --backbone {backbone} must be one of {list(tables)}, got {preset!r}")
    name = canonical_benchmark_name(benchmark) if benchmark else "default"
    table = tables[preset]
    keys = (f"{name}/{config}", name, "default")
    if augment:
        keys = tuple(f"{k}+{augment}" for k in keys) + keys
    key = next(k for k in keys if k in table)
    values = {k: v for k, v in preset_entry(tables, preset, key).items() if v is not None}
    if lexicon == "none":
        values.pop("probability_floor", None)
    return preset, values


# ---------------------------------------------------------------------------------------------------- parsing
def parse_arguments(argv: list[str], program: str = "lexical-hf train"):
    """Parse `argv` into (DataArguments, LexiconArguments, ModelArguments, ExperimentArguments,
    Seq2SeqTrainingArguments), with the preset's values as defaults, then check what the flags say together.

    Two passes over the same parser: the first reads which preset, backbone and data the command names (the
    preset depends on them), the second parses with the preset's values as the parser's defaults."""
    parser = HfArgumentParser(ARGUMENT_CLASSES, prog=program, description=DESCRIPTION)
    parser.set_defaults(output_dir="outputs/run_lexical", predict_with_generate=True, report_to="none",
                        # pinned memory only helps host-to-GPU copies; on a CPU torch warns about it at every DataLoader
                        dataloader_pin_memory=torch.cuda.is_available())
    first, _ = parser.parse_known_args(argv)
    benchmark = resolve_benchmark(first.benchmark, first.train_file)
    preset, values = preset_defaults(first.backbone, first.preset, benchmark, first.benchmark_config, first.augment,
                                     first.lexicon)
    if first.lexicon == "uniform" or first.lexicon_path:
        values.pop("lexicon_fallback", None)  # the uniform learner's fallback is its definition; a saved lexicon has its own
    parser.set_defaults(preset=preset, **values)
    args = parser.parse_args_into_dataclasses(args=argv)
    args[0].benchmark = benchmark  # None for --train_file: results and the model card say "custom"
    check_arguments(*args)
    return args


def resolve_benchmark(benchmark: str | None, train_file: str | None) -> str | None:
    """The benchmark a command line trains on: ``--benchmark``, else colors, or None for your own ``--train_file``.

    Raises:
        ValueError: both ``--benchmark`` and ``--train_file`` (the run would be labelled with the wrong data).
    """
    if benchmark is not None and benchmark.lower() == "none":
        benchmark = None
    if benchmark is not None and train_file is not None:
        raise ValueError(f"--train_file trains on your own data: leave out --benchmark (got --benchmark {benchmark})")
    if benchmark is None and train_file is None:
        return "colors"
    return benchmark


def check_arguments(data_args, lexicon_args, model_args, experiment_args, training_args) -> None:
    """Refuse flag values that would otherwise be ignored or silently change the run (before any data is loaded)."""
    if lexicon_args.lexicon not in (None, *LEXICON_CHOICES):
        raise ValueError(f"--lexicon must be one of {LEXICON_CHOICES}, got {lexicon_args.lexicon!r}")
    if lexicon_args.lexicon_fallback not in (None, *REPLACEABLE_FALLBACKS):
        raise ValueError(f"--lexicon_fallback must be one of {REPLACEABLE_FALLBACKS}, got {lexicon_args.lexicon_fallback!r}")
    if model_args.probability_floor and lexicon_args.lexicon == "none":
        raise ValueError("--probability_floor floors the lexical mixture: it does not go with --lexicon none")
    if lexicon_args.learn_lexicon and lexicon_args.lexicon == "none":
        raise ValueError("--learn_lexicon true fine-tunes a lexicon: it does not go with --lexicon none")
    if lexicon_args.lexicon_path and (lexicon_args.lexicon in ("copy", "uniform") or lexicon_args.lexicon_params
                                      or lexicon_args.lexicon_tie_break):
        raise ValueError("--lexicon_path replaces the learner: it does not go with --lexicon copy or uniform, "
                         "--lexicon_params or --lexicon_tie_break (a saved lexicon carries its own tie-breaks)")
    if data_args.validation_fraction is not None:
        if not 0 < data_args.validation_fraction < 1:
            raise ValueError(f"--validation_fraction must be in (0, 1), got {data_args.validation_fraction}")
        if data_args.validation_file:
            raise ValueError("--validation_fraction holds out part of --train_file as validation: it does not go with "
                             "--validation_file")
    if data_args.benchmark_params and data_args.train_file:
        raise ValueError("--benchmark_params changes a benchmark's config: it does not go with --train_file")
    for name in ("max_train_samples", "max_eval_samples"):
        value = getattr(data_args, name)
        if value is not None and value < 1:
            raise ValueError(f"--{name} must be a positive number of examples, got {value} (leave it out to use them all)")
    for name in ("learning_rate", "max_grad_norm", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon",
                 "warmup_ratio"):
        value = getattr(training_args, name, None)
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise ValueError(f"--{name} must be a finite number >= 0, got {value}")
    if data_args.augment is not None:
        from ..augmentation import available_methods

        if data_args.augment not in available_methods():
            raise ValueError(f"--augment must be one of {available_methods()}, got {data_args.augment!r}")
        if data_args.augment_mixing not in ("ratio", "concatenate"):
            raise ValueError(f"--augment_mixing must be ratio or concatenate, got {data_args.augment_mixing!r}")
        if not 0 <= data_args.aug_ratio < 1:
            raise ValueError(f"--aug_ratio must be in [0, 1), got {data_args.aug_ratio}")
    elif data_args.augment_preset or data_args.augment_params:
        raise ValueError("--augment_preset / --augment_params set the augmentation: add --augment geca")
    if experiment_args.max_train_minutes is not None and not experiment_args.max_train_minutes > 0:
        raise ValueError(f"--max_train_minutes must be a positive number of minutes, got {experiment_args.max_train_minutes}")
    if experiment_args.stop_at_train_loss is not None and not (math.isfinite(experiment_args.stop_at_train_loss)
                                                               and experiment_args.stop_at_train_loss > 0):
        raise ValueError(f"--stop_at_train_loss must be a positive number, got {experiment_args.stop_at_train_loss}")
    check_curriculum(data_args, experiment_args, training_args)
    if experiment_args.cuda_graphs:
        if training_args.torch_compile:
            raise ValueError("--cuda_graphs and --torch_compile are two ways to the same end: give one")
        if model_args.backbone != "lstm":
            raise ValueError(f"--cuda_graphs runs the LSTM backbone's static path; --backbone {model_args.backbone} "
                             "has none that is checked to hold no host synchronisation")
        if training_args.gradient_accumulation_steps > 1:
            # a replayed backward writes its gradients into the graph's own memory, which .grad may then be: the
            # next micro-batch of that shape would overwrite them before they are accumulated
            raise ValueError("--cuda_graphs needs --gradient_accumulation_steps 1: give the whole batch to "
                             "--per_device_train_batch_size (the paper preset's 128 × 4 is 512 × 1)")
        import torch

        if not torch.cuda.is_available():
            raise ValueError("--cuda_graphs needs a CUDA device; this machine has none")
    if experiment_args.monitor_steps is not None and (experiment_args.monitor_steps < 1 or not experiment_args.monitor_splits):
        raise ValueError(f"--monitor_steps {experiment_args.monitor_steps}: give a positive interval, with --monitor_splits "
                         "naming what to decode")
    if experiment_args.selection not in ("validation", "final"):
        raise ValueError(f"--selection must be validation or final, got {experiment_args.selection!r}")
    if training_args.label_smoothing_factor:
        # Trainer's LabelSmoother sums -log p over the whole vocabulary; the model's log-probabilities are -inf on
        # the ids it never generates (padding, decoder start), so the smoothed loss is infinite and Trainer's
        # nan/inf log filter would show it as 0.
        raise ValueError("--label_smoothing_factor is not supported: the model's logits are log-probabilities with "
                         "-inf on never-generated ids (padding, decoder start), which makes the smoothed loss infinite")
    resume = training_args.resume_from_checkpoint
    if isinstance(resume, str):  # HfArgumentParser leaves it a string: "false" would otherwise mean resume
        if resume.lower() not in ("true", "false", "yes", "no", "1", "0"):
            raise ValueError(f"--resume_from_checkpoint takes true or false (got {resume!r}): each seed resumes from its "
                             "own last checkpoint in OUTPUT_DIR/seeds/seed-K, and a finished seed is read, not retrained")
        training_args.resume_from_checkpoint = True if resume.lower() in ("true", "yes", "1") else None
    if training_args.push_to_hub:
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:  # say so now, not after hours of training
            raise ValueError("--push_to_hub with HF_HUB_OFFLINE=1: unset HF_HUB_OFFLINE, or train without --push_to_hub "
                             "and upload the folder later")
    if experiment_args.model_card_template:
        from pathlib import Path

        if not Path(experiment_args.model_card_template).is_file():  # not after training
            raise FileNotFoundError(f"--model_card_template {experiment_args.model_card_template} not found")


def check_curriculum(data_args, experiment_args, training_args) -> None:
    """Refuse a length curriculum that is half given, empty, the whole run, or combined with another sampler."""
    length, steps = experiment_args.curriculum_max_source_length, experiment_args.curriculum_steps
    if length is None and steps is None:
        return
    if length is None or steps is None:
        raise ValueError("a length curriculum needs both --curriculum_max_source_length and --curriculum_steps")
    if length < 1 or steps < 1:
        raise ValueError(f"--curriculum_max_source_length ({length}) and --curriculum_steps ({steps}) must be positive")
    if training_args.max_steps > 0 and steps >= training_args.max_steps:
        raise ValueError(f"--curriculum_steps {steps} covers the whole run (--max_steps {training_args.max_steps}): "
                         "to train on short sequences only, shorten the data instead (e.g. --benchmark_params)")
    if training_args.train_sampling_strategy == "group_by_length":
        raise ValueError("the length curriculum orders the training examples itself: it does not go with "
                         "--train_sampling_strategy group_by_length")
    if data_args.augment:
        raise ValueError("the length curriculum does not go with --augment (the augmented pairs are drawn per example)")


def effective_batch_warning(training_args) -> str | None:
    """With N processes a preset's per-process batch grows N-fold; the message that says so, or None."""
    if training_args.world_size <= 1:
        return None
    parts = (training_args.world_size, training_args.per_device_train_batch_size, training_args.gradient_accumulation_steps)
    return (f"{parts[0]} processes: the effective batch is {parts[0]} × {parts[1]} × {parts[2]} (processes × per "
            f"device × accumulation) = {math.prod(parts)}; the presets' recipes assume one process")
