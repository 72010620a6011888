"""The learner registry: name -> function from a `ParallelCorpus` to lexicon entries.

A learner is a function ``learner(corpus, **hyperparameters) -> LearnerOutput`` whose hyperparameters are
keyword-only with defaults (the defaults are the paper's settings). A learner that samples takes a ``seed`` keyword.
Registering one makes it available to `learn_lexicon(data, method=name)` and to the command line.
"""

from __future__ import annotations

import inspect
import json
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["LEARNERS", "LearnerOutput", "LearnerSpec", "available_methods", "check_seed", "get_learner",
           "parse_learner_params", "register_learner"]


@dataclass
class LearnerOutput:
    """Entries as parallel arrays over corpus ids: ``source_ids[k] -> target_ids[k]`` with ``scores[k]``.

    ``source_ids`` index ``corpus.source_vocab`` and ``target_ids`` index ``corpus.target_vocab``; integer score
    arrays are saved as JSON integers. ``fallback`` is the rule for inputs without entries (see `Lexicon`).
    ``statistics`` holds deterministic diagnostics worth keeping with the lexicon.
    """

    source_ids: np.ndarray
    target_ids: np.ndarray
    scores: np.ndarray
    fallback: str = "mutual_exclusivity"
    statistics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LearnerSpec:
    name: str
    function: Callable[..., LearnerOutput]
    summary: str

    @property
    def hyperparameter_defaults(self) -> dict[str, Any]:
        parameters = inspect.signature(self.function).parameters.values()
        return {p.name: p.default for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}

    @property
    def takes_seed(self) -> bool:
        return "seed" in self.hyperparameter_defaults

    def resolve(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """Defaults updated by ``overrides``; unknown names raise `TypeError` listing the accepted ones."""
        defaults = self.hyperparameter_defaults
        unknown = sorted(set(overrides) - set(defaults))
        if unknown:
            accepted = ", ".join(f"{k}={v!r}" for k, v in defaults.items() if k != "seed") or "no hyperparameters"
            raise TypeError(f"learner {self.name!r} does not take {unknown}; it takes: {accepted}")
        resolved = dict(defaults)
        for name, value in overrides.items():
            resolved[name] = self._checked(name, value, defaults[name])
        return resolved

    def _checked(self, name: str, value: Any, default: Any) -> Any:
        """`value` as the type of `default` when that is a flag or a number (e.g. a mistyped --param epsilon=abc is
        an error, numpy numbers become Python ones); a count (an int default) takes whole numbers only, since 1.9
        samples would run as 1 and be recorded as 1.9."""
        where = f"learner {self.name!r}: {name}"
        if isinstance(default, bool):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{where} must be true or false (default {default!r}), got {value!r}")
            return bool(value)
        if not isinstance(default, numbers.Real):
            return value
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where} must be a number (default {default!r}), got {value!r}")
        if not math.isfinite(value):
            raise TypeError(f"{where} must be a finite number (default {default!r}), got {value!r}")
        if isinstance(default, numbers.Integral):
            if float(value) != int(value):
                raise TypeError(f"{where} must be a whole number (default {default!r}), got {value!r}")
            return int(value)
        return float(value)


LEARNERS: dict[str, LearnerSpec] = {}


def register_learner(name: str, summary: str | None = None):
    """Decorator: ``@register_learner("mine")`` on ``def mine(corpus, *, ...) -> LearnerOutput``."""

    def decorate(function):
        doc = inspect.getdoc(function) or ""
        LEARNERS[name] = LearnerSpec(name, function, summary or (doc.splitlines()[0] if doc else name))
        return function

    return decorate


def available_methods() -> list[str]:
    return list(LEARNERS)


def get_learner(method: str) -> LearnerSpec:
    try:
        return LEARNERS[method]
    except KeyError:
        raise ValueError(f"unknown lexicon learning method {method!r}; known methods: {', '.join(LEARNERS)}") from None


def check_seed(seed, where: str) -> int:
    """`seed` as an int, refusing what `numpy.random.default_rng` would reject or silently round (a negative number,
    1.5, a string) with a message that names the argument; `where` says whose seed it is."""
    number = isinstance(seed, numbers.Real) and not isinstance(seed, (bool, np.bool_))
    if not (number and math.isfinite(seed) and seed == int(seed) and seed >= 0):
        raise ValueError(f"{where}: seed must be a whole number >= 0, got {seed!r}")
    return int(seed)


def parse_params_text(text: str) -> dict:
    """``"iterations=10,variant=code"`` → ``{"iterations": 10, "variant": "code"}``: a comma-separated list of
    ``NAME=VALUE`` (commas inside brackets belong to the value: ``train_lengths=[8,16]``), parsed as
    :func:`parse_learner_params` does. What ``--lexicon_params``, ``--augment_params`` and ``--benchmark_params``
    take."""
    pairs, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            pairs.append(current)
            current = ""
        else:
            current += char
    return parse_learner_params([*pairs, current])


def parse_learner_params(pairs: Sequence[str]) -> dict:
    """``["iterations=10", "variant=code"]`` → ``{"iterations": 10, "variant": "code"}`` (values parsed as JSON when
    they can be, else kept as strings): what ``lexical-hf lexicon --param`` and ``lexical-hf train --lexicon_params``
    take."""
    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"--param expects NAME=VALUE, got {pair!r}")
        try:
            params[name] = json.loads(value)
        except json.JSONDecodeError:
            params[name] = value  # a bare string, e.g. variant=code
    return params
