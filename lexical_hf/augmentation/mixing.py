"""Mixing augmented pairs into training data, as a pure ``datasets`` step."""

from __future__ import annotations

import warnings

import datasets
import numpy as np


def mix_augmented(
    original: datasets.Dataset,
    augmented: datasets.Dataset,
    aug_ratio: float | None = 0.3,
    *,
    seed: int = 0,
    mark_column: str | None = None,
) -> datasets.Dataset:
    """Training data with augmented pairs mixed in.

    With ``aug_ratio`` r (GECA's protocol, r = 0.3): a pass over ``original`` in its order, where each position is
    drawn from the augmented set with probability r and otherwise takes the next original example — so about
    ``len(original) * r / (1 - r)`` augmented examples, cycled through seeded shuffles of ``augmented``. Where one
    pass has fewer augmented positions than there are augmented pairs (a tiny training set such as Colors), the passes
    repeat until every augmented pair has a place: the reference draws from its augmented iterator for the whole of
    training, so it sees them all, at the same ratio. With
    ``aug_ratio=None``: plain concatenation, ``original`` then ``augmented``. The result shares the original's Arrow
    table (an indices mapping); a trainer's own shuffling still applies.

    Args:
        original: the training split.
        augmented: new pairs, e.g. from :func:`augment`; it needs the original's text columns. Columns of
            ``original`` it lacks (e.g. COGS's ``category``) are filled with None.
        aug_ratio: probability that a position is augmented, in [0, 1); None: concatenate.
        seed: seed of the positions and of the shuffles.
        mark_column: if given, a bool column of that name tells augmented rows (True) from original ones.

    Raises:
        ValueError: ``aug_ratio`` outside [0, 1), or ``augmented`` lacking a column that ``original`` has and
            None cannot fill.
    """
    if aug_ratio is not None and not 0 <= aug_ratio < 1:
        raise ValueError(f"aug_ratio must be in [0, 1) (the probability that an example is augmented), got {aug_ratio}")
    if len(augmented) == 0 or aug_ratio == 0:
        if len(augmented) == 0:
            warnings.warn("mix_augmented: the augmented dataset is empty; returning the original data", stacklevel=2)
        return _marked(original, mark_column, False)
    aligned = _aligned(original, augmented)
    both = datasets.concatenate_datasets([_marked(original, mark_column, False), _marked(aligned, mark_column, True)])
    if aug_ratio is None:
        return both
    return both.select(_mixed_indices(len(original), len(aligned), aug_ratio, seed))


def _aligned(original: datasets.Dataset, augmented: datasets.Dataset) -> datasets.Dataset:
    """``augmented`` with exactly the original's columns and features (missing ones filled with None)."""
    columns = {}
    for name, feature in original.features.items():
        if name in augmented.column_names:
            columns[name] = augmented.select_columns([name])[:][name]
        elif isinstance(feature, datasets.Value):
            columns[name] = [None] * len(augmented)
        else:
            raise ValueError(f"the augmented dataset has no column {name!r}, and a {type(feature).__name__} column "
                             f"cannot be filled with None; add it or remove it from the original")
    return datasets.Dataset.from_dict(columns, features=original.features)


def _marked(dataset: datasets.Dataset, column: str | None, value: bool) -> datasets.Dataset:
    if column is None:
        return dataset
    return dataset.add_column(column, [value] * len(dataset), feature=datasets.Value("bool"))


def _mixed_indices(n_original: int, n_augmented: int, ratio: float, seed: int) -> np.ndarray:
    """int64: rows of ``concatenate([original, augmented])`` for the passes over the original (see mix_augmented)."""
    rng = np.random.default_rng(seed)
    passes: list[np.ndarray] = []
    while not passes or sum(int(p.sum()) for p in passes) < n_augmented:  # until every augmented pair has a place
        passes.append(_one_pass(rng, n_original, ratio))
    flags = np.concatenate(passes)
    n_aug = int(flags.sum())
    cycles = -(-n_aug // n_augmented)
    order = np.concatenate([rng.permutation(n_augmented) for _ in range(cycles)] + [np.zeros(0, dtype=np.int64)])
    indices = np.empty(len(flags), dtype=np.int64)
    indices[~flags] = np.tile(np.arange(n_original), len(passes))
    indices[flags] = n_original + order[:n_aug]
    return indices


def _one_pass(rng: np.random.Generator, n_original: int, ratio: float) -> np.ndarray:
    """bool: Bernoulli(ratio) positions (True: augmented) until every original example has one."""
    is_augmented: list[np.ndarray] = []
    originals = 0
    while originals < n_original:
        draws = rng.random(max(16, int((n_original - originals) / (1 - ratio) * 1.1))) < ratio
        cut = np.flatnonzero(np.cumsum(~draws) == n_original - originals)
        draws = draws[: cut[0] + 1] if len(cut) else draws
        originals += int((~draws).sum())
        is_augmented.append(draws)
    return np.concatenate(is_augmented)
