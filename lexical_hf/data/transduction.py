"""The five transduction tasks of Grefenstette et al. (2015), generated — no download needed.

=================== ====================================================== =========================================
config              source -> target                                       vocabulary
=================== ====================================================== =========================================
copy                ``a1 ... ak -> a1 ... ak``                             128 symbols ``s1`` ... ``s128``
reversal            ``a1 ... ak -> ak ... a1``                             the same
bigram_flip         ``a1 a2 a3 a4 ... -> a2 a1 a4 a3 ...`` (k even)        the same
svo_sov             subject-verb-object -> subject-object-verb (an ITG)    ``si``/``so``, ``vi``/``vo``, ``oi``/``oo``
                                                                           1-33, ``rpi``/``rpo``
gender_conjugation  genderless -> gendered articles (an ITG)               ``the a and or`` -> ``der die das ein
                                                                           eine und oder``; ``we``/``wg``,
                                                                           ``me``/``mg``, ``fe``/``fg``, ``ne``/``ng``
                                                                           1-25
=================== ====================================================== =========================================

Synthetic tasks: symbols are i.i.d. uniform; the source length k is uniform on the split's range (on its even
numbers for ``bigram_flip``). Grammar tasks: synchronous derivations are sampled top-down from the grammars below
(lexical classes uniform over their indices) and rejected unless the source length is in the split's range; a
derivation is abandoned as soon as it must exceed the range's top (every nonterminal yields at least one token),
which leaves the distribution of accepted samples unchanged. Every rule of every task keeps the length, so target
length = source length throughout.

SVO -> SOV (probabilities per left-hand side; ``|`` separates the source and target sides; equal indices link)::

    1    A  -> S1 VT2 O3       | S1 O3 VT2
    1/5  S  -> S1 S2           | S1 S2
    1/5  S  -> S1 rpi S2 VT3   | S1 rpo S2 VT3
    3/5  S  -> ST1             | ST1
    1/5  O  -> O1 O2           | O1 O2
    1/5  O  -> S1 rpi S2 VT3   | S1 rpo S2 VT3
    3/5  O  -> OT1             | OT1
         ST_i -> si_i | so_i,  OT_i -> oi_i | oo_i,  VT_i -> vi_i | vo_i       (i uniform on 1..33)

Genderless -> gendered::

    1    A  -> B1              | B1
    1/4  B  -> B1 or B2        | B1 oder B2
    1/4  B  -> S1 and S2       | S1 und S2
    1/2  B  -> S1 V1           | S1 V1          (printed "B1 V1"; see below)
    3/4  V  -> W1 B2           | W1 B2
    1/4  V  -> W1              | W1
    1/6  S  -> the M1 | der M1;  the F1 | die F1;  the N1 | das N1;  a M1 | ein M1;  a F1 | eine F1;  a N1 | ein N1
         W_i -> we_i | wg_i,  M_i -> me_i | mg_i,  F_i -> fe_i | fg_i,  N_i -> ne_i | ng_i    (i uniform on 1..25)

The paper prints ``B -> B1 V1`` with probability 1/2. Read so, a B has on average 1/4 * 2 + 1/2 * (1 + 3/4) = 1.375
B children: the branching process is supercritical and 60% of derivations never end; those that do are mostly
short, a test-length pair costs about 500 derivations, and every sentence contains an ``S and S`` (no B rule avoids
one). Read as ``B -> S1 V1`` (a subject noun phrase, then a verb phrase), a B has 0.875 B children on average:
derivations end (mean length 24) and cover 8-128 with a long tail, which is what the paper says the probabilities
were tuned for. This module uses ``S1 V1``; ``gender_grammar(printed_b_rule=True)`` gives the printed reading.
Measurements of both: results/transduction_lengths.md. The sample given with the grammar, ``we11 the en19 and the
em17 ||| wg11 das gn19 und der gm17``, spells nouns ``en``/``gn`` and ``em``/``gm`` where the grammar has
``ne``/``ng`` and ``me``/``mg`` (the grammar's spelling is used here); it starts with a verb, so it is a V phrase
rather than a whole sentence under either reading.

Splits: ``train`` (``train_size`` = 10,000 pairs, lengths ``train_lengths`` = 8-64), ``validation`` (``eval_size``
= 1,000 fresh pairs from the training distribution: the paper also scores samples from it) and ``test``
(``eval_size`` pairs, ``test_lengths`` = 65-128). Each split has its own random stream, seeded by ``data_seed``, the
task and the split name, so a split never depends on the size of another. The paper trains on fresh samples
without end; :func:`stream_pairs` gives such an endless stream (e.g. for ``datasets.IterableDataset.from_generator``).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
from bisect import bisect
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from itertools import accumulate

import datasets

from ._common import LexicalBenchmarkBuilder, LexicalBenchmarkConfig

_CITATION = """\
@inproceedings{grefenstette2015learning,
  title     = {Learning to Transduce with Unbounded Memory},
  author    = {Grefenstette, Edward and Hermann, Karl Moritz and Suleyman, Mustafa and Blunsom, Phil},
  booktitle = {Advances in Neural Information Processing Systems 28},
  pages     = {1828--1836},
  year      = {2015}
}
"""

_DESCRIPTION = """\
The transduction tasks of Grefenstette et al. (2015): copy, reversal and bigram flipping of random sequences over
128 symbols, and two inversion-transduction-grammar tasks (SVO to SOV reordering, genderless to gendered articles).
Generated with a seed; training lengths 8-64, test lengths 65-128.
"""

_HOMEPAGE = "https://arxiv.org/abs/1506.02516"
_LICENSE = "Generated data; no licence restrictions."

TASKS = ("copy", "reversal", "bigram_flip", "svo_sov", "gender_conjugation")
SYMBOLS = tuple(f"s{i}" for i in range(1, 129))
"""The 128 symbols of the synthetic tasks (the same on the source and target side)."""

TRAIN_LENGTHS = (8, 64)
TEST_LENGTHS = (65, 128)
_SPLITS = ("train", "validation", "test")


# ----- the synthetic tasks --------------------------------------------------------------------------------------------

def bigram_flip(tokens: list[str]) -> list[str]:
    """``a1 a2 a3 a4 ... -> a2 a1 a4 a3 ...`` (an even number of tokens)."""
    if len(tokens) % 2:
        raise ValueError(f"bigram flipping needs an even length, got {len(tokens)}")
    flipped = []
    for i in range(0, len(tokens), 2):
        flipped += [tokens[i + 1], tokens[i]]
    return flipped


_SYNTHETIC_TARGETS = {"copy": list, "reversal": lambda tokens: tokens[::-1], "bigram_flip": bigram_flip}


def _sample_synthetic(task: str, rng: random.Random, lengths: tuple[int, int]) -> tuple[list[str], list[str]]:
    low, high = lengths
    if task == "bigram_flip":
        length = 2 * rng.randint((low + 1) // 2, high // 2)  # uniform on the even lengths in [low, high]
    else:
        length = rng.randint(low, high)
    source = [rng.choice(SYMBOLS) for _ in range(length)]
    return source, _SYNTHETIC_TARGETS[task](source)


# ----- synchronous grammars -------------------------------------------------------------------------------------------

class _TooLong(Exception):
    """A derivation that can no longer fit the length limit."""


@dataclass(frozen=True)
class SynchronousRule:
    """``lhs -> source | target`` with a probability; items like ``S1`` are linked nonterminals, others words."""

    probability: float
    source: tuple[str, ...]
    target: tuple[str, ...]


@dataclass(frozen=True)
class SynchronousGrammar:
    """A synchronous context-free grammar (an ITG here) that samples (source, target) token lists.

    Attributes:
        axiom: the start symbol.
        rules: nonterminal -> its rules (probabilities sum to 1).
        lexicon: preterminal -> ``(source prefix, target prefix, count)``: it rewrites to ``<source prefix><i> |
            <target prefix><i>`` with i uniform on 1..count.
    """

    axiom: str
    rules: Mapping[str, tuple[SynchronousRule, ...]]
    lexicon: Mapping[str, tuple[str, str, int]] = field(default_factory=dict)

    @staticmethod
    def nonterminal(item: str) -> str | None:
        """The nonterminal an item like ``VT2`` refers to, or None for a word."""
        match = re.fullmatch(r"([A-Z]+)\d+", item)
        return match.group(1) if match else None

    @cached_property
    def _choices(self) -> dict[str, tuple[list[float], list[tuple[int, list, list]]]]:
        """Per nonterminal: cumulative probabilities, and per rule (length growth, source items, target items)
        with each item ``(word, None)`` or ``(link, nonterminal)``."""
        compiled = {}
        for lhs, rules in self.rules.items():
            cumulative = list(accumulate(rule.probability for rule in rules))
            compiled[lhs] = (cumulative, [
                (len(rule.source) - 1,
                 [(item, self.nonterminal(item)) for item in rule.source],
                 [(item, self.nonterminal(item)) for item in rule.target])
                for rule in rules
            ])
        return compiled

    def sample(self, rng: random.Random, max_length: int) -> tuple[list[str], list[str]] | None:
        """One derivation's (source, target), or None as soon as its source must be longer than ``max_length``."""
        room = [max_length - 1]  # tokens to spare: max_length - (words emitted + nonterminals pending)
        # A frame per nonterminal on the path from the axiom: a few per token at most (every rule but unary
        # ones adds a token), which can pass Python's default limit of 1,000 for long derivations.
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 4 * max_length + 200))
        try:
            return self._expand(self.axiom, rng, room)
        except _TooLong:
            return None
        finally:
            sys.setrecursionlimit(limit)

    def _expand(self, symbol: str, rng: random.Random, room: list[int]) -> tuple[list[str], list[str]]:
        """Top-down, children in source order: a rule, then each linked nonterminal, then both sides' words."""
        if symbol in self.lexicon:
            source_prefix, target_prefix, count = self.lexicon[symbol]
            index = rng.randint(1, count)
            return [f"{source_prefix}{index}"], [f"{target_prefix}{index}"]
        cumulative, rules = self._choices[symbol]
        growth, source_items, target_items = rules[bisect(cumulative, rng.random() * cumulative[-1])]
        room[0] -= growth
        if room[0] < 0:
            raise _TooLong
        children = {}
        for item, nonterminal in source_items:
            if nonterminal:
                children[item] = self._expand(nonterminal, rng, room)
        source, target = [], []
        for item, nonterminal in source_items:
            source += children[item][0] if nonterminal else [item]
        for item, nonterminal in target_items:
            target += children[item][1] if nonterminal else [item]
        return source, target


