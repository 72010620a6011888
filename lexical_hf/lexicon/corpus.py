"""A parallel corpus as integer arrays: the one place where strings become ids for the lexicon learners.

Learners never see Python strings in their hot paths. `ParallelCorpus` splits every side on whitespace (Unicode
whitespace, like the tokenizer's ``WhitespaceSplit`` pre-tokenizer and Python's ``str.split()``), encodes tokens as
ids into a *sorted* vocabulary, and stores each side as one flat id array plus example offsets (CSR layout). All of
this is done column-wise with pyarrow compute kernels, so a 24k-example split encodes in a few tens of milliseconds.

Two choices make every learner independent of the order of the training examples:

* vocabulary ids are assigned in sorted string order (not first-appearance order), and
* the examples themselves are put in a canonical order (sorted by their normalised source, then target text).

Integer statistics (Simple, PMI) would not care, but floating-point sums in EM (IBM Model 2) and the Metropolis–Hastings
sampler (Bayesian) depend on summation order; with a canonical order a permuted training set gives bit-identical
results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["ParallelCorpus", "TokenSequences"]


@dataclass(frozen=True, eq=False)
class TokenSequences:
    """One side of a corpus: ``ids[offsets[e]:offsets[e + 1]]`` are the token ids of example ``e``.

    ``vocab`` is sorted, so ``vocab[i] < vocab[i + 1]`` and ids do not depend on example order.
    """

    vocab: list[str]
    ids: np.ndarray  # int64, flat over all tokens
    offsets: np.ndarray  # int64, length num_examples + 1

    @property
    def num_examples(self) -> int:
        return len(self.offsets) - 1

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @cached_property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @cached_property
    def example_of_token(self) -> np.ndarray:
        """For every flat token position, the index of its example."""
        return np.repeat(np.arange(self.num_examples, dtype=np.int64), self.lengths)

    @cached_property
    def position_in_example(self) -> np.ndarray:
        """For every flat token position, its 0-based position inside its example."""
        return np.arange(len(self.ids), dtype=np.int64) - np.repeat(self.offsets[:-1], self.lengths)

    @cached_property
    def types_per_example(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The distinct token types of every example, with their within-example counts.

        Returns ``(example, type, count)`` arrays sorted by example then type: one row per (example, type) pair.
        """
        keys = self.example_of_token * self.vocab_size + self.ids
        # keys are already grouped by example: a stable sort (timsort) merges the short runs much faster than the
        # quicksort behind np.unique
        keys = np.sort(keys, kind="stable")
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        unique_keys = keys[starts]
        counts = np.diff(np.r_[starts, len(keys)])
        return unique_keys // self.vocab_size, unique_keys % self.vocab_size, counts.astype(np.int64)

    @cached_property
    def document_frequency(self) -> np.ndarray:
        """``df[t]`` = number of examples that contain type ``t`` at least once."""
        _, types, _ = self.types_per_example
        return np.bincount(types, minlength=self.vocab_size).astype(np.int64)

    def tokens(self, example: int) -> list[str]:
        return [self.vocab[i] for i in self.ids[self.offsets[example] : self.offsets[example + 1]]]


