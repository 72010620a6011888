"""GECA steps 1-3, vectorized: encode the corpus, find every fragment of every pair and hash the template it leaves.

Terms (Andreas 2020):

* joint sequence: ``source ## target`` of one training pair, as integer token ids (the separator has its own id);
* span: 1..wug_size contiguous tokens on one side of the separator; its *occurrences* in a sequence are the greedy
  leftmost non-overlapping matches (what repeated leftmost replacement finds);
* fragment: one span, or two spans ``(a, b)`` that share no token type and where ``b`` occurs after the first
  occurrence of ``a`` (the reference enumerates the second span to the right of the first placeholder);
* template: the joint sequence with every occurrence of span i replaced by placeholder ``W_i``.

Templates are never built. Their hash ``H(t) = sum_k v(t_k) P**k`` is computed from prefix sums
``F[k] = sum_{j<k} v(s_j) P**j`` of the original sequence ``s``: an occurrence at ``o`` of a span of length ``m``
replaced by ``W`` contributes ``alpha(o) = F[o] - F[o+m] P**-(m-1) + v(W) P**o``, scaled by ``P**-D`` where ``D`` is
the number of tokens deleted before it (``m - 1`` per earlier occurrence of any replaced span), and the whole
sequence contributes ``F[L] P**-D_total``. For a pair ``(a, b)`` the only interaction is the count ``C_b(o)`` of
``b``'s occurrences before each occurrence ``o`` of ``a`` (and vice versa), which vanishes for one-token spans.

Templates are identified by these 64-bit hashes: among n templates, the chance that two different ones collide is
about n**2 / 2**65 (1e-8 for SCAN's 6e5 templates, 1e-3 for COGS's 1.8e8 with the reference defaults); a collision
would merge two environments, i.e. add one spurious link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._hashing import BASE, BASE_INV, U64, group_starts, powers, ragged_arange, segment_sum, token_values

# Candidate (span, span) pairs examined per vectorized chunk; bounds memory (~40 bytes each).
_PAIR_CHUNK = 1 << 22


@dataclass
class EncodedCorpus:
    """The training pairs as token ids. Ids index ``vocab`` (sorted, so ids do not depend on row order); the
    separator is ``len(vocab)`` and the placeholders ``W0``, ``W1`` are ``len(vocab) + 1``, ``+ 2``."""

    vocab: list[str]
    sources: list[tuple[int, ...]]  # per unique pair
    targets: list[tuple[int, ...]]
    used: np.ndarray  # int64 (n_used,): unique pairs short enough to compose from
    tokens: np.ndarray  # int64 (n_tok,): joint sequences of the used pairs, concatenated
    offsets: np.ndarray  # int64 (n_used + 1,): start of each joint sequence in ``tokens``

    @property
    def separator_id(self) -> int:
        return len(self.vocab)


def encode_corpus(
    pairs: Sequence[tuple[str, str]], max_comp_len: int | None, sort_pairs: bool
) -> EncodedCorpus:
    """Tokenize on whitespace, drop duplicate pairs (first occurrence kept, or sorted when ``sort_pairs``, as the
    reference's ``--dedup`` does) and keep, for composition, the pairs whose joint length is below ``max_comp_len``."""
    unique = dict.fromkeys((tuple(source.split()), tuple(target.split())) for source, target in pairs)
    token_pairs = sorted(unique) if sort_pairs else list(unique)
    vocab = sorted({token for source, target in token_pairs for token in (*source, *target)})
    index = {token: i for i, token in enumerate(vocab)}
    sources = [tuple(index[t] for t in source) for source, _ in token_pairs]
    targets = [tuple(index[t] for t in target) for _, target in token_pairs]
    separator = len(vocab)
    joint_lengths = np.array([len(s) + 1 + len(t) for s, t in zip(sources, targets)], dtype=np.int64)
    used = np.arange(len(token_pairs), dtype=np.int64)
    if max_comp_len is not None:
        used = used[joint_lengths < max_comp_len]
    flat: list[int] = []
    for i in used:
        flat.extend(sources[i])
        flat.append(separator)
        flat.extend(targets[i])
    offsets = np.zeros(len(used) + 1, dtype=np.int64)
    np.cumsum(joint_lengths[used], out=offsets[1:])
    return EncodedCorpus(vocab, sources, targets, used, np.array(flat, dtype=np.int64), offsets)


@dataclass
class _Spans:
    """Occurrences of every distinct span in every used pair, grouped per (pair, span): an ``xs`` row."""

    span_tokens: list[tuple[int, ...]]  # span id -> token ids
    xs_example: np.ndarray  # int64 (n_xs,), sorted
    xs_span: np.ndarray  # int64 (n_xs,)
    xs_len: np.ndarray  # int64 (n_xs,): tokens in the span
    xs_first: np.ndarray  # int64 (n_xs,): position of the first occurrence
    xs_last: np.ndarray  # int64 (n_xs,): position of the last (possibly overlapping) match
    xs_count: np.ndarray  # int64 (n_xs,): greedy occurrences
    xs_start: np.ndarray  # int64 (n_xs,): first greedy occurrence in the occ_* arrays
    xs_in: np.ndarray  # bool (n_xs,): an occurrence on the source side
    xs_out: np.ndarray  # bool (n_xs,): an occurrence on the target side
    xs_mask: np.ndarray  # uint64 (n_xs, words): token types of the span, as bits over the pair's types
    span_total: np.ndarray  # int64 (n_spans,): matches over all used pairs (for wug_limit)
    occ_pos: np.ndarray  # int64 (n_occ,): greedy occurrences, sorted by (xs, position)
    occ_rank: np.ndarray  # int64 (n_occ,): index among its xs's occurrences


@dataclass
class FragmentTable:
    """One row per (used pair, fragment): the hash of the template the fragment leaves in the pair. Rows name the
    fragment's spans by their (pair, span) index ``xs`` into ``spans``; ``columns`` derives the rest for a subset."""

    template_hash: np.ndarray  # uint64 (n,)
    xs0: np.ndarray  # int32 (n,): (pair, span) behind placeholder W0
    xs1: np.ndarray  # int32 (n,): (pair, span) behind W1, -1 for one-span fragments
    spans: _Spans
    wug_size: int

    def fragment_key(self, rows: slice | np.ndarray = slice(None)) -> np.ndarray:
        """int64: ``span0 * (n_spans + 1) + span1 + 1``, equal for equal fragments whatever the pair."""
        xs0, xs1 = self.xs0[rows], self.xs1[rows]
        span1 = np.where(xs1 >= 0, self.spans.xs_span[np.maximum(xs1, 0)], -1)
        return self.spans.xs_span[xs0] * (len(self.spans.span_tokens) + 1) + span1 + 1

    def columns(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """For ``rows``: ``span0``, ``span1`` (-1: none), ``example``, ``both_sides`` (a placeholder on each side of
        the separator) and ``order_key`` (the reference's enumeration order: pair, then first span's length and
        position, one-span fragments first, then the second span's length and position)."""
        s, a, b = self.spans, self.xs0[rows], self.xs1[rows]
        pair = b >= 0
        b = np.maximum(b, 0)
        base = int(s.xs_first.max(initial=0)) + 2
        key = s.xs_example[a] * (self.wug_size + 1) + s.xs_len[a]
        key = (key * base + s.xs_first[a]) * 2 + pair
        key = (key * (self.wug_size + 1) + s.xs_len[b] * pair) * base + s.xs_first[b] * pair
        return {
            "span0": s.xs_span[a], "span1": np.where(pair, s.xs_span[b], -1), "example": s.xs_example[a],
            "both_sides": (s.xs_in[a] | (pair & s.xs_in[b])) & (s.xs_out[a] | (pair & s.xs_out[b])),
            "order_key": key,
        }


def _span_codes(tokens: np.ndarray, starts: np.ndarray, length: int, base: int) -> np.ndarray:
    """Exact int64 code of each span ``tokens[s : s + length]`` (digits ``token + 1`` in base ``base``)."""
    code = np.zeros(len(starts), dtype=np.int64)
    for j in range(length):
        code += (tokens[starts + j] + 1) * np.int64(base**j)
    return code


def _span_ids(tokens: np.ndarray, starts_by_len: list[np.ndarray], wug_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Span id per match (matches listed by length, then start) and the first match of each span id."""
    base = int(tokens.max(initial=0)) + 2
    if base**wug_size < 2**62:
        codes = np.concatenate([_span_codes(tokens, s, m + 1, base) for m, s in enumerate(starts_by_len)])
        _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        return inverse.astype(np.int64), first
    rows = [np.full((len(s), wug_size), -1, dtype=np.int64) for s in starts_by_len]
    for m, (s, r) in enumerate(zip(starts_by_len, rows)):
        for j in range(m + 1):
            r[:, j] = tokens[s + j]
    _, first, inverse = np.unique(np.concatenate(rows), axis=0, return_index=True, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), first


def _greedy_keep(xs_of: np.ndarray, pos: np.ndarray, length: np.ndarray) -> np.ndarray:
    """bool (n_match,): which matches (sorted by xs, position) greedy leftmost replacement uses."""
    keep = np.ones(len(pos), dtype=bool)
    same = np.r_[False, xs_of[1:] == xs_of[:-1]]
    clash = same & (np.r_[0, np.diff(pos)] < length)
    for xs in np.unique(xs_of[clash]):  # only spans that overlap themselves, e.g. "B B" in "B B B"
        rows = np.flatnonzero(xs_of == xs)
        end = -1
        for r in rows:
            keep[r] = pos[r] >= end
            if keep[r]:
                end = pos[r] + length[r]
    return keep


def _find_spans(corpus: EncodedCorpus, wug_size: int) -> _Spans:
    tokens, offsets = corpus.tokens, corpus.offsets
    lengths = np.diff(offsets)
    example_of = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    position = np.arange(len(tokens), dtype=np.int64) - offsets[example_of]
    separators = np.r_[0, np.cumsum(tokens == corpus.separator_id)]
    starts_by_len = []
    for m in range(1, wug_size + 1):
        starts = np.flatnonzero(position + m <= lengths[example_of])
        starts_by_len.append(starts[separators[starts + m] == separators[starts]])
    span_of, first_match = _span_ids(tokens, starts_by_len, wug_size)
    starts = np.concatenate(starts_by_len)
    span_len = np.concatenate([np.full(len(s), m + 1, dtype=np.int64) for m, s in enumerate(starts_by_len)])
    span_tokens = [tuple(tokens[starts[i] : starts[i] + span_len[i]].tolist()) for i in first_match]

    order = np.lexsort((position[starts], span_of, example_of[starts]))
    match_example, match_span = example_of[starts][order], span_of[order]
    match_pos, match_len = position[starts][order], span_len[order]
    xs_begin = group_starts(match_example * (len(span_tokens) + 1) + match_span)
    xs_of = np.repeat(np.arange(len(xs_begin)), np.diff(np.r_[xs_begin, len(order)]))
    keep = _greedy_keep(xs_of, match_pos, match_len)
    xs_end = np.r_[xs_begin[1:], len(order)] - 1

    occ_xs, occ_pos = xs_of[keep], match_pos[keep]
    xs_count = np.bincount(occ_xs, minlength=len(xs_begin)).astype(np.int64)
    xs_example = match_example[xs_begin]
    sep_pos = np.array([len(corpus.sources[i]) for i in corpus.used], dtype=np.int64)
    on_source = occ_pos < sep_pos[xs_example[occ_xs]]
    xs_in = np.bincount(occ_xs, weights=on_source, minlength=len(xs_begin)) > 0
    xs_out = np.bincount(occ_xs, weights=~on_source, minlength=len(xs_begin)) > 0
    spans = _Spans(
        span_tokens=span_tokens, xs_example=xs_example, xs_span=match_span[xs_begin],
        xs_len=match_len[xs_begin], xs_first=match_pos[xs_begin], xs_last=match_pos[xs_end],
        xs_count=xs_count, xs_start=np.cumsum(xs_count) - xs_count, xs_in=xs_in, xs_out=xs_out,
        xs_mask=np.zeros((0, 0), dtype=U64), span_total=np.bincount(span_of, minlength=len(span_tokens)),
        occ_pos=occ_pos, occ_rank=ragged_arange(xs_count),
    )
    spans.xs_mask = _type_masks(corpus, spans, example_of)
    return spans


def _type_masks(corpus: EncodedCorpus, spans: _Spans, example_of: np.ndarray) -> np.ndarray:
    """uint64 (n_xs, words): bit i set when the span holds the pair's i-th distinct token type."""
    key = example_of * (corpus.separator_id + 1) + corpus.tokens
    unique_keys, local = np.unique(key, return_inverse=True)
    first_of_example = np.searchsorted(unique_keys, example_of * (corpus.separator_id + 1))
    local = local.reshape(-1) - first_of_example
    words = int(local.max(initial=0)) // 64 + 1
    masks = np.zeros((len(spans.xs_span), words), dtype=U64)
    rows = np.arange(len(spans.xs_span))
    for j in range(int(spans.xs_len.max(initial=0))):
        sel = rows[spans.xs_len > j]
        bit = local[corpus.offsets[spans.xs_example[sel]] + spans.xs_first[sel] + j]
        masks[sel, bit // 64] |= U64(1) << (bit % 64).astype(U64)
    return masks


class _TemplateHasher:
    """Template hashes of one- and two-span fragments from the prefix sums of the used pairs (module docstring)."""

    def __init__(self, corpus: EncodedCorpus, spans: _Spans):
        self.spans = spans
        lengths = np.diff(corpus.offsets)
        longest = int(lengths.max(initial=0)) + 2
        self.key_base = longest
        values = token_values(corpus.separator_id + 3)
        self.placeholder = values[corpus.separator_id + 1 :]  # uint64 (2,): v(W0), v(W1)
        self.p = powers(BASE, longest)
        self.p_inv = powers(BASE_INV, longest)
        position = np.arange(len(corpus.tokens)) - np.repeat(corpus.offsets[:-1], lengths)
        with np.errstate(over="ignore"):
            weighted = values[corpus.tokens] * self.p[position]
            self.prefix = np.r_[U64(0), np.cumsum(weighted, dtype=U64)]  # uint64 (n_tok + 1,)
        self.offsets = corpus.offsets
        self.total = self._prefix_at(np.arange(len(lengths)), lengths)  # uint64 (n_used,): F[L]
        occ_xs = np.repeat(np.arange(len(spans.xs_span)), spans.xs_count)
        self.occ_key = occ_xs * longest + spans.occ_pos  # int64 (n_occ,), sorted
        self.occ_terms = [self._occurrence_terms(occ_xs, w) for w in range(2)]  # uint64 (n_occ,) per placeholder
        self.xs_terms = [segment_sum(t, spans.xs_start) for t in self.occ_terms]  # uint64 (n_xs,) per placeholder
        with np.errstate(over="ignore"):  # uint64 (n_occ + 1,) per placeholder: sums of the terms before each
            self.occ_prefix = [np.r_[U64(0), np.cumsum(t, dtype=U64)] for t in self.occ_terms]

    def _prefix_at(self, example: np.ndarray, k: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self.prefix[self.offsets[example] + k] - self.prefix[self.offsets[example]]

    def _occurrence_terms(self, occ_xs: np.ndarray, placeholder: int) -> np.ndarray:
        """alpha(o) * P**-(m-1)*rank: an occurrence's contribution when only its own span is replaced."""
        s = self.spans
        example, m, o = s.xs_example[occ_xs], s.xs_len[occ_xs], s.occ_pos
        with np.errstate(over="ignore"):
            alpha = (
                self._prefix_at(example, o)
                - self._prefix_at(example, o + m) * self.p_inv[m - 1]
                + self.placeholder[placeholder] * self.p[o]
            )
            return alpha * self.p_inv[(m - 1) * s.occ_rank]

    def single(self, xs: np.ndarray) -> np.ndarray:
        """uint64: template hash of the one-span fragment ``xs``."""
        s = self.spans
        with np.errstate(over="ignore"):
            deleted = (s.xs_len[xs] - 1) * s.xs_count[xs]
            return self.total[s.xs_example[xs]] * self.p_inv[deleted] + self.xs_terms[0][xs]

    def pair(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """uint64: template hash of the two-span fragment (``a`` -> W0, ``b`` -> W1), same pair.

        The counts ``C`` matter only when a span is longer than one token. When each span occurs once, ``C`` is
        whether the other comes first; when one occurs once (at q), the other's occurrences split at q (prefix sums
        of their terms); only rows where both occur several times count occurrences one by one."""
        s = self.spans
        len_a, len_b, count_a, count_b = s.xs_len[a], s.xs_len[b], s.xs_count[a], s.xs_count[b]
        b_first = s.xs_first[b] < s.xs_first[a]
        with np.errstate(over="ignore"):
            out = self.total[s.xs_example[a]] * self.p_inv[(len_a - 1) * count_a + (len_b - 1) * count_b]
            out += self.xs_terms[0][a] * self.p_inv[(len_b - 1) * b_first]
            out += self.xs_terms[1][b] * self.p_inv[(len_a - 1) * ~b_first]
        long = (len_a > 1) | (len_b > 1)
        several_a, several_b = count_a > 1, count_b > 1
        for rows, x, y, w in (
            (np.flatnonzero(long & several_a & ~several_b), a, b, 0),
            (np.flatnonzero(long & several_b & ~several_a), b, a, 1),
        ):
            out[rows] = self._split_terms(x[rows], y[rows], w, self.total[s.xs_example[x[rows]]])
        both = np.flatnonzero(long & several_a & several_b)
        if len(both):
            aa, bb = a[both], b[both]
            deleted = (len_a[both] - 1) * count_a[both] + (len_b[both] - 1) * count_b[both]
            with np.errstate(over="ignore"):
                out[both] = (self.total[s.xs_example[aa]] * self.p_inv[deleted]
                             + self._counted_terms(aa, bb, 0) + self._counted_terms(bb, aa, 1))
        return out

    def _split_terms(self, x: np.ndarray, y: np.ndarray, w: int, total: np.ndarray) -> np.ndarray:
        """Hash for rows where ``x`` (placeholder ``w``) occurs several times and ``y`` once, at q: x's occurrences
        before q keep their terms, those after are scaled by P**-(len(y)-1); y's term by P**-(len(x)-1)*R, where R
        counts x's occurrences before q."""
        s = self.spans
        q = s.xs_first[y]
        before = np.searchsorted(self.occ_key, x * self.key_base + q) - s.xs_start[x]
        prefix = self.occ_prefix[w]
        with np.errstate(over="ignore"):
            head = prefix[s.xs_start[x] + before] - prefix[s.xs_start[x]]
            x_part = head + (self.xs_terms[w][x] - head) * self.p_inv[s.xs_len[y] - 1]
            y_part = self.xs_terms[1 - w][y] * self.p_inv[(s.xs_len[x] - 1) * before]
            deleted = (s.xs_len[x] - 1) * s.xs_count[x] + (s.xs_len[y] - 1)
            return total * self.p_inv[deleted] + x_part + y_part

    def _counted_terms(self, x: np.ndarray, y: np.ndarray, placeholder: int) -> np.ndarray:
        """sum over occurrences o of x of term(o) * P**-((len(y) - 1) * #occurrences of y before o)."""
        s = self.spans
        counts = s.xs_count[x]
        row = np.repeat(np.arange(len(x)), counts)
        occ = np.repeat(s.xs_start[x], counts) + ragged_arange(counts)
        y_rep = y[row]
        before = np.searchsorted(self.occ_key, y_rep * self.key_base + s.occ_pos[occ]) - s.xs_start[y_rep]
        with np.errstate(over="ignore"):
            terms = self.occ_terms[placeholder][occ] * self.p_inv[(s.xs_len[y_rep] - 1) * before]
        return segment_sum(terms, np.cumsum(counts) - counts)


def build_fragment_table(corpus: EncodedCorpus, wug_size: int, wug_count: int, wug_limit: int | None) -> FragmentTable:
    """Every fragment of every used pair with its template hash (GECA steps 2-3)."""
    spans = _find_spans(corpus, wug_size)
    hasher = _TemplateHasher(corpus, spans)
    kept = np.ones(len(spans.xs_span), dtype=bool)
    if wug_limit is not None:
        kept = spans.span_total[spans.xs_span] <= wug_limit
    singles = np.flatnonzero(kept)
    parts = [(hasher.single(singles), singles.astype(np.int32), np.full(len(singles), -1, dtype=np.int32))]
    if wug_count >= 2:
        for a, b in _pair_chunks(spans, kept):
            parts.append((hasher.pair(a, b), a.astype(np.int32), b.astype(np.int32)))
    hashes, first, second = (list(column) for column in zip(*parts))
    del parts
    template_hash = np.concatenate(hashes)  # one column at a time, so the chunks and the result rarely coexist
    del hashes
    xs0 = np.concatenate(first)
    del first
    return FragmentTable(template_hash, xs0, np.concatenate(second), spans=spans, wug_size=wug_size)


def _pair_chunks(spans: _Spans, kept: np.ndarray):
    """Yield (a, b) xs index arrays of the valid two-span fragments, a few pairs of sentences at a time."""
    per_example = np.bincount(spans.xs_example).astype(np.int64)
    xs_offset = np.r_[0, np.cumsum(per_example)]
    work = np.cumsum(per_example**2)
    lo = 0
    while lo < len(per_example):
        hi = max(lo + 1, int(np.searchsorted(work, work[lo - 1] + _PAIR_CHUNK if lo else _PAIR_CHUNK, "right")))
        left_ids = np.arange(xs_offset[lo], xs_offset[hi])
        reps = per_example[spans.xs_example[left_ids]]
        a = np.repeat(left_ids, reps)
        b = np.repeat(xs_offset[spans.xs_example[left_ids]], reps) + ragged_arange(reps)
        ok = (a != b) & kept[a] & kept[b] & (spans.xs_last[b] > spans.xs_first[a])
        a, b = a[ok], b[ok]
        disjoint = np.ones(len(a), dtype=bool)
        for word in range(spans.xs_mask.shape[1]):
            disjoint &= (spans.xs_mask[a, word] & spans.xs_mask[b, word]) == 0
        yield a[disjoint], b[disjoint]
        lo = hi