def parse_grammar(axiom: str, table: str, lexicon: Mapping[str, tuple[str, str, int]]) -> SynchronousGrammar:
    """A :class:`SynchronousGrammar` from lines ``<probability> <lhs> -> <source items> | <target items>``.

    The table is checked: probabilities per left-hand side sum to 1, both sides link the same nonterminals, and
    every nonterminal used has rules or a lexicon entry.
    """
    rules: dict[str, list[SynchronousRule]] = {}
    for line in filter(None, (line.strip() for line in table.splitlines())):
        probability, lhs, arrow, rest = line.split(maxsplit=3)
        source, target = (tuple(side.split()) for side in rest.split("|"))
        if arrow != "->":
            raise ValueError(f"bad grammar line {line!r}")
        rules.setdefault(lhs, []).append(SynchronousRule(float(Fraction(probability)), source, target))
    grammar = SynchronousGrammar(axiom, {lhs: tuple(rs) for lhs, rs in rules.items()}, dict(lexicon))
    for lhs, lhs_rules in grammar.rules.items():
        total = sum(Fraction(rule.probability).limit_denominator(1000) for rule in lhs_rules)
        if total != 1:
            raise ValueError(f"the probabilities of {lhs} sum to {total}, not 1")
        for rule in lhs_rules:
            linked = [sorted(item for item in side if grammar.nonterminal(item)) for side in (rule.source, rule.target)]
            if linked[0] != linked[1] or len(set(linked[0])) != len(linked[0]):
                raise ValueError(f"{lhs} -> {rule}: the two sides must link the same nonterminals once each")
            unknown = {grammar.nonterminal(item) for item in linked[0]} - set(grammar.rules) - set(grammar.lexicon)
            if unknown:
                raise ValueError(f"{lhs} -> {rule}: undefined nonterminals {sorted(unknown)}")
    return grammar


