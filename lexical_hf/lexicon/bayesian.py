"""The Bayesian lexicon learner of Frank, Goodman & Tenenbaum (2007), as described by Akyürek & Andreas (2021).

Model. A lexicon ℓ is a set of (input token, output token) pairs with prior ``p(ℓ) ∝ exp(-alpha · |ℓ|)``
(``alpha = 1``). Given an example's output, each input token x is generated

* referentially with probability γ: an output type w of the example is picked uniformly (the output types play the
  role of Frank et al.'s intended objects) and x is drawn uniformly from the inputs paired with w in ℓ, so
  ``p_R(x) = (1 / |T(y)|) Σ_{w ∈ T(y)} [(x, w) ∈ ℓ] / n_ℓ(w)``, with ``n_ℓ(w) = |{x' : (x', w) ∈ ℓ}|``;
* non-referentially with probability 1 - γ, from ``p_NR(x) ∝ 1`` if x is not in ℓ and κ if it is (normalised over
  the input vocabulary V: ``Z = |V| - K + κ·K`` with K the number of distinct inputs of ℓ).

so ``p(x | y, ℓ) = γ p_R(x) + (1 - γ) p_NR(x)`` and the likelihood is the product over input tokens. γ = 0.95,
κ = 0.1. As in Frank et al., outputs with no lexicon entry contribute no referential mass (the referential branch is
then sub-normalised), which is what makes a lexicon entry worth its prior cost.

Inference. Metropolis–Hastings over ℓ starting from the empty lexicon. A step proposes, with probability 1/2 each,

* insertion of a pair drawn from the empirical joint co-occurrence distribution ``#(v, w) / Σ #`` (if the pair is
  already in ℓ the chain stays), or
* deletion of an entry drawn uniformly from ℓ (if ℓ is empty the chain stays),

and accepts with the Hastings ratio ``p(D | ℓ') p(ℓ') q(ℓ | ℓ') / (p(D | ℓ) p(ℓ) q(ℓ' | ℓ))``. After ``burn_in``
steps a sample is taken every ``thin`` steps until ``num_samples`` samples; the score of (v, w) is the fraction of
samples that contain it (its posterior probability), so ``L ∝ exp(posterior / τ)``.

Speed. Each step costs O(rows it touches), not O(corpus). Each (example, input type) row k holds its token count
``x_k``, its referential mass ``R_k`` and its number of active partners; toggling (v, w) changes ``R_k`` only on the
rows of v in examples containing w and on the rows of the other inputs paired with w there (index lists precomputed
per pair). With ``a = (1 - γ) κ / Z``,
``log p(D | ℓ) = Σ_{k: v_k ∈ ℓ} x_k log(γ R_k + a) + (N - C_ℓ) log((1 - γ) / Z)`` (N input tokens, C_ℓ those of inputs
in ℓ), so rows of inputs outside ℓ never need touching. When v gains its first or loses its last entry, Z and ``a``
change for every row of ℓ; that shift ``Σ x log((γR + a') / (γR + a))`` comes from maintained moments
(rows with R = 0 contribute ``log(1 + ε)`` each, the others ``Σ_j (-1)^(j+1) ε^j ρ^j / j`` with ``ε = a'/a - 1``,
``ρ = a / (γR + a)``), used only when the truncation error is provably below 1e-9, else summed directly. A proposal
stops early when the part of the change that can only help (the pair's own rows for an insertion, the others' for a
deletion) already fails the acceptance test, and what is known about a pair is reused until the lexicon changes.
All random numbers are drawn up front from ``numpy.random.default_rng(seed)``, so a seed fixes the result.
"""

from __future__ import annotations

import math

import numpy as np

from .corpus import ParallelCorpus
from .registry import LearnerOutput, check_seed, register_learner

__all__ = ["bayesian_learner"]


