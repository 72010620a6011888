"""GECA: good-enough compositional data augmentation (Andreas, ACL 2020), fast and seeded.

Algorithm (one call composes from one training set with one seed):

1. Join each pair as ``source ## target`` (token ids; ``##`` is ``separator``); duplicate pairs count once; pairs
   whose joint length is ``>= max_comp_len`` are not composed from (they still count as training data).
2. A fragment is one span, or two spans (``wug_count`` = 2), each of 1..``wug_size`` contiguous tokens on one side of
   the separator; the two spans share no token type, and the second occurs after the first occurrence of the first.
   With ``wug_limit``, only spans seen at most that many times are used.
3. Replacing every occurrence of span i (greedy, leftmost) by placeholder ``W_i``, on both sides, gives a template.
4. Fragments that leave the same template are interchangeable there: the template is their common environment
   (``environment="identical"``). With ``"window"``, templates whose placeholders have identical ``±window_size``
   token windows count as one environment.
5. If fragments a and b share a template t1, b is a candidate for every other template t2 that holds a. For each
   t2, ``variants`` candidates are drawn without replacement from the multiset of fragments of the shared templates
   linked to it (a fragment offered by several shared templates is proportionally likelier), leaving out t2's own
   fragments and fragments that share a span with every fragment of t2. With ``max_adjacencies``, each (a, t1) links
   at most that many templates t2.
6. A candidate is kept if both sides received a fragment, every placeholder was filled, its source and its target
   each differ from every training source and target, and it is not a duplicate; composition stops at
   ``n_sample`` kept pairs. With ``keep_sides`` (not in the reference), a candidate is also dropped if its source
   holds a token that no training source holds, or its target one that no training target holds.

Placeholders are filled by position, whatever side they sit on. So a token both sides share (a name, a number,
punctuation) can carry a span from one side to the other: on English–Chinese, a few percent of the pairs composed
with the reference settings put an English word in the Chinese target. ``keep_sides`` drops those.

``order="random"`` (default) fills the templates in a seeded random order; ``order="reference"`` in the reference
implementation's dictionary order (pairs sorted, then fragments by first appearance), which only matters when
``n_sample`` stops composition early. Each template's draws depend only on the seed and the template, so both orders
give the same set when ``n_sample`` does not bind.

Implementation: templates are hashed, never built (``_fragments``); templates are grouped by their candidate pool,
and a pool is built when a template of its group is first visited (``_links``), so no Python loop runs over pairs
of templates and composition that stops at ``n_sample`` only pays for the templates it visited. Only candidates that
pass the vectorized checks are realized as tokens, in Python. Cost grows with the number of (pair, fragment) rows:
SCAN (``wug_size`` 1) has about 0.6 million, COGS with the reference defaults (``wug_size`` 4) about 180 million
(16 bytes each, several GB of memory).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace

import numpy as np

from ._fragments import EncodedCorpus, build_fragment_table, encode_corpus
from ._links import Pools, TemplateIndex, cap_links, draw_candidates, index_templates, visiting_order, window_targets

ENVIRONMENTS = ("identical", "window")
ORDERS = ("random", "reference")


def _check_int(name: str, value, minimum: int, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        kind = "an int or None" if optional else "an int"
        raise TypeError(f"GECA setting {name} must be {kind}, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"GECA setting {name} must be >= {minimum}, got {value}")


@dataclass(frozen=True)
class GecaSettings:
    """Settings of GECA (names follow the reference implementation's flags).

    Attributes:
        wug_size: maximum tokens per span (reference default 4; SCAN 1).
        wug_count: spans per fragment, 1 or 2 (reference default 2).
        wug_limit: use only spans seen at most this many times in the composed pairs (None: all spans).
        max_comp_len: compose only from pairs whose joint length ``len(source) + 1 + len(target)`` is below this
            (None: all; SCAN 40).
        environment: ``"identical"`` (templates must be equal; the reference's ``template_sim=none``) or
            ``"window"`` (templates with the same ``±window_size`` windows around their placeholders, boundary
            markers included, are one environment).
        window_size: half-width of the windows for ``environment="window"`` (reference default 2).
        max_adjacencies: at most this many links per (fragment a, shared template t1): t1 is linked to the first
            ``max_adjacencies`` templates other than t1 that hold a (windowed: that share an environment with a
            template holding a), in a fixed order per fragment — seeded random, or first appearance with
            ``order="reference"`` (the reference iterates a hash set). None: no limit (SCAN 1000).
        variants: candidates drawn per template to fill (reference default 2); None: every distinct candidate once.
        n_sample: stop after this many kept pairs (reference default 1000; None: compose everything).
        order: ``"random"`` (seeded random order of the templates to fill) or ``"reference"`` (the reference's
            dictionary order; see the module docstring).
        separator: the token joining source and target; it may not occur in the data (reference ``##``).
        keep_sides: drop a candidate whose source holds a token found in no training source, or whose target a
            token found in no training target (default False, as the reference: see the module docstring).
    """

    wug_size: int = 4
    wug_count: int = 2
    wug_limit: int | None = None
    max_comp_len: int | None = None
    environment: str = "identical"
    window_size: int = 2
    max_adjacencies: int | None = None
    variants: int | None = 2
    n_sample: int | None = 1000
    order: str = "random"
    separator: str = "##"
    keep_sides: bool = False

    def __post_init__(self) -> None:
        _check_int("wug_size", self.wug_size, 1, optional=False)
        _check_int("wug_count", self.wug_count, 1, optional=False)
        if self.wug_count > 2:
            raise ValueError(f"GECA setting wug_count must be 1 or 2 (fragments of one or two spans), got "
                             f"{self.wug_count}")
        _check_int("wug_limit", self.wug_limit, 1, optional=True)
        _check_int("max_comp_len", self.max_comp_len, 1, optional=True)
        _check_int("window_size", self.window_size, 0, optional=False)
        _check_int("max_adjacencies", self.max_adjacencies, 0, optional=True)
        _check_int("variants", self.variants, 1, optional=True)
        _check_int("n_sample", self.n_sample, 0, optional=True)
        if self.environment == "none":  # the reference's name for identical environments
            object.__setattr__(self, "environment", "identical")
        if self.environment not in ENVIRONMENTS:
            raise ValueError(f"GECA setting environment must be one of {ENVIRONMENTS}, got {self.environment!r}")
        if not isinstance(self.keep_sides, (bool, np.bool_)):
            raise TypeError(f"GECA setting keep_sides must be True or False, got {self.keep_sides!r}")
        if self.order not in ORDERS:
            raise ValueError(f"GECA setting order must be one of {ORDERS}, got {self.order!r}")
        if not isinstance(self.separator, str) or not self.separator or self.separator.split() != [self.separator]:
            raise ValueError(f"GECA setting separator must be one non-empty token without spaces, got "
                             f"{self.separator!r}")

    @classmethod
    def from_preset(cls, preset: str | None = None, **overrides) -> GecaSettings:
        """Settings of a named preset (see ``PRESETS``), with ``overrides`` applied; unknown names are an error."""
        _check_names(overrides)
        base = {} if preset is None else dict(PRESETS[canonical_preset(preset)])
        return cls(**{**base, **overrides})

    def replace(self, **changes) -> GecaSettings:
        """A copy with ``changes`` applied (validated)."""
        _check_names(changes)
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)


def _check_names(settings: dict) -> None:
    import difflib

    known = [f.name for f in fields(GecaSettings)]
    for name in settings:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise TypeError(f"unknown GECA setting {name!r}{hint} (settings: {', '.join(known)})")


PRESETS: dict[str, dict] = {
    # The reference's SCAN runs (add jump and around right): --wug_size 1 --max_comp_len 40 --max_adjacencies 1000
    # --n_sample 1000, other flags at their defaults.
    "scan": {"wug_size": 1, "max_comp_len": 40, "max_adjacencies": 1000, "n_sample": 1000},
    # The specification gives no settings for these benchmarks: the reference's defaults (wug_size 4, wug_count 2,
    # no length or adjacency limit, variants 2, n_sample 1000).
    "cogs": {},
    "colors": {},
    "eng_cmn": {},
}
"""GECA settings per benchmark, named after the reference's settings. Only SCAN's are given by the specification;
``cogs``, ``colors`` and ``eng_cmn`` are the reference implementation's defaults."""

_PRESET_ALIASES = {"color": "colors", "eng-cmn": "eng_cmn", "translate": "eng_cmn", "tatoeba": "eng_cmn"}


def canonical_preset(name: str) -> str:
    """The preset's name with aliases resolved; an unknown name is a ValueError listing the presets."""
    key = _PRESET_ALIASES.get(str(name).lower(), str(name).lower())
    if key not in PRESETS:
        raise ValueError(f"unknown GECA preset {name!r}; presets: {sorted(PRESETS)} "
                         f"(aliases: {sorted(_PRESET_ALIASES)})")
    return key


FILTERS = ("one_side", "unfilled", "crossed_sides", "input_not_new", "output_not_new", "duplicate")
"""The filters of step 6, in the order they are applied (names of the ``GecaStats`` fields counting their drops)."""


@dataclass(frozen=True)
class GecaStats:
    """What one composition did: corpus sizes, and how many candidates each filter dropped.

    ``candidates`` were examined in visiting order; each was dropped by the first filter it failed (``one_side``:
    a side received no fragment; ``unfilled``: a placeholder left without a fragment; ``crossed_sides``: with
    ``keep_sides``, a token on a side where no training pair has it; ``input_not_new`` /
    ``output_not_new``: the source / target equals a training one; ``duplicate``: composed before) or ``kept``.
    Templates are visited lazily: after ``n_sample`` kept pairs (``stopped_early``) the rest are not drawn from.
    ``unfilled`` stays 0 here: a candidate always has as many spans as its template has placeholders (the check is
    kept as a guard, like the reference's).
    """

    seed: int
    settings: dict
    pairs: int  # rows given
    unique_pairs: int
    too_long: int  # unique pairs not composed from (max_comp_len)
    fragments: int  # (pair, fragment) rows
    templates: int
    shared_templates: int  # templates left by two or more fragments
    linkable_templates: int  # templates holding a fragment of a shared template (windowed: all templates)
    visited_templates: int  # linkable templates visited before composition stopped
    linked_templates: int  # visited templates with at least one candidate
    candidates: int
    one_side: int
    unfilled: int
    crossed_sides: int
    input_not_new: int
    output_not_new: int
    duplicate: int
    kept: int
    stopped_early: bool  # n_sample pairs were kept before every template was visited
    seconds: float  # wall clock
    stage_seconds: dict = field(default_factory=dict)  # wall clock per stage
    stage_cpu_seconds: dict = field(default_factory=dict)  # CPU time of this process per stage

    @property
    def survivors(self) -> dict[str, int]:
        """Candidates left after each filter, in order: ``{"candidates": n, "one_side": ..., "duplicate": kept}``."""
        left = {"candidates": self.candidates}
        n = self.candidates
        for name in FILTERS:
            n -= getattr(self, name)
            left[name] = n
        return left

    def to_dict(self) -> dict:
        return {**asdict(self), "survivors": self.survivors}

    def summary(self) -> str:
        """A few lines for logs."""
        lines = [
            f"GECA seed {self.seed}: {self.kept} pairs kept in {self.seconds:.1f} s",
            f"  {self.unique_pairs} unique pairs ({self.too_long} too long), {self.fragments} fragments, "
            f"{self.templates} templates ({self.shared_templates} shared, {self.linkable_templates} linkable, "
            f"{self.visited_templates} visited, {self.linked_templates} with candidates)",
            f"  {self.candidates} candidates" + "".join(f", -{getattr(self, n)} {n}" for n in FILTERS)
            + f" -> {self.kept} kept" + (" (stopped at n_sample)" if self.stopped_early else ""),
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class GecaResult:
    """The composed pairs (``(source, target)`` strings, in the order they were kept) and their statistics."""

    pairs: list[tuple[str, str]]
    stats: GecaStats


def geca(pairs: Sequence[tuple[str, str]], settings: GecaSettings | None = None, *, seed: int = 0) -> GecaResult:
    """Compose new pairs from ``pairs`` (whitespace-tokenized ``(source, target)`` strings) with one seed.

    Returns only the new pairs; mixing them with the training data is the caller's choice (``mix_augmented``).

    Raises:
        TypeError: a pair that is not two strings, or a seed that is not an int (compose one seed per call:
            pooling several seeds' augmentations inflates results).
        ValueError: no pairs, a negative seed, or a pair containing the separator token.
    """
    settings = settings or GecaSettings()
    _check_seed(seed)
    _check_pairs(pairs, settings.separator)
    clock = _Clock()
    corpus = encode_corpus(pairs, settings.max_comp_len, sort_pairs=settings.order == "reference")
    sizes = {"pairs": len(pairs), "unique_pairs": len(corpus.sources),
             "too_long": len(corpus.sources) - len(corpus.used)}
    if len(corpus.used) == 0:
        return _result([], seed, settings, sizes, {}, clock)
    table = build_fragment_table(corpus, settings.wug_size, settings.wug_count, settings.wug_limit)
    clock.lap("fragments")
    window = settings.environment == "window"
    index = index_templates(table, keep_all=window)
    sizes.update(fragments=len(table.template_hash), templates=index.n_templates, shared_templates=index.n_shared,
                 linkable_templates=len(index.hash))
    spans = table.spans.span_tokens
    del table
    clock.lap("templates")
    if window:
        targets = window_targets(index, _environments(corpus, index, spans, settings.window_size))
    else:
        targets = index.row_template, index.row_fragment
    links = cap_links(index, *targets, settings.max_adjacencies, settings.order, seed)
    pools = Pools(index, links)
    ordered = visiting_order(index, links, np.arange(len(index.hash)), settings.order, seed)
    clock.lap("links")
    composer = _Composer(corpus, index, spans, settings.n_sample, settings.keep_sides)
    for batch in _batches(ordered):  # pools are built for the templates visited, until n_sample pairs are kept
        composer.add(batch, *draw_candidates(index, pools, batch, settings.variants, seed))
        if composer.full:
            break
    clock.lap("compose")
    composer.counts["stopped_early"] = composer.full
    decoded = [(" ".join(corpus.vocab[i] for i in s), " ".join(corpus.vocab[i] for i in t)) for s, t in composer.kept]
    return _result(decoded, seed, settings, sizes, composer.counts, clock)


def _batches(ordered: np.ndarray, first: int = 2048):
    """Consecutive slices of ``ordered``, doubling in size."""
    start, size = 0, first
    while start < len(ordered):
        yield ordered[start : start + size]
        start, size = start + size, size * 2


def _check_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        hint = " Compose one seed per call: pooling several seeds' augmentations inflates results." \
            if isinstance(seed, (list, tuple, set, range, np.ndarray)) else ""
        raise TypeError(f"seed must be an int, got {seed!r} ({type(seed).__name__}).{hint}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")


def _check_pairs(pairs: Sequence[tuple[str, str]], separator: str) -> None:
    if len(pairs) == 0:
        raise ValueError("GECA needs at least one training pair; the dataset is empty")
    for row, pair in enumerate(pairs):
        if len(pair) != 2 or not all(isinstance(text, str) for text in pair):
            raise TypeError(f"row {row}: expected a (source, target) pair of strings, got {pair!r}")
        for side, text in zip(("source", "target"), pair):
            if separator in text.split():
                raise ValueError(f"row {row}: the {side} {text!r} contains the separator token {separator!r}; "
                                 f"pass another separator=... that does not occur in the data")


class _Clock:
    """Wall-clock and CPU seconds per stage (on a shared machine the CPU time is what an idle core would take)."""

    def __init__(self) -> None:
        self.start, self.last, self.last_cpu = time.perf_counter(), time.perf_counter(), time.process_time()
        self.laps: dict[str, float] = {}
        self.cpu_laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        self.laps[name], self.cpu_laps[name] = round(now - self.last, 3), round(cpu - self.last_cpu, 3)
        self.last, self.last_cpu = now, cpu


def _result(pairs, seed, settings, sizes, counts, clock) -> GecaResult:
    zero = dict.fromkeys(["fragments", "templates", "shared_templates", "linkable_templates", "visited_templates",
                          "linked_templates", "candidates", *FILTERS], 0) | {"stopped_early": False}
    stats = GecaStats(seed=int(seed), settings=settings.to_dict(), **{**zero, **sizes, **counts}, kept=len(pairs),
                      seconds=round(time.perf_counter() - clock.start, 3), stage_seconds=clock.laps,
                      stage_cpu_seconds=clock.cpu_laps)
    return GecaResult(pairs, stats)


class _Composer:
    """Step 6, fed candidates (template, fragment) in visiting order: realize those that pass the vectorized checks,
    apply the novelty and duplicate filters, count every drop, stop at ``n_sample`` kept pairs."""

    def __init__(self, corpus: EncodedCorpus, index: TemplateIndex, spans: list[tuple[int, ...]], n_sample: int | None,
                 keep_sides: bool = False):
        self.corpus, self.index, self.spans, self.n_sample = corpus, index, spans, n_sample
        self.sources, self.targets = set(corpus.sources), set(corpus.targets)
        self.side_tokens = None  # (source tokens, target tokens) of the training pairs, with keep_sides
        if keep_sides:
            self.side_tokens = ({t for s in corpus.sources for t in s}, {t for s in corpus.targets for t in s})
        self.kept: dict[tuple[tuple[int, ...], tuple[int, ...]], None] = {}
        self.counts = {"visited_templates": 0, "linked_templates": 0, "candidates": 0, **dict.fromkeys(FILTERS, 0)}
        self.full = n_sample == 0

    def add(self, templates: np.ndarray, cand_t: np.ndarray, cand_f: np.ndarray) -> None:
        if self.full:
            return
        one_side = ~self.index.both_sides[cand_t]
        unfilled = self.index.arity[cand_t] != 1 + (self.index.fragment_span1[cand_f] >= 0)
        stop = len(cand_t)
        for i in np.flatnonzero(~one_side & ~unfilled).tolist():
            if self._keep(int(cand_t[i]), int(cand_f[i])) and len(self.kept) == self.n_sample:
                self.full, stop = True, i + 1
                break
        counts = self.counts
        counts["candidates"] += stop
        counts["one_side"] += int(one_side[:stop].sum())
        counts["unfilled"] += int((unfilled[:stop] & ~one_side[:stop]).sum())
        counts["visited_templates"] += _position(templates, cand_t[stop - 1]) + 1 if self.full else len(templates)
        counts["linked_templates"] += len(np.unique(cand_t[:stop]))

    def _keep(self, template: int, fragment: int) -> bool:
        source, target = _realize(self.corpus, self.index, self.spans, template, fragment)
        if self.side_tokens and not (self.side_tokens[0].issuperset(source) and self.side_tokens[1].issuperset(target)):
            self.counts["crossed_sides"] += 1
        elif source in self.sources:
            self.counts["input_not_new"] += 1
        elif target in self.targets:
            self.counts["output_not_new"] += 1
        elif (source, target) in self.kept:
            self.counts["duplicate"] += 1
        else:
            self.kept[source, target] = None
            return True
        return False


def _position(values: np.ndarray, value: int) -> int:
    return int(np.flatnonzero(values == value)[0])


def _realize(corpus: EncodedCorpus, index: TemplateIndex, span_tokens: list[tuple[int, ...]], template: int,
             fragment: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Fill ``template`` with ``fragment``: substitute the fragment's spans for those of the pair it came from."""
    pair = int(corpus.used[index.example[template]])
    old = [span_tokens[index.span0[template]]]
    new = [span_tokens[index.fragment_span0[fragment]]]
    if index.span1[template] >= 0:
        old.append(span_tokens[index.span1[template]])
        new.append(span_tokens[index.fragment_span1[fragment]])
    return _substitute(corpus.sources[pair], old, new), _substitute(corpus.targets[pair], old, new)


def _occurrences(seq: tuple[int, ...], span: tuple[int, ...]) -> list[int]:
    """Starts of the greedy leftmost non-overlapping occurrences of ``span`` in ``seq``."""
    m, found, i = len(span), [], 0
    while i + m <= len(seq):
        if seq[i : i + m] == span:
            found.append(i)
            i += m
        else:
            i += 1
    return found


def _substitute(seq: tuple[int, ...], old: list[tuple[int, ...]], new: list[tuple[int, ...]]) -> tuple[int, ...]:
    """Replace every occurrence of ``old[i]`` by ``new[i]``, all at once (the spans share no token)."""
    marks = {start: (len(span), fill) for span, fill in zip(old, new) for start in _occurrences(seq, span)}
    if not marks:
        return seq
    out: list[int] = []
    i = 0
    while i < len(seq):
        if i in marks:
            length, fill = marks[i]
            out.extend(fill)
            i += length
        else:
            out.append(seq[i])
            i += 1
    return tuple(out)


def _environments(corpus: EncodedCorpus, index: TemplateIndex, span_tokens: list[tuple[int, ...]],
                  size: int) -> np.ndarray:
    """int64 (T,): environment id of each template for ``environment="window"``: the tuple of ``±size`` windows
    around its placeholders (in order), over the template framed by begin/end markers."""
    sep = corpus.separator_id
    placeholders, begin, end = (sep + 1, sep + 2), sep + 3, sep + 4
    ids: dict[tuple, int] = {}
    out = np.empty(len(index.hash), dtype=np.int64)
    for t in range(len(index.hash)):
        pair = int(corpus.used[index.example[t]])
        joint = corpus.sources[pair] + (sep,) + corpus.targets[pair]
        spans = [span_tokens[index.span0[t]]] + ([span_tokens[index.span1[t]]] if index.span1[t] >= 0 else [])
        framed = (begin,) + _substitute(joint, spans, [(p,) for p in placeholders[: len(spans)]]) + (end,)
        signature = tuple(framed[max(0, i - size) : i + size + 1]
                          for i, token in enumerate(framed) if token in placeholders)
        out[t] = ids.setdefault(signature, len(ids))
    return out
