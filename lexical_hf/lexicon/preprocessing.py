"""Applying a lexicon to a `datasets` split as a ``Dataset.map`` step (fingerprinted and cached correctly).

The map function is a module-level function of the batch and of plain ``fn_kwargs`` (a ``{input: output}`` dict and
column names), so `datasets` hashes the lexicon's *content* into the new fingerprint: a different lexicon gives a
different cache entry, the same lexicon reuses it. Nothing is accumulated as a side effect of the map.
"""

from __future__ import annotations

from typing import Any

from .lexicon import Lexicon

__all__ = ["apply_lexicon", "lexicon_columns"]


def lexicon_columns(
    batch: dict[str, list],
    mapping: dict[str, str],
    source_column: str,
    target_column: str | None,
    translations_column: str,
    coverage_column: str,
) -> dict[str, list[Any]]:
    """Per example: the lexicon translation of every source token (None where the lexicon has none) and, when the
    target column exists, the fraction of target tokens that some source token translates to (None if empty)."""
    translations, coverage = [], []
    targets = batch[target_column] if target_column is not None else [None] * len(batch[source_column])
    for source, target in zip(batch[source_column], targets):
        tokens = source.split() if isinstance(source, str) else list(source)
        translated = [mapping.get(token) for token in tokens]
        translations.append(translated)
        if target is not None:
            target_tokens = target.split() if isinstance(target, str) else list(target)
            produced = {t for t in translated if t is not None}
            coverage.append(sum(t in produced for t in target_tokens) / len(target_tokens) if target_tokens else None)
    columns = {translations_column: translations}
    if target_column is not None:
        columns[coverage_column] = coverage
    return columns


def apply_lexicon(
    dataset,
    lexicon: Lexicon,
    *,
    tokenizer=None,
    source_column: str = "source",
    target_column: str | None = "target",
    translations_column: str = "lexical_targets",
    coverage_column: str = "lexicon_coverage",
    batch_size: int = 1000,
    num_proc: int | None = None,
    load_from_cache_file: bool | None = None,
):
    """Add the hard lexicon's per-token translations and its per-example coverage of the targets via ``map``.

    Works on a `datasets.Dataset` or `datasets.DatasetDict`. The translation of a source token is its τ = 0 entry
    (`Lexicon.hard_mapping`); with a ``tokenizer`` the tokenizer's view is used (entries it cannot represent are
    ignored, tokens without entries that are also target tokens copy themselves). A missing ``target_column`` (e.g.
    an unlabelled test set) only adds the translations.
    """
    settings = dict(tokenizer=tokenizer, source_column=source_column, target_column=target_column,
                    translations_column=translations_column, coverage_column=coverage_column, batch_size=batch_size,
                    num_proc=num_proc, load_from_cache_file=load_from_cache_file)
    if isinstance(dataset.column_names, dict):  # a DatasetDict: each split has its own columns (test may be unlabelled)
        return type(dataset)({name: apply_lexicon(split, lexicon, **settings) for name, split in dataset.items()})
    mapping = lexicon.hard_mapping(tokenizer)
    column_names = dataset.column_names
    if source_column not in column_names:
        raise ValueError(f"dataset has no column {source_column!r}; columns: {column_names}")
    if target_column is not None and target_column not in column_names:
        target_column = None
    return dataset.map(
        lexicon_columns,
        batched=True,
        batch_size=batch_size,
        num_proc=num_proc,
        load_from_cache_file=load_from_cache_file,
        fn_kwargs={
            "mapping": mapping,
            "source_column": source_column,
            "target_column": target_column,
            "translations_column": translations_column,
            "coverage_column": coverage_column,
        },
        desc=f"Applying {lexicon.method} lexicon",
    )
