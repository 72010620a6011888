#!/usr/bin/env python
"""Train and evaluate a lexical seq2seq model with `Seq2SeqTrainer`, over one or more seeds.

    python examples/run_lexical.py --benchmark colors --lexicon simple --seeds 0-15 --output_dir out/colors-simple
    accelerate launch examples/run_lexical.py --benchmark scan --benchmark_config addprim_jump --preset cpu ...

Pipeline: load a benchmark (or your own TSV/JSONL files) → build the two vocabularies → learn a lexicon (a `datasets`
map step records its coverage) → build the model and store L in it → `Seq2SeqTrainer` with `predict_with_generate`,
one training per seed → evaluate every test split → write a Hub-ready folder: the first seed's weights, tokenizer,
`lexicon.json`, `results.json` (per-seed metrics, mean ± std), `results.md` and a model card `README.md`.

Presets fill in every setting you do not pass yourself (`--preset paper` is the default; see PRESETS below).
Checkpoint selection: with a validation split and `--selection validation` (default) the checkpoint with the best
validation exact match is kept (`load_best_model_at_end`); otherwise, and with `--selection final` (the paper's
protocol), the final weights are evaluated. Every Trainer flag (`Seq2SeqTrainingArguments`) works as usual.
"""

import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import datasets
import numpy as np
import torch
from transformers import (
    DataCollatorForSeq2Seq,
    HfArgumentParser,
    Seq2SeqTrainer,
    Seq2SeqTrainingArguments,
    TrainerCallback,
    set_seed,
)
from transformers.trainer_pt_utils import LengthGroupedSampler, get_length_grouped_indices

import lexical_hf
from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer
from lexical_hf import evaluation
from lexical_hf.benchmarks import load_pairs_file
from lexical_hf.cli import parse_learner_params
from lexical_hf.decoding import generate_texts
from lexical_hf.lexicon import Lexicon, apply_lexicon, learn_lexicon
from lexical_hf.lexicon.lexicon import REPLACEABLE_FALLBACKS, replaced_fallback
from lexical_hf.results import parse_seeds, replace_atomically, run_markdown, settings_differences, summarize_row

logger = logging.getLogger("run_lexical")

LEXICON_CHOICES = ("none", "copy", "simple", "pmi", "ibm2", "bayesian", "uniform")
# Noam schedule of the paper's code: lr = d^-0.5 · min(step^-0.5, step · warmup^-1.5) peaks at d^-0.5 · warmup^-0.5;
# transformers' inverse_sqrt schedule (linear warm-up, then ∝ 1/sqrt(step)) with that peak is the same curve.
_noam_peak = lambda warmup, d_model=512: d_model**-0.5 * warmup**-0.5  # noqa: E731

# What the paper's code does beyond the paper's equations (see docs/ARCHITECTURE.md, results/colors_fidelity_experiments.md):
# with greedy decoding the four decoder details take Colors + Simple from 0.38 ± 0.18 to 0.67 ± 0.16, and the code's
# source `<s>` with abstaining lexicon rows (inputs without entries when every output is claimed) to 0.79 ± 0.02,
# the paper's number (0.75 ± 0.08 with the decoder since d8e876d; over seeds 0–31, 0.78 before and 0.76 since: seed
# luck). LexicalSeq2SeqConfig's and Lexicon's defaults stay the paper's equations.
_PAPER_CODE = dict(feed_dropout=True, combine_decoder_input=True, attention_query_bias=True, gate="copy_token",
                   source_bos=True, lexicon_fallback="mutual_exclusivity_or_abstain")
_PAPER_COMMON = dict(
    **_PAPER_CODE,
    embedding_size=512, hidden_size=512, num_layers=2, dropout=0.4, output_dropout=0.0,
    optim="adamw_torch", weight_decay=0.0, adam_beta1=0.9, adam_beta2=0.998, lr_scheduler_type="inverse_sqrt",
    warmup_steps=4000, learning_rate=_noam_peak(4000), per_device_train_batch_size=128,
    # greedy decoding: the paper's numbers come from greedy decoding (the beam call is commented out in its main.py)
    gradient_accumulation_steps=4, max_steps=8000, max_grad_norm=5.0, generation_num_beams=1,
)
_PAPER_COLORS = {**_PAPER_COMMON, "per_device_train_batch_size": 5, "gradient_accumulation_steps": 1,
                 "max_grad_norm": 0.5, "warmup_steps": 89, "learning_rate": _noam_peak(89), "max_steps": 560,
                 "output_dropout": 0.5}
# The CPU tier is our own reduced recipe: the paper's equations (no code details — on SCAN addprim_jump at this
# size they scored 0.38 and 0.04 on seeds 0–1 against 0.82 on seed 0 without them:
# results/scan_jump_code_options.md).
_CPU_COMMON = {**_PAPER_COMMON, "feed_dropout": False, "combine_decoder_input": False, "attention_query_bias": False,
               "gate": "sigmoid", "source_bos": False, "lexicon_fallback": None,
               "embedding_size": 128, "hidden_size": 256, "per_device_train_batch_size": 64,
               "gradient_accumulation_steps": 1, "warmup_steps": 300, "learning_rate": 2e-3, "max_steps": 1500,
               "dropout": 0.25, "generation_num_beams": 1, "train_sampling_strategy": "group_by_length"}
