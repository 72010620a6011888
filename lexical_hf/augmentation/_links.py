"""GECA steps 4-5, vectorized: shared templates, links between templates, and the candidate fragments of each
template, drawn with counter-based randomness.

Notation: ``frags(t)`` are the fragments whose replacement gives template ``t``; ``mult(t) = |frags(t)|``; a template
with ``mult >= 2`` is *shared* (it is the common environment of its fragments). For a template ``t2`` to be filled,
its *link set* is ``frags(t2)`` (identical environments) or the fragments of every template whose environment
(placeholder windows) equals ``t2``'s (windowed environments). Its candidates are the multiset

    union over shared templates t1 != t2 holding a fragment of the link set:  frags(t1)

(a ``t1`` counts once however many link fragments it holds), without the fragments of ``t2`` itself and without a
fragment sharing a span with every fragment of ``t2`` — the reference's construction. With ``max_adjacencies`` the
links are capped per (fragment, shared template) (``cap_links``). Pools depend only on (link set, frags(t2)), so
templates are grouped by those two sets and each group's pool is built once, when first needed (``Pools``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._fragments import FragmentTable
from ._hashing import U64, group_starts, ragged_arange, seed_stream, segment_sum, splitmix64, uniform


@dataclass
class TemplateIndex:
    """Templates that can take part in a substitution, and the rows (template, fragment) that define them."""

    hash: np.ndarray  # uint64 (T,)
    multiplicity: np.ndarray  # int64 (T,): |frags(t)|
    both_sides: np.ndarray  # bool (T,): a placeholder on each side of the separator
    arity: np.ndarray  # int64 (T,): number of placeholders (1 or 2)
    example: np.ndarray  # int64 (T,): a pair the template was taken from (index into corpus.used)
    span0: np.ndarray  # int64 (T,): that pair's fragment, first span
    span1: np.ndarray  # int64 (T,): ... second span or -1
    order_key: np.ndarray  # int64 (T,): first appearance in the reference's enumeration
    row_template: np.ndarray  # int64 (R,): rows sorted by template
    row_fragment: np.ndarray  # int64 (R,): fragment id of the row
    fragment_span0: np.ndarray  # int64 (F,)
    fragment_span1: np.ndarray  # int64 (F,)
    fragment_first: np.ndarray  # int64 (F,): first appearance of the fragment in the reference's enumeration
    n_templates: int  # all templates, before keeping those that can take part
    n_shared: int  # templates with multiplicity >= 2

    @property
    def template_start(self) -> np.ndarray:
        """int64 (T,): first row of each template in ``row_*``."""
        return np.cumsum(self.multiplicity) - self.multiplicity


def isin_sorted(values: np.ndarray, members: np.ndarray, mix: bool) -> np.ndarray:
    """bool (n,): ``values`` found in the sorted array ``members``. A bitmap over the top bits of the (mixed) keys
    answers most lookups; only its hits are checked by binary search."""
    out = np.zeros(len(values), dtype=bool)
    if len(members) == 0 or len(values) == 0:
        return out
    bits = min(28, max(16, int(np.ceil(np.log2(len(members)))) + 4))
    shift = U64(64 - bits)

    def slot(keys: np.ndarray) -> np.ndarray:
        keys = splitmix64(keys) if mix else keys.astype(U64, copy=False)
        return (keys >> shift).astype(np.int64)

    bitmap = np.zeros(1 << bits, dtype=bool)
    bitmap[slot(members)] = True
    candidates = np.flatnonzero(bitmap[slot(values)])
    found = np.minimum(np.searchsorted(members, values[candidates]), len(members) - 1)
    out[candidates[members[found] == values[candidates]]] = True
    return out


def _relevant_rows(table: FragmentTable, keep_all: bool) -> tuple[np.ndarray, int, int]:
    """Rows of the templates that can take part: those holding a fragment of some shared template (all rows when
    ``keep_all``). Returns (rows int64, number of templates, number of shared templates)."""
    ordered = np.sort(table.template_hash)
    repeated = ordered[1:] == ordered[:-1]
    n_templates = len(ordered) - int(repeated.sum())
    shared_hashes = np.unique(ordered[1:][repeated])
    del ordered, repeated
    if keep_all:
        return np.arange(len(table.template_hash)), n_templates, len(shared_hashes)
    chunks = [slice(lo, lo + (1 << 24)) for lo in range(0, len(table.template_hash), 1 << 24)]  # bounds temporaries
    shared_rows = np.concatenate([
        np.flatnonzero(isin_sorted(table.template_hash[c], shared_hashes, mix=False)) + c.start for c in chunks])
    linkable = np.unique(table.fragment_key(shared_rows))
    # a row can only hold a linkable fragment if each of its spans is a span of some linkable fragment
    spans = table.spans
    n_span = len(spans.span_tokens) + 1
    first_ok = np.zeros(n_span, dtype=bool)
    first_ok[linkable // n_span] = True
    second_ok = np.zeros(n_span + 1, dtype=bool)  # indexed by span1 + 1 (0: no second span)
    second_ok[linkable % n_span] = True
    xs_first_ok, xs_second_ok = first_ok[spans.xs_span], second_ok[spans.xs_span + 1]
    relevant = []
    for c in chunks:
        xs1 = table.xs1[c]
        maybe = np.flatnonzero(xs_first_ok[table.xs0[c]] & np.where(xs1 >= 0, xs_second_ok[xs1], second_ok[0]))
        rows = maybe + c.start
        relevant.append(rows[isin_sorted(table.fragment_key(rows), linkable, mix=True)])
    return np.concatenate(relevant), n_templates, len(shared_hashes)


def index_templates(table: FragmentTable, keep_all: bool) -> TemplateIndex:
    """Group fragment rows by template hash; keep the templates holding a fragment of some shared template (all of
    them when ``keep_all``, which windowed environments need)."""
    rows, n_templates, n_shared = _relevant_rows(table, keep_all)
    order = rows[np.argsort(table.template_hash[rows])]
    hashes = table.template_hash[order]
    starts = group_starts(hashes)
    counts = np.diff(np.r_[starts, len(order)])
    columns = table.columns(order)
    linkable, fragment = np.unique(table.fragment_key(order), return_inverse=True)
    fragment = fragment.reshape(-1)
    n_span = len(table.spans.span_tokens) + 1
    fragment_first = np.full(len(linkable), np.iinfo(np.int64).max)
    np.minimum.at(fragment_first, fragment, columns["order_key"])
    return TemplateIndex(
        hash=hashes[starts], multiplicity=counts, both_sides=columns["both_sides"][starts],
        arity=1 + (columns["span1"][starts] >= 0), example=columns["example"][starts],
        span0=columns["span0"][starts], span1=columns["span1"][starts],
        order_key=np.minimum.reduceat(columns["order_key"], starts) if len(starts) else np.zeros(0, np.int64),
        row_template=np.repeat(np.arange(len(starts)), counts), row_fragment=fragment,
        fragment_span0=linkable // n_span, fragment_span1=linkable % n_span - 1,
        fragment_first=fragment_first, n_templates=n_templates, n_shared=n_shared,
    )


def _set_hash(owner: np.ndarray, member: np.ndarray, n_owner: int, salt: int) -> np.ndarray:
    """uint64 (n_owner,): an order-free hash of each owner's member set (0 for an empty set)."""
    out = np.zeros(n_owner, dtype=U64)
    if len(owner) == 0:
        return out
    order = np.argsort(owner, kind="stable")
    starts = group_starts(owner[order])
    values = splitmix64(member[order].astype(U64) ^ U64(salt))
    out[owner[order][starts]] = segment_sum(values, starts)
    return out


