"""The training pipeline of `lexical-hf train` and `examples/run_lexical.py`, top to bottom.

    data (a benchmark or your files) → tokenizer (V_x, V_y) → lexicon (learned, or loaded) → tokenized splits
    → one `Seq2SeqTrainer` run per seed (checkpoint selection on validation, test decoding)
    → a Hub-ready folder: the first seed's weights, tokenizer, lexicon.json, results.json (per-seed metrics,
      mean ± std), results.md and a model card.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import statistics
import sys
from dataclasses import asdict
from pathlib import Path

import datasets

import lexical_hf

from ..configuration_lexical import LexicalSeq2SeqConfig
from ..data import load_benchmark, load_pairs_file
from ..data._common import carve_validation
from ..lexicon import Lexicon, apply_lexicon, learn_lexicon
from ..lexicon.lexicon import replaced_fallback
from ..lexicon.registry import parse_params_text
from ..modeling_lexical import LexicalSeq2SeqForConditionalGeneration
from ..results import parse_seeds, run_markdown, summarize_row
from ..tokenization_lexical import LexicalTokenizer
from .arguments import OPTIONAL_MODEL_FIELDS, effective_batch_warning, parse_arguments
from .provenance import code_revision, machine_description
from .publish import publish_folder
from .run_folder import claim_seed_folder, locked_run_folder
from .augmenting import augmentation_settings
from .seeds import check_seed_settings, run_seed, run_seeds_in_subprocesses, seed_settings, test_splits, tokenize_pairs

logger = logging.getLogger("lexical_hf.training")

RESULT_TRAINING_KEYS = ("learning_rate", "lr_scheduler_type", "warmup_steps", "max_steps", "per_device_train_batch_size",
                        "gradient_accumulation_steps", "max_grad_norm", "adam_beta1", "adam_beta2",
                        "generation_num_beams", "train_sampling_strategy")


def main(argv: list[str] | None = None, program: str = "lexical-hf train") -> dict | None:
    """Parse `argv`, train every seed and write the output folder; returns the results dict (None in a worker)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_arguments(argv, program)
    data_args, lexicon_args, model_args, experiment_args, training_args = args
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        level=logging.INFO if training_args.should_log else logging.WARNING)
    if warning := effective_batch_warning(training_args):
        logger.warning(warning)
    seeds = parse_seeds(experiment_args.seeds)
    output_dir = Path(training_args.output_dir)
    revision = code_revision()  # the code as it is now, not as it is when training ends hours later

    # one run owns the folder for its whole life (the seed workers of --parallel_seeds and the other processes
    # under accelerate belong to the run that holds it)
    owner = training_args.process_index == 0 and not experiment_args.seed_worker
    with locked_run_folder(output_dir) if owner else contextlib.nullcontext():
        raw = load_data(data_args)
        tokenizer = LexicalTokenizer.from_dataset(raw["train"], source_bos=data_args.source_bos)
        lexicon = build_lexicon(lexicon_args, data_args, raw, tokenizer)
        tokenized = tokenize_pairs(raw, tokenizer)
        per_seed = train_seeds(argv, args, seeds, tokenizer, lexicon, tokenized, raw, output_dir)
        if per_seed is None:  # a worker process of --parallel_seeds, or not the main process under accelerate
            return None
        return write_results(argv, program, args, revision, seeds, raw, lexicon, per_seed, output_dir)


def write_results(argv, program, args, revision, seeds, raw, lexicon, per_seed, output_dir: Path) -> dict:
    """results.json (and the published folder around it) from every seed's metrics."""
    data_args, lexicon_args, model_args, experiment_args, training_args = args
    results = {
        "run_name": output_dir.name,
        "command": f"{program} " + " ".join(argv),
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
        "augmentation": augmentation_settings(data_args),
        "model": asdict(model_args),
        "training": {key: getattr(training_args, key) for key in RESULT_TRAINING_KEYS},
        "machine": machine_description(experiment_args.parallel_seeds),
        "world_size": training_args.world_size,
        "example_source": raw[(test_splits(raw) or ["train"])[0]][0]["source"],  # train: a run without evaluation
        "settings": seed_settings(args, lexicon),  # everything the seeds' results depend on (compared on --extend)
        "per_seed": per_seed,
    }
    results.update(summarize_row(per_seed))
    publish_folder(output_dir, seeds[0], lexicon, results, experiment_args, training_args)
    print(run_markdown(results))
    return results