@dataclass(frozen=True, eq=False)
class ParallelCorpus:
    """Source and target token sequences of the same examples, in canonical order (see the module docstring)."""

    source: TokenSequences
    target: TokenSequences
    # target_first_seen[t]: rank of target type t by its first appearance in the data *as given* (before the
    # canonical reordering); read only by the "first_appearance" tie-break, the paper code's argmax order
    target_first_seen: np.ndarray | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pairs(cls, sources: Sequence, targets: Sequence, names: tuple[str, str] = ("source", "target")
                   ) -> "ParallelCorpus":
        """Encode two aligned sequences of whitespace-tokenized strings (or of token lists); `names` are the columns
        they came from, for the messages. Anything else (bytes, numbers, None) is a `TypeError` naming the row."""
        if len(sources) != len(targets):
            raise ValueError(f"got {len(sources)} {names[0]} sequences but {len(targets)} {names[1]} sequences")
        return cls.from_arrow(_to_arrow(sources, names[0]), _to_arrow(targets, names[1]), names)

    @classmethod
    def from_dataset(cls, dataset, source_column: str = "source", target_column: str = "target") -> "ParallelCorpus":
        """Encode two columns of a `datasets.Dataset` without leaving Arrow (indices mappings are respected)."""
        missing = [c for c in (source_column, target_column) if c not in dataset.column_names]
        if missing:
            raise ValueError(
                f"dataset has no column(s) {missing}; its columns are {dataset.column_names}. "
                "Pass source_column= / target_column= to name the text columns."
            )
        table = dataset.select_columns([source_column, target_column]).with_format("arrow")[:]
        return cls.from_arrow(table.column(source_column), table.column(target_column), (source_column, target_column))

    @classmethod
    def from_arrow(cls, sources, targets, names: tuple[str, str] = ("source", "target")) -> "ParallelCorpus":
        source_lists = _split_whitespace(sources, names[0])
        target_lists = _split_whitespace(targets, names[1])
        if len(source_lists) != len(target_lists):
            raise ValueError(f"got {len(source_lists)} source sequences but {len(target_lists)} target sequences")
        if len(source_lists) == 0:
            raise ValueError("cannot learn a lexicon from empty training data (0 examples)")
        # dictionary_encode numbers values in order of first occurrence: the data's own order, before reordering
        first_seen = pc.dictionary_encode(target_lists.flatten()).dictionary
        order = _canonical_order(source_lists, target_lists)
        source_lists, target_lists = source_lists.take(order), target_lists.take(order)
        target = _encode(target_lists)
        target_first_seen = np.asarray(pc.index_in(pa.array(target.vocab, type=first_seen.type), value_set=first_seen),
                                       dtype=np.int64)
        corpus = cls(_encode(source_lists), target, target_first_seen)
        if len(corpus.source.ids) == 0 or len(corpus.target.ids) == 0:
            side = "source" if len(corpus.source.ids) == 0 else "target"
            raise ValueError(f"cannot learn a lexicon: every {side} sequence of the training data is empty")
        return corpus

    # ------------------------------------------------------------------ statistics
    @property
    def num_examples(self) -> int:
        return self.source.num_examples

    @property
    def source_vocab(self) -> list[str]:
        return self.source.vocab

    @property
    def target_vocab(self) -> list[str]:
        return self.target.vocab

    def cooccurrence_triples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every (example, source type, target type) with both types present in the example.

        Returns ``(example, source_type_row, target_type_row)`` where the last two index the rows of
        ``source.types_per_example`` / ``target.types_per_example`` (so both the type and its within-example count
        can be looked up). Built without Python loops: each example contributes the outer product of its distinct
        source types and its distinct target types.
        """
        if "triples" not in self._cache:
            src_example, _, _ = self.source.types_per_example
            tgt_example, _, _ = self.target.types_per_example
            tgt_per_example = np.bincount(tgt_example, minlength=self.num_examples)
            tgt_start = np.concatenate([[0], np.cumsum(tgt_per_example)[:-1]])
            # each source-type row is repeated once per target type of its example
            repeats = tgt_per_example[src_example]
            src_row = np.repeat(np.arange(len(src_example), dtype=np.int64), repeats)
            block_start = np.repeat(np.cumsum(repeats) - repeats, repeats)
            within = np.arange(len(src_row), dtype=np.int64) - block_start
            tgt_row = np.repeat(tgt_start[src_example], repeats) + within
            example = src_example[src_row]
            self._cache["triples"] = (example, src_row, tgt_row)
        return self._cache["triples"]

    def cooccurrence(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """#(v, w): the number of examples whose source contains v and whose target contains w.

        Returns ``(v, w, count)`` over co-occurring pairs only, sorted by v then w.
        """
        if "cooccurrence" not in self._cache:
            n_in, n_out = self.source.vocab_size, self.target.vocab_size
            src_example, src_types, _ = self.source.types_per_example
            tgt_example, tgt_types, _ = self.target.types_per_example
            tgt_per_example = np.bincount(tgt_example, minlength=self.num_examples)
            tgt_start = np.concatenate([[0], np.cumsum(tgt_per_example)[:-1]])
            # examples grouped by their number b of distinct target types: for each group the pair keys of all its
            # (source type, target type) combinations form one (rows × b) array, built by 2-D gathers
            b_of_row = tgt_per_example[src_example]
            order = np.argsort(b_of_row, kind="stable")
            bounds = np.flatnonzero(np.r_[True, np.diff(b_of_row[order]) != 0, True])
            keys = []
            for lo, hi in zip(bounds[:-1], bounds[1:]) if len(order) else ():
                rows = order[lo:hi]
                b = int(b_of_row[rows[0]])
                if b == 0:
                    continue
                columns = tgt_start[src_example[rows]][:, None] + np.arange(b)
                keys.append(((src_types[rows] * n_out)[:, None] + tgt_types[columns]).ravel())
            keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
            if n_in * n_out <= max(4 * len(keys), 1 << 22):
                # small vocabularies: a dense histogram is faster than sorting
                dense = np.bincount(keys, minlength=n_in * n_out)
                unique_keys = np.flatnonzero(dense)
                counts = dense[unique_keys]
            else:
                unique_keys, counts = np.unique(keys, return_counts=True)
            self._cache["cooccurrence"] = (unique_keys // n_out, unique_keys % n_out, counts.astype(np.int64))
        return self._cache["cooccurrence"]


# ---------------------------------------------------------------------- helpers
def _to_arrow(values: Sequence, column: str) -> pa.Array:
    """Strings, or (already tokenized) lists of token strings, as an Arrow array; anything else (bytes, numbers,
    None, a mix of the two forms) is a `TypeError` naming the column and the first row at fault."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    values = list(values)
    token_lists = (list, tuple, np.ndarray)
    tokenized = bool(values) and isinstance(values[0], token_lists)
    for row, value in enumerate(values):
        if tokenized:
            valid = isinstance(value, token_lists) and all(isinstance(token, str) for token in value)
        else:
            valid = isinstance(value, str)
        if not valid:
            expected = ("a list of token strings (as row 0 is)" if tokenized
                        else "a string of whitespace-separated tokens")
            raise TypeError(f"column {column!r}, row {row}: expected {expected}, got {type(value).__name__} "
                            f"{value!r:.60}" + (" (decode bytes to str first)" if isinstance(value, bytes) else ""))
    if tokenized:
        return pa.array([list(tokens) for tokens in values], type=pa.list_(pa.string()))
    return pa.array(values, type=pa.string())


