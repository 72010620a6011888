"""Training data augmented per seed (GECA), mixed into the original training split, and tokenized."""

from __future__ import annotations

import datasets

from ..augmentation import PRESETS, augment, canonical_preset, mix_augmented
from ..lexicon.registry import parse_params_text


def augmentation_preset(data_args) -> str | None:
    """The preset the run composes with: `--augment_preset`, else the benchmark's own (None: the reference's
    defaults, e.g. for your own data)."""
    if data_args.augment_preset:
        return canonical_preset(data_args.augment_preset)
    try:
        return canonical_preset(data_args.benchmark) if data_args.benchmark else None
    except ValueError:  # a benchmark without GECA settings of its own
        return None


def augmentation_settings(data_args) -> dict | None:
    """What the run's augmentation is (recorded in results.json and in each seed's settings), or None."""
    if not data_args.augment:
        return None
    return {"method": data_args.augment, "preset": augmentation_preset(data_args),
            "params": parse_params_text(data_args.augment_params) if data_args.augment_params else {},
            "mixing": data_args.augment_mixing, "aug_ratio": data_args.aug_ratio if data_args.augment_mixing == "ratio" else None}


def augmented_training_split(raw_train: datasets.Dataset, tokenize, data_args, seed: int) -> tuple[datasets.Dataset, dict]:
    """Seed `seed`'s training split: the original pairs with this seed's new pairs mixed in (each example drawn from
    the augmented set with probability `aug_ratio`, or the two concatenated), tokenized by `tokenize`. Each seed
    composes its own augmentation: pooling several seeds' would inflate results. Returns the split and what the
    composition did (per-filter counts, pairs made, examples after mixing)."""
    settings = augmentation_settings(data_args)
    new, stats = augment(raw_train.select_columns(["source", "target"]), settings["method"], seed=seed,
                         preset=settings["preset"], return_stats=True, **settings["params"])
    mixed = mix_augmented(raw_train, new, settings["aug_ratio"], seed=seed, mark_column="augmented")
    record = {**stats.to_dict(), "new_pairs": len(new), "training_examples": len(mixed),
              "augmented_examples": int(sum(mixed["augmented"]))}
    return tokenize(mixed.remove_columns("augmented")), record


__all__ = ["PRESETS", "augmentation_preset", "augmentation_settings", "augmented_training_split"]