# ---------------------------------------------------------------------------------------------------- data
def load_data(data_args) -> datasets.DatasetDict:
    """The benchmark (or your own files) as a DatasetDict with `source` and `target`, truncated as asked."""
    if data_args.train_file:
        files = {"train": data_args.train_file, "validation": data_args.validation_file, "test": data_args.test_file}
        data = datasets.DatasetDict({split: load_pairs_file(path) for split, path in files.items() if path is not None})
        if data_args.validation_fraction is not None:  # the same seeded carve-out as the benchmarks'
            splits = carve_validation({"train": data["train"].to_list()}, data_args.validation_fraction, seed=0)
            data["train"], data["validation"] = (datasets.Dataset.from_list(splits[name]) for name in ("train", "validation"))
    else:
        splits = data_args.benchmark_splits.split(",") if data_args.benchmark_splits else None
        overrides = parse_params_text(data_args.benchmark_params) if data_args.benchmark_params else None
        data = load_benchmark(data_args.benchmark, data_args.benchmark_config, data_dir=data_args.data_dir,
                              validation_fraction=data_args.validation_fraction, splits=splits,
                              config_overrides=overrides)
    if "train" not in data or len(data["train"]) == 0:
        raise ValueError("no training data: pass --benchmark or --train_file")
    if data_args.max_train_samples:
        data["train"] = data["train"].select(range(min(data_args.max_train_samples, len(data["train"]))))
    if data_args.max_eval_samples:
        for split in data:
            if split != "train":
                data[split] = data[split].select(range(min(data_args.max_eval_samples, len(data[split]))))
    return data


# ---------------------------------------------------------------------------------------------------- lexicon
def build_lexicon(lexicon_args, data_args, raw, tokenizer) -> Lexicon | None:
    """The lexicon the run trains with: none, a saved one (`--lexicon_path`), or one learned on train. Fills in
    `lexicon_args.lexicon` and `lexicon_args.lexicon_temperature` with what the lexicon is."""
    if lexicon_args.lexicon_path:
        lexicon = Lexicon.from_pretrained(lexicon_args.lexicon_path)
        # the saved lexicon is what it says it is: its learner, temperature and fallback stand unless a flag asks for
        # another temperature or fallback
        if lexicon_args.lexicon is not None and lexicon_args.lexicon != lexicon.method:
            raise ValueError(f"--lexicon {lexicon_args.lexicon}: the lexicon at {lexicon_args.lexicon_path} was made "
                             f"by {lexicon.method!r}; leave out --lexicon (the saved lexicon names its learner)")
        lexicon_args.lexicon = lexicon.method
        if lexicon_args.lexicon_temperature is not None:
            lexicon = Lexicon.from_dict({**lexicon.to_dict(), "temperature": lexicon_args.lexicon_temperature})
        lexicon_args.lexicon_temperature = lexicon.temperature
        fallback = replaced_fallback(lexicon.fallback, lexicon_args.lexicon_fallback, lexicon.method)
        if fallback != lexicon.fallback:
            lexicon = Lexicon.from_dict({**lexicon.to_dict(), "fallback": fallback})
    else:
        lexicon_args.lexicon = lexicon_args.lexicon or "simple"
        lexicon_args.lexicon_temperature = lexicon_args.lexicon_temperature or 0.0
        if lexicon_args.lexicon == "none":
            return None
        provenance = {"dataset": data_args.benchmark or data_args.train_file, "config": data_args.benchmark_config,
                      "split": "train"}
        params = parse_params_text(lexicon_args.lexicon_params) if lexicon_args.lexicon_params else {}
        lexicon = learn_lexicon(raw["train"], method="identity" if lexicon_args.lexicon == "copy" else lexicon_args.lexicon,
                                temperature=lexicon_args.lexicon_temperature, seed=lexicon_args.lexicon_seed,
                                provenance=provenance, tie_break=lexicon_args.lexicon_tie_break or "cooccurrence",
                                fallback=lexicon_args.lexicon_fallback, **params)
    coverage = [c for c in apply_lexicon(raw["train"], lexicon, tokenizer=tokenizer)["lexicon_coverage"] if c is not None]
    logger.info(f"{lexicon.method} lexicon: {lexicon.num_entries} entries; mean target coverage on train "
                f"{statistics.fmean(coverage) if coverage else 0:.3f}")
    return lexicon


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


