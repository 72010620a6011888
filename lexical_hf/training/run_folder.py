"""One run owns its output folder: a lock for the run's whole life, and seed folders that a fresh run never mixes
with another run's checkpoints or metrics."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from pathlib import Path

LOCK_FILE = ".lexical_hf.lock"


@contextlib.contextmanager
def locked_run_folder(output_dir: Path):
    """Hold an exclusive lock on `output_dir` while the block runs; a second run into the same folder fails at once
    with a `RuntimeError` naming the run that holds it. The kernel releases the lock when the process ends, killed
    or not, so a lock is never left behind."""
    output_dir.mkdir(parents=True, exist_ok=True)
    with open(output_dir / LOCK_FILE, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise RuntimeError(f"{output_dir} is in use by another training run ({holder}): wait for it to finish, "
                               "or choose another --output_dir") from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"pid {os.getpid()}, since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        lock.flush()
        try:
            yield
        finally:
            lock.seek(0)
            lock.truncate()


def earlier_run_files(seed_dir: Path) -> list[str]:
    """What an earlier run left in a seed folder that a fresh run would otherwise mix with its own."""
    if not seed_dir.is_dir():
        return []
    found = sorted(path.name for path in seed_dir.glob("checkpoint-*"))
    found += [name for name in ("metrics.json", "final") if (seed_dir / name).exists()]
    return found


def claim_seed_folder(seed_dir: Path, seed: int, overwrite: bool) -> None:
    """Make `seed_dir` this fresh run's: empty already, emptied with `overwrite`, or a `ValueError` saying how to go
    on. Without this a later resume would adopt the earlier run's newest checkpoint under this run's settings."""
    found = earlier_run_files(seed_dir)
    if not found:
        return
    if overwrite:
        shutil.rmtree(seed_dir)
        return
    shown = ", ".join(found[:4]) + (", …" if len(found) > 4 else "")
    raise ValueError(f"{seed_dir} holds an earlier run of seed {seed} ({shown}): pass --resume_from_checkpoint true to "
                     "continue it, --overwrite_output_dir true to train it again from scratch, or choose another "
                     "--output_dir")
