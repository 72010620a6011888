"""Lexicon learners (Akyürek & Andreas 2021, Section 4) and `learn_lexicon`, the one entry point.

Every learner works on whitespace tokens of a training split and sees only a `ParallelCorpus` (integer arrays); all
corpus statistics are computed column-wise, never as a side effect of ``Dataset.map`` (which would vanish on a cache
hit). The registry holds:

========== ===================================================================================================
simple     the paper's rule (default): necessity / sufficiency of co-occurrence, see `simple_learner`
pmi        pointwise mutual information over examples, see `pmi_learner`
ibm2       IBM Model 2 with a fixed diagonal prior, both directions, intersected Viterbi links (`ibm2_learner`)
bayesian   Frank, Goodman & Tenenbaum (2007) lexicon posterior by Metropolis–Hastings (`bayesian_learner`)
identity   copying: every input token that is also an output token maps to itself
uniform    the paper's ablation: no entries, every row of L uniform
========== ===================================================================================================

Scores are the learners' evidence; `Lexicon.to_matrix` turns them into ``L[v, w] ∝ exp(score / τ)``.

Paper vs. released code (github.com/ekinakyurek/lexical), where they differ and it matters:

* Simple. The paper keeps ``C3 = suff ∧ (nec ∨ no-winner(w)) ∧ |{v' : suff(v', w)}| ≤ ε``. The code
  (``utils/summarize_aligned_data3.py``) removes the non-necessary candidates of ``w`` only when *exactly one*
  candidate is necessary (with two or more it keeps every sufficient candidate), and adds 1 to the score of a copy
  entry ``v -> v``. ``variant="code"`` reproduces both; the default ``"paper"`` implements the paper.
* PMI. The code adds no ``log |D|`` (a per-row constant: same distribution) but its soft lexicon is a softmax of
  ``2·100·softmax(pmi)/τ`` over *all* output tokens; here ``L ∝ exp(pmi / τ)`` over co-occurring pairs, as in the
  paper. The hard (τ = 0) lexicons agree: the argmax of PMI.
* IBM Model 2. The paper describes the diagonal prior ``exp(-|i/m - j/n|)``; the code ran ``fast_align -o`` without
  ``-d`` and ``atools -c intersect``, i.e. uniform alignment with a NULL word (IBM Model 1). The default follows the
  paper (no NULL word unless ``null_probability > 0``); ``variant="code"`` reproduces the code, and gives exactly the
  code's stored Colors lexicon. They differ on short inputs: the diagonal prior lets function words at the end of an
  input keep links to the outputs at the end (Colors: fep→BLUE, blicket→GREEN, kiki→GREEN; SCAN: around→I_TURN_LEFT,
  the paper's own Figure 3 observation).
* Bayesian. The repository holds the sampler's outputs (``goodman.json`` per dataset) but not the sampler; the number
  of samples (2000) is inferred from them. Its sample counts per pair become posterior probabilities here.
* Soft lexicons in the code also give weight ``exp(0)`` to every non-entry output; here only entries get mass and
  inputs without entries follow the fallback rule (see `Lexicon`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .corpus import ParallelCorpus
from .lexicon import REPLACEABLE_FALLBACKS, Lexicon, replaced_fallback
from .registry import LEARNERS, LearnerOutput, available_methods, check_seed, get_learner, register_learner

TIE_BREAKS = ("cooccurrence", "first_appearance", "string")

__all__ = [
    "LEARNERS",
    "TIE_BREAKS",
    "available_methods",
    "bayesian_learner",
    "ibm2_learner",
    "identity_learner",
    "learn_lexicon",
    "pmi_learner",
    "register_learner",
    "simple_learner",
    "uniform_learner",
]


# ---------------------------------------------------------------------- the learners
@register_learner("simple")
def simple_learner(corpus: ParallelCorpus, *, epsilon: int = 3, variant: str = "paper") -> LearnerOutput:
    """The paper's rule: keep (v, w) when v is sufficient for w, necessary unless nothing is, and w is specific.

    With counts over examples (sets of tokens), #(v) and #(w) the examples containing v (in the input) or w (in the
    output) and #(v, w) those containing both:

    * ``suff(v, w)``: every input containing v has w in its output, i.e. ``#(v, w) = #(v)``;
    * ``nec(v, w)``: every output containing w has v in its input, i.e. ``#(v, w) = #(w)``;
    * ``C1 = nec ∧ suff``; ``no_winner(w)``: no v' with ``C1(v', w)``;
    * ``C2 = suff ∧ (nec ∨ no_winner(w))``;
    * ``C3 = C2 ∧ |{v' : suff(v', w)}| ≤ ε`` (ε = ``epsilon`` = 3: outputs implied by many inputs are not lexical).

    Entries are the pairs with C3, scored by ``#(v, w)``. ``variant="code"`` follows the released code instead (see
    the module docstring): the non-necessary candidates of w are removed only when exactly one candidate satisfies
    C1, and copy entries (v == w) get score ``#(v, w) + 1``.
    """
    if variant not in ("paper", "code"):
        raise ValueError(f"variant must be 'paper' or 'code', got {variant!r}")
    if int(epsilon) < 1:
        raise ValueError(f"epsilon must be a positive integer, got {epsilon}")
    v, w, count = corpus.cooccurrence()
    n_out = corpus.target.vocab_size
    sufficient = count == corpus.source.document_frequency[v]
    necessary = count == corpus.target.document_frequency[w]
    winners = np.bincount(w[sufficient & necessary], minlength=n_out)
    if variant == "paper":
        keep = sufficient & (necessary | (winners[w] == 0))
    else:
        keep = sufficient & (necessary | (winners[w] != 1))
    keep &= np.bincount(w[sufficient], minlength=n_out)[w] <= int(epsilon)
    scores = count[keep].copy()
    if variant == "code":
        scores += _copy_pairs(corpus, v[keep], w[keep])
    return LearnerOutput(v[keep], w[keep], scores)


@register_learner("pmi")
def pmi_learner(corpus: ParallelCorpus) -> LearnerOutput:
    """Pointwise mutual information over examples, for every co-occurring pair:

    ``pmi(v; w) = log #(v, w) - log #(v) - log #(w) + log |D_train|`` with counts of examples (each example counts a
    token once). Every co-occurring pair is an entry; ``L ∝ exp(pmi / τ)``, so the hard lexicon is the argmax PMI.
    """
    v, w, count = corpus.cooccurrence()
    # One log of one correctly rounded quotient of exact integers (not a sum of four logs): pairs whose PMI is equal
    # in exact arithmetic get equal floats, so ties are ties and the tie-break rule decides them, not rounding.
    # (The integers stay below 2**53, where float64 holds them exactly, up to ~9e7 examples.)
    numerator = count.astype(np.int64) * corpus.num_examples
    denominator = (corpus.source.document_frequency[v].astype(np.int64)
                   * corpus.target.document_frequency[w].astype(np.int64))
    pmi = np.log(numerator / denominator)
    return LearnerOutput(v, w, pmi)


@register_learner("identity")
def identity_learner(corpus: ParallelCorpus) -> LearnerOutput:
    """Copying: every input token that also occurs as an output token (in the training data) maps to itself."""
    source_ids, target_ids = _shared_tokens(corpus)
    return LearnerOutput(source_ids, target_ids, np.ones(len(source_ids), dtype=np.int64))


@register_learner("uniform")
def uniform_learner(corpus: ParallelCorpus) -> LearnerOutput:
    """The paper's ablation: no entries and a uniform fallback, so every (non-special) row of L is uniform."""
    empty = np.zeros(0, dtype=np.int64)
    return LearnerOutput(empty, empty, empty, fallback="uniform")