@register_learner("bayesian")
def bayesian_learner(
    corpus: ParallelCorpus,
    *,
    gamma: float = 0.95,
    kappa: float = 0.1,
    alpha: float = 1.0,
    burn_in: int = 1000,
    thin: int = 10,
    num_samples: int = 2000,
    min_posterior: float = 0.0,
    seed: int = 0,
) -> LearnerOutput:
    """Frank, Goodman & Tenenbaum (2007) lexicon posterior by Metropolis–Hastings (see the module docstring).

    Entries are the pairs present in at least one sample (and in at least ``min_posterior`` of them), scored by
    their posterior probability. ``num_samples = 2000`` is inferred from the paper code's Colors lexicon (counts up
    to 1995); the paper states burn-in 1000 and a sample every 10 steps.
    """
    seed = check_seed(seed, "bayesian_learner")
    if not 0.0 < gamma < 1.0 or not 0.0 < kappa:
        raise ValueError(f"need 0 < gamma < 1 and kappa > 0, got gamma={gamma}, kappa={kappa}")
    if burn_in < 0 or thin < 1 or num_samples < 1:
        raise ValueError(f"need burn_in >= 0, thin >= 1, num_samples >= 1; got {burn_in}, {thin}, {num_samples}")
    if len(corpus.cooccurrence()[0]) == 0:  # no input ever occurs with an output: nothing to propose
        empty = np.zeros(0, dtype=np.int64)
        return LearnerOutput(empty, empty, np.zeros(0), statistics={"steps": 0})
    sampler = _Sampler(corpus, gamma, kappa, alpha)
    tally, stats = sampler.run(int(burn_in), int(thin), int(num_samples), np.random.default_rng(seed))
    posterior = tally / num_samples
    keep = (tally > 0) & (posterior >= min_posterior)
    return LearnerOutput(sampler.pair_source[keep], sampler.pair_target[keep], posterior[keep], statistics=stats)


