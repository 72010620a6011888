"""Checkpoints a seed can resume from: which ones are whole, how long training took before them, and their weights.

The Trainer writes a checkpoint's files one after the other (model, optimizer, scheduler, RNG states, and
`trainer_state.json` last), none of them atomically. Two callbacks add what a resume needs to trust them:
`CheckpointDigests` records the sha256 of every file once the save is over, and `TrainingClock` the training time up
to each checkpoint, so a resumed seed reports its whole training time, not its last segment's.
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path

from transformers import TrainerCallback

from ..files import replace_atomically, sha256_of_file

logger = logging.getLogger("lexical_hf.training")

DIGESTS_FILE = "checkpoint_sha256.json"  # inside each checkpoint-N folder
CLOCK_FILE = "train_seconds.json"  # in the seed folder: {"checkpoint-N": seconds of training up to it}


class CheckpointDigests(TrainerCallback):
    """After each save, `checkpoint-N/checkpoint_sha256.json`: the sha256 of every file the save wrote."""

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                digests = {path.name: sha256_of_file(path) for path in sorted(folder.iterdir())
                           if path.is_file() and path.name != DIGESTS_FILE}
                replace_atomically(folder / DIGESTS_FILE, json.dumps(digests, indent=1) + "\n")
        return control


class TrainingClock(TrainerCallback):
    """Training seconds of a seed across resumes: `seconds_before` (the time recorded for the checkpoint the run
    resumed from) plus this run's; `CLOCK_FILE` records the total at every save."""

    def __init__(self, seed_dir: Path, seconds_before: float = 0.0):
        self.seed_dir, self.seconds_before = seed_dir, seconds_before
        self.start = self.end = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.start, self.end = time.perf_counter(), None

    def on_train_end(self, args, state, control, **kwargs):
        self.end = time.perf_counter()

    @property
    def seconds(self) -> float:
        """Training time so far (up to the end of training once it has ended)."""
        if self.start is None:
            return self.seconds_before
        return self.seconds_before + (self.end or time.perf_counter()) - self.start

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            recorded = recorded_training_seconds(self.seed_dir)
            recorded[f"checkpoint-{state.global_step}"] = self.seconds
            replace_atomically(self.seed_dir / CLOCK_FILE, json.dumps(recorded, indent=1) + "\n")
        return control


def recorded_training_seconds(seed_dir: Path) -> dict[str, float]:
    try:
        return json.loads((seed_dir / CLOCK_FILE).read_text())
    except (OSError, ValueError):
        return {}


def checkpoint_problem(folder: Path) -> str | None:
    """Why the checkpoint in `folder` cannot be resumed from, or None when it can: no readable
    `trainer_state.json` (a save cut off before its last file), or a file that differs from the digest recorded
    after its save (damaged since). Checkpoints saved without digests are judged by `trainer_state.json` alone."""
    try:
        json.loads((folder / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return "no readable trainer_state.json (its save was interrupted)"
    try:
        digests = json.loads((folder / DIGESTS_FILE).read_text())
    except OSError:
        return None
    except ValueError:
        return f"an unreadable {DIGESTS_FILE}"
    for name, expected in digests.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if sha256_of_file(path) != expected:
            return f"{name} differs from the sha256 recorded when it was saved (damaged or truncated)"
    return None


def last_complete_checkpoint(seed_dir: Path) -> str | None:
    """The newest `checkpoint-N` in `seed_dir` that can be resumed from (`checkpoint_problem`), or None.

    `transformers.trainer_utils.get_last_checkpoint` would pick the newest folder even when its save was cut off or
    a file was damaged since, and every later resume would fail on it; here such a folder is skipped with a warning
    (and left in place: the next save at that step writes it again), and the previous one is used."""
    numbered = [(int(path.name.split("-")[1]), path) for path in seed_dir.glob("checkpoint-*")
                if path.is_dir() and re.fullmatch(r"checkpoint-\d+", path.name)] if seed_dir.is_dir() else []
    for _, path in sorted(numbered, reverse=True):
        problem = checkpoint_problem(path)
        if problem is None:
            return str(path)
        logger.warning(f"{path}: {problem}; not resuming from it")
    return None


def load_weights(model, folder: Path) -> None:
    """Load the weights saved in `folder` (one safetensors file or shards) into `model`, strictly."""
    from transformers.trainer_utils import load_sharded_checkpoint

    single = folder / "model.safetensors"
    if single.is_file():
        from safetensors.torch import load_file

        missing, unexpected = model.load_state_dict(load_file(single), strict=False)
        if missing or unexpected:
            raise ValueError(f"{single} does not match the model: missing {missing}, unexpected {unexpected}")
    else:
        load_sharded_checkpoint(model, str(folder), strict=True)