SVO_SOV_GRAMMAR = parse_grammar("A", """
    1    A -> S1 VT2 O3       | S1 O3 VT2
    1/5  S -> S1 S2           | S1 S2
    1/5  S -> S1 rpi S2 VT3   | S1 rpo S2 VT3
    3/5  S -> ST1             | ST1
    1/5  O -> O1 O2           | O1 O2
    1/5  O -> S1 rpi S2 VT3   | S1 rpo S2 VT3
    3/5  O -> OT1             | OT1
""", lexicon={"ST": ("si", "so", 33), "OT": ("oi", "oo", 33), "VT": ("vi", "vo", 33)})


def gender_grammar(printed_b_rule: bool = False) -> SynchronousGrammar:
    """The genderless -> gendered grammar; ``printed_b_rule=True`` reads ``B -> B1 V1`` as printed (supercritical)."""
    b_verb_rule = "B1 V1 | B1 V1" if printed_b_rule else "S1 V1 | S1 V1"
    return parse_grammar("A", f"""
        1    A -> B1              | B1
        1/4  B -> B1 or B2        | B1 oder B2
        1/4  B -> S1 and S2       | S1 und S2
        1/2  B -> {b_verb_rule}
        3/4  V -> W1 B2           | W1 B2
        1/4  V -> W1              | W1
        1/6  S -> the M1          | der M1
        1/6  S -> the F1          | die F1
        1/6  S -> the N1          | das N1
        1/6  S -> a M1            | ein M1
        1/6  S -> a F1            | eine F1
        1/6  S -> a N1            | ein N1
    """, lexicon={"W": ("we", "wg", 25), "M": ("me", "mg", 25), "F": ("fe", "fg", 25), "N": ("ne", "ng", 25)})