_CPU_SCAN = {**_CPU_COMMON, "output_dropout": 0.5, "validation_fraction": 0.01}
PRESETS = {
    # The paper's recipe (Akyürek & Andreas 2021, Appendix; ekinakyurek/lexical exp/*.sh).
    # SCAN: validation = a seeded 1% of train (the paper's protocol), used for checkpoint selection.
    "paper": {"default": _PAPER_COMMON, "colors": _PAPER_COLORS,
              "scan": {**_PAPER_COMMON, "output_dropout": 0.5, "validation_fraction": 0.01}},
    # Small enough for 2 CPU cores; costs are measured in results/ (see README). Colors runs the paper recipe.
    # A "<benchmark>/<config>" entry overrides "<benchmark>" for that config: addprim_jump underfits at 1,500
    # updates (validation exact match peaks at 0.90–0.93) and gains from 3,000 (0.57 ± 0.21 → 0.78 ± 0.08 over
    # seeds 0–4 before d8e876d; 0.59 ± 0.29 over seeds 0–9 since: results/scan_cpu_tier_analysis.md); template_around_right stays at 0.00 with either, so it keeps the cheaper one.
    "cpu": {"default": _CPU_COMMON, "colors": _PAPER_COLORS, "scan": _CPU_SCAN,
            "scan/addprim_jump": {**_CPU_SCAN, "max_steps": 3000}},
    "none": {"default": {}},
}
# The Transformer backbone has no paper recipe: only a CPU preset (measured on SCAN addprim_jump and Colors, see
# results/transformer_*.md) and "none". Relative positions, 3 × 64-wide layers, final weights (no selection).
_CPU_TRANSFORMER = {
    "embedding_size": 64, "hidden_size": 64, "num_layers": 3, "num_attention_heads": 4, "ffn_size": 256,
    "dropout": 0.1, "attention_dropout": 0.0, "norm_first": True, "position_encoding": "relative",
    "attention_source": "cross_attention_mean", "output_dropout": 0.0,
    "optim": "adamw_torch", "weight_decay": 0.0, "adam_beta1": 0.9, "adam_beta2": 0.998,
    "lr_scheduler_type": "inverse_sqrt", "warmup_steps": 300, "learning_rate": 2e-3, "per_device_train_batch_size": 64,
    "gradient_accumulation_steps": 1, "max_steps": 4000, "max_grad_norm": 1.0, "generation_num_beams": 1,
    "selection": "final",
}
TRANSFORMER_PRESETS = {"cpu": {"default": _CPU_TRANSFORMER}, "none": {"default": {}}}


@dataclass
class DataArguments:
    benchmark: str | None = field(default=None, metadata={"help": "colors (the default without --train_file) | scan | cogs | eng_cmn; leave out (or none) with --train_file"})
    benchmark_config: str | None = field(default=None, metadata={"help": "e.g. addprim_jump, template_around_right"})
    data_dir: str | None = field(default=None, metadata={"help": "local mirror of the raw files (else LEXICAL_HF_DATA_DIR, else download)"})
    benchmark_splits: str | None = field(default=None, metadata={"help": "comma-separated splits to load, e.g. train,validation,test (COGS without gen.tsv)"})
    train_file: str | None = field(default=None, metadata={"help": "your own training pairs: TSV (source<TAB>target) or JSONL"})
    validation_file: str | None = field(default=None, metadata={"help": "your own validation pairs (TSV/JSONL)"})
    test_file: str | None = field(default=None, metadata={"help": "your own test pairs (TSV/JSONL)"})
    validation_fraction: float | None = field(default=None, metadata={"help": "hold out this fraction of train as validation (SCAN paper protocol: 0.01)"})
    source_bos: bool = field(default=False, metadata={"help": "encode sources as <s> x </s> (the paper's code): <s> maps to <unk>, never generated, so attending it writes nothing"})
    max_train_samples: int | None = field(default=None, metadata={"help": "truncate the training set (debugging)"})
    max_eval_samples: int | None = field(default=None, metadata={"help": "truncate every evaluation split (debugging)"})


@dataclass
class LexiconArguments:
    lexicon: str = field(default="simple", metadata={"help": "none | copy | simple | pmi | ibm2 | bayesian | uniform"})
    lexicon_temperature: float = field(default=0.0, metadata={"help": "τ of L (0 = hard, the paper's main setting)"})
    learn_lexicon: bool = field(default=False, metadata={"help": "fine-tune L with the model (the paper's 'soft and fine-tuned')"})
    lexicon_seed: int = field(default=0, metadata={"help": "seed of sampling learners (bayesian); the lexicon is learned once"})
    lexicon_fallback: str | None = field(default=None, metadata={"help": "rows of inputs without entries, for learners that use mutual exclusivity (all but uniform, whose fallback defines it): mutual_exclusivity (default) | mutual_exclusivity_or_abstain (the paper's code)"})
    lexicon_params: str | None = field(default=None, metadata={"help": "learner hyperparameters NAME=VALUE,…, e.g. variant=code for ibm2 (the paper's released aligner)"})
    lexicon_tie_break: str | None = field(default=None, metadata={"help": "how the hard lexicon chooses among outputs tied for an input's highest score: cooccurrence (default: the one seen with the input in the most training examples) | first_appearance (the one seen first in the training data, the paper code's argmax) | string (the smallest string)"})
    lexicon_path: str | None = field(default=None, metadata={"help": "use this saved lexicon (a folder or file with lexicon.json, or a Hub repo id) instead of learning one, e.g. your own dictionary; it keeps its learner's name, temperature and fallback unless --lexicon_temperature / --lexicon_fallback are given (--lexicon, if given, must name its learner)"})


@dataclass
class ModelArguments:
    backbone: str = field(default="lstm", metadata={"help": "lstm | transformer (presets: cpu, none)"})
    embedding_size: int | None = field(default=None, metadata={"help": "preset: 512"})
    hidden_size: int | None = field(default=None, metadata={"help": "preset: 512"})
    num_layers: int | None = field(default=None, metadata={"help": "preset: 2"})
    bidirectional_encoder: bool = field(default=False)
    dropout: float | None = field(default=None, metadata={"help": "preset: 0.4"})
    output_dropout: float | None = field(default=None, metadata={"help": "extra dropout before p_write (paper: 0.5 on SCAN, Colors)"})
    # The paper's code details (LSTM only; None: the preset's value — `paper` turns them on, `cpu` off — else off)
    feed_dropout: bool | None = field(default=None, metadata={"help": "lstm: drop the fed-back output vector as the paper's code does"})
    combine_decoder_input: bool | None = field(default=None, metadata={"help": "lstm: W_o also reads [emb(y_{i-1}); o_{i-1}] (paper's code)"})
    attention_query_bias: bool | None = field(default=None, metadata={"help": "lstm: attention query with a bias (paper's code)"})
    gate: str | None = field(default=None, metadata={"help": "sigmoid (paper; default; preset cpu) | copy_token (paper's code; preset paper)"})
    loss_normalization: str | None = field(default=None, metadata={"help": "tokens (transformers; default) | sequences (paper's code: summed NLL / batch size)"})
    max_decode_length: int = field(default=128)
    # Transformer only (None: the preset's value, else LexicalSeq2SeqConfig's default)
    num_attention_heads: int | None = field(default=None, metadata={"help": "transformer: heads per attention (cpu preset: 4)"})
    ffn_size: int | None = field(default=None, metadata={"help": "transformer: feed-forward size (cpu preset: 256)"})
    norm_first: bool | None = field(default=None, metadata={"help": "transformer: pre-norm (true) or post-norm"})
    position_encoding: str | None = field(default=None, metadata={"help": "transformer: sinusoidal | learned | relative"})
    relative_attention_max_distance: int | None = field(default=None, metadata={"help": "transformer: clip distance k"})
    attention_source: str | None = field(default=None, metadata={"help": "transformer: cross_attention_mean | dedicated_head"})
    attention_dropout: float | None = field(default=None, metadata={"help": "transformer: dropout on attention weights"})