# ---------------------------------------------------------------------------------------------------- model and seeds
def build_model(model_args, lexicon_args, tokenizer, lexicon) -> LexicalSeq2SeqForConditionalGeneration:
    """A new model for these vocabularies, with L set from `lexicon` (None: no lexicon)."""
    config = LexicalSeq2SeqConfig(
        source_vocab_size=tokenizer.source_vocab_size, target_vocab_size=tokenizer.target_vocab_size,
        backbone=model_args.backbone, embedding_size=model_args.embedding_size, hidden_size=model_args.hidden_size,
        num_layers=model_args.num_layers, bidirectional_encoder=model_args.bidirectional_encoder,
        dropout=model_args.dropout, output_dropout=model_args.output_dropout,
        lexical_mode={"none": "none", "copy": "copy"}.get(lexicon_args.lexicon, "lexical"),
        train_lexicon=lexicon_args.learn_lexicon, max_decode_length=model_args.max_decode_length,
        vocabulary_sha256=tokenizer.vocabulary_sha256,
        **{name: getattr(model_args, name) for name in OPTIONAL_MODEL_FIELDS if getattr(model_args, name) is not None},
    )
    model = LexicalSeq2SeqForConditionalGeneration(config)
    if lexicon is not None:
        model.set_lexicon(lexicon, tokenizer)
    return model


def train_seeds(argv, args, seeds, tokenizer, lexicon, tokenized, raw, output_dir: Path) -> dict | None:
    """Every seed's metrics, ``{"0": {...}, ...}`` in the order of `seeds`: read for seeds a resumed run finished
    earlier, trained for the others (in subprocesses with --parallel_seeds). None in a worker or a non-main process."""
    experiment_args, training_args = args[3], args[4]
    settings = seed_settings(args, lexicon)
    per_seed, pending = {}, []
    for seed in seeds:
        seed_dir = output_dir / "seeds" / f"seed-{seed}"
        if training_args.resume_from_checkpoint:
            check_seed_settings(seed_dir, settings)
        elif training_args.process_index == 0 and not experiment_args.seed_worker:
            claim_seed_folder(seed_dir, seed, overwrite=experiment_args.overwrite_output_dir)
        if training_args.resume_from_checkpoint and (seed_dir / "metrics.json").exists():
            per_seed[str(seed)] = json.loads((seed_dir / "metrics.json").read_text())
            logger.info(f"seed {seed}: already finished, metrics read from {seed_dir / 'metrics.json'}")
        else:
            pending.append(seed)
    if experiment_args.parallel_seeds > 1 and training_args.world_size == 1 and len(pending) > 1:
        run_seeds_in_subprocesses(argv, pending, seeds[0], experiment_args.parallel_seeds)
        for seed in pending:
            per_seed[str(seed)] = json.loads((output_dir / "seeds" / f"seed-{seed}" / "metrics.json").read_text())
    else:
        published = experiment_args.publish_seed if experiment_args.publish_seed is not None else seeds[0]
        for seed in pending:
            per_seed[str(seed)] = run_seed(seed, seed == published, args, tokenizer, lexicon, tokenized, raw,
                                           output_dir, build_model)
    if training_args.process_index != 0 or experiment_args.seed_worker:
        return None
    return {str(seed): per_seed[str(seed)] for seed in seeds}