GENDER_GRAMMAR = gender_grammar()
GRAMMARS = {"svo_sov": SVO_SOV_GRAMMAR, "gender_conjugation": GENDER_GRAMMAR}


def sample_in_range(grammar: SynchronousGrammar, rng: random.Random,
                    lengths: tuple[int, int]) -> tuple[list[str], list[str], int]:
    """(source, target, attempts): derivations drawn until the source length is in ``lengths`` (inclusive)."""
    low, high = lengths
    attempts = 0
    while True:
        attempts += 1
        pair = grammar.sample(rng, high)
        if pair is not None and len(pair[0]) >= low:
            return pair[0], pair[1], attempts


# ----- pairs and splits -----------------------------------------------------------------------------------------------

def sample_pair(task: str, rng: random.Random, lengths: tuple[int, int]) -> tuple[list[str], list[str]]:
    """One (source tokens, target tokens) pair of ``task`` with source length in ``lengths`` (inclusive)."""
    if task in _SYNTHETIC_TARGETS:
        return _sample_synthetic(task, rng, lengths)
    if task in GRAMMARS:
        return sample_in_range(GRAMMARS[task], rng, lengths)[:2]
    raise ValueError(f"unknown transduction task {task!r}; available: {list(TASKS)}")


def _check_lengths(task: str, lengths: tuple[int, int]) -> tuple[int, int]:
    low, high = lengths
    if not 1 <= low <= high:
        raise ValueError(f"lengths must satisfy 1 <= low <= high, got {lengths}")
    if task == "bigram_flip" and (low + 1) // 2 > high // 2:
        raise ValueError(f"bigram_flip needs an even length in {lengths}")
    return int(low), int(high)


def split_rng(task: str, split: str, seed: int) -> random.Random:
    """The random stream of one split (string seeds are hashed with SHA-512: stable across runs and platforms)."""
    return random.Random(f"{seed}/{task}/{split}")


def generate_split(task: str, size: int, lengths: tuple[int, int], rng: random.Random) -> list[dict[str, str]]:
    """``size`` examples ``{"source", "target"}`` (space-separated tokens)."""
    lengths = _check_lengths(task, lengths)
    examples = []
    for _ in range(size):
        source, target = sample_pair(task, rng, lengths)
        examples.append({"source": " ".join(source), "target": " ".join(target)})
    return examples


def stream_pairs(task: str, lengths: tuple[int, int] = TRAIN_LENGTHS, seed: int = 0) -> Iterator[dict[str, str]]:
    """An endless stream of fresh examples (the paper's unbounded training), from its own seeded stream."""
    lengths = _check_lengths(task, lengths)
    rng = split_rng(task, "stream", seed)
    while True:
        source, target = sample_pair(task, rng, lengths)
        yield {"source": " ".join(source), "target": " ".join(target)}


# ----- the builder ----------------------------------------------------------------------------------------------------

@dataclass
class TransductionConfig(LexicalBenchmarkConfig):
    """A task plus its sizes, length ranges and seed (any of them can be overridden when the builder is made).

    Attributes:
        train_size: examples in ``train``.
        eval_size: examples in ``validation`` and in ``test``.
        train_lengths: inclusive source-length range of ``train`` and ``validation``.
        test_lengths: inclusive source-length range of ``test``.
        data_seed: seed of the generation (``seed`` is the base class's, for ``validation_fraction``).
    """

    train_size: int = 10_000
    eval_size: int = 1_000
    train_lengths: tuple[int, int] = TRAIN_LENGTHS
    test_lengths: tuple[int, int] = TEST_LENGTHS
    data_seed: int = 0