@dataclass
class ExperimentArguments:
    preset: str | None = field(default=None, metadata={"help": "paper | cpu | none: fills every setting not given (default: paper; cpu for the transformer)"})
    seeds: str = field(default="0", metadata={"help": "e.g. 0-9 or 0,3,7: one training per seed"})
    selection: str = field(default="validation", metadata={"help": "validation: the checkpoint with the best validation exact match | final: the last weights. Without a validation split (Colors) it is always final; presets may set it (the transformer cpu preset: final)"})
    keep_seed_checkpoints: bool = field(default=False, metadata={"help": "keep every seed's Trainer checkpoints"})
    model_card_template: str | None = field(default=None, metadata={"help": "default: model_cards/lexical_model_card.md"})
    group_by_target_length: bool = field(default=False, metadata={"help": "with train_sampling_strategy=group_by_length, group batches by source + target length instead of the source alone: SCAN jump updates 1.32x faster, but the model generalised worse (0.61 against 0.80 exact match on seeds 0-2; results/scan_cpu_tier_analysis.md)"})
    parallel_seeds: int = field(default=1, metadata={"help": "train this many seeds at once, one CPU process each (not under accelerate launch)"})
    max_train_minutes: float | None = field(default=None, metadata={"help": "stop each seed's training after this many minutes of wall-clock time (a lent machine's time limit); the weights reached are evaluated (and saved, as a selection candidate), and metrics.json records the updates done. A seed stopped early is a reduced run: say so"})
    seed_worker: bool = field(default=False, metadata={"help": "internal: train the given seed only, no aggregation"})
    publish_seed: int | None = field(default=None, metadata={"help": "internal: the seed whose weights are published"})


# ---------------------------------------------------------------------------------------------------- arguments
def flag_value(argv: list[str], name: str, default=None):
    """The value of ``--name value`` / ``--name=value`` in argv (the last one wins, as in argparse), else default."""
    value = default
    for k, arg in enumerate(argv):
        if arg == f"--{name}" and k + 1 < len(argv):
            value = argv[k + 1]
        elif arg.startswith(f"--{name}="):
            value = arg.split("=", 1)[1]
    return value


def resolve_benchmark(argv: list[str]) -> str | None:
    """The benchmark a command line trains on: ``--benchmark``, else colors, or None for your own ``--train_file``.

    Raises:
        ValueError: both ``--benchmark`` and ``--train_file`` (the run would be labelled with the wrong data).
    """
    benchmark, train_file = flag_value(argv, "benchmark"), flag_value(argv, "train_file")
    if benchmark is not None and benchmark.lower() == "none":
        benchmark = None
    if benchmark is not None and train_file is not None:
        raise ValueError(f"--train_file trains on your own data: leave out --benchmark (got --benchmark {benchmark})")
    if benchmark is None and train_file is None:
        return "colors"
    return benchmark


def preset_values(argv: list[str]) -> dict:
    preset, benchmark, backbone = flag_value(argv, "preset"), resolve_benchmark(argv), flag_value(argv, "backbone", "lstm")
    presets = TRANSFORMER_PRESETS if backbone == "transformer" else PRESETS
    preset = preset or ("cpu" if backbone == "transformer" else "paper")
    if preset not in presets:
        raise ValueError(f"--preset for --backbone {backbone} must be one of {list(presets)}, got {preset!r}")
    table = presets[preset]
    name = lexical_hf.benchmarks.canonical_benchmark_name(benchmark) if benchmark else "default"
    values = table.get(f"{name}/{flag_value(argv, 'benchmark_config')}", table.get(name, table["default"]))
    values = {key: value for key, value in values.items() if value is not None}
    if flag_value(argv, "lexicon", "simple") == "uniform" or flag_value(argv, "lexicon_path"):
        values.pop("lexicon_fallback", None)  # the uniform learner's fallback is its definition; a saved lexicon has its own
    return {"preset": preset, **values}


def given_flags(argv: list[str]) -> set[str]:
    """The names of the flags on the command line itself (not filled in by a preset or a default)."""
    return {arg[2:].split("=", 1)[0] for arg in argv if arg.startswith("--")}


def parse_arguments(argv: list[str]):
    """HfArgumentParser over the dataclasses; preset values are defaults that any flag on the command line overrides."""
    given = given_flags(argv)
    injected = []
    for key, value in preset_values(argv).items():
        if key not in given:
            injected += [f"--{key}", str(value)]
    parser = HfArgumentParser((DataArguments, LexiconArguments, ModelArguments, ExperimentArguments, Seq2SeqTrainingArguments))
    defaults = ["--output_dir", "outputs/run_lexical", "--predict_with_generate", "true", "--report_to", "none",
                # pinned memory only helps host-to-GPU copies; on CPU torch warns about it at every DataLoader
                "--dataloader_pin_memory", str(torch.cuda.is_available()).lower()]
    defaults = [x for k in range(0, len(defaults), 2) if defaults[k][2:] not in given for x in defaults[k:k + 2]]
    parsed = parser.parse_args_into_dataclasses(args=defaults + injected + argv)
    parsed[0].benchmark = resolve_benchmark(argv)  # None for --train_file: results and the model card say "custom"
    return parsed


# ---------------------------------------------------------------------------------------------------- data
def load_pairs(data_args: DataArguments) -> datasets.DatasetDict:
    if data_args.train_file:
        files = {"train": data_args.train_file, "validation": data_args.validation_file, "test": data_args.test_file}
        splits = {}
        for split, path in files.items():
            if path is None:
                continue
            splits[split] = load_pairs_file(path)  # TSV (extra columns ignored), IN: … OUT: …, or JSON lines
        data = datasets.DatasetDict(splits)
    else:
        data = lexical_hf.load_benchmark(data_args.benchmark, data_args.benchmark_config, data_dir=data_args.data_dir,
                                         validation_fraction=data_args.validation_fraction,
                                         splits=data_args.benchmark_splits.split(",") if data_args.benchmark_splits else None)
    if "train" not in data or len(data["train"]) == 0:
        raise ValueError("no training data: pass --benchmark or --train_file")
    if data_args.max_train_samples:
        data["train"] = data["train"].select(range(min(data_args.max_train_samples, len(data["train"]))))
    if data_args.max_eval_samples:
        for split in data:
            if split != "train":
                data[split] = data[split].select(range(min(data_args.max_eval_samples, len(data[split]))))
    return data


