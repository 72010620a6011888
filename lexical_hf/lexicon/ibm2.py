"""IBM Model 2 with a fixed diagonal alignment prior, trained by EM in both directions; intersected Viterbi links.

Vectorised over *alignment cells*: for every emitted token (example e, position i of m) and every conditioning
position j (of n) one cell, laid out so that the cells of one emitted token are contiguous. An EM iteration is then a
handful of array operations over all cells (gather θ, multiply by the prior, normalise per token with
``np.add.reduceat``, scatter expected counts with ``np.add.at``), with no Python loop over tokens or examples. The cells
of a large corpus (their number is the sum of m·n over its examples) are built a run of about ``MAX_CELLS_PER_CHUNK``
at a time, so memory stays bounded; the result is the same to the last bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .corpus import ParallelCorpus, TokenSequences
from .registry import LearnerOutput, register_learner

__all__ = ["ibm2_learner", "viterbi_alignments"]

# Cells built at a time. About 100 bytes each at the EM's peak, so memory stays near 100 MiB whatever the corpus; runs
# this small also stay in cache and are faster than one run over all cells (benchmarks/ibm2_memory.py,
# results/diagnostics/ibm2_memory.txt).
MAX_CELLS_PER_CHUNK = 1 << 18


@register_learner("ibm2")
def ibm2_learner(
    corpus: ParallelCorpus,
    *,
    iterations: int = 5,
    tension: float = 1.0,
    null_probability: float = 0.0,
    variant: str = "paper",
) -> LearnerOutput:
    """IBM Model 2 alignments in both directions, intersected; entries count the intersected links.

    Model (for each direction; "emitted" tokens f_1..f_m are generated from "given" tokens e_1..e_n):
    ``p(f, a | e) = ∏_i p(a_i = j | i, m, n) θ(f_i | e_j)`` with the fixed diagonal prior
    ``p(a_i = j) ∝ exp(-tension · |i/m - j/n|)`` (1-based positions; the paper's tension is 1) and lexical
    parameters θ, initialised uniform and fitted by ``iterations`` EM steps (5, ``fast_align``'s default). With
    ``null_probability = p0 > 0`` a NULL word takes prior mass p0 (then ``1 - p0`` goes to real positions).

    The model is trained target-given-source and source-given-target; each direction's Viterbi alignment
    ``a_i = argmax_j p(a_i = j) θ(f_i | e_j)`` (ties: the leftmost j) gives one link per emitted token, and a link
    (source position, target position) is kept when both directions produce it. The entry score of (v, w) is the
    number of kept links between a token v and a token w over the corpus, so ``L ∝ exp(links / τ)``.

    ``variant="code"`` reproduces what the paper's released code ran instead: ``fast_align -o`` without ``-d``,
    which is *uniform* alignment (IBM Model 1) with a NULL word weighted like one more position
    (``p(a_i = j) = 1/(n+1)`` for j = NULL, 1..n), NULL winning Viterbi ties, and ``iterations - 1`` EM updates
    (fast_align's last iteration only writes the alignment); ``tension`` and ``null_probability`` are then ignored.
    On the Colors data this gives exactly the code's ``COLOR/alignments/intersect.align.o.json`` (dax→RED 6,
    lug→BLUE 9, wif→GREEN 8, zup→YELLOW 1); with the paper's diagonal prior fep→BLUE, blicket→GREEN and kiki→GREEN
    keep a few links too, because in 2–5 word inputs the prior pulls the last outputs towards the last input word.
    """
    if variant not in ("paper", "code"):
        raise ValueError(f"variant must be 'paper' or 'code', got {variant!r}")
    iterations = int(iterations)
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    updates = iterations
    if variant == "code":
        # fast_align's last "iteration" only prints the Viterbi alignment: iterations - 1 EM updates
        tension, null_probability, updates = 0.0, None, iterations - 1
    if null_probability is not None and not 0.0 <= null_probability < 1.0:
        raise ValueError(f"null_probability must be in [0, 1), got {null_probability}")
    # for every target token, the flat index of its aligned source token (-1: NULL or empty source)
    forward = viterbi_alignments(corpus.source, corpus.target, updates, tension, null_probability)
    # for every source token, the flat index of its aligned target token
    backward = viterbi_alignments(corpus.target, corpus.source, updates, tension, null_probability)
    target_positions = np.arange(len(corpus.target.ids), dtype=np.int64)
    linked = forward >= 0
    linked[linked] = backward[forward[linked]] == target_positions[linked]
    source_ids = corpus.source.ids[forward[linked]]
    target_ids = corpus.target.ids[target_positions[linked]]
    n_out = corpus.target.vocab_size
    pairs, counts = np.unique(source_ids * n_out + target_ids, return_counts=True)
    statistics = {"links_forward": int((forward >= 0).sum()), "links_intersected": int(linked.sum())}
    return LearnerOutput(pairs // n_out, pairs % n_out, counts.astype(np.int64), statistics=statistics)


def viterbi_alignments(
    given: TokenSequences,
    emitted: TokenSequences,
    iterations: int = 5,
    tension: float = 1.0,
    null_probability: float | None = 0.0,
    max_cells: int = MAX_CELLS_PER_CHUNK,
) -> np.ndarray:
    """Train ``p(emitted | given)`` by EM and return, for every emitted token (flat index), the flat index of the
    given token it aligns to under the Viterbi alignment, or -1 (aligned to NULL, or the given side is empty).

    ``null_probability=None`` gives NULL the weight of one more position (``1/(n+1)``, IBM Model 1 style).
    ``max_cells`` bounds memory: the cells are built for runs of whole emitted tokens of about that many cells at a
    time (rebuilt in every EM iteration when there is more than one run). Expected counts are accumulated in cell
    order whatever the runs (``np.add.at`` adds sequentially, like one ``np.bincount`` over all cells), so the
    result does not depend on ``max_cells`` to the last bit."""
    if max_cells < 1:
        raise ValueError(f"max_cells must be >= 1, got {max_cells}")
    result = np.full(len(emitted.ids), -1, dtype=np.int64)
    n_given = given.lengths[emitted.example_of_token]
    tokens = np.flatnonzero(n_given > 0)  # emitted tokens that have something to align to
    if len(tokens) == 0:
        return result
    sizes = n_given[tokens]
    # runs of whole tokens: a token belongs to the run its last cell falls in
    run_of_token = (np.cumsum(sizes) - 1) // max_cells
    run_bounds = np.r_[0, np.flatnonzero(np.diff(run_of_token)) + 1, len(tokens)]
    n_f = emitted.vocab_size

    def build(run: int) -> _Cells:
        return _Cells.build(given, emitted, tokens[run_bounds[run]:run_bounds[run + 1]], tension, null_probability)

    cached = build(0) if len(run_bounds) == 2 else None

    def runs():
        if cached is not None:
            yield cached
        else:
            for run in range(len(run_bounds) - 1):
                yield build(run)

    # lexical parameters θ(f | e) over the (e, f) pairs that occur in some cell: indexed by the pair's key
    # e · |F| + f when that table is small, else by the key's rank among the keys that occur
    if given.vocab_size * n_f <= max(4 * int(sizes.sum()), 1 << 22):
        unique_keys, n_pairs = None, given.vocab_size * n_f
        pair_given = np.arange(n_pairs, dtype=np.int64) // n_f
    else:
        unique_keys = np.unique(np.concatenate([np.unique(cells.keys) for cells in runs()]))
        n_pairs = len(unique_keys)
        pair_given = unique_keys // n_f

    def pair_of(cells: _Cells) -> np.ndarray:
        return cells.keys if unique_keys is None else np.searchsorted(unique_keys, cells.keys)

    theta = np.full(n_pairs, 1.0 / n_f)
    theta_null = np.full(n_f, 1.0 / n_f)
    use_null = null_probability is None or null_probability > 0
    for _ in range(iterations):
        counts = np.zeros(n_pairs)
        null_counts = np.zeros(n_f)
        for cells in runs():
            pair = pair_of(cells)
            weight = cells.prior * theta[pair]
            total = np.add.reduceat(weight, cells.group_start)
            null_weight = cells.p0 * theta_null[cells.emitted_ids] if use_null else 0.0
            total = total + null_weight
            np.add.at(counts, pair, weight / total[cells.cell_token])
            if use_null:
                np.add.at(null_counts, cells.emitted_ids, null_weight / total)
        per_given = np.bincount(pair_given, weights=counts, minlength=given.vocab_size)
        with np.errstate(invalid="ignore", divide="ignore"):
            theta = np.where(per_given[pair_given] > 0, counts / per_given[pair_given], 0.0)
        if use_null:
            theta_null = null_counts / null_counts.sum()

    for run, cells in enumerate(runs()):
        weight = cells.prior * theta[pair_of(cells)]
        best = np.maximum.reduceat(weight, cells.group_start)
        is_best = np.flatnonzero(weight == best[cells.cell_token])
        # leftmost argmax per token
        first = is_best[np.r_[True, cells.cell_token[is_best[1:]] != cells.cell_token[is_best[:-1]]]]
        aligned = cells.given_flat[first]
        if use_null:  # NULL wins ties, as in fast_align (it is scored first and replaced only by a strictly better j)
            aligned = np.where(cells.p0 * theta_null[cells.emitted_ids] >= best, -1, aligned)
        result[tokens[run_bounds[run]:run_bounds[run + 1]]] = aligned
    return result


@dataclass(frozen=True)
class _Cells:
    """The alignment cells of a run of emitted tokens (each with a non-empty given side): one cell per (emitted
    token, given position), the cells of one token contiguous.

    Per token: ``group_start`` (its first cell), ``emitted_ids``, ``p0`` (NULL's prior). Per cell: ``cell_token``
    (the token's index in the run), ``given_flat`` (the given token's flat index), ``keys`` (e · |F| + f) and
    ``prior`` (the diagonal prior, normalised per token to 1 − p0)."""

    group_start: np.ndarray
    emitted_ids: np.ndarray
    p0: np.ndarray
    cell_token: np.ndarray
    given_flat: np.ndarray
    keys: np.ndarray
    prior: np.ndarray

    @classmethod
    def build(cls, given: TokenSequences, emitted: TokenSequences, tokens: np.ndarray, tension: float,
              null_probability: float | None) -> "_Cells":
        example = emitted.example_of_token[tokens]
        sizes = given.lengths[example]
        group_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        cell_token = np.repeat(np.arange(len(tokens), dtype=np.int64), sizes)
        j = np.arange(int(sizes.sum()), dtype=np.int64) - group_start[cell_token]  # 0-based given position
        given_flat = given.offsets[example][cell_token] + j
        emitted_ids = emitted.ids[tokens]
        # fixed diagonal prior, normalised per emitted token; p0 = prior probability of NULL per emitted token
        p0 = 1.0 / (sizes + 1.0) if null_probability is None else np.full(len(tokens), float(null_probability))
        # |i/m - j/n| as |i·n - j·m| / (m·n) in integers, so equal distances (e.g. either side of the diagonal) give
        # bit-identical priors and ties are broken by the documented rule, not by rounding
        i = (emitted.position_in_example[tokens] + 1)[cell_token]
        m = emitted.lengths[example][cell_token]
        n = sizes[cell_token]
        prior = np.exp(-tension * (np.abs(i * n - (j + 1) * m) / (m * n)))
        prior *= ((1.0 - p0) / np.add.reduceat(prior, group_start))[cell_token]
        keys = given.ids[given_flat] * emitted.vocab_size + emitted_ids[cell_token]
        return cls(group_start, emitted_ids, p0, cell_token, given_flat, keys, prior)