class Transduction(LexicalBenchmarkBuilder):
    """The five tasks as configs ``copy``, ``reversal``, ``bigram_flip``, ``svo_sov`` and ``gender_conjugation``,
    each with splits ``train``, ``validation`` and ``test``::

        Transduction("reversal", cache_dir=..., train_size=50_000).download_and_prepare()
    """

    DATASET_NAME = "lexical_hf_transduction"
    BUILDER_CONFIG_CLASS = TransductionConfig
    BUILDER_CONFIGS = [
        TransductionConfig(name=task, version=datasets.Version("1.0.0"), description=f"{task} (Grefenstette 2015)")
        for task in TASKS
    ]

    def _info(self):
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=datasets.Features({"source": datasets.Value("string"), "target": datasets.Value("string")}),
            homepage=_HOMEPAGE,
            license=_LICENSE,
            citation=_CITATION,
        )

    @classmethod
    def splits_of(cls, config_name):
        return _SPLITS, _SPLITS

    def build_splits(self, paths, splits):
        config = self.config
        sizes = {"train": config.train_size, "validation": config.eval_size, "test": config.eval_size}
        lengths = {"train": config.train_lengths, "validation": config.train_lengths, "test": config.test_lengths}
        return {
            split: generate_split(config.name, sizes[split], tuple(lengths[split]),
                                  split_rng(config.name, split, config.data_seed))
            for split in splits
        }


# ----- measured length distributions (python -m lexical_hf.data.transduction --markdown FILE) -------------------------

_BUCKETS = ((1, 7), (8, 15), (16, 31), (32, 47), (48, 64), (65, 80), (81, 96), (97, 112), (113, 128))


def length_summary(lengths: list[int]) -> dict:
    """min / mean / median / max and counts per bucket of a list of lengths."""
    buckets = {f"{low}-{high}": sum(low <= n <= high for n in lengths) for low, high in _BUCKETS}
    buckets[">128"] = sum(n > 128 for n in lengths)
    return {"min": min(lengths), "mean": statistics.fmean(lengths), "median": statistics.median(lengths),
            "max": max(lengths), "buckets": buckets}


def raw_grammar_lengths(grammar: SynchronousGrammar, samples: int, seed: int = 0, cap: int = 10_000) -> Counter:
    """Unrejected derivation lengths, with every derivation longer than ``cap`` counted under ``cap + 1``."""
    rng = random.Random(f"{seed}/raw")
    counts = Counter()
    for _ in range(samples):
        pair = grammar.sample(rng, cap)
        counts[cap + 1 if pair is None else len(pair[0])] += 1
    return counts


def _markdown_report(data_seed: int, raw_samples: int) -> str:
    lines = [
        "# Transduction tasks: measured length distributions",
        "",
        "Produced by `python -m lexical_hf.data.transduction --markdown results/transduction_lengths.md` "
        f"(data_seed={data_seed}, the builder's default sizes: train 10,000, validation and test 1,000 each; "
        f"{raw_samples:,} raw derivations per grammar). Lengths are in tokens, without end-of-sequence.",
        "",
        "Every rule of every task keeps the length, so target length = source length in every row (checked below).",
        "",
        "| task | split | side | min | mean | median | max | " + " | ".join(f"{a}-{b}" for a, b in _BUCKETS)
        + " | distinct sources |",
        "|---|---|---|---|---|---|---|" + "---|" * len(_BUCKETS) + "---|",
    ]
    sizes = {"train": 10_000, "validation": 1_000, "test": 1_000}
    overlap_notes = []
    for task in TASKS:
        split_sources = {}
        for split in _SPLITS:
            lengths = TEST_LENGTHS if split == "test" else TRAIN_LENGTHS
            examples = generate_split(task, sizes[split], lengths, split_rng(task, split, data_seed))
            split_sources[split] = {example["source"] for example in examples}
            for side in ("source", "target"):
                side_lengths = [len(example[side].split()) for example in examples]
                summary = length_summary(side_lengths)
                buckets = " | ".join(str(summary["buckets"][f"{a}-{b}"]) for a, b in _BUCKETS)
                distinct = len(split_sources[split]) if side == "source" else ""
                lines.append(f"| {task} | {split} | {side} | {summary['min']} | {summary['mean']:.1f} | "
                             f"{summary['median']:g} | {summary['max']} | {buckets} | {distinct} |")
            assert all(len(e["source"].split()) == len(e["target"].split()) for e in examples)
        shared = len(split_sources["train"] & split_sources["validation"])
        overlap_notes.append(f"{task}: {shared}")
    lines += ["", "Validation sources also in train (by task): " + ", ".join(overlap_notes) + ".", ""]
    lines += _grammar_report(data_seed, raw_samples)
    lines += [
        "## Reading",
        "",
        "- Synthetic tasks: lengths are uniform on the range (bigram flip: on its even lengths), so train and test "
        "are flat over 8-64 and 65-128.",
        "- Grammar tasks: rejection keeps the grammars' decreasing length distributions inside each range, so most "
        "training pairs are short and most test pairs lie just above 65; long test pairs (97-128) are rarer than in "
        "the synthetic tasks.",
        "- `B -> B1 V1` as printed: a B has 1/4 * 2 + 1/2 * (1 + 3/4) = 1.375 B children on average, so derivations "
        "never end with probability 1 - 0.4 = 0.6 (the extinction probability q solves q = 5/8 q^2 + 1/8 q + 1/4, "
        "q = 0.4), which the `>500` column shows; the derivations that do end are short, and a test pair costs "
        "about 500 derivations. Every B then contains an `S and S` coordination (no rule gives a B without one). "
        "Read as `B -> S1 V1`, a B has 0.875 B children on average, derivations end with a mean of 24 tokens "
        "(1/4 (2E + 1) + 1/4 * 5 + 1/2 (2 + 1 + 3/4 E) = E gives E = 24) and cover 8-128 with a long tail, as the "
        "paper says its probabilities were tuned to. The builder uses `S1 V1`; "
        "`gender_grammar(printed_b_rule=True)` gives the printed reading.",
        "",
    ]
    return "\n".join(lines) + "\n"


