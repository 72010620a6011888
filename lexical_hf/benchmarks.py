"""The one entry point to the benchmark builders in ``dataset_scripts``: :func:`load_benchmark`.

``datasets`` >= 4 no longer runs loading scripts through ``load_dataset``, so the builders
(``datasets.GeneratorBasedBuilder`` subclasses) are called directly here: ``download_and_prepare()`` then
``as_dataset()``. Loaders know nothing about models; they return ordinary ``datasets.DatasetDict`` objects with at
least the string columns ``source`` and ``target`` (whitespace-tokenized).

Example::

    from lexical_hf.benchmarks import load_benchmark
    colors = load_benchmark("colors")                       # embedded, needs no files
    scan = load_benchmark("scan", "addprim_jump", validation_fraction=0.01)
    cogs = load_benchmark("cogs", data_dir="path/to/mirror", splits=["train", "validation", "test"])
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping

import datasets
import pyarrow

from .sibling_packages import import_sibling_package

# name -> (module, builder class); the modules live in the top-level `dataset_scripts` package
_BUILDERS = {
    "colors": ("dataset_scripts.colors", "Colors"),
    "scan": ("dataset_scripts.scan", "Scan"),
    "cogs": ("dataset_scripts.cogs", "Cogs"),
    "eng_cmn": ("dataset_scripts.eng_cmn", "EngCmn"),
}
_ALIASES = {
    "color": "colors",
    "eng-cmn": "eng_cmn",
    "translate": "eng_cmn",
    "tatoeba": "eng_cmn",
}


def canonical_benchmark_name(name: str) -> str:
    """The benchmark's name with aliases resolved (``"translate"``/``"tatoeba"`` -> ``"eng_cmn"``)."""
    key = name.lower()
    key = _ALIASES.get(key, key)
    if key not in _BUILDERS:
        raise ValueError(f"unknown benchmark {name!r}; available: {sorted(_BUILDERS)} (aliases: {sorted(_ALIASES)})")
    return key


def builder_class(name: str) -> type[datasets.GeneratorBasedBuilder]:
    """The ``datasets.GeneratorBasedBuilder`` subclass of a benchmark (aliases accepted)."""
    module_name, class_name = _BUILDERS[canonical_benchmark_name(name)]
    import_sibling_package("dataset_scripts")  # not another package of that name earlier on sys.path
    return getattr(importlib.import_module(module_name), class_name)


def list_benchmarks() -> dict[str, dict]:
    """Every benchmark with its configs, default config and splits.

    Returns:
        ``{name: {"configs": [...], "default_config": str | None, "splits": {config: [...]},
        "default_splits": {config: [...]}}}``.
    """
    catalogue = {}
    for name in _BUILDERS:
        cls = builder_class(name)
        configs = [config.name for config in cls.BUILDER_CONFIGS]
        splits = {config: list(cls.splits_of(config)[0]) for config in configs}
        default_splits = {config: list(cls.splits_of(config)[1]) for config in configs}
        catalogue[name] = {
            "configs": configs,
            "default_config": cls.DEFAULT_CONFIG_NAME,
            "splits": splits,
            "default_splits": default_splits,
        }
    return catalogue


def load_benchmark(
    name: str,
    config: str | None = None,
    *,
    data_dir: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    splits: Iterable[str] | None = None,
    validation_fraction: float | None = None,
    seed: int = 0,
    checksum_overrides: Mapping[str, str] | None = None,
    allow_download: bool = True,
    force_rebuild: bool = False,
) -> datasets.DatasetDict:
    """Load a benchmark of the paper as a ``datasets.DatasetDict``, in the paper's splits.

    Args:
        name: ``"colors"``, ``"scan"``, ``"cogs"`` or ``"eng_cmn"`` (aliases ``"translate"``, ``"tatoeba"``).
        config: the benchmark config; None picks the default (``colors``: ``default``; ``cogs``: ``paper``;
            ``eng_cmn``: ``paper``). SCAN has no default: pick one of ``list_benchmarks()["scan"]["configs"]``.
        data_dir: root of a local mirror of the raw files (layout ``SCAN/``, ``COGS/``, ``TRANSLATE/`` as in the
            project's ``shared/data``). Default: the ``LEXICAL_HF_DATA_DIR`` environment variable; when neither is
            set, files are downloaded from the upstream repositories, pinned to a commit. Colors and SCAN need no
            files.
        cache_dir: where ``datasets`` caches the prepared data (default: the ``datasets`` cache). The cache is keyed
            on the checksums of the raw files read, so a changed raw file never serves a stale dataset.
        splits: which splits to build (default: the config's default splits, e.g. COGS train/validation/test/gen).
            Use it to skip a split whose file you do not have, or to ask for COGS ``train_100``.
        validation_fraction: for benchmarks without a validation split (Colors, SCAN): hold out
            ``floor(fraction * len(train))`` train examples, chosen with ``seed``, as ``validation``. The paper used
            0.01 on SCAN. None: no validation split.
        seed: seed of the validation hold-out.
        checksum_overrides: ``{mirror_path: sha256}`` to accept a raw file that is not the pinned upstream file —
            e.g. ``{"COGS/gen.tsv": "<sha256 of your file>"}`` for a stand-in; without it such a file is rejected.
        allow_download: False: a file missing from the mirror is an error instead of a download.
        force_rebuild: rebuild the dataset even if a cached copy exists.

    Returns:
        A ``DatasetDict`` whose splits have string columns ``source`` and ``target`` and, per benchmark,
        ``category`` (COGS), ``one_shot`` (bool, eng_cmn) and ``attribution`` (eng_cmn ``raw``).

    Raises:
        ValueError: unknown benchmark, config or split, or a raw file that cannot be parsed.
        dataset_scripts.ChecksumMismatchError: a raw file (mirror or download) does not have the pinned bytes.
        dataset_scripts.MissingDataFileError: a raw file is neither in the mirror nor downloadable.
        OSError: the cached dataset cannot be read (its files were deleted or truncated): ``force_rebuild=True``.
    """
    cls = builder_class(name)
    builder = cls(
        config,
        data_dir=data_dir,
        cache_dir=None if cache_dir is None else str(cache_dir),
        splits=splits,
        validation_fraction=validation_fraction,
        seed=seed,
        checksum_overrides=checksum_overrides,
        allow_download=allow_download,
    )
    builder.download_and_prepare(
        download_mode=datasets.DownloadMode.FORCE_REDOWNLOAD if force_rebuild else None,
    )
    try:
        return builder.as_dataset()
    except (OSError, pyarrow.ArrowInvalid) as error:  # a cached Arrow file deleted or truncated since it was written
        raise OSError(
            f"the cached {name!r} dataset in {builder.cache_dir} cannot be read ({type(error).__name__}: {error}); "
            "load it again with force_rebuild=True to rebuild the cache from the raw files"
        ) from error


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
