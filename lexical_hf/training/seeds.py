"""One training per seed: build the model and its `Seq2SeqTrainer`, train (or resume), evaluate the test splits; run
seeds side by side in subprocesses; and refuse to reuse a seed folder trained with other settings."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import datasets
from transformers import Seq2SeqTrainingArguments, TrainerState, set_seed

from .. import evaluation
from ..decoding import generate_texts
from ..results import settings_differences
from .augmenting import augmentation_settings, augmented_training_split
from .collator import CheckedDataCollator
from .checkpoints import CheckpointDigests, TrainingClock, last_complete_checkpoint, load_weights, recorded_training_seconds
from .publish import write_json_atomic
from .trainer import (LexicalSeq2SeqTrainer, SplitMonitor, StopRequest, TrainingLossStop, WallClockLimit,
                      validation_exact_match)

logger = logging.getLogger("lexical_hf.training")

# what a seed's result depends on in Seq2SeqTrainingArguments; evaluation steps belong here too: which checkpoint
# validation selects, and the random numbers that evaluation draws between updates (DataLoader seeds), depend on them
TRAINING_SETTINGS = ("learning_rate", "lr_scheduler_type", "warmup_steps", "warmup_ratio", "max_steps", "num_train_epochs",
                     "per_device_train_batch_size", "gradient_accumulation_steps", "max_grad_norm", "weight_decay",
                     "adam_beta1", "adam_beta2", "adam_epsilon", "optim", "optim_args", "train_sampling_strategy",
                     "generation_num_beams", "eval_strategy", "eval_steps", "tf32",
                     "logging_steps")  # --stop_at_train_loss reads the loss logged every logging_steps updates
# With --torch_compile or --cuda_graphs the batches are padded to a multiple of this length (source and target), so
# that the step sees a few shapes (each is traced or captured once), and dynamo may keep that many traces
COMPILED_BUCKET = 16
COMPILED_TRACES = 64
DATA_SETTINGS = ("benchmark", "benchmark_config", "benchmark_splits", "benchmark_params", "train_file", "validation_file",
                 "test_file", "validation_fraction", "max_train_samples", "max_eval_samples", "source_bos")


def tokenize_pairs(pairs, tokenizer):
    """`input_ids` / `attention_mask` / `labels` of a split or DatasetDict, the text columns dropped: what the
    Trainer reads."""
    columns = pairs["train"].column_names if isinstance(pairs, datasets.DatasetDict) else pairs.column_names
    return pairs.map(lambda batch: tokenizer(batch["source"], text_target=batch["target"]), batched=True,
                     remove_columns=columns, desc="Tokenizing")


def test_splits(data) -> list[str]:
    """Every split that is evaluated at the end: test-like splits (COGS gen included), else validation."""
    names = [s for s in data if s not in ("train", "validation", "train_100")]
    if names and "validation" in data and data["validation"].info.builder_name == "transduction":
        names.append("validation")  # fresh samples of the training distribution, which Grefenstette et al. score too
    return names or [s for s in data if s == "validation"]


def seed_settings(args, lexicon) -> dict:
    """Everything a seed's result depends on besides the seed (data, lexicon, model, training recipe), as JSON values:
    a finished or interrupted seed is reused by --resume_from_checkpoint only when these are unchanged."""
    data_args, lexicon_args, model_args, experiment_args, training_args = args
    settings = {
        "data": {key: getattr(data_args, key) for key in DATA_SETTINGS},
        # what L is made of, not the lexicon's provenance (a dataset fingerprint can differ between two loads of a file)
        "lexicon": None if lexicon is None else lexicon.content_sha256(),
        "lexicon_use": {key: getattr(lexicon_args, key) for key in ("learn_lexicon", "lexicon_temperature")},
        "model": asdict(model_args),
        "training": {key: getattr(training_args, key, None) for key in TRAINING_SETTINGS},
        "selection": experiment_args.selection,
        "group_by_target_length": experiment_args.group_by_target_length,
        "max_train_minutes": experiment_args.max_train_minutes,
        "stop_at_train_loss": experiment_args.stop_at_train_loss,
        "curriculum": curriculum(experiment_args),
        "augmentation": augmentation_settings(data_args),
    }
    return json.loads(json.dumps(settings, default=str))


def curriculum(experiment_args) -> dict | None:
    """The length curriculum of the run, or None: ``{"max_source_length": N, "updates": K}``."""
    if experiment_args.curriculum_max_source_length is None:
        return None
    return {"max_source_length": experiment_args.curriculum_max_source_length,
            "updates": experiment_args.curriculum_steps}


def first_loss_read(experiment_args, training_args) -> int:
    """The first update whose logged training loss `--stop_at_train_loss` reads: 0, or with a length curriculum the
    first whose window of `logging_steps` updates lies wholly after it."""
    if experiment_args.curriculum_max_source_length is None:
        return 0
    return experiment_args.curriculum_steps + training_args.logging_steps


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


def seed_training_arguments(training_args, seed: int, seed_dir: Path, has_validation: bool):
    """The run's `Seq2SeqTrainingArguments` with this seed's changes. With selection on validation: evaluate and save
    ten times a run unless the user set the interval, keep two checkpoints unless told otherwise, and load the best
    at the end. `dataclasses.replace` keeps every value as it is (`to_dict()` is for logging: it masks tokens)."""
    changes = dict(output_dir=str(seed_dir), seed=seed, push_to_hub=False, save_only_model=False)
    if has_validation:
        defaults = Seq2SeqTrainingArguments.__dataclass_fields__
        user_set = {name for name in ("eval_steps", "save_steps", "save_total_limit")
                    if getattr(training_args, name) != defaults[name].default}
        interval = training_args.eval_steps if "eval_steps" in user_set else (
            max(1, training_args.max_steps // 10) if training_args.max_steps > 0 else None)
        changes.update(eval_strategy="steps" if interval else "epoch", save_strategy="steps" if interval else "epoch",
                       load_best_model_at_end=True, metric_for_best_model="exact_match", greater_is_better=True)
        if "save_total_limit" not in user_set:
            changes.update(save_total_limit=2)
        if interval:
            changes.update(eval_steps=interval)
            if "save_steps" not in user_set:
                changes.update(save_steps=interval)  # load_best_model_at_end needs a checkpoint at each evaluation
    else:
        changes.update(eval_strategy="no", load_best_model_at_end=False)
    return dataclasses.replace(training_args, **changes)


def train_one_seed(seed, args, tokenizer, lexicon, tokenized, raw, seed_dir: Path, build_model):
    """Train seed `seed` (resuming from its last complete checkpoint when asked) and evaluate every test split.
    Returns the trainer and the seed's metrics ``{split: {...}, "train_seconds": {...}}``."""
    data_args, lexicon_args, model_args, experiment_args, training_args = args
    set_seed(seed)
    model = build_model(model_args, lexicon_args, tokenizer, lexicon)
    if training_args.torch_compile:  # one trace per (source, target) bucket of the padded batches
        from torch import _dynamo

        _dynamo.config.recompile_limit = max(_dynamo.config.recompile_limit, COMPILED_TRACES)
    has_validation = "validation" in tokenized and experiment_args.selection == "validation"
    seed_args = seed_training_arguments(training_args, seed, seed_dir, has_validation)
    train, augmentation = tokenized["train"], None
    if data_args.augment:
        train, augmentation = augmented_training_split(raw["train"], lambda pairs: tokenize_pairs(pairs, tokenizer),
                                                       data_args, seed)

    def compute_metrics(prediction):
        # Under DDP the gathered arrays can end with a few repeated examples (even batches); the first
        # len(eval set) rows are all distinct and predictions stay aligned with labels.
        count = len(tokenized["validation"])
        return {"exact_match": validation_exact_match(tokenizer, prediction.predictions[:count],
                                                      prediction.label_ids[:count])}

    bucketed = seed_args.torch_compile or experiment_args.cuda_graphs  # one trace or capture per padded shape
    trainer = LexicalSeq2SeqTrainer(
        group_by_target_length=experiment_args.group_by_target_length, cuda_graphs=experiment_args.cuda_graphs,
        length_curriculum=(experiment_args.curriculum_max_source_length, experiment_args.curriculum_steps)
        if experiment_args.curriculum_max_source_length is not None else None,
        model=model, args=seed_args, train_dataset=train,
        eval_dataset=tokenized["validation"] if has_validation else None,
        data_collator=CheckedDataCollator(tokenizer, model=model,
                                          pad_to_multiple_of=COMPILED_BUCKET if bucketed else None),
        processing_class=tokenizer,
        compute_metrics=compute_metrics,
    )
    time_limit = None
    if experiment_args.max_train_minutes is not None:
        time_limit = WallClockLimit(60 * experiment_args.max_train_minutes)
        trainer.add_callback(time_limit)
    loss_stop = None
    if experiment_args.stop_at_train_loss is not None:
        loss_stop = TrainingLossStop(experiment_args.stop_at_train_loss,
                                     not_before=first_loss_read(experiment_args, seed_args))
        trainer.add_callback(loss_stop)
    stop_request = StopRequest(seed_dir)  # `touch seeds/seed-K/STOP`: end this seed now, evaluated and recorded
    trainer.add_callback(stop_request)
    if experiment_args.monitor_splits:  # after the limits above: a seed they stop is decoded at its last update
        trainer.add_callback(split_monitor(experiment_args, seed_args, raw, tokenizer))
    resume = last_complete_checkpoint(seed_dir) if training_args.resume_from_checkpoint else None
    seconds_before = recorded_training_seconds(seed_dir).get(Path(resume).name) if resume else 0.0
    clock = TrainingClock(seed_dir, seconds_before or 0.0)
    trainer.add_callback(clock)
    trainer.add_callback(CheckpointDigests())
    finished = resume is not None and finished_training(resume, seed_args, experiment_args.stop_at_train_loss,
                                                        not_before=first_loss_read(experiment_args, seed_args))
    if finished:
        # killed after its last update (e.g. while decoding the test split): the Trainer would train one update
        # more; the end of training is restored instead (the best checkpoint's weights when selecting on validation)
        logger.info(f"seed {seed}: training had ended at {resume}; evaluating it")
        trainer.state = TrainerState.load_from_json(str(Path(resume) / "trainer_state.json"))
        best = trainer.state.best_model_checkpoint if seed_args.load_best_model_at_end else None
        load_weights(trainer.model, seed_dir / Path(best).name if best else Path(resume))
    else:
        if resume:
            logger.info(f"seed {seed}: resuming from {resume}")
        trainer.train(resume_from_checkpoint=resume)
        if training_args.process_index == 0:
            stop_request.forget()

    metrics = {}
    best = trainer.state.best_model_checkpoint if seed_args.load_best_model_at_end else None
    if best:  # the weights evaluated below: the first checkpoint with the best validation exact match
        metrics["selected_checkpoint"] = {"update": int(Path(best).name.rsplit("-", 1)[1]),
                                          "validation_exact_match": trainer.state.best_metric}
    for split in test_splits(tokenized):
        predictions = generate_texts(trainer.model, tokenizer, raw[split]["source"],
                                     batch_size=seed_args.per_device_eval_batch_size,
                                     num_beams=seed_args.generation_num_beams or 1)
        metrics[split] = evaluation.benchmark_metrics(raw, split, predictions)
    # the updates done: fewer than max_steps when the wall-clock limit (a reduced run), a stop by hand or the training
    # loss ended training; the time of every segment of a resumed seed, or of the last one only when the earlier ones
    # were not recorded
    metrics["train_seconds"] = {"value": (seconds_before or 0.0) if finished else clock.seconds,
                                "updates": trainer.state.global_step,
                                "stopped_by_time_limit": bool(time_limit and time_limit.stopped),
                                "stopped_by_request": stop_request.stopped}
    if loss_stop is not None:
        metrics["train_seconds"]["stopped_by_train_loss"] = loss_stop.stopped or (
            finished and trainer.state.global_step < seed_args.max_steps)
    if resume and seconds_before is None:
        metrics["train_seconds"]["earlier_segments_unrecorded"] = True
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    if logged:  # the mean loss over the last logging window: what a pick by training perplexity compares
        metrics["train_loss"] = {"last_logged": logged[-1]["loss"], "update": logged[-1]["step"],
                                 "window": seed_args.logging_steps}
    if augmentation is not None:
        metrics["augmentation"] = augmentation
    return trainer, metrics