def test_splits(data: datasets.DatasetDict) -> list[str]:
    """Every split that is evaluated at the end: test-like splits (COGS gen included), else validation."""
    names = [s for s in data if s not in ("train", "validation", "train_100")]
    return names or [s for s in data if s == "validation"]


# ---------------------------------------------------------------------------------------------------- metrics
def decode(tokenizer, ids) -> list[str]:
    ids = np.where(np.asarray(ids) < 0, tokenizer.pad_token_id, np.asarray(ids))
    return tokenizer.batch_decode(ids, skip_special_tokens=True)


def validation_exact_match(tokenizer, predicted_ids, label_ids) -> float:
    """Exact match of generated ids against label ids (-100 = ignored), for checkpoint selection.

    A target word outside the target vocabulary is <unk> in the labels, and decoding drops it, so the reference would
    lose the word and a prediction without it would match. Such a row is never an exact match in the test evaluation
    (which compares with the target strings); keeping an <unk> in the reference does the same here, since predictions
    are decoded without special tokens and never contain one."""
    label_ids = np.asarray(label_ids)
    unknown = (label_ids == tokenizer.unk_token_id).any(axis=-1)
    references = [f"{text} <unk>" if flag else text for flag, text in zip(unknown, decode(tokenizer, label_ids))]
    return evaluation.exact_match(decode(tokenizer, predicted_ids), references)


@torch.no_grad()
def generate_predictions(model, tokenizer, sources: list[str], training_args) -> list[str]:
    """Decode every source with the model's generate(), in the dataset's order.

    Runs in each process on the whole split (outside the Trainer's distributed sampler, whose padding would repeat
    and reorder examples)."""
    return generate_texts(model, tokenizer, sources, batch_size=training_args.per_device_eval_batch_size,
                          num_beams=training_args.generation_num_beams or 1)


def tie_break_summary(lexicon: Lexicon | None) -> str | None:
    """The hard choices that the lexicon's recorded tie-breaks make differently from the smallest-string rule, as
    ``"2 inputs: left→I_TURN_LEFT, right→I_TURN_RIGHT (sha256 …)"``; None when there are none (no ties, or the rule
    of row files written before tie-breaks were recorded). Runs with equal summaries break ties alike."""
    if lexicon is None or not lexicon.tie_breaks:
        return None
    chosen = lexicon.hard_mapping()
    by_string = Lexicon({v: lexicon.entries[v] for v in lexicon.tie_breaks}).hard_mapping()  # the tied rows only
    changed = {v: chosen[v] for v, w in by_string.items() if chosen[v] != w}
    if not changed:
        return None
    digest = hashlib.sha256(json.dumps(changed, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]
    shown = ", ".join(f"{v}→{w}" for v, w in list(changed.items())[:8]) + (", …" if len(changed) > 8 else "")
    return f"{len(changed)} inputs: {shown} (sha256 {digest})"


# ---------------------------------------------------------------------------------------------------- one seed
# ModelArguments whose None means "LexicalSeq2SeqConfig's default" (the presets fill in the rest)
OPTIONAL_MODEL_FIELDS = ("gate", "loss_normalization", "feed_dropout", "combine_decoder_input", "attention_query_bias",
                         "num_attention_heads", "ffn_size", "norm_first", "position_encoding",
                         "relative_attention_max_distance", "attention_source", "attention_dropout")


def build_model(model_args, lexicon_args, tokenizer, lexicon) -> LexicalSeq2SeqForConditionalGeneration:
    mode = {"none": "none", "copy": "copy"}.get(lexicon_args.lexicon, "lexical")
    config = LexicalSeq2SeqConfig(
        source_vocab_size=tokenizer.source_vocab_size, target_vocab_size=tokenizer.target_vocab_size,
        backbone=model_args.backbone, embedding_size=model_args.embedding_size, hidden_size=model_args.hidden_size,
        num_layers=model_args.num_layers, bidirectional_encoder=model_args.bidirectional_encoder,
        dropout=model_args.dropout, output_dropout=model_args.output_dropout, lexical_mode=mode,
        train_lexicon=lexicon_args.learn_lexicon, max_decode_length=model_args.max_decode_length,
        vocabulary_sha256=tokenizer.vocabulary_sha256,
        **{name: getattr(model_args, name) for name in OPTIONAL_MODEL_FIELDS if getattr(model_args, name) is not None},
    )
    model = LexicalSeq2SeqForConditionalGeneration(config)
    if lexicon is not None:
        model.set_lexicon(lexicon, tokenizer)
    return model


def tokenize_pairs(raw: datasets.DatasetDict, tokenizer) -> datasets.DatasetDict:
    """`input_ids` / `attention_mask` / `labels` for every split, the text columns dropped: what the Trainer reads."""
    return raw.map(lambda batch: tokenizer(batch["source"], text_target=batch["target"]), batched=True,
                   remove_columns=raw["train"].column_names, desc="Tokenizing")


class EpochSeededLengthGroupedSampler(LengthGroupedSampler):
    """transformers' `LengthGroupedSampler`, with each epoch's order drawn from its own generator seeded by (seed,
    epoch) instead of torch's global one.

    Why: the stock sampler draws from the global generator, and on a mid-epoch resume the Trainer builds that epoch's
    iterator before it restores the checkpoint's RNG state (`_run_epoch`: `skip_first_batches`, `_load_rng_state`
    after), so a resumed run trained on other batches than the uninterrupted one. Here the order depends only on the
    seed and the epoch, which the Trainer passes through `set_epoch` before every epoch (accelerate's
    `DataLoaderShard.set_epoch` reaches the sampler, also behind `skip_first_batches`); every process of a
    distributed run draws the same order.
    """

    def __init__(self, batch_size: int, lengths: list[int], seed: int):
        super().__init__(batch_size, lengths=lengths)
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self):
        # SeedSequence mixes (seed, epoch): seed 0's second epoch is not seed 1's first
        state = int(np.random.SeedSequence([self.seed, self.epoch]).generate_state(1, dtype=np.uint64)[0] >> 1)
        generator = torch.Generator().manual_seed(state)
        return iter(get_length_grouped_indices(self.lengths, self.batch_size, generator=generator))


