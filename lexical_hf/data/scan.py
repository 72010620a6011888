"""SCAN (Lake & Baroni 2018), generated from its grammar — no download needed.

Grammar (``C`` is a command)::

    C -> S and S | S after S | S
    S -> V twice | V thrice | V
    V -> D opposite D' | D around D' | D | U      (opposite/around keep D's direction)
    D -> U left | U right | turn left | turn right
    U -> walk | look | run | jump

Semantics: ``walk/look/run/jump`` -> ``I_WALK/I_LOOK/I_RUN/I_JUMP``; ``x left`` -> ``I_TURN_LEFT x``;
``x opposite left`` -> ``I_TURN_LEFT I_TURN_LEFT x``; ``x around left`` -> ``(I_TURN_LEFT x) x 4``; ``turn left``
-> ``I_TURN_LEFT``, ``turn opposite left`` -> ``I_TURN_LEFT x 2``, ``turn around left`` -> ``I_TURN_LEFT x 4``;
``S twice/thrice`` repeats S; ``S1 and S2`` -> ``S1 S2``; ``S1 after S2`` -> ``S2 S1``. That makes 20,910 distinct
commands, equal as a multiset to ``tasks.txt`` of brendenlake/SCAN (checked by the test suite when a mirror is
present, together with the addprim_jump and template_around_right files).

Splits (sizes as in the canonical files):

=========================== ======= ====== =====================================================================
config                      train   test   rule
=========================== ======= ====== =====================================================================
simple                      16,728  4,182  seeded random 80/20 split (same sizes as upstream, not the same items)
addprim_jump                14,670  7,706  train: commands without ``jump`` + bare ``jump`` x 1,467; test: rest
addprim_turn_left           21,890  1,208  same with ``turn left`` (bare command x 2,189)
template_around_right       15,225  4,476  test: ``U around right``; ``turn around right`` left out of both
template_opposite_right     15,225  4,476  the same with ``opposite right``
template_right              15,225  4,476  the same with ``U right`` / ``turn right``
template_jump_around_right  18,528  1,173  test: ``jump around right``; ``turn around right`` left out
length                      16,990  3,920  train: action sequences of length <= 22; test: >= 24
=========================== ======= ====== =====================================================================

Inside each split the examples are in a fixed pseudo-random order (the grammar order would put all short
commands first). Licence: BSD 3-clause, (c) Facebook, Inc. (CommAI-env); see brendenlake/SCAN ``LICENSE``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import datasets

from ._common import LexicalBenchmarkBuilder, LexicalBenchmarkConfig

_CITATION = """\
@inproceedings{lake2018generalization,
  title     = {Generalization without Systematicity: On the Compositional Skills of Sequence-to-Sequence Recurrent
               Networks},
  author    = {Lake, Brenden and Baroni, Marco},
  booktitle = {Proceedings of the 35th International Conference on Machine Learning},
  pages     = {2873--2882},
  year      = {2018}
}
@inproceedings{loula2018rearranging,
  title     = {Rearranging the Familiar: Testing Compositional Generalization in Recurrent Networks},
  author    = {Loula, Jo{\\~a}o and Baroni, Marco and Lake, Brenden},
  booktitle = {Proceedings of the 2018 EMNLP Workshop BlackboxNLP},
  pages     = {108--114},
  year      = {2018}
}
"""

_DESCRIPTION = """\
SCAN: mapping navigation commands ("jump twice after walk left") to action sequences ("I_TURN_LEFT I_WALK I_JUMP
I_JUMP"). Generated from the SCAN grammar; splits follow brendenlake/SCAN (add-primitive, template, length) and
equal the canonical files as multisets.
"""

_HOMEPAGE = "https://github.com/brendenlake/SCAN"
_LICENSE = "BSD 3-clause (CommAI-env, (c) Facebook, Inc.)"

ACTIONS = {"walk": "I_WALK", "look": "I_LOOK", "run": "I_RUN", "jump": "I_JUMP"}
TURNS = {"left": "I_TURN_LEFT", "right": "I_TURN_RIGHT"}
NUMBER_OF_COMMANDS = 20_910

# Number of copies of the bare primitive in add-primitive train sets: upstream made it 10% of train
# (13,203 / 9 = 1,467 for jump; 19,701 / 9 = 2,189 for turn left).
_PRIMITIVE_COPIES = {"jump": 1_467, "turn left": 2_189}
_SIMPLE_TEST_SIZE = 4_182
_LENGTH_MAX_TRAIN = 22  # action sequences of length 23 do not occur; test is >= 24
_ORDER_SEED = 1_234  # fixes the order of examples within a split (and the `simple` split itself)


def _verb_phrases() -> list[tuple[str, list[str]]]:
    """All 34 V phrases with their action sequences."""
    phrases = [(word, [action]) for word, action in ACTIONS.items()]
    for direction, turn in TURNS.items():
        phrases += [(f"{word} {direction}", [turn, action]) for word, action in ACTIONS.items()]
        phrases.append((f"turn {direction}", [turn]))
        phrases += [(f"{word} opposite {direction}", [turn, turn, action]) for word, action in ACTIONS.items()]
        phrases.append((f"turn opposite {direction}", [turn, turn]))
        phrases += [(f"{word} around {direction}", [turn, action] * 4) for word, action in ACTIONS.items()]
        phrases.append((f"turn around {direction}", [turn] * 4))
    return phrases


def generate_scan() -> list[tuple[str, str]]:
    """All 20,910 SCAN (command, actions) pairs, in grammar order.

    The 102 S phrases are built once; commands are then string concatenations, so this runs in milliseconds.
    """
    sentences = []
    for words, actions in _verb_phrases():
        sentences.append((words, " ".join(actions)))
        sentences.append((f"{words} twice", " ".join(actions * 2)))
        sentences.append((f"{words} thrice", " ".join(actions * 3)))
    commands = list(sentences)
    commands += [(f"{c1} and {c2}", f"{a1} {a2}") for c1, a1 in sentences for c2, a2 in sentences]
    commands += [(f"{c1} after {c2}", f"{a2} {a1}") for c1, a1 in sentences for c2, a2 in sentences]
    assert len(commands) == NUMBER_OF_COMMANDS
    return commands


def _contains(command: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``command`` as whole words."""
    return f" {phrase} " in f" {command} "


def _add_primitive_split(pairs, primitive: str):
    """Train: commands without ``primitive`` plus the bare primitive repeated; test: the other commands with it."""
    bare = [pair for pair in pairs if pair[0] == primitive]
    train = [pair for pair in pairs if not _contains(pair[0], primitive)] + bare * _PRIMITIVE_COPIES[primitive]
    test = [pair for pair in pairs if _contains(pair[0], primitive) and pair[0] != primitive]
    return {"train": train, "test": test}


def _template_split(pairs, test_phrases: tuple[str, ...], left_out: str, train_excludes: tuple[str, ...]):
    """Loula et al. template split: test holds ``test_phrases``; ``left_out`` commands are in neither split."""
    train, test = [], []
    for pair in pairs:
        command = pair[0]
        if _contains(command, left_out):
            continue
        if any(_contains(command, phrase) for phrase in test_phrases):
            test.append(pair)
        elif not any(_contains(command, phrase) for phrase in train_excludes):
            train.append(pair)
    return {"train": train, "test": test}


def _simple_split(pairs):
    shuffled = list(pairs)
    random.Random(_ORDER_SEED).shuffle(shuffled)
    return {"train": shuffled[_SIMPLE_TEST_SIZE:], "test": shuffled[:_SIMPLE_TEST_SIZE]}


def _length_split(pairs):
    train = [pair for pair in pairs if len(pair[1].split()) <= _LENGTH_MAX_TRAIN]
    test = [pair for pair in pairs if len(pair[1].split()) > _LENGTH_MAX_TRAIN]
    return {"train": train, "test": test}


_PRIMITIVE_RIGHT = tuple(f"{word} right" for word in ACTIONS)
_AROUND_RIGHT = tuple(f"{word} around right" for word in ACTIONS)
_OPPOSITE_RIGHT = tuple(f"{word} opposite right" for word in ACTIONS)

SPLIT_RULES: dict[str, Callable[[list[tuple[str, str]]], dict[str, list[tuple[str, str]]]]] = {
    "simple": _simple_split,
    "addprim_jump": lambda pairs: _add_primitive_split(pairs, "jump"),
    "addprim_turn_left": lambda pairs: _add_primitive_split(pairs, "turn left"),
    "template_around_right": lambda pairs: _template_split(
        pairs, _AROUND_RIGHT, "turn around right", _AROUND_RIGHT
    ),
    "template_opposite_right": lambda pairs: _template_split(
        pairs, _OPPOSITE_RIGHT, "turn opposite right", _OPPOSITE_RIGHT
    ),
    "template_right": lambda pairs: _template_split(pairs, _PRIMITIVE_RIGHT, "turn right", _PRIMITIVE_RIGHT),
    "template_jump_around_right": lambda pairs: _template_split(
        pairs, ("jump around right",), "turn around right", ("jump around right",)
    ),
    "length": _length_split,
}
"""How each config splits the 20,910 commands into train and test (see the module docstring)."""


def scan_split(config_name: str) -> dict[str, list[tuple[str, str]]]:
    """``{"train": [...], "test": [...]}`` of (command, actions) pairs for a SCAN config, in a fixed shuffled order."""
    if config_name not in SPLIT_RULES:
        raise ValueError(f"unknown SCAN config {config_name!r}; available: {sorted(SPLIT_RULES)}")
    splits = SPLIT_RULES[config_name](generate_scan())
    for name, pairs in splits.items():
        random.Random(f"{_ORDER_SEED}-{config_name}-{name}").shuffle(pairs)
    return splits


class Scan(LexicalBenchmarkBuilder):
    """SCAN builder; configs are the keys of :data:`SPLIT_RULES`, each with splits ``train`` and ``test``."""

    DATASET_NAME = "lexical_hf_scan"
    BUILDER_CONFIGS = [
        LexicalBenchmarkConfig(name=name, version=datasets.Version("1.0.0"), description=f"SCAN {name} split")
        for name in SPLIT_RULES
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
        return ("train", "test"), ("train", "test")

    def build_splits(self, paths, splits):
        pairs = scan_split(self.config.name)
        return {split: [{"source": s, "target": t} for s, t in pairs[split]] for split in splits}
