"""Data augmentation as a ``datasets`` step: GECA (Andreas, ACL 2020), and mixing augmented pairs into training data.

    from lexical_hf.augmentation import augment, mix_augmented
    new, stats = augment(dataset["train"], "geca", seed=0, preset="scan", return_stats=True)
    train = mix_augmented(dataset["train"], new, aug_ratio=0.3, seed=0)

``augment`` returns only the new pairs; ``stats`` says how many candidates each filter dropped. Settings are the
fields of :class:`GecaSettings`; ``PRESETS`` holds the reference's settings per benchmark.
"""

from .api import METHODS, AugmentResult, augment, available_methods
from .geca import FILTERS, PRESETS, GecaResult, GecaSettings, GecaStats, canonical_preset, geca
from .mixing import mix_augmented

__all__ = [
    "FILTERS",
    "METHODS",
    "PRESETS",
    "AugmentResult",
    "GecaResult",
    "GecaSettings",
    "GecaStats",
    "augment",
    "available_methods",
    "canonical_preset",
    "geca",
    "mix_augmented",
]