class WallClockLimit(TrainerCallback):
    """Ends training once `seconds` of wall-clock time have passed since `on_train_begin`, after the update in flight.

    The step that crosses the limit is also evaluated and saved (with selection on validation, the weights reached
    become a candidate like every periodic checkpoint), so a run cut short by a machine's time limit still ends in a
    normal evaluation instead of being killed with nothing to show. `stopped` says whether the limit ended training."""

    def __init__(self, seconds: float):
        self.seconds, self.start, self.stopped = seconds, None, False

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step < state.max_steps and time.perf_counter() - self.start >= self.seconds:
            self.stopped = True
            control.should_training_stop = True
            if args.eval_strategy != "no":
                control.should_evaluate = control.should_save = True
        return control


class LexicalSeq2SeqTrainer(Seq2SeqTrainer):
    """`Seq2SeqTrainer` whose `train_sampling_strategy="group_by_length"` sampler is `EpochSeededLengthGroupedSampler`
    (a resumed run trains on the same batches as an uninterrupted one), grouped by source length like the stock one
    or, with `group_by_target_length=True` (`--group_by_target_length true`), by source + target length.

    The stock sampler sorts by `input_ids` length alone (a `length` column would be dropped with the unused columns
    before the sampler sees it). Grouping by the target too cuts the padded positions that the target embedding
    projection and the head compute (the LSTM decoder's step loop already stops at each row's own target): 300
    updates of the SCAN jump `cpu` preset take 61.9 s instead of 81.6 s. Not the default: with batches of one target
    length the SCAN jump model generalised worse (test exact match 0.61 against 0.80 on seeds 0–2;
    results/scan_cpu_tier_analysis.md).
    """

    def __init__(self, *args, group_by_target_length: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.group_by_target_length = group_by_target_length

    def _get_train_sampler(self, train_dataset=None):
        train_dataset = self.train_dataset if train_dataset is None else train_dataset
        if self.args.train_sampling_strategy != "group_by_length" or not isinstance(train_dataset, datasets.Dataset):
            return super()._get_train_sampler(train_dataset)
        sources = train_dataset["input_ids"]
        if self.group_by_target_length:
            lengths = [len(source) + len(target) for source, target in zip(sources, train_dataset["labels"])]
        else:
            lengths = [len(source) for source in sources]
        return EpochSeededLengthGroupedSampler(self.args.train_batch_size * self.args.gradient_accumulation_steps,
                                               lengths, seed=self.args.seed)


def train_one_seed(seed, args, tokenizer, lexicon, tokenized, raw, seed_dir: Path):
    data_args, lexicon_args, model_args, experiment_args, training_args = args
    set_seed(seed)
    model = build_model(model_args, lexicon_args, tokenizer, lexicon)
    has_validation = "validation" in tokenized and experiment_args.selection == "validation"
    # the run's arguments with this seed's changes; dataclasses.replace keeps every value as it is (to_dict() is for
    # logging: it masks tokens and flattens enums and nested configs)
    seed_args = dict(output_dir=str(seed_dir), seed=seed, push_to_hub=False, save_only_model=False)
    if has_validation:
        # selection on validation exact match; how often (default: ten times a run) and how many checkpoints are kept
        # (default 2) are the user's to set
        defaults = Seq2SeqTrainingArguments.__dataclass_fields__
        user_set = {name for name in ("eval_steps", "save_steps", "save_total_limit")
                    if getattr(training_args, name) != defaults[name].default}
        interval = training_args.eval_steps if "eval_steps" in user_set else (
            max(1, training_args.max_steps // 10) if training_args.max_steps > 0 else None)
        seed_args.update(eval_strategy="steps" if interval else "epoch", save_strategy="steps" if interval else "epoch",
                         load_best_model_at_end=True, metric_for_best_model="exact_match", greater_is_better=True)
        if "save_total_limit" not in user_set:
            seed_args.update(save_total_limit=2)
        if interval:
            seed_args.update(eval_steps=interval)
            if "save_steps" not in user_set:
                seed_args.update(save_steps=interval)  # load_best_model_at_end needs a checkpoint at each evaluation
    else:
        seed_args.update(eval_strategy="no", load_best_model_at_end=False)
    seed_training_args = dataclasses.replace(training_args, **seed_args)

    def compute_metrics(prediction):
        # Under DDP the gathered arrays can end with a few repeated examples (even batches); the first
        # len(eval set) rows are all distinct and predictions stay aligned with labels.
        count = len(tokenized["validation"])
        return {"exact_match": validation_exact_match(tokenizer, prediction.predictions[:count],
                                                      prediction.label_ids[:count])}

    trainer = LexicalSeq2SeqTrainer(
        group_by_target_length=experiment_args.group_by_target_length,
        model=model, args=seed_training_args, train_dataset=tokenized["train"],
        eval_dataset=tokenized["validation"] if has_validation else None,
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model), processing_class=tokenizer,
        compute_metrics=compute_metrics,
    )
    time_limit = None
    if experiment_args.max_train_minutes is not None:
        time_limit = WallClockLimit(60 * experiment_args.max_train_minutes)
        trainer.add_callback(time_limit)
    resume = None
    if training_args.resume_from_checkpoint:
        resume = last_complete_checkpoint(seed_dir)
        if resume:
            logger.info(f"seed {seed}: resuming from {resume}")
    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=resume)
    train_seconds = time.perf_counter() - start

    metrics = {}
    for split in test_splits(tokenized):
        predictions = generate_predictions(trainer.model, tokenizer, raw[split]["source"], seed_training_args)
        metrics[split] = evaluation.benchmark_metrics(raw, split, predictions)
    # the updates done: fewer than max_steps when the wall-clock limit ended training (a reduced run)
    metrics["train_seconds"] = {"value": train_seconds, "updates": trainer.state.global_step,
                                "stopped_by_time_limit": bool(time_limit and time_limit.stopped)}
    return trainer, metrics


# ---------------------------------------------------------------------------------------------------- main
def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_arguments(argv)
    data_args, lexicon_args, model_args, experiment_args, training_args = args
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO if training_args.should_log else logging.WARNING)
    if lexicon_args.lexicon not in LEXICON_CHOICES:
        raise ValueError(f"--lexicon must be one of {LEXICON_CHOICES}, got {lexicon_args.lexicon!r}")
    if lexicon_args.lexicon_fallback not in (None, *REPLACEABLE_FALLBACKS):
        raise ValueError(f"--lexicon_fallback must be one of {REPLACEABLE_FALLBACKS}, got {lexicon_args.lexicon_fallback!r}")
    if lexicon_args.learn_lexicon and lexicon_args.lexicon == "none":
        raise ValueError("--learn_lexicon true fine-tunes a lexicon: it does not go with --lexicon none")
    if experiment_args.max_train_minutes is not None and not experiment_args.max_train_minutes > 0:
        raise ValueError(f"--max_train_minutes must be a positive number of minutes, got {experiment_args.max_train_minutes}")
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
    if training_args.world_size > 1:  # a preset's batch is per process, so it grows with the processes
        parts = (training_args.world_size, training_args.per_device_train_batch_size,
                 training_args.gradient_accumulation_steps)
        logger.warning(f"{parts[0]} processes: the effective batch is {parts[0]} × {parts[1]} × {parts[2]} (processes × "
                       f"per device × accumulation) = {math.prod(parts)}; the presets' recipes assume one process")
    if experiment_args.model_card_template and not Path(experiment_args.model_card_template).is_file():
        raise FileNotFoundError(f"--model_card_template {experiment_args.model_card_template} not found")  # not after training
    seeds = parse_seeds(experiment_args.seeds)
    output_dir = Path(training_args.output_dir)
    # the code that trains is the checkout as it is now, not as it is when training ends hours later
    revision = code_revision()

    raw = load_pairs(data_args)
    tokenizer = LexicalTokenizer.from_dataset(raw["train"], source_bos=data_args.source_bos)
    lexicon = None
    if lexicon_args.lexicon != "none":
        method = "identity" if lexicon_args.lexicon == "copy" else lexicon_args.lexicon
        provenance = {"dataset": data_args.benchmark or data_args.train_file, "config": data_args.benchmark_config, "split": "train"}
        params = parse_learner_params(lexicon_args.lexicon_params.split(",")) if lexicon_args.lexicon_params else {}
        if lexicon_args.lexicon_path:
            if method in ("identity", "uniform") or params or lexicon_args.lexicon_tie_break:
                raise ValueError("--lexicon_path replaces the learner: it does not go with --lexicon copy or uniform, "
                                 "--lexicon_params or --lexicon_tie_break (a saved lexicon carries its own tie-breaks)")
            lexicon = Lexicon.from_pretrained(lexicon_args.lexicon_path)
            # the saved lexicon is what it says it is: its learner, temperature and fallback stand unless a flag on
            # the command line asks for another temperature or fallback
            if "lexicon" in given_flags(argv) and lexicon_args.lexicon != lexicon.method:
                raise ValueError(f"--lexicon {lexicon_args.lexicon}: the lexicon at {lexicon_args.lexicon_path} was made "
                                 f"by {lexicon.method!r}; leave out --lexicon (the saved lexicon names its learner)")
            lexicon_args.lexicon = lexicon.method
            if "lexicon_temperature" in given_flags(argv):
                lexicon = Lexicon.from_dict({**lexicon.to_dict(), "temperature": lexicon_args.lexicon_temperature})
            lexicon_args.lexicon_temperature = lexicon.temperature
            fallback = replaced_fallback(lexicon.fallback, lexicon_args.lexicon_fallback, lexicon.method)
            if fallback != lexicon.fallback:
                lexicon = Lexicon.from_dict({**lexicon.to_dict(), "fallback": fallback})
        else:
            lexicon = learn_lexicon(raw["train"], method=method, temperature=lexicon_args.lexicon_temperature,
                                    seed=lexicon_args.lexicon_seed, provenance=provenance,
                                    tie_break=lexicon_args.lexicon_tie_break or "cooccurrence",
                                    fallback=lexicon_args.lexicon_fallback, **params)
        covered = apply_lexicon(raw["train"], lexicon, tokenizer=tokenizer)
        coverage = [c for c in covered["lexicon_coverage"] if c is not None]
        logger.info(f"{lexicon.method} lexicon: {lexicon.num_entries} entries; mean target coverage on train "
                    f"{statistics.fmean(coverage) if coverage else 0:.3f}")

    tokenized = tokenize_pairs(raw, tokenizer)

    settings = seed_settings(args, lexicon)
    per_seed = {}
    pending = []
    for seed in seeds:
        metrics_file = output_dir / "seeds" / f"seed-{seed}" / "metrics.json"
        if training_args.resume_from_checkpoint:
            check_seed_settings(output_dir / "seeds" / f"seed-{seed}", settings)
        if training_args.resume_from_checkpoint and metrics_file.exists():
            per_seed[str(seed)] = json.loads(metrics_file.read_text())
            logger.info(f"seed {seed}: already finished, metrics read from {metrics_file}")
        else:
            pending.append(seed)
    if experiment_args.parallel_seeds > 1 and training_args.world_size == 1 and len(pending) > 1:
        run_seeds_in_subprocesses(argv, pending, seeds[0], experiment_args.parallel_seeds)
        for seed in pending:
            per_seed[str(seed)] = json.loads((output_dir / "seeds" / f"seed-{seed}" / "metrics.json").read_text())
    else:
        for seed in pending:
            publish = seed == (experiment_args.publish_seed if experiment_args.publish_seed is not None else seeds[0])
            metrics = run_seed(seed, publish, args, tokenizer, lexicon, tokenized, raw, output_dir)
            per_seed[str(seed)] = metrics
    if training_args.process_index != 0 or experiment_args.seed_worker:
        return None
    per_seed = {str(seed): per_seed[str(seed)] for seed in seeds}
    results = {
        "run_name": output_dir.name,
        "command": "python examples/run_lexical.py " + " ".join(argv),
        "lexical_hf_version": lexical_hf.__version__,
        "source_revision": revision,
        "preset": experiment_args.preset,
        "seeds": seeds,
        "selection": experiment_args.selection if "validation" in raw else "final",
        "benchmark": data_args.benchmark, "benchmark_config": data_args.benchmark_config,
        "data_files": None if data_args.benchmark else {split: path for split, path in (
            ("train", data_args.train_file), ("validation", data_args.validation_file), ("test", data_args.test_file)) if path},
        "lexicon": lexicon_args.lexicon, "lexicon_path": lexicon_args.lexicon_path,
        "lexicon_temperature": lexicon_args.lexicon_temperature,
        "lexicon_fallback": lexicon.fallback if lexicon is not None else None, "source_bos": data_args.source_bos,
        "lexicon_tie_breaks": tie_break_summary(lexicon),
        "group_by_target_length": experiment_args.group_by_target_length,
        "model": {k: v for k, v in asdict(model_args).items()},
        "training": {k: getattr(training_args, k) for k in ("learning_rate", "lr_scheduler_type", "warmup_steps", "max_steps",
                     "per_device_train_batch_size", "gradient_accumulation_steps", "max_grad_norm", "adam_beta1",
                     "adam_beta2", "generation_num_beams", "train_sampling_strategy")},
        "machine": machine_description(experiment_args.parallel_seeds),
        "world_size": training_args.world_size,
        "example_source": raw[(test_splits(raw) or ["train"])[0]][0]["source"],  # train: a run without evaluation
        "settings": settings,  # everything the seeds' results depend on: reproduce.py --extend compares them
        "per_seed": per_seed,
    }
    results.update(summarize_row(per_seed))
    publish_folder(output_dir, seeds[0], tokenizer, lexicon, results, experiment_args, training_args)
    print(run_markdown(results))
    return results