def _split_whitespace(values, side: str) -> pa.ListArray:
    """Whitespace-split a string column (or pass through a list-of-strings column), dropping empty tokens."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_large_string(values.type):
        values = values.cast(pa.string())
    if pa.types.is_string(values.type):
        if values.null_count:
            raise ValueError(f"the {side} column has {values.null_count} missing (null) values")
        lists = pc.utf8_split_whitespace(pc.utf8_trim_whitespace(values))
    elif ((pa.types.is_list(values.type) or pa.types.is_large_list(values.type))
          and (pa.types.is_string(values.type.value_type) or pa.types.is_large_string(values.type.value_type))):
        lists = values.cast(pa.list_(pa.string()))
    else:
        raise TypeError(f"the {side} column must hold whitespace-tokenized strings or lists of token strings, not "
                        f"{values.type} (decode bytes and convert numbers to str first)")
    # "" remains as the only token of an empty string; drop empty tokens and rebuild the offsets
    flat = lists.flatten()
    keep = np.asarray(pc.not_equal(pc.utf8_length(flat), 0).fill_null(False), dtype=bool)
    if keep.all():
        return pa.ListArray.from_arrays(pa.array(_list_offsets(lists), type=pa.int32()), flat)
    offsets = _list_offsets(lists)
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    return pa.ListArray.from_arrays(pa.array(kept_before[offsets], type=pa.int32()), flat.filter(pa.array(keep)))


def _list_offsets(lists: pa.ListArray) -> np.ndarray:
    offsets = np.asarray(lists.offsets, dtype=np.int64)
    return offsets - offsets[0]


def _canonical_order(sources: pa.ListArray, targets: pa.ListArray) -> pa.Array:
    table = pa.table({"s": pc.binary_join(sources, " "), "t": pc.binary_join(targets, " ")})
    return pc.sort_indices(table, sort_keys=[("s", "ascending"), ("t", "ascending")])


def _encode(lists: pa.ListArray) -> TokenSequences:
    flat = lists.flatten()
    offsets = _list_offsets(lists)
    if len(flat) == 0:
        return TokenSequences([], np.zeros(0, dtype=np.int64), offsets)
    encoded = pc.dictionary_encode(flat)
    dictionary = encoded.dictionary
    order = np.asarray(pc.sort_indices(dictionary), dtype=np.int64)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    ids = rank[np.asarray(encoded.indices, dtype=np.int64)]
    vocab = dictionary.take(pa.array(order)).to_pylist()
    return TokenSequences(vocab, ids, offsets)