def _grammar_report(data_seed: int, raw_samples: int) -> list[str]:
    cap = 500
    lines = [
        "## The grammars before rejection",
        "",
        f"Share of {raw_samples:,} unrejected derivations per length range (derivations longer than {cap:,} tokens "
        "are abandoned and counted as `>128`), and the acceptance rate of each split's rejection sampling.",
        "",
        f"| grammar | <8 | 8-64 (train) | 65-128 (test) | >128 | of which >{cap:,} "
        f"| mean length of those ≤ {cap:,} |",
        "|---|---|---|---|---|---|---|",
    ]
    grammars = {
        "svo_sov": SVO_SOV_GRAMMAR,
        "gender_conjugation, B -> S1 V1 (used)": GENDER_GRAMMAR,
        "gender_conjugation, B -> B1 V1 (as printed)": gender_grammar(printed_b_rule=True),
    }
    for name, grammar in grammars.items():
        counts = raw_grammar_lengths(grammar, raw_samples, seed=data_seed, cap=cap)

        def share(low, high):
            return sum(c for n, c in counts.items() if low <= n <= high) / raw_samples

        finite = [n for n, c in counts.items() for _ in range(c) if n <= cap]
        lines.append(f"| {name} | {share(1, 7):.3f} | {share(8, 64):.3f} | {share(65, 128):.3f} | "
                     f"{share(129, cap + 1):.3f} | {share(cap + 1, cap + 1):.3f} | "
                     f"{statistics.fmean(finite):.1f} |")
    lines += ["", "Accepted samples of each grammar under the builder's rejection sampling (1,000 per range; 300 for "
              "the printed reading's test range):", ""]
    for name, grammar in grammars.items():
        for split, lengths in (("train", TRAIN_LENGTHS), ("test", TEST_LENGTHS)):
            count = 300 if "printed" in name and split == "test" else 1_000
            rng = split_rng(f"report/{name}", split, data_seed)
            samples = [sample_in_range(grammar, rng, lengths) for _ in range(count)]
            summary = length_summary([len(source) for source, _, _ in samples])
            attempts = sum(a for _, _, a in samples)
            lines.append(f"- {name}, {split} {lengths[0]}-{lengths[1]}: min {summary['min']}, "
                         f"mean {summary['mean']:.1f}, median {summary['median']:g}, max {summary['max']}; "
                         f"acceptance {count / attempts:.3f} ({attempts:,} derivations for {count:,})")
    lines.append("")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Measure the transduction tasks' length distributions.")
    parser.add_argument("--markdown", help="write the report to this file (default: print it)")
    parser.add_argument("--data_seed", type=int, default=0)
    parser.add_argument("--raw_samples", type=int, default=20_000)
    args = parser.parse_args(argv)
    report = _markdown_report(args.data_seed, args.raw_samples)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(report)
    else:
        print(report)


if __name__ == "__main__":
    main()