def last_complete_checkpoint(seed_dir: Path) -> str | None:
    """The newest `checkpoint-N` in `seed_dir` whose save finished, or None.

    The Trainer writes `trainer_state.json` last, and not atomically: a save that a timeout or a kill interrupts leaves
    a folder without a readable one. `get_last_checkpoint` would still pick that folder, and every later resume would
    fail on it; here it is skipped (and left in place: the next save at that step writes it again)."""
    numbered = [(int(path.name.split("-")[1]), path) for path in seed_dir.glob("checkpoint-*")
                if path.is_dir() and re.fullmatch(r"checkpoint-\d+", path.name)] if seed_dir.is_dir() else []
    for _, path in sorted(numbered, reverse=True):
        try:
            json.loads((path / "trainer_state.json").read_text())
        except (OSError, ValueError):
            logger.warning(f"{path}: no readable trainer_state.json (its save was interrupted); not resuming from it")
            continue
        return str(path)
    return None


def write_json_atomic(path: Path, value) -> None:
    replace_atomically(path, json.dumps(value, indent=2, default=str) + "\n")


def seed_settings(args, lexicon) -> dict:
    """Everything a seed's result depends on besides the seed (data, lexicon, model, training recipe), as JSON values:
    a finished or interrupted seed is reused by --resume_from_checkpoint only when these are unchanged."""
    data_args, lexicon_args, model_args, experiment_args, training_args = args
    # evaluation steps belong here too: which checkpoint validation selects, and the random numbers that evaluation
    # draws between updates (DataLoader seeds), depend on them
    training_keys = ("learning_rate", "lr_scheduler_type", "warmup_steps", "warmup_ratio", "max_steps", "num_train_epochs",
                     "per_device_train_batch_size", "gradient_accumulation_steps", "max_grad_norm", "weight_decay",
                     "adam_beta1", "adam_beta2", "adam_epsilon", "optim", "train_sampling_strategy", "generation_num_beams",
                     "eval_strategy", "eval_steps", "tf32")
    settings = {
        "data": {key: getattr(data_args, key) for key in ("benchmark", "benchmark_config", "benchmark_splits", "train_file",
                                                          "validation_file", "test_file", "validation_fraction",
                                                          "max_train_samples", "max_eval_samples", "source_bos")},
        # what L is made of, not the lexicon's provenance (a dataset fingerprint can differ between two loads of a file)
        "lexicon": None if lexicon is None else lexicon.content_sha256(),
        "lexicon_use": {key: getattr(lexicon_args, key) for key in ("learn_lexicon", "lexicon_temperature")},
        "model": asdict(model_args),
        "training": {key: getattr(training_args, key, None) for key in training_keys},
        "selection": experiment_args.selection,
        "group_by_target_length": experiment_args.group_by_target_length,
        "max_train_minutes": experiment_args.max_train_minutes,
    }
    return json.loads(json.dumps(settings, default=str))