def _rows_by_owner(owner: np.ndarray, member: np.ndarray, n_owner: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort (owner, member) rows by owner: (members sorted, start per owner, count per owner)."""
    order = np.argsort(owner * (int(member.max(initial=0)) + 1) + member)
    count = np.bincount(owner, minlength=n_owner).astype(np.int64)
    return member[order], np.cumsum(count) - count, count


def _expand(owner_start: np.ndarray, owner_count: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows naming ``keys``, list every (row, member-slot) of the key's run: (row index, slot) int64 arrays."""
    counts = owner_count[keys]
    row = np.repeat(np.arange(len(keys)), counts)
    return row, np.repeat(owner_start[keys], counts) + ragged_arange(counts)


@dataclass
class Links:
    """Which templates each template to fill is linked to, as (template, link fragment) rows, and the shared
    templates behind each link fragment. A link fragment ``a < F`` stands for every shared template holding ``a``;
    ``a + F`` for only those among the first ``max_adjacencies`` targets of ``a`` (see ``cap_links``)."""

    template: np.ndarray  # int64 (L,)
    fragment: np.ndarray  # int64 (L,)
    shared_fragment: np.ndarray  # int64 (S,)
    shared_template: np.ndarray  # int64 (S,)


def window_targets(index: TemplateIndex, env: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(template, fragment) rows: the templates in the same windowed environment (``env``: int64 (T,)) as some
    template holding the fragment, the holders included."""
    n_t = len(index.hash)
    members, env_start, env_count = _rows_by_owner(env, np.arange(n_t), int(env.max(initial=-1)) + 1)
    fragment_env = np.unique(index.row_fragment * n_t + env[index.row_template])
    row, slot = _expand(env_start, env_count, fragment_env % n_t)
    pairs = np.unique((fragment_env // n_t)[row] * n_t + members[slot])
    return pairs % n_t, pairs // n_t


def cap_links(index: TemplateIndex, target_t: np.ndarray, target_f: np.ndarray, cap: int | None, order: str,
              seed: int) -> Links:
    """Links from the (target template, fragment) relation. Without a cap every target of ``a`` is linked to every
    shared template holding ``a``. With ``cap``, as in the reference, each (a, t1) links only the first ``cap``
    targets of ``a`` other than t1, in a fixed order per fragment (seeded random, or first appearance for
    ``order="reference"``): targets ranked below ``cap`` link to every t1, the target ranked ``cap`` links to the
    t1 ranked below ``cap`` (link fragment ``a + F``), the others to none."""
    n_f = len(index.fragment_span0)
    shared = index.multiplicity[index.row_template] >= 2
    shared_f, shared_t = index.row_fragment[shared], index.row_template[shared]
    if cap is None:
        return Links(target_t, target_f, shared_f, shared_t)
    if order == "reference":
        key = index.order_key[target_t].astype(U64)
    else:
        key = splitmix64(index.hash[target_t] ^ seed_stream(seed, 0))
    by_rank = np.lexsort((key, target_f))
    rank = np.empty(len(target_t), dtype=np.int64)
    rank[by_rank] = ragged_arange(np.bincount(target_f, minlength=n_f))
    n_t = len(index.hash)
    target_key = target_f * n_t + target_t
    sorted_keys = np.sort(target_key)
    shared_rank = rank[np.argsort(target_key)][np.searchsorted(sorted_keys, shared_f * n_t + shared_t)]
    early = shared_rank < cap
    link, edge = rank < cap, rank == cap
    return Links(
        template=np.r_[target_t[link], target_t[edge]], fragment=np.r_[target_f[link], target_f[edge] + n_f],
        shared_fragment=np.r_[shared_f, shared_f[early] + n_f], shared_template=np.r_[shared_t, shared_t[early]],
    )


class Pools:
    """Candidate pools (module docstring), built lazily: templates are grouped by (link set, own fragments), and a
    group's pool — rows (fragment, multiplicity) — is built the first time one of its templates is visited.

    ``template_group``: int64 (T,). Per group, once built: ``group_start`` / ``group_rows`` (its rows in
    ``fragment`` / ``count``) and ``group_total`` (size of the multiset); -1 until built."""

    def __init__(self, index: TemplateIndex, links: Links):
        self.index, self.links = index, links
        n_t = len(index.hash)
        key = _set_hash(links.template, links.fragment, n_t, 0x1) * U64(0x9E3779B97F4A7C15)
        key ^= _set_hash(index.row_template, index.row_fragment, n_t, 0x2)
        _, self.representative, group = np.unique(key, return_index=True, return_inverse=True)
        self.template_group = group.reshape(-1).astype(np.int64)
        n_groups = len(self.representative)
        self.link_fragment, self.link_start, self.link_count = _rows_by_owner(links.template, links.fragment, n_t)
        self.t1_of_link, self.t1_start, self.t1_count = _rows_by_owner(
            links.shared_fragment, links.shared_template, 2 * len(index.fragment_span0))
        self.group_start = np.full(n_groups, -1, dtype=np.int64)
        self.group_rows = np.full(n_groups, -1, dtype=np.int64)
        self.group_total = np.full(n_groups, -1, dtype=np.int64)
        self.fragment = np.zeros(0, dtype=np.int64)
        self.count = np.zeros(0, dtype=np.int64)
        self.cumulative = np.zeros(0, dtype=np.int64)  # running sum of count

    def ensure(self, groups: np.ndarray) -> None:
        """Build the pools of ``groups`` not built yet."""
        groups = np.unique(groups)
        groups = groups[self.group_total[groups] < 0]
        if len(groups) == 0:
            return
        group, fragment, count = self._build(groups)
        rows = np.bincount(group, minlength=len(self.group_total))[groups]
        self.group_start[groups] = len(self.fragment) + np.cumsum(rows) - rows
        self.group_rows[groups] = rows
        self.group_total[groups] = np.bincount(group, weights=count, minlength=len(self.group_total))[groups]
        self.fragment = np.r_[self.fragment, fragment]
        self.count = np.r_[self.count, count]
        self.cumulative = np.cumsum(self.count)

    def _build(self, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pool rows (group, fragment, multiplicity) of ``groups`` (sorted), sorted by group then fragment."""
        index, n_t, n_f = self.index, len(self.index.hash), len(self.index.fragment_span0)
        # (group, a) -> (group, t1): the shared templates behind the group's link fragments, each once
        group_row, link = _expand(self.link_start, self.link_count, self.representative[groups])
        link_row, t1 = _expand(self.t1_start, self.t1_count, self.link_fragment[link])
        group_t1 = np.unique(groups[group_row[link_row]] * n_t + self.t1_of_link[t1])
        g1, t1 = group_t1 // n_t, group_t1 % n_t
        # (group, t1) -> (group, b) with multiplicity: every fragment of each such t1
        row, slot = _expand(index.template_start, index.multiplicity, t1)
        pool_key, count = np.unique(g1[row] * n_f + index.row_fragment[slot], return_counts=True)
        group, fragment = pool_key // n_f, pool_key % n_f
        keep = ~_overlaps(index, group, fragment, self.representative)
        return group[keep], fragment[keep], count[keep].astype(np.int64)


def _overlaps(index: TemplateIndex, group: np.ndarray, fragment: np.ndarray, representative: np.ndarray) -> np.ndarray:
    """bool (P,): the candidate is one of the template's own fragments, or shares a span with every one of them."""
    if len(group) == 0:
        return np.zeros(0, dtype=bool)
    own_count = index.multiplicity[representative]
    row, slot = _expand(index.template_start[representative], own_count, group)
    own = index.row_fragment[slot]
    b0, b1 = index.fragment_span0[fragment[row]], index.fragment_span1[fragment[row]]
    a0, a1 = index.fragment_span0[own], index.fragment_span1[own]
    same = fragment[row] == own
    shares = (b0 == a0) | ((a1 >= 0) & (b0 == a1)) | ((b1 >= 0) & ((b1 == a0) | (b1 == a1)))
    starts = np.cumsum(own_count[group]) - own_count[group]
    return np.logical_or.reduceat(same, starts) | np.logical_and.reduceat(shares, starts)


def visiting_order(index: TemplateIndex, links: Links, templates: np.ndarray, order: str, seed: int) -> np.ndarray:
    """``templates`` (int64) sorted in the order they are filled: seeded random (``"random"``) or the reference's
    dictionary order (``"reference"``: by the first-enumerated fragment of the link set, then the template's own
    first appearance)."""
    if order == "random":
        key = splitmix64(index.hash[templates] ^ seed_stream(seed, 0))
        return templates[np.argsort(key, kind="stable")]
    first_link = np.full(len(index.hash), np.iinfo(np.int64).max)
    np.minimum.at(first_link, links.template, index.fragment_first[links.fragment % len(index.fragment_first)])
    return templates[np.lexsort((index.order_key[templates], first_link[templates]))]


def _draw_positions(keys: np.ndarray, n: np.ndarray, k: np.ndarray, seed: int) -> np.ndarray:
    """For each row, ``k`` distinct positions uniform in ``[0, n)``, as a flat int64 array (row-major). The j-th draw
    of a row depends only on (seed, key, j): a random ordered subset, like the reference's shuffle-and-take-first."""
    out = np.zeros((len(n), int(k.max(initial=0))), dtype=np.int64)
    for j in range(out.shape[1]):
        active = np.flatnonzero(k > j)
        r = np.floor(uniform(keys[active], seed_stream(seed, j + 1)) * (n[active] - j)).astype(np.int64)
        taken = np.sort(out[active, :j], axis=1)
        for c in range(j):  # skip the positions already taken, smallest first
            r += r >= taken[:, c]
        out[active, j] = r
    mask = np.arange(out.shape[1])[None, :] < k[:, None]
    return out[mask]


def draw_candidates(index: TemplateIndex, pools: Pools, templates: np.ndarray, variants: int | None,
                    seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidates (template, fragment) in visiting order: for each template (in the order given), ``variants``
    fragments drawn without replacement from its pool's multiset, or every distinct fragment once (None)."""
    group = pools.template_group[templates]
    pools.ensure(group)
    if variants is None:
        counts = pools.group_rows[group]
        pool_row = np.repeat(pools.group_start[group], counts) + ragged_arange(counts)
        return np.repeat(templates, counts), pools.fragment[pool_row]
    total = pools.group_total[group]
    counts = np.minimum(total, variants)
    if variants <= 16:
        positions = _draw_positions(index.hash[templates], total, counts, seed)
    else:
        positions = np.concatenate([
            np.random.default_rng([seed, int(h)]).permutation(int(n))[: int(c)]
            for h, n, c in zip(index.hash[templates], total, counts)
        ] + [np.zeros(0, dtype=np.int64)]).astype(np.int64)
    if counts.sum() == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    start = np.clip(pools.group_start[group], 0, len(pools.count) - 1)
    before = np.where(counts > 0, pools.cumulative[start] - pools.count[start], 0)  # multiset offset of each group
    pool_row = np.searchsorted(pools.cumulative, np.repeat(before, counts) + positions, side="right")
    return np.repeat(templates, counts), pools.fragment[pool_row]