def _shared_tokens(corpus: ParallelCorpus) -> tuple[np.ndarray, np.ndarray]:
    """Ids of the token strings present in both vocabularies (both vocabularies are sorted)."""
    source = np.array(corpus.source_vocab, dtype=object)
    target = np.array(corpus.target_vocab, dtype=object)
    if len(source) == 0 or len(target) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    position = np.searchsorted(target, source)
    position = np.minimum(position, len(target) - 1)
    shared = target[position] == source
    return np.flatnonzero(shared).astype(np.int64), position[shared].astype(np.int64)


def _copy_pairs(corpus: ParallelCorpus, v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """1 where source id v and target id w are the same string, else 0."""
    copy_target = np.full(corpus.source.vocab_size, -1, dtype=np.int64)
    source_ids, target_ids = _shared_tokens(corpus)
    copy_target[source_ids] = target_ids
    return (copy_target[v] == w).astype(np.int64)


# imported after the registry exists: these modules register themselves
from .bayesian import bayesian_learner  # noqa: E402
from .ibm2 import ibm2_learner  # noqa: E402

# list the learners in the paper's order
for _name in ("simple", "pmi", "ibm2", "bayesian", "identity", "uniform"):
    LEARNERS[_name] = LEARNERS.pop(_name)


# ---------------------------------------------------------------------- the entry point
def learn_lexicon(
    data,
    method: str = "simple",
    *,
    source_column: str = "source",
    target_column: str = "target",
    temperature: float = 0.0,
    seed: int = 0,
    provenance: Mapping[str, Any] | None = None,
    tie_break: str = "cooccurrence",
    fallback: str | None = None,
    **method_kwargs,
) -> Lexicon:
    """Learn a lexicon from parallel data.

    Args:
        data: a `datasets.Dataset` (one split, usually train) with whitespace-tokenized text columns (or columns of
            token lists); a pair ``(sources, targets)`` of sequences of such strings; a list of ``(source, target)``
            string pairs, tuples as `zip` makes them or two-item lists as `json.load` does (exactly two such pairs
            are ambiguous with a two-example ``(sources, targets)``, and an error); a mapping with
            ``source_column`` and ``target_column`` keys; or a `ParallelCorpus`.
        method: a registered learner, one of `available_methods()`:
            ``simple`` (default), ``pmi``, ``ibm2``, ``bayesian``, ``identity``, ``uniform``.
        source_column / target_column: column names in ``data``.
        temperature: τ recorded in the lexicon as the default of `Lexicon.to_matrix` (0 = hard lexicon, the paper's
            main setting; 0.1 = its "soft" ablation). Learning itself does not depend on it.
        seed: random seed of sampling learners (``bayesian``); deterministic learners ignore it.
        tie_break: how the hard lexicon chooses among an input's outputs that share its highest score (and are not
            the input itself, which copying picks first). ``"cooccurrence"`` (default): the output that co-occurs
            with the input in the most training examples, then the smallest string; recorded in
            `Lexicon.tie_breaks`. ``"first_appearance"``: the tied output that appears first in ``data`` as given
            (the paper code's ``argmax`` over a target vocabulary built in order of appearance; the only rule that
            depends on the order of the examples), recorded likewise. ``"string"``: the smallest string, nothing
            recorded (the rule of lexicons saved in format version 1).
            The paper does not say; on SCAN's addprim_jump the code's order agrees with the co-occurrence choice
            wherever the counts differ (docs/ARCHITECTURE.md).
        provenance: extra provenance (e.g. ``{"dataset": "scan", "config": "addprim_jump", "split": "train"}``),
            merged over what is read from a `datasets.Dataset`'s info.
        fallback: what inputs without entries map to, for the learners that use mutual exclusivity (all but
            ``uniform``, whose fallback defines it): ``"mutual_exclusivity"`` (None: the learner's default) or
            ``"mutual_exclusivity_or_abstain"`` (the paper's code: rows that mutual exclusivity cannot fill abstain).
        **method_kwargs: the learner's hyperparameters (e.g. ``epsilon=3`` for ``simple``, ``iterations=5`` for
            ``ibm2``, ``num_samples=2000`` for ``bayesian``); unknown names raise `TypeError`.

    Raises:
        ValueError: unknown method, ``tie_break`` or ``fallback``, a fallback for ``uniform``, or empty training data.
    """
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
    if fallback not in (None, *REPLACEABLE_FALLBACKS):  # checked before learning, which can take seconds
        raise ValueError(f"fallback must be one of {REPLACEABLE_FALLBACKS}, got {fallback!r}")
    seed = check_seed(seed, "learn_lexicon")
    spec = get_learner(method)
    hyperparameters = spec.resolve(dict(method_kwargs))
    if spec.takes_seed:
        hyperparameters["seed"] = seed
    corpus, found_provenance = _as_corpus(data, source_column, target_column)
    output = spec.function(corpus, **hyperparameters)
    fallback = replaced_fallback(output.fallback, fallback, method)
    from .. import __version__

    return Lexicon._from_sorted_entries(
        _entries_from_output(corpus, output),
        method=method,
        hyperparameters=hyperparameters,
        tie_breaks=None if tie_break == "string" else _recorded_tie_breaks(corpus, output, tie_break),
        provenance={**found_provenance, **dict(provenance or {}), "lexical_hf_version": __version__},
        temperature=temperature,
        fallback=fallback,
        statistics=output.statistics,
    )


def _as_corpus(data, source_column: str, target_column: str) -> tuple[ParallelCorpus, dict[str, Any]]:
    if isinstance(data, ParallelCorpus):
        return data, {"num_examples": data.num_examples}
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is a dependency
        datasets = None
    if datasets is not None and isinstance(data, (datasets.DatasetDict, datasets.IterableDatasetDict)):
        raise ValueError(
            f"learn_lexicon needs one split, not a DatasetDict: pass e.g. data['train'] (splits: {list(data)})"
        )
    if datasets is not None and isinstance(data, datasets.IterableDataset):
        rows = list(data.select_columns([source_column, target_column]))
        data = {source_column: [r[source_column] for r in rows], target_column: [r[target_column] for r in rows]}
    if datasets is not None and isinstance(data, datasets.Dataset):
        if len(data) == 0:
            raise ValueError("cannot learn a lexicon from empty training data (the dataset has 0 rows)")
        corpus = ParallelCorpus.from_dataset(data, source_column, target_column)
        info = data.info
        provenance = {
            "dataset": info.dataset_name or info.builder_name,
            "config": info.config_name,
            "split": str(data.split) if data.split is not None else None,
            "num_examples": corpus.num_examples,
            "fingerprint": getattr(data, "_fingerprint", None),  # private in datasets; None is left out
            "source_column": source_column,
            "target_column": target_column,
        }
        return corpus, {k: v for k, v in provenance.items() if v is not None}
    names = (source_column, target_column)
    if isinstance(data, Mapping):
        if source_column not in data or target_column not in data:
            raise ValueError(f"mapping has no {source_column!r} / {target_column!r} keys (keys: {list(data)})")
        data = (data[source_column], data[target_column])
    if isinstance(data, Sequence) and not isinstance(data, str):
        # a list of (source, target) string pairs, as from zip(sources, targets) (tuples) or json.load (a list of
        # lists); a tuple of two lists is (sources, targets)
        pair_types = (tuple, list) if isinstance(data, list) else (tuple,)
        pairs = len(data) > 0 and all(
            isinstance(pair, pair_types) and len(pair) == 2 and all(isinstance(text, str) for text in pair)
            for pair in data
        )
        if pairs and len(data) == 2:  # two pairs, or (sources, targets) of two examples each: both read the same
            raise ValueError(
                "ambiguous data: two (source, target) pairs, or (sources, targets) with two examples each? Pass "
                f"{{{source_column!r}: [...], {target_column!r}: [...]}} instead"
            )
        if pairs:
            sources, targets = zip(*data)
            corpus = ParallelCorpus.from_pairs(list(sources), list(targets))
            return corpus, {"num_examples": corpus.num_examples}
        if len(data) == 2:
            sources, targets = data
            if not isinstance(sources, str) and not isinstance(targets, str):
                corpus = ParallelCorpus.from_pairs(sources, targets, names)
                return corpus, {"num_examples": corpus.num_examples}
        if data and all(isinstance(pair, pair_types) and len(pair) == 2 for pair in data):  # pairs of non-strings
            row, side = next((row, side) for row, pair in enumerate(data) for side in (0, 1)
                             if not isinstance(pair[side], str))
            value = data[row][side]
            raise TypeError(f"data[{row}][{side}] (the {('source', 'target')[side]} of pair {row}) is "
                            f"{type(value).__name__} {value!r:.60}, not a string of whitespace-separated tokens")
    raise TypeError(
        "data must be a datasets.Dataset, a (sources, targets) pair of sequences, a list of (source, target) pairs, "
        f"a mapping with the source and target columns, or a ParallelCorpus; got {type(data).__name__}"
    )


def _recorded_tie_breaks(corpus: ParallelCorpus, output: LearnerOutput, rule: str) -> dict[str, str]:
    """``{v: w}`` for every input whose highest score is shared by several outputs, none of them v itself: with
    ``rule="cooccurrence"`` the tied output with the most co-occurrences #(v, w), then the smallest string
    (vocabularies are sorted: the smallest id); with ``rule="first_appearance"`` the tied output that appears first
    in the data as given (`ParallelCorpus.target_first_seen`)."""
    source_ids = np.asarray(output.source_ids, dtype=np.int64)
    target_ids = np.asarray(output.target_ids, dtype=np.int64)
    scores = np.asarray(output.scores, dtype=np.float64)
    if len(source_ids) == 0:
        return {}
    best = np.full(corpus.source.vocab_size, -np.inf)
    np.maximum.at(best, source_ids, scores)
    top = scores == best[source_ids]
    tied_sources = np.flatnonzero(np.bincount(source_ids[top], minlength=corpus.source.vocab_size) > 1)
    candidate = top & np.isin(source_ids, tied_sources)
    v, w = source_ids[candidate], target_ids[candidate]
    if len(v) == 0:
        return {}
    source_vocab, target_vocab = corpus.source_vocab, corpus.target_vocab
    copies = {source_vocab[i] for i, j in zip(v.tolist(), w.tolist()) if source_vocab[i] == target_vocab[j]}
    if rule == "first_appearance":
        if corpus.target_first_seen is None:
            raise ValueError("tie_break='first_appearance' needs a corpus built from data in its own order")
        order = np.lexsort((corpus.target_first_seen[w], v))  # per input: the output seen first in the data
    else:
        # #(v, w) by lookup in the sorted pair keys of `corpus.cooccurrence()` (0 for pairs that never co-occur)
        n_out = corpus.target.vocab_size
        pair_v, pair_w, pair_count = corpus.cooccurrence()
        pair_keys = pair_v * n_out + pair_w
        keys = v * n_out + w
        position = np.minimum(np.searchsorted(pair_keys, keys), max(len(pair_keys) - 1, 0))
        count = np.where(pair_keys[position] == keys, pair_count[position], 0) if len(pair_keys) else np.zeros_like(keys)
        order = np.lexsort((w, -count, v))  # per input: most co-occurrences first, then the smallest string
    v, w = v[order], w[order]
    first = np.r_[True, v[1:] != v[:-1]]
    return {
        source_vocab[i]: target_vocab[j]
        for i, j in zip(v[first].tolist(), w[first].tolist())
        if source_vocab[i] not in copies
    }


def _entries_from_output(corpus: ParallelCorpus, output: LearnerOutput) -> dict[str, dict[str, Any]]:
    """Arrays -> ``{v: {w: score}}`` with sources in string order and each row by descending score, then string."""
    source_ids = np.asarray(output.source_ids, dtype=np.int64)
    target_ids = np.asarray(output.target_ids, dtype=np.int64)
    scores = np.asarray(output.scores)
    if len(source_ids) == 0:
        return {}
    # vocabularies are sorted, so id order is string order
    order = np.lexsort((target_ids, -scores.astype(np.float64), source_ids))
    source_ids, target_ids, scores = source_ids[order], target_ids[order], scores[order]
    score_list = scores.tolist()  # Python ints for integer arrays, floats otherwise
    target_vocab = corpus.target_vocab
    target_list = [target_vocab[t] for t in target_ids.tolist()]
    starts = np.flatnonzero(np.r_[True, source_ids[1:] != source_ids[:-1]]).tolist() + [len(source_ids)]
    source_vocab = corpus.source_vocab
    return {
        source_vocab[source_ids[a]]: dict(zip(target_list[a:b], score_list[a:b])) for a, b in zip(starts, starts[1:])
    }
