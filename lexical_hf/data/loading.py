"""The one entry point to the benchmark builders of this package: :func:`load_benchmark`.

``datasets`` >= 4 no longer runs loading scripts through ``load_dataset``, so the builders
(``datasets.GeneratorBasedBuilder`` subclasses) are called directly here: ``download_and_prepare()`` then
``as_dataset()``. Loaders know nothing about models; they return ordinary ``datasets.DatasetDict`` objects with at
least the string columns ``source`` and ``target`` (whitespace-tokenized).

Example::

    from lexical_hf.data import load_benchmark
    colors = load_benchmark("colors")                       # embedded, needs no files
    scan = load_benchmark("scan", "addprim_jump", validation_fraction=0.01)
    cogs = load_benchmark("cogs", data_dir="path/to/mirror", splits=["train", "validation", "test"])
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Iterable, Mapping

import datasets
import pyarrow

from ._common import LexicalBenchmarkConfig

# name -> (module of this package, builder class)
_BUILDERS = {
    "colors": (".colors", "Colors"),
    "scan": (".scan", "Scan"),
    "cogs": (".cogs", "Cogs"),
    "eng_cmn": (".eng_cmn", "EngCmn"),
    "transduction": (".transduction", "Transduction"),
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
    return getattr(importlib.import_module(module_name, __package__), class_name)


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
    config_overrides: Mapping[str, object] | None = None,
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
        config_overrides: fields of the config to change for this load, e.g. for ``transduction``
            ``{"train_lengths": (8, 16), "train_size": 75_000}`` (see ``config_fields(name)``); the cache keeps
            each variant apart.

    Returns:
        A ``DatasetDict`` whose splits have string columns ``source`` and ``target`` and, per benchmark,
        ``category`` (COGS), ``one_shot`` (bool, eng_cmn) and ``attribution`` (eng_cmn ``raw``).

    Raises:
        ValueError: unknown benchmark, config, split or config field, a field value of the wrong type, or a raw
            file that cannot be parsed.
        lexical_hf.data.ChecksumMismatchError: a raw file (mirror or download) does not have the pinned bytes.
        lexical_hf.data.MissingDataFileError: a raw file is neither in the mirror nor downloadable.
        OSError: the cached dataset cannot be read (its files were deleted or truncated): ``force_rebuild=True``.
    """
    cls = builder_class(name)
    overrides = _check_config_overrides(name, config_overrides or {})
    builder = cls(
        config,
        data_dir=data_dir,
        cache_dir=None if cache_dir is None else str(cache_dir),
        splits=splits,
        validation_fraction=validation_fraction,
        seed=seed,
        checksum_overrides=checksum_overrides,
        allow_download=allow_download,
        **overrides,
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


def config_fields(name: str) -> dict[str, object]:
    """The fields of benchmark ``name``'s config that ``load_benchmark(config_overrides=...)`` can change, with their
    defaults (empty for benchmarks whose configs are fixed by their files)."""
    cls = builder_class(name).BUILDER_CONFIG_CLASS
    fixed = {f.name for f in dataclasses.fields(LexicalBenchmarkConfig)}
    return {f.name: getattr(cls, f.name) for f in dataclasses.fields(cls) if f.name not in fixed}


def _check_config_overrides(name: str, overrides: Mapping[str, object]) -> dict[str, object]:
    """``overrides`` checked against the config's fields (name and type of the default); lists become tuples."""
    known = config_fields(name)
    checked = {}
    for field, value in overrides.items():
        if field not in known:
            available = ", ".join(sorted(known)) or "none"
            raise ValueError(f"{name!r} has no config field {field!r} to override (fields: {available})")
        default = known[field]
        if isinstance(default, tuple):
            if not isinstance(value, (list, tuple)) or len(value) != len(default) or not all(
                    isinstance(v, int) and not isinstance(v, bool) for v in value):
                raise ValueError(f"config field {field!r} of {name!r} takes {len(default)} ints like {list(default)}, "
                                 f"got {value!r}")
            value = tuple(value)
        elif isinstance(default, int) and (not isinstance(value, int) or isinstance(value, bool)):
            raise ValueError(f"config field {field!r} of {name!r} takes an int like {default}, got {value!r}")
        checked[field] = value
    return checked