def split_monitor(experiment_args, seed_args, raw, tokenizer) -> SplitMonitor:
    """The `SplitMonitor` of ``--monitor_splits`` (every ``--monitor_steps`` updates, by default a tenth of the run)."""
    splits = [split.strip() for split in experiment_args.monitor_splits.split(",") if split.strip()]
    missing = [split for split in splits if split not in raw]
    if missing or not splits:
        raise ValueError(f"--monitor_splits {experiment_args.monitor_splits!r}: this run's data has the splits "
                         f"{', '.join(sorted(raw))}")
    interval = experiment_args.monitor_steps or (max(1, seed_args.max_steps // 10) if seed_args.max_steps > 0 else None)
    if interval is None:
        raise ValueError("--monitor_splits in a run counted in epochs (no --max_steps) needs --monitor_steps")
    return SplitMonitor({split: raw[split]["source"] for split in splits},
                        lambda split, predictions: evaluation.benchmark_metrics(raw, split, predictions), tokenizer,
                        interval, seed_args.per_device_eval_batch_size, seed_args.generation_num_beams or 1)


def finished_training(checkpoint: str, seed_args, stop_at_train_loss: float | None = None, not_before: int = 0) -> bool:
    """Whether the checkpoint was saved at the run's last update: max_steps reached, or (with `stop_at_train_loss`)
    its last logged training loss at or below that value, logged at update `not_before` or later."""
    state = json.loads((Path(checkpoint) / "trainer_state.json").read_text())
    if seed_args.max_steps > 0 and state.get("global_step", 0) >= seed_args.max_steps:
        return True
    losses = [entry["loss"] for entry in state.get("log_history", [])
              if "loss" in entry and entry.get("step", 0) >= not_before]
    return stop_at_train_loss is not None and bool(losses) and losses[-1] <= stop_at_train_loss


def run_seed(seed, publish, args, tokenizer, lexicon, tokenized, raw, output_dir: Path, build_model) -> dict:
    """Train one seed; the main process writes its metrics.json (and, for the published seed, its final model)."""
    experiment_args, training_args = args[3], args[4]
    seed_dir = output_dir / "seeds" / f"seed-{seed}"
    if training_args.process_index == 0:
        seed_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(seed_dir / "settings.json", seed_settings(args, lexicon))
    trainer, metrics = train_one_seed(seed, args, tokenizer, lexicon, tokenized, raw, seed_dir, build_model)
    if trainer.is_world_process_zero():
        seed_dir.mkdir(parents=True, exist_ok=True)
        if publish:
            trainer.save_model(str(seed_dir / "final"))
            tokenizer.save_pretrained(str(seed_dir / "final"))
        if not experiment_args.keep_seed_checkpoints:
            for checkpoint in seed_dir.glob("checkpoint-*"):
                shutil.rmtree(checkpoint, ignore_errors=True)
        write_json_atomic(seed_dir / "log_history.json", trainer.state.log_history)  # losses, evaluations, monitoring
        write_json_atomic(seed_dir / "metrics.json", metrics)
        summary_line = "  ".join(f"{split}: EM {m['exact_match']:.3f}" for split, m in metrics.items() if "exact_match" in m)
        print(f"[seed {seed}] {summary_line}", flush=True)
    return metrics


def run_seeds_in_subprocesses(argv: list[str], seeds: list[int], published_seed: int, workers: int) -> None:
    """Train `seeds` `workers` at a time, each in its own process with its share of the CPU threads.

    On CPUs, small recurrent models scale badly across threads (each step is many small matmuls), so N seeds side
    by side with cores/N threads each finish sooner than N seeds one after another. Each worker runs
    ``python -m lexical_hf.training`` for one seed and writes seeds/seed-K/metrics.json; the parent then aggregates."""
    threads = max(1, (os.cpu_count() or 1) // workers)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    queue, running = list(seeds), []
    while queue or running:
        while queue and len(running) < workers:
            seed = queue.pop(0)
            command = [sys.executable, "-m", "lexical_hf.training", *argv, "--seeds", str(seed), "--seed_worker", "true",
                       "--publish_seed", str(published_seed), "--parallel_seeds", "1"]
            running.append((seed, subprocess.Popen(command, env=env)))
        seed, process = running.pop(0)
        if process.wait() != 0:
            for _, other in running:
                other.kill()
            raise RuntimeError(f"seed {seed} failed (exit status {process.returncode}); see its output above")