def check_seed_settings(seed_dir: Path, settings: dict) -> None:
    """Refuse to reuse a seed folder trained with other settings: it would pair old weights or metrics with the new
    run's results.json, card and lexicon. An unfinished seed may go on to more updates (continued training); a folder
    from before settings were recorded is reused with a warning, and one from before some were recorded is checked on
    those it records."""
    finished = (seed_dir / "metrics.json").exists()
    if not (finished or any(seed_dir.glob("checkpoint-*"))):
        return
    recorded_file = seed_dir / "settings.json"
    if not recorded_file.exists():
        logger.warning(f"{seed_dir} records no settings (written before they were recorded): reused unchecked")
        return
    recorded = json.loads(recorded_file.read_text())
    differing = settings_differences(
        recorded, settings, ignore=() if finished else ("training.max_steps", "training.num_train_epochs"))
    if differing:
        raise ValueError(f"--resume_from_checkpoint: {seed_dir} was trained with other settings ({'; '.join(differing)}); "
                         f"use another --output_dir, or remove {seed_dir} to train it again")


def run_seed(seed, publish, args, tokenizer, lexicon, tokenized, raw, output_dir: Path) -> dict:
    """Train one seed; the main process writes its metrics.json (and, for the published seed, its final model)."""
    experiment_args, training_args = args[3], args[4]
    seed_dir = output_dir / "seeds" / f"seed-{seed}"
    if training_args.process_index == 0:
        seed_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(seed_dir / "settings.json", seed_settings(args, lexicon))
    trainer, metrics = train_one_seed(seed, args, tokenizer, lexicon, tokenized, raw, seed_dir)
    if trainer.is_world_process_zero():
        seed_dir.mkdir(parents=True, exist_ok=True)
        if publish:
            trainer.save_model(str(seed_dir / "final"))
            tokenizer.save_pretrained(str(seed_dir / "final"))
        if not experiment_args.keep_seed_checkpoints:
            for checkpoint in seed_dir.glob("checkpoint-*"):
                shutil.rmtree(checkpoint, ignore_errors=True)
        write_json_atomic(seed_dir / "metrics.json", metrics)
        summary_line = "  ".join(f"{split}: EM {m['exact_match']:.3f}" for split, m in metrics.items() if "exact_match" in m)
        print(f"[seed {seed}] {summary_line}", flush=True)
    return metrics