class _Sampler:
    def __init__(self, corpus: ParallelCorpus, gamma: float, kappa: float, alpha: float):
        self.gamma, self.kappa, self.alpha = gamma, kappa, alpha
        n_in, n_out = corpus.source.vocab_size, corpus.target.vocab_size
        self.vocab_size = n_in

        # rows k = (example, input type) sorted by input type, so the rows of one input are a slice
        src_example, src_type, src_count = corpus.source.types_per_example
        order = np.lexsort((src_example, src_type))
        self.row_count = src_count[order].astype(np.float64)
        row_of_src_row = np.empty_like(order)
        row_of_src_row[order] = np.arange(len(order))
        bounds = np.concatenate([[0], np.cumsum(np.bincount(src_type, minlength=n_in))])
        self.row_start, self.row_end = bounds[:-1], bounds[1:]
        self.tokens_of_input = np.bincount(src_type, weights=src_count, minlength=n_in)
        self.num_tokens = float(src_count.sum())

        tgt_example, _, _ = corpus.target.types_per_example
        types_per_output = np.bincount(tgt_example, minlength=corpus.num_examples).astype(np.float64)
        with np.errstate(divide="ignore"):
            inverse_types = np.where(types_per_output > 0, 1.0 / np.maximum(types_per_output, 1), 0.0)

        # candidate pairs: every co-occurring (v, w), with its proposal probability
        self.pair_source, self.pair_target, counts = corpus.cooccurrence()
        self.log_proposal = np.log(counts) - math.log(counts.sum())
        self.cdf = np.cumsum(counts / counts.sum())
        pair_keys = self.pair_source * n_out + self.pair_target

        # for every pair, the rows (and 1/|T(y)|) of examples where both occur: a slice of trip_row / trip_weight
        example, src_row, tgt_row = corpus.cooccurrence_triples()
        _, src_types, _ = corpus.source.types_per_example
        _, tgt_types, _ = corpus.target.types_per_example
        trip_pair = np.searchsorted(pair_keys, src_types[src_row] * n_out + tgt_types[tgt_row])
        by_pair = np.argsort(trip_pair, kind="stable")
        self.trip_row = row_of_src_row[src_row[by_pair]]
        self.trip_weight = inverse_types[example[by_pair]]
        self.trip_count = self.row_count[self.trip_row]
        pair_bounds = np.concatenate([[0], np.cumsum(np.bincount(trip_pair, minlength=len(pair_keys)))])
        self.pair_start, self.pair_end = pair_bounds[:-1], pair_bounds[1:]

        # pairs grouped by output token
        self.pairs_by_output = np.argsort(self.pair_target, kind="stable")
        out_bounds = np.concatenate([[0], np.cumsum(np.bincount(self.pair_target, minlength=n_out))])
        self.output_start, self.output_end = out_bounds[:-1], out_bounds[1:]
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """The empty lexicon."""
        n_pairs, n_rows = len(self.pair_source), len(self.row_count)
        self.in_lexicon = np.zeros(n_pairs, dtype=bool)
        self.entries = np.zeros(n_pairs, dtype=np.int64)  # current entries (pair ids) in entries[:size]
        self.slot = np.full(n_pairs, -1, dtype=np.int64)  # position of a pair in `entries`
        self.size = 0
        self.per_output = np.zeros(len(self.output_start), dtype=np.int64)  # n_ℓ(w)
        self.per_input = np.zeros(self.vocab_size, dtype=np.int64)
        self.referential = np.zeros(n_rows, dtype=np.float64)  # R_k
        self.partners = np.zeros(n_rows, dtype=np.int32)  # outputs of the row's example paired with its input
        self.row_in_lexicon = np.zeros(n_rows, dtype=bool)  # v_k has an entry
        self.distinct_inputs = 0  # K
        self.tokens_in_lexicon = 0.0  # C_ℓ
        # Moments of the lexicon rows, so that a change of Z costs O(rows touched) instead of O(all rows):
        # zero_tokens = Σ x_k over rows with R_k = 0;  moments[j-1] = Σ x_k ρ_k^j over rows with R_k > 0,
        # ρ_k = a / (γ R_k + a) with a = (1-γ) κ / Z;  smallest_positive = a lower bound on R_k over those rows.
        self.zero_tokens = 0.0
        self.moments = np.zeros(_MOMENTS)
        self.smallest_positive = math.inf
        self.moments_stale = False
        self.series_evaluations = self.direct_evaluations = 0

    def normaliser(self, distinct_inputs: int) -> float:
        return self.vocab_size - distinct_inputs + self.kappa * distinct_inputs

    def floor(self, distinct_inputs: int) -> float:
        """a = (1 - γ) κ / Z: the non-referential probability of an input of ℓ."""
        return (1.0 - self.gamma) * self.kappa / self.normaliser(distinct_inputs)

    def log_likelihood(self) -> float:
        """log p(D | ℓ) of the current lexicon, from the maintained state (O(rows); for checks)."""
        z = self.normaliser(self.distinct_inputs)
        rows = self.row_in_lexicon
        referential_part = _dot(
            self.row_count[rows], np.log(self.gamma * self.referential[rows] + self.floor(self.distinct_inputs))
        )
        return referential_part + (self.num_tokens - self.tokens_in_lexicon) * math.log((1.0 - self.gamma) / z)

    def _refresh_moments(self) -> None:
        rows = self.row_in_lexicon
        positive = rows & (self.partners > 0)
        self.zero_tokens = float(self.row_count[rows & (self.partners == 0)].sum())
        values = self.referential[positive]
        self.smallest_positive = float(values.min()) if len(values) else math.inf
        a = self.floor(self.distinct_inputs)
        rho = a / (self.gamma * values + a)
        counts = self.row_count[positive]
        power = np.ones_like(rho)
        for j in range(_MOMENTS):
            power *= rho
            self.moments[j] = _dot(counts, power)
        self.moments_stale = False

    def _moment_change(self, old, new, counts, a: float):
        """Change of (tokens with R = 0, Σ x ρ^j for j = 1..J over R > 0) when rows go from ``old`` to ``new``."""
        values = np.concatenate([old, new])
        signed = np.concatenate([-counts, counts])
        zero = values == 0.0
        rho = np.where(zero, 0.0, a / (self.gamma * values + a))  # R = 0 rows count in zero_tokens, not the moments
        terms = np.empty(_MOMENTS)
        power = rho.copy()
        for j in range(_MOMENTS):
            if j:
                power *= rho
            terms[j] = _dot(signed, power)
        return float(signed[zero].sum()), terms

    # ------------------------------------------------------------------ one move
    def _own_rows(self, pair: int, inserting: bool):
        """The rows of the pair's input in examples containing its output: R gains (loses) 1/|T(y)| / n_ℓ(w)."""
        v, w = int(self.pair_source[pair]), int(self.pair_target[pair])
        n_before = int(self.per_output[w])
        n_after = n_before + (1 if inserting else -1)
        own = slice(self.pair_start[pair], self.pair_end[pair])
        rows, counts = self.trip_row[own], self.trip_count[own]
        old = self.referential[rows]
        partners = self.partners[rows] + (1 if inserting else -1)
        new = old + self.trip_weight[own] * ((1.0 / n_after) if inserting else (-1.0 / n_before))
        new = np.where(partners > 0, np.maximum(new, 0.0), 0.0)  # exact zeros, no rounding residue
        return v, w, n_before, n_after, (rows, counts, old, new, partners)

    def _other_rows(self, pair: int, inserting: bool, w: int, n_before: int, n_after: int):
        """The rows of the other inputs paired with w, in examples containing w: their share 1/n_ℓ(w) changes."""
        candidates = self.pairs_by_output[self.output_start[w] : self.output_end[w]]
        others = candidates[self.in_lexicon[candidates]]
        if not inserting:
            others = others[others != pair]
        if not len(others) or n_after == 0:
            empty = np.zeros(0)
            return np.zeros(0, dtype=np.int64), empty, empty, empty
        parts = [slice(self.pair_start[o], self.pair_end[o]) for o in others.tolist()]
        rows = np.concatenate([self.trip_row[p] for p in parts])
        counts = np.concatenate([self.trip_count[p] for p in parts])
        old = self.referential[rows]
        weights = np.concatenate([self.trip_weight[p] for p in parts])
        new = np.maximum(old + weights * (1.0 / n_after - 1.0 / n_before), 0.0)
        return rows, counts, old, new

    def _change(self, counts, old, new, a_old: float, a_new: float) -> float:
        gamma = self.gamma
        return _dot(counts, np.log(gamma * new + a_new) - np.log(gamma * old + a_old))

    def propose(self, pair: int, inserting: bool):
        """The exact change of log p(D | ℓ) if ``pair`` is inserted (deleted), and what `commit` needs."""
        value, move, _ = self.evaluate(pair, inserting, threshold=None)
        return value, move

    def evaluate(self, pair: int, inserting: bool, threshold: float | None):
        """``(value, move, exact)``. With a ``threshold``, the work may stop early at an upper bound ``value`` of
        the change once it is known to be ``<= threshold`` (the proposal is then rejected); ``move`` is then None."""
        v, w, n_before, n_after, own = self._own_rows(pair, inserting)
        own_rows, own_counts, own_old, own_new, own_partners = own
        status_change = self.per_input[v] == (0 if inserting else 1)
        a = self.floor(self.distinct_inputs)
        if not status_change:
            # Z is unchanged and every touched row belongs to an input of ℓ: only those rows' terms change. Inserting
            # raises the pair's own rows and lowers the others (deleting: the reverse), so the part that can only
            # help is an upper bound on the change: if even that cannot pass the acceptance test, stop there.
            if inserting:
                bound = self._change(own_counts, own_old, own_new, a, a)
                if threshold is not None and bound <= threshold:
                    return bound, None, False
                others = self._other_rows(pair, inserting, w, n_before, n_after)
                value = bound + self._change(others[1], others[2], others[3], a, a)
            else:
                others = self._other_rows(pair, inserting, w, n_before, n_after)
                bound = self._change(others[1], others[2], others[3], a, a)
                if threshold is not None and bound <= threshold:
                    return bound, None, False
                value = bound + self._change(own_counts, own_old, own_new, a, a)
            return value, (pair, inserting, v, w, n_after, own, others), True

        others = self._other_rows(pair, inserting, w, n_before, n_after)
        other_rows, other_counts, other_old, other_new = others
        move = (pair, inserting, v, w, n_after, own, others)
        # v enters or leaves ℓ, so Z (and a) change for every row of ℓ. Rows are split into: the rows of v (V), the
        # other changed rows (O), and the untouched rows of ℓ (U), whose total change Σ x log((γR + a') / (γR + a))
        # comes from the maintained moments: Σ over R = 0 of log(1 + ε) plus Σ_j (-1)^(j+1) ε^j/j Σ x ρ^j, with
        # ε = a'/a - 1 (a truncated series, used only when its error bound is below 1e-9; otherwise summed directly).
        gamma = self.gamma
        distinct_after = self.distinct_inputs + (1 if inserting else -1)
        a_after = self.floor(distinct_after)
        epsilon = a_after / a - 1.0
        v_count = float(self.tokens_of_input[v])
        own_tokens = float(own_counts.sum())
        # V: before insertion not in ℓ (its terms are in the closed form); after it, own rows have R' and the rest 0.
        # A deleted single entry leaves R = 0 on all of V; before, own rows had R > 0 and the rest 0.
        if inserting:
            v_terms = _dot(own_counts, np.log(gamma * own_new + a_after)) + (v_count - own_tokens) * math.log(a_after)
            v_shift = 0.0  # v's rows are not in the moments
        else:
            v_terms = -_dot(own_counts, np.log(gamma * own_old + a)) - (v_count - own_tokens) * math.log(a)
            v_shift = _dot(own_counts, np.log(gamma * own_old + a_after) - np.log(gamma * own_old + a)) + (
                v_count - own_tokens
            ) * math.log1p(epsilon)
        other_terms = self._change(other_counts, other_old, other_new, a_after, a_after)
        lexicon_shift = self._shift_of_lexicon_rows(epsilon, a, a_after) - v_shift
        tokens_after = self.tokens_in_lexicon + (v_count if inserting else -v_count)
        log_keep = math.log(1.0 - gamma)
        closed_form = (self.num_tokens - tokens_after) * (
            log_keep - math.log(self.normaliser(distinct_after))
        ) - (self.num_tokens - self.tokens_in_lexicon) * (log_keep - math.log(self.normaliser(self.distinct_inputs)))
        return lexicon_shift + other_terms + v_terms + closed_form, move, True

    def _shift_of_lexicon_rows(self, epsilon: float, a: float, a_after: float) -> float:
        """Σ over the rows of ℓ of x log((γR + a') / (γR + a)) with the current R."""
        if self.moments_stale:
            self._refresh_moments()
        rho_max = a / (self.gamma * self.smallest_positive + a) if math.isfinite(self.smallest_positive) else 0.0
        ratio = abs(epsilon) * rho_max
        positive_tokens = self.tokens_in_lexicon - self.zero_tokens
        if ratio < 0.5 and ratio ** (_MOMENTS + 1) / (1.0 - ratio) * positive_tokens < 1e-9:
            self.series_evaluations += 1
            coefficients = np.array([(-1.0) ** (j + 1) * epsilon**j / j for j in range(1, _MOMENTS + 1)])
            return self.zero_tokens * math.log1p(epsilon) + _dot(coefficients, self.moments)
        self.direct_evaluations += 1
        rows = self.row_in_lexicon
        values = self.referential[rows]
        return _dot(self.row_count[rows], np.log(self.gamma * values + a_after) - np.log(self.gamma * values + a))

    def commit(self, move) -> None:
        pair, inserting, v, w, n_after, own, others = move
        own_rows, own_counts, own_old, own_new, own_partners = own
        other_rows, other_counts, other_old, other_new = others
        status_change = self.per_input[v] == (0 if inserting else 1)
        if not status_change and not self.moments_stale:
            new = np.concatenate([own_new, other_new])
            zero_change, moment_change = self._moment_change(
                np.concatenate([own_old, other_old]), new, np.concatenate([own_counts, other_counts]),
                self.floor(self.distinct_inputs),
            )  # fmt: skip
            self.zero_tokens += zero_change
            self.moments += moment_change
            positive = new[new > 0]
            if len(positive):
                self.smallest_positive = min(self.smallest_positive, float(positive.min()))
        self.referential[own_rows] = own_new
        self.partners[own_rows] = own_partners
        self.referential[other_rows] = other_new
        if status_change:
            self.row_in_lexicon[self.row_start[v] : self.row_end[v]] = inserting
            self.distinct_inputs += 1 if inserting else -1
            self.tokens_in_lexicon += float(self.tokens_of_input[v]) * (1 if inserting else -1)
            self.moments_stale = True  # a changed: recomputed when next needed
        self.per_output[w] = n_after
        self.per_input[v] += 1 if inserting else -1
        self.in_lexicon[pair] = inserting
        if inserting:
            self.entries[self.size], self.slot[pair] = pair, self.size
            self.size += 1
        else:
            last = self.entries[self.size - 1]
            self.entries[self.slot[pair]], self.slot[last] = last, self.slot[pair]
            self.slot[pair] = -1
            self.size -= 1

    # ------------------------------------------------------------------ the chain
    def run(self, burn_in: int, thin: int, num_samples: int, rng: np.random.Generator):
        n_pairs = len(self.pair_source)
        steps = burn_in + thin * num_samples
        propose_insert = rng.random(steps) < 0.5
        insert_pair = np.minimum(np.searchsorted(self.cdf, rng.random(steps) * self.cdf[-1], side="right"), n_pairs - 1)
        delete_draw = rng.random(steps)
        log_uniform = np.log(rng.random(steps))
        alpha, log_proposal = self.alpha, self.log_proposal
        tally = np.zeros(n_pairs, dtype=np.int64)
        accepted = proposed = size_sum = 0
        # A proposal's likelihood change depends only on the current lexicon, and most proposals are rejected, so
        # what was learned about a pair (its exact change, or an upper bound) is kept until the lexicon changes.
        known: dict[int, tuple[float, bool]] = {}
        for step in range(steps):
            size = self.size
            if propose_insert[step]:
                pair = int(insert_pair[step])
                if self.in_lexicon[pair]:
                    pair = -1  # already in ℓ: stay
                inserting = True
            else:
                pair = int(self.entries[int(delete_draw[step] * size)]) if size else -1
                inserting = False
            if pair < 0:
                pass
            else:
                proposed += 1
                if inserting:  # q(ℓ'→ℓ) = 1/2 · 1/(|ℓ|+1),  q(ℓ→ℓ') = 1/2 · π(v, w)
                    log_rest = -alpha - math.log(size + 1) - log_proposal[pair]
                else:  # q(ℓ'→ℓ) = 1/2 · π(v, w),  q(ℓ→ℓ') = 1/2 · 1/|ℓ|
                    log_rest = alpha + log_proposal[pair] + math.log(size)
                # accept iff log u < Δ log p(D | ℓ) + log_rest
                threshold = log_uniform[step] - log_rest
                value, exact = known.get(pair, (math.inf, False))
                move = None
                if value > threshold and not exact:
                    value, move, exact = self.evaluate(pair, inserting, threshold)
                    known[pair] = (value, exact)
                if value > threshold:
                    if move is None:
                        _, move = self.propose(pair, inserting)
                    accepted += 1
                    self.commit(move)
                    known.clear()
            if step >= burn_in and (step - burn_in) % thin == thin - 1:
                tally[self.entries[: self.size]] += 1
                size_sum += self.size
        stats = {
            "steps": steps,
            "acceptance_rate": round(accepted / max(proposed, 1), 6),
            "mean_sampled_lexicon_size": round(size_sum / num_samples, 3),
        }
        return tally, stats


_MOMENTS = 4  # terms of the series for a change of Z (see Speed in the module docstring)


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """Σ a·b without BLAS: a multithreaded BLAS dot on vectors this short is slower, and its worker threads
    spin-wait between calls, which on a busy 2-core machine slowed the sampler down up to 8x."""
    return float(np.einsum("i,i->", a, b))
