"""``augment``: data augmentation as a ``datasets`` step.

    from lexical_hf.augmentation import augment, mix_augmented
    new = augment(dataset["train"], "geca", seed=0, preset="scan")           # only the new pairs
    new, stats = augment(dataset["train"], "geca", seed=0, return_stats=True)
    print(stats.summary())                                                   # candidates left after each filter
    train = mix_augmented(dataset["train"], new, aug_ratio=0.3, seed=0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple, overload

import datasets

from .geca import GecaSettings, GecaStats, geca

METHODS = ("geca",)


def available_methods() -> list[str]:
    """Names accepted by ``augment(method=...)``."""
    return list(METHODS)


class AugmentResult(NamedTuple):
    """``augment(..., return_stats=True)``: the new pairs and what the composition did."""

    dataset: datasets.Dataset
    stats: GecaStats


@overload
def augment(dataset, method: str = ..., *, seed: int = ..., preset: str | None = ...,
            return_stats: Literal[False] = ..., source_column: str = ..., target_column: str = ...,
            **settings) -> datasets.Dataset: ...


@overload
def augment(dataset, method: str = ..., *, seed: int = ..., preset: str | None = ...,
            return_stats: Literal[True], source_column: str = ..., target_column: str = ...,
            **settings) -> AugmentResult: ...


def augment(
    dataset: datasets.Dataset | datasets.IterableDataset | Sequence[tuple[str, str]],
    method: str = "geca",
    *,
    seed: int = 0,
    preset: str | None = None,
    return_stats: bool = False,
    source_column: str = "source",
    target_column: str = "target",
    **settings,
) -> datasets.Dataset | AugmentResult:
    """New training pairs composed from ``dataset`` (only the new ones: mix them in with :func:`mix_augmented`).

    Args:
        dataset: a split with whitespace-tokenized string columns ``source_column`` and ``target_column`` (or a
            sequence of ``(source, target)`` strings).
        method: ``"geca"`` (Andreas 2020; see :mod:`lexical_hf.augmentation.geca` for the algorithm).
        seed: one int. Augment once per training seed; pooling several seeds' augmentations inflates results.
        preset: settings of a benchmark, ``"scan"``, ``"cogs"``, ``"colors"`` or ``"eng_cmn"`` (see ``PRESETS``);
            None: the reference implementation's defaults.
        return_stats: also return the composition's :class:`GecaStats` (``AugmentResult(dataset, stats)``).
        source_column, target_column: the text columns; the result uses the same names.
        **settings: :class:`GecaSettings` fields, overriding the preset (e.g. ``wug_size=1, n_sample=None``).

    Returns:
        A ``datasets.Dataset`` with string columns ``source_column`` and ``target_column``, in the order the pairs
        were kept; with ``return_stats``, ``AugmentResult(dataset, stats)``.

    Raises:
        ValueError: unknown method or preset, a bad setting value, an empty dataset, a missing column, or a pair
            containing the separator token.
        TypeError: an unknown setting name, a non-int seed (or a list of seeds), or a non-string value.
    """
    if method not in METHODS:
        raise ValueError(f"unknown augmentation method {method!r}; available: {available_methods()}")
    geca_settings = GecaSettings.from_preset(preset, **settings)
    pairs = _pairs(dataset, source_column, target_column)
    result = geca(pairs, geca_settings, seed=seed)
    sources, targets = ([list(column) for column in zip(*result.pairs)] if result.pairs else ([], []))
    features = datasets.Features({source_column: datasets.Value("string"), target_column: datasets.Value("string")})
    info = datasets.DatasetInfo(description=f"GECA augmentation, seed {seed}: {geca_settings.to_dict()}",
                                features=features)
    new = datasets.Dataset.from_dict({source_column: sources, target_column: targets}, features=features, info=info)
    return AugmentResult(new, result.stats) if return_stats else new


def _pairs(dataset, source_column: str, target_column: str) -> list[tuple[str, str]]:
    """The ``(source, target)`` pairs of a split, with errors that name the problem."""
    if isinstance(dataset, datasets.DatasetDict):
        raise TypeError(f"augment one split, e.g. dataset['train'], not a DatasetDict with splits {list(dataset)}")
    if isinstance(dataset, (datasets.Dataset, datasets.IterableDataset)):
        rows = dataset if dataset.column_names is None else None  # an iterable dataset of unknown columns
        columns = dataset.column_names or (list(next(iter(dataset), {})) if rows is not None else [])
        missing = [c for c in (source_column, target_column) if c not in columns]
        if missing:
            raise ValueError(f"the dataset has no column {missing[0]!r} (columns: {columns}); name the text columns "
                             f"with source_column=... and target_column=...")
        if isinstance(dataset, datasets.Dataset):
            columns = dataset.select_columns([source_column, target_column])[:]  # dict of lists, in one read
            return list(zip(columns[source_column], columns[target_column]))
        return [(row[source_column], row[target_column]) for row in dataset]
    if isinstance(dataset, (str, bytes)) or not isinstance(dataset, Sequence):
        raise TypeError(f"augment takes a datasets.Dataset or a sequence of (source, target) pairs, got "
                        f"{type(dataset).__name__}")
    return [tuple(pair) for pair in dataset]