def run_seeds_in_subprocesses(argv: list[str], seeds: list[int], published_seed: int, workers: int) -> None:
    """Train `seeds` `workers` at a time, each in its own process with its share of the CPU threads.

    On CPUs, small recurrent models scale badly across threads (each step is many small matmuls), so N seeds side
    by side with cores/N threads each finish sooner than N seeds one after another. Each worker reruns this script
    for one seed and writes seeds/seed-K/metrics.json; the parent then aggregates as usual."""
    import subprocess

    threads = max(1, (os.cpu_count() or 1) // workers)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    base = [a for a in argv]
    queue, running = list(seeds), []
    while queue or running:
        while queue and len(running) < workers:
            seed = queue.pop(0)
            command = [sys.executable, os.path.abspath(__file__), *base, "--seeds", str(seed), "--seed_worker", "true",
                       "--publish_seed", str(published_seed), "--parallel_seeds", "1"]
            running.append((seed, subprocess.Popen(command, env=env)))
        seed, process = running.pop(0)
        if process.wait() != 0:
            for _, other in running:
                other.kill()
            raise RuntimeError(f"seed {seed} failed (exit status {process.returncode}); see its output above")


def source_revision(checkout: Path | None = None) -> str | None:
    """`git describe --always` of the checkout this script runs from (None outside one), with `-dirty` when tracked
    files other than results (`results/`, `*.md`) have uncommitted changes: a row's numbers depend on the code's
    arithmetic, not only on its version number, while the result files that other rows write meanwhile do not."""
    checkout = checkout or Path(__file__).resolve().parent
    try:
        git = lambda *args: subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True, timeout=30,
                                           check=True).stdout.strip()
        revision = git("describe", "--always")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ":(top)", ":(top,exclude)results",
                      ":(top,exclude,glob)**/*.md")
    except (OSError, subprocess.SubprocessError):
        return None
    if not revision:
        return None
    return f"{revision}-dirty" if changed else revision


def code_revision() -> str | None:
    """The revision of the code that trains: the git checkout `lexical_hf` is imported from (`source_revision`), or
    its version when it is installed from a wheel (no checkout of its own: a git repository around site-packages
    says nothing about it); and this script's checkout too when the script runs from another one."""
    package_root = Path(lexical_hf.__file__).resolve().parents[1]
    try:
        toplevel = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=package_root, capture_output=True,
                                  text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        toplevel = ""
    in_checkout = bool(toplevel) and Path(toplevel).resolve() == package_root
    package = (source_revision(package_root) if in_checkout else None) or f"lexical_hf {lexical_hf.__version__}"
    script_root = Path(__file__).resolve().parents[1]
    if script_root == package_root:
        return package
    script = source_revision(script_root)
    return f"{package}; run_lexical.py {script}" if script else package


def machine_description(parallel_seeds: int = 1) -> str:
    import platform

    threads = max(1, (os.cpu_count() or 1) // parallel_seeds) if parallel_seeds > 1 else torch.get_num_threads()
    seeds_note = f", {parallel_seeds} seeds at a time" if parallel_seeds > 1 else ""
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU ({os.cpu_count()} cores, {threads} torch thread(s) per run{seeds_note})"
    return f"{device}; {platform.platform()}; torch {torch.__version__}"


def publish_folder(output_dir: Path, first_seed: int, tokenizer, lexicon, results, experiment_args, training_args):
    """Turn output_dir into a complete Hub model repo and push it when asked.

    The weights are `first_seed`'s, copied (not moved) from seeds/seed-K/final: runs over other seed sets can share
    output_dir (`--resume_from_checkpoint true` reads finished seeds), so the seed's own copy must survive for the
    next aggregation to publish it again. The card is rendered before anything is replaced, and every file is
    replaced atomically, so a failure leaves each file whole; a lexicon.json of an earlier run with a lexicon is
    removed when this one has none."""
    from lexical_hf.model_card import build_model_card

    card = str(build_model_card(results, lexicon, template=experiment_args.model_card_template,
                                repo_id=training_args.hub_model_id))
    final = output_dir / "seeds" / f"seed-{first_seed}" / "final"
    if final.is_dir() and any(final.glob("*.safetensors")):
        for item in final.iterdir():
            if item.is_file() and item.name != "training_args.bin":
                replace_atomically(output_dir / item.name, copy_from=item)
    else:
        # Folders written before weights were copied hold the published seed only at the top level.
        previous = output_dir / "results.json"
        previous_seed = json.loads(previous.read_text())["seeds"][0] if previous.exists() else None
        if previous_seed != first_seed or not (output_dir / "model.safetensors").exists():
            holds = "no published weights" if previous_seed is None else f"seed {previous_seed}'s weights"
            raise FileNotFoundError(
                f"seed {first_seed}'s final weights are not in {final} and {output_dir} holds {holds}: publishing "
                f"would pair these results with other weights. Train seed {first_seed} again (remove {final.parent}) "
                "or list another finished seed first in --seeds."
            )
    if lexicon is not None:
        lexicon.save_pretrained(output_dir)
    else:
        (output_dir / "lexicon.json").unlink(missing_ok=True)
    write_json_atomic(output_dir / "results.json", results)
    replace_atomically(output_dir / "results.md", run_markdown(results))
    replace_atomically(output_dir / "README.md", card)
    if training_args.push_to_hub:
        from huggingface_hub import HfApi

        repo_id = training_args.hub_model_id or output_dir.name
        api = HfApi(token=training_args.hub_token)
        try:
            api.create_repo(repo_id, private=bool(training_args.hub_private_repo), exist_ok=True)
            api.upload_folder(repo_id=repo_id, folder_path=str(output_dir), ignore_patterns=["seeds/**", "runs/**"],
                              commit_message=f"lexical_hf {lexical_hf.__version__}: {results['run_name']}")
        except Exception as error:  # network, token, permissions: the trained folder is complete either way
            raise RuntimeError(
                f"pushing to {repo_id} failed ({type(error).__name__}: {error}). {output_dir} is complete; push it later "
                f"with `hf upload {repo_id} {output_dir} --exclude 'seeds/**' --exclude 'runs/**'`"
            ) from error
        print(f"pushed {output_dir} to {repo_id}")


if __name__ == "__main__":
    main()
