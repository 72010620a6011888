"""Where a result comes from: the code revision that trained it and the machine it ran on."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

import torch

import lexical_hf


def source_revision(checkout: Path) -> str | None:
    """`git describe --always` of the checkout at `checkout` (None outside one), with `-dirty` when tracked files
    other than results (`results/`, `*.md`) have uncommitted changes: a row's numbers depend on the code's arithmetic,
    not only on its version number, while the result files that other rows write meanwhile do not."""
    try:
        git = lambda *args: subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True, timeout=30,  # noqa: E731
                                           check=True).stdout.strip()
        revision = git("describe", "--always")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ":(top)", ":(top,exclude)results",
                      ":(top,exclude,glob)**/*.md")
    except (OSError, subprocess.SubprocessError):
        return None
    if not revision:
        return None
    return f"{revision}-dirty" if changed else revision


def code_revision() -> str:
    """The revision of the code that trains: the git checkout `lexical_hf` is imported from (`source_revision`), or
    its version when it is installed from a wheel (no checkout of its own: a git repository around site-packages
    says nothing about it). ``LEXICAL_HF_SOURCE_REVISION`` states it where the checkout's own git cannot (a copy of
    the working tree on a lent machine with a stale ``.git``); the record then says it was stated."""
    if os.environ.get("LEXICAL_HF_SOURCE_REVISION"):
        return f"{os.environ['LEXICAL_HF_SOURCE_REVISION']} (stated)"
    package_root = Path(lexical_hf.__file__).resolve().parents[1]
    try:
        toplevel = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=package_root, capture_output=True,
                                  text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        toplevel = ""
    in_checkout = bool(toplevel) and Path(toplevel).resolve() == package_root
    return (source_revision(package_root) if in_checkout else None) or f"lexical_hf {lexical_hf.__version__}"


def machine_description(parallel_seeds: int = 1) -> str:
    """The device (GPU name, or CPU cores and torch threads per run), the platform and the torch version."""
    threads = max(1, (os.cpu_count() or 1) // parallel_seeds) if parallel_seeds > 1 else torch.get_num_threads()
    seeds_note = f", {parallel_seeds} seeds at a time" if parallel_seeds > 1 else ""
    device = (torch.cuda.get_device_name(0) if torch.cuda.is_available()
              else f"CPU ({os.cpu_count()} cores, {threads} torch thread(s) per run{seeds_note})")
    return f"{device}; {platform.platform()}; torch {torch.__version__}"
