"""Your own parallel data: pairs files (TSV, SCAN's ``IN: … OUT: …``, JSON lines) read into ``datasets``.

Every error names the file and the line (or, in a JSON array, the item) and says what to change.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import datasets

logger = logging.getLogger(__name__)

COLUMNS = ("source", "target")
JSON_SUFFIXES = (".jsonl", ".json")


def read_pairs_file(path: str | os.PathLike) -> tuple[list[str], list[str]]:
    """Your own parallel data from a UTF-8 text file, as ``(sources, targets)``.

    ``.jsonl`` / ``.json`` files hold JSON lines (or one JSON array) of objects with string values ``source`` and
    ``target`` (other keys are ignored; a JSON number is taken as its text as written, e.g. ``1.50``). Other files
    hold one pair per line: ``source<TAB>target`` (further columns, such as COGS's category, are ignored) or SCAN's
    ``IN: … OUT: …``. Lines end at ``\\n`` (or ``\\r\\n``) only: other Unicode line separators (U+2028, form feed,
    …) are whitespace inside a field. Blank lines are skipped, a UTF-8 byte-order mark is dropped, and a first line
    ``source<TAB>target`` (a header with the column names) is skipped with a warning.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a file that is not UTF-8; a line that is neither form, or whose source or target is empty; in
            JSON, a line that is not an object, or a ``source``/``target`` that is missing, null, empty or not a
            string (a list, an object, true/false); a file without pairs. The message names the file and line.
    """
    path = Path(path)
    lines = _read_lines(path)
    if path.name.lower().endswith(JSON_SUFFIXES):
        array = path.name.lower().endswith(".json") and "\n".join(lines).lstrip().startswith("[")
        pairs = _json_array_pairs(path, lines) if array else _json_lines_pairs(path, lines)
    else:
        pairs = _text_pairs(path, lines)
    if not pairs:
        raise ValueError(f"{path}: no pairs in the file")
    sources, targets = zip(*pairs)
    return list(sources), list(targets)


def load_pairs_file(path: str | os.PathLike) -> datasets.Dataset:
    """A ``datasets.Dataset`` with string columns ``source`` and ``target`` from your own file, read by
    :func:`read_pairs_file` (which says what each format holds and what is refused)."""
    sources, targets = read_pairs_file(path)
    return datasets.Dataset.from_dict({"source": sources, "target": targets})


def _read_lines(path: Path) -> list[str]:
    """The file's lines, split at ``\\n`` only, without a trailing ``\\r``; a file that is not UTF-8 is a
    `ValueError` naming the line and byte offset of the first undecodable byte."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is a directory, not a file of pairs" if path.is_dir()
                                else f"no such file: {path}")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        utf16 = data[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in data[:1000]
        guess, encoding = ("it looks like UTF-16", "UTF-16") if utf16 else ("Latin-1 or Windows-1252, perhaps",
                                                                            "LATIN1")
        raise ValueError(
            f"{path}:{line}: the file is not UTF-8 ({guess}): byte 0x{data[error.start]:02x} at byte offset "
            f"{error.start} cannot be decoded. Save it as UTF-8 (e.g. iconv -f {encoding} -t UTF-8, or your "
            "editor's 'save with encoding')"
        ) from None
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def _text_pairs(path: Path, lines: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if line.startswith("IN: ") and " OUT: " in line:
            source, target = line[len("IN: ") :].split(" OUT: ", 1)
        else:
            columns = line.split("\t")
            if len(columns) < 2:
                raise ValueError(f"{path}:{number}: expected 'source<TAB>target' or 'IN: … OUT: …'")
            source, target = columns[0], columns[1]
            if not pairs and (source.strip(), target.strip()) == COLUMNS:
                logger.warning(f"{path}:{number}: skipped the header line {line!r} (the column names, not a pair)")
                continue
        for side, text in zip(COLUMNS, (source, target)):
            if not text.strip():
                raise ValueError(f"{path}:{number}: empty {side} in {line!r}")
        pairs.append((source, target))
    return pairs


def _json_array_pairs(path: Path, lines: list[str]) -> list[tuple[str, str]]:
    """A ``.json`` file that starts with ``[``: one JSON array of objects."""
    try:
        items = _json_loads("\n".join(lines))
    except ValueError as error:
        line = f":{error.lineno}" if isinstance(error, json.JSONDecodeError) else ""
        raise ValueError(f"{path}{line}: not valid JSON ({_json_reason(error)})") from None
    return [_json_pair(f"{path}: array item {row}", row, item) for row, item in enumerate(items, start=1)]


def _json_lines_pairs(path: Path, lines: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = _json_loads(line)
        except ValueError as error:
            raise ValueError(
                f"{path}:{number}: not valid JSON ({_json_reason(error)}); a JSON-lines file holds one complete "
                'object per line, such as {"source": "dax lug", "target": "RED BLUE"}'
            ) from None
        pairs.append(_json_pair(f"{path}:{number}", len(pairs) + 1, record))
    return pairs


def _json_loads(text: str):
    """`json.loads` keeping numbers as the text they are written as; NaN and Infinity are refused."""
    def refuse(constant):
        raise ValueError(f"{constant} is not a JSON value")

    return json.loads(text, parse_int=str, parse_float=str, parse_constant=refuse)


def _json_reason(error: ValueError) -> str:
    return f"{error.msg} at column {error.colno}" if isinstance(error, json.JSONDecodeError) else str(error)


def _json_pair(where: str, row: int, record) -> tuple[str, str]:
    """``(source, target)`` of one JSON object; `where` names its file and line (or item), `row` counts pairs."""
    if not isinstance(record, dict):
        raise ValueError(f'{where}: expected an object with "source" and "target", got a JSON {_json_kind(record)}')
    pair = []
    for field in COLUMNS:
        value = record.get(field)
        if value is None:
            raise ValueError(f'{where}: row {row} has no {field} (add "{field}": "…" with a string of tokens)')
        if not isinstance(value, str):
            raise ValueError(
                f"{where}: the {field} of row {row} is a JSON {_json_kind(value)} ({json.dumps(value)[:60]}), not a "
                f'string: write it as one string of space-separated tokens, e.g. "{field}": "dax lug"'
            )
        if not value.strip():
            raise ValueError(f"{where}: row {row} has an empty {field}")
        pair.append(value)
    return pair[0], pair[1]


def _json_kind(value) -> str:
    if isinstance(value, bool):
        return "true/false value"
    return {dict: "object", list: "array", str: "string", type(None): "null"}.get(type(value), type(value).__name__)
