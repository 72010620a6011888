"""Your own parallel data: pairs files (TSV, SCAN's ``IN: … OUT: …``, JSON lines) read into ``datasets``."""

from __future__ import annotations

import os

import datasets


def read_pairs_file(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """Your own parallel data from a text file: one pair per line, ``source<TAB>target`` (further columns, such as
    COGS's category, are ignored) or SCAN's ``IN: … OUT: …``; blank lines are skipped.

    A UTF-8 byte-order mark (as some editors write) is dropped, not read as part of the first word.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a line that is neither form, or whose source or target is empty, or a file without pairs (the
            message names the file and line).
    """
    from pathlib import Path

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is a directory, not a file of pairs" if path.is_dir()
                                else f"no such file: {path}")
    sources, targets = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        if line.startswith("IN: ") and " OUT: " in line:
            source, target = line[len("IN: ") :].split(" OUT: ", 1)
        else:
            columns = line.split("\t")
            if len(columns) < 2:
                raise ValueError(f"{path}:{number}: expected 'source<TAB>target' or 'IN: … OUT: …'")
            source, target = columns[0], columns[1]
        for side, text in (("source", source), ("target", target)):
            if not text.strip():
                raise ValueError(f"{path}:{number}: empty {side} in {line!r}")
        sources.append(source)
        targets.append(target)
    if not sources:
        raise ValueError(f"{path}: no pairs in the file")
    return sources, targets


def load_pairs_file(path: str | os.PathLike) -> datasets.Dataset:
    """A ``datasets.Dataset`` with string columns ``source`` and ``target`` from your own file: JSON lines (or a
    JSON array) of objects with those keys (``.jsonl`` / ``.json``), otherwise a text file read by
    :func:`read_pairs_file`.

    Raises:
        ValueError: a JSON file without ``source``/``target`` keys, with a missing (null) or empty value, or without
            rows.
    """
    path = str(path)
    if not path.endswith((".jsonl", ".json")):
        sources, targets = read_pairs_file(path)
        return datasets.Dataset.from_dict({"source": sources, "target": targets})
    data = datasets.load_dataset("json", data_files=path, split="train")
    missing = {"source", "target"} - set(data.column_names)
    if missing:
        raise ValueError(f"{path}: missing key(s) {sorted(missing)} (columns: {data.column_names}); need source and target")
    data = data.select_columns(["source", "target"])
    if len(data) == 0:
        raise ValueError(f"{path}: no pairs in the file")
    for column in ("source", "target"):
        if None in data[column]:
            raise ValueError(f"{path}: row {data[column].index(None) + 1} has no {column}")
        if data.features[column] != datasets.Value("string"):  # e.g. numbers: the pair is text all the same
            data = data.cast_column(column, datasets.Value("string"))
        empty = [row for row, text in enumerate(data[column], start=1) if not text.strip()]
        if empty:
            raise ValueError(f"{path}: row {empty[0]} has an empty {column}")
    return data
