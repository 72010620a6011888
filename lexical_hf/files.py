"""File helpers every part of the package shares: a file's sha256, and replacing a file atomically."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path


def sha256_of_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def replace_atomically(path, text: str | None = None, copy_from=None) -> None:
    """Write `text` to `path`, or copy the file `copy_from` there, through a hidden file beside it and `os.replace`:
    a reader (another run, a push, a summary running meanwhile) sees the old file or the new one, never half of it."""
    path = Path(path)
    staged = path.with_name(f".{path.name}.partial")
    if copy_from is not None:
        shutil.copy2(copy_from, staged)
    else:
        staged.write_text(text, encoding="utf-8")
    os.replace(staged, path)
