"""The `Lexicon` artifact: learned token-level translation rules, their provenance, and the bridge to a tokenizer.

A lexicon is a set of entries ``v -> {w: score}`` (input token v, output token w) plus metadata. It becomes the
paper's matrix L (|V_x| × |V_y|) only through `Lexicon.to_matrix(tokenizer, temperature)`, the single place where
token strings meet a tokenizer's ids. The rules `to_matrix` applies, row by row:

* **Entries.** A source token with entries gets ``L[v, w] ∝ exp(score(v, w) / τ)`` over its entries. ``τ = 0`` is
  the hard (one-hot) lexicon the paper uses for its main results: the entry with the highest score, ties broken
  first in favour of copying (``w == v``), then by the lexicon's recorded ``tie_breaks`` (``{v: w}``; `learn_lexicon`
  records the tied output that co-occurs with v in the most training examples), then by the smallest target string
  (Python string order), so the choice never depends on a tokenizer's id order. As τ → 0 the soft rows converge to
  the hard rows whenever the maximum is unique; with tied maxima the soft limit is uniform over the tied entries and
  the hard row is one of them.
* **No entry (fallback ``"mutual_exclusivity"``, the default).** The token maps to itself if the same string is a
  generatable, non-special target token (copying). Otherwise it is spread uniformly over the *unclaimed* target
  tokens: generatable, non-special target tokens that no source token claims, where a source token claims the
  targets of its (kept) entries and, when it has no entries, its own string through copying. This is the paper's
  mutual-exclusivity bias. If every target token is claimed the row is uniform over all generatable non-special
  target tokens (the paper's code leaves such rows at zero, which its argmax turns into id 0, the padding token).
* **No entry (fallback ``"mutual_exclusivity_or_abstain"``, the paper's code).** As ``"mutual_exclusivity"``, but
  when every target token is claimed the row maps to ``<unk>``, a token the model then never generates
  (`LexicalSeq2SeqForConditionalGeneration.set_lexicon` adds it to ``generation_config.suppress_tokens``).
  Attending such a token (a function word like ``twice`` or ``fep``) then *abstains*: its lexical mass goes to a
  token that is never right, as the paper's code sends it to padding, instead of being spread over every output,
  which a model can exploit by blending a little attention on a content word with a lot on a function word.
* **No entry (fallback ``"uniform"``).** Every row without entries is uniform over all generatable non-special target
  tokens; the `uniform` learner uses this with no entries at all (the paper's ablation).
* **Special source tokens** follow a fixed convention whatever the entries say: ``</s> -> </s>``,
  ``<unk> -> <unk>``, and ``<pad>``, ``<s> -> <unk>`` (padding is masked by attention and ``<s>`` never occurs in an
  encoder input, so their rows only need to be valid distributions). Source ids that no token uses map to ``<unk>``.
* **Non-generatable target ids** (``<pad>`` and ``<s>``, plus any id in the tokenizer's
  ``non_generatable_target_ids``) get zero columns.

Entries whose source token is not in the tokenizer's source vocabulary, or whose target token is not a generatable
non-special token of its target vocabulary, are dropped with a `LexiconCoverageWarning` that reports how many; if
every entry is dropped (a lexicon learned for another tokenizer) `to_matrix` raises `ValueError`.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "FALLBACKS",
    "LEXICON_FILE",
    "REPLACEABLE_FALLBACKS",
    "Lexicon",
    "LexiconCoverageWarning",
    "SPECIAL_TOKENS",
    "plot_lexicons",
]

LEXICON_FILE = "lexicon.json"
FORMAT_NAME = "lexical_hf.lexicon"
FORMAT_VERSION = 2  # 2 added `tie_breaks`; version 1 files load with none

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
# rows of special source tokens (see the module docstring)
SPECIAL_SOURCE_TARGET = {PAD: UNK, BOS: UNK, EOS: EOS, UNK: UNK}
FALLBACKS = ("mutual_exclusivity", "mutual_exclusivity_or_abstain", "uniform")
# what a user may ask for over a learner's own fallback ("uniform" is the uniform learner's definition, not an option)
REPLACEABLE_FALLBACKS = ("mutual_exclusivity", "mutual_exclusivity_or_abstain")


def replaced_fallback(current: str, requested: str | None, method: str) -> str:
    """The fallback a lexicon of `method` whose own is `current` gets when `requested` is asked for (None: its own).

    Raises:
        ValueError: `requested` is not in `REPLACEABLE_FALLBACKS`, or `current` is part of the learner's definition
            (anything but mutual exclusivity, i.e. the uniform learner's).
    """
    if requested is None or requested == current:
        return current
    if requested not in REPLACEABLE_FALLBACKS:
        raise ValueError(f"fallback must be one of {REPLACEABLE_FALLBACKS}, got {requested!r}")
    if current != "mutual_exclusivity":
        raise ValueError(f"fallback: the {method} lexicon's {current!r} fallback is part of its definition and cannot "
                         "be replaced")
    return requested
ABSTAIN_TARGET = UNK  # where "mutual_exclusivity_or_abstain" sends rows when every target is claimed


class LexiconCoverageWarning(UserWarning):
    """Some lexicon entries name tokens that the tokenizer's vocabularies do not contain; they were dropped."""


def _package_version() -> str:
    from .. import __version__

    return __version__


def _hard_choice(source: str, outputs: Mapping[str, float], preferred: str | None = None) -> str:
    """The τ = 0 choice among ``outputs``: highest score, then copying (w == source), then ``preferred`` (the
    lexicon's recorded tie-break for ``source``), then the smallest string."""
    best = max(outputs.values())
    tied = [w for w, s in outputs.items() if s == best]
    if len(tied) == 1:
        return tied[0]
    if source in tied:
        return source
    return preferred if preferred in tied else min(tied)


def _softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    """``exp(score / τ)`` normalised. The maximum is subtracted before dividing by τ: a tiny τ then sends the other
    scores to -inf (weight 0) and the highest to 0 (weight 1), never inf - inf; differences too large for a float
    are -inf as well."""
    with np.errstate(over="ignore"):
        logits = (scores - scores.max()) / temperature
    weights = np.exp(logits)
    return weights / weights.sum()


class Lexicon:
    """A learned lexicon: entries ``{input_token: {output_token: score}}`` and how they were obtained.

    Args:
        entries: ``{v: {w: score}}``. Scores are the learner's evidence (a co-occurrence count for `simple`, PMI
            for `pmi`, a count of alignment links for `ibm2`, a posterior probability for `bayesian`); they become
            probabilities only in `to_matrix`, as ``exp(score / τ)`` normalised over the entries of ``v``.
        method: name of the learner that produced the entries (``"custom"`` for hand-made lexicons).
        hyperparameters: the learner's resolved hyperparameters.
        provenance: where the entries came from (dataset, config, split, number of examples, package version, …).
        temperature: the default τ of `to_matrix` (0 = hard lexicon).
        fallback: rule for source tokens without entries, ``"mutual_exclusivity"`` (default),
            ``"mutual_exclusivity_or_abstain"`` (the paper's code) or ``"uniform"``.
        statistics: optional learner diagnostics (e.g. the sampler's acceptance rate), saved with the metadata.
        tie_breaks: ``{v: w}``, the hard lexicon's choice for inputs whose highest score is shared by several
            outputs (w must be one of them); other tied inputs fall back to the smallest string. `learn_lexicon`
            fills it by co-occurrence count (its ``tie_break`` argument).
    """

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, float]] | None = None,
        *,
        method: str = "custom",
        hyperparameters: Mapping[str, Any] | None = None,
        provenance: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        fallback: str = "mutual_exclusivity",
        statistics: Mapping[str, Any] | None = None,
        tie_breaks: Mapping[str, str] | None = None,
    ):
        if fallback not in FALLBACKS:
            raise ValueError(f"fallback must be one of {FALLBACKS}, got {fallback!r}")
        self.entries = self._normalise_entries(entries or {})
        self.method = str(method)
        self.hyperparameters = dict(hyperparameters or {})
        self.provenance = dict(provenance or {})
        self.temperature = self._check_temperature(temperature)
        self.fallback = fallback
        self.statistics = dict(statistics or {})
        self.tie_breaks = self._check_tie_breaks(self.entries, tie_breaks or {})

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def _from_sorted_entries(cls, entries: dict[str, dict[str, float]], **kwargs) -> "Lexicon":
        """Skip validation and sorting for entries a learner already built in canonical order (large lexicons)."""
        tie_breaks = kwargs.pop("tie_breaks", None) or {}
        lexicon = cls(None, **kwargs)
        lexicon.entries = entries
        lexicon.tie_breaks = cls._check_tie_breaks(entries, tie_breaks)
        return lexicon

    @staticmethod
    def _check_tie_breaks(entries: Mapping[str, Mapping[str, float]], tie_breaks: Mapping[str, str]) -> dict[str, str]:
        """``tie_breaks`` in input order, each naming one of its input's highest-scoring entries."""
        if not isinstance(tie_breaks, Mapping):
            raise TypeError(f"tie_breaks must be a mapping input -> output, got {type(tie_breaks).__name__}")
        checked = {}
        for source in sorted(tie_breaks):
            target = tie_breaks[source]
            outputs = entries.get(source)
            if not outputs or target not in outputs:
                raise ValueError(f"tie_breaks[{source!r}] = {target!r} is not an entry of the lexicon")
            if outputs[target] != max(outputs.values()):
                raise ValueError(
                    f"tie_breaks[{source!r}] = {target!r} is not among {source!r}'s highest-scoring entries (were the "
                    "scores edited? then drop or update its tie-break)"
                )
            checked[str(source)] = str(target)
        return checked

    @staticmethod
    def _check_temperature(temperature) -> float:
        if isinstance(temperature, (bool, np.bool_)) or not isinstance(temperature, numbers.Real):
            raise TypeError(f"temperature must be a number >= 0 (0: the hard lexicon), got {temperature!r}")
        temperature = float(temperature)
        if not math.isfinite(temperature) or temperature < 0:
            raise ValueError(f"temperature must be a finite number >= 0, got {temperature}")
        return temperature

    @staticmethod
    def _normalise_entries(entries: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
        """Sort sources by string and each source's outputs by descending score (then string); drop empty rows."""
        normalised = {}
        for source in sorted(entries):
            outputs = entries[source]
            if not isinstance(outputs, Mapping):
                raise TypeError(f"entries[{source!r}] must be a mapping output -> score, got {type(outputs).__name__}")
            row = {}
            for target, score in outputs.items():
                if isinstance(score, (bool, np.bool_)) or not isinstance(score, (int, float, np.integer, np.floating)):
                    raise TypeError(f"score of {source!r} -> {target!r} must be a number, got {score!r}")
                score = int(score) if isinstance(score, (int, np.integer)) else float(score)
                if not math.isfinite(score):
                    raise ValueError(f"score of {source!r} -> {target!r} is not finite: {score}")
                row[str(target)] = score
            if row:
                normalised[str(source)] = dict(sorted(row.items(), key=lambda item: (-item[1], item[0])))
        return normalised

    # ------------------------------------------------------------------ reading entries
    @property
    def num_entries(self) -> int:
        """Number of (input, output) pairs."""
        return sum(len(outputs) for outputs in self.entries.values())

    def __len__(self) -> int:
        return self.num_entries

    def __contains__(self, source: str) -> bool:
        return source in self.entries

    def __getitem__(self, source: str) -> dict[str, float]:
        return dict(self.entries[source])

    @property
    def sources(self) -> list[str]:
        return list(self.entries)

    @property
    def targets(self) -> list[str]:
        return sorted({w for outputs in self.entries.values() for w in outputs})

    def items(self) -> Iterator[tuple[str, str, float]]:
        """Every entry as ``(input, output, score)``."""
        for source, outputs in self.entries.items():
            for target, score in outputs.items():
                yield source, target, score

    def _hard_choice(self, source: str, outputs: Mapping[str, float]) -> str:
        return _hard_choice(source, outputs, self.tie_breaks.get(source))

    def hard_mapping(self, tokenizer=None) -> dict[str, str]:
        """The τ = 0 translation of every input with entries (see the module docstring for the tie-break).

        With a ``tokenizer``, entries the tokenizer cannot represent are ignored first (as in `to_matrix`) and
        source tokens without entries that are also target tokens map to themselves (copying); source tokens left
        to the uniform fallback have no single translation and are absent.
        """
        if tokenizer is None:
            return {source: self._hard_choice(source, outputs) for source, outputs in self.entries.items()}
        source_vocab, target_vocab, kept, _ = self._resolve(tokenizer)
        content = self._content_target_ids(tokenizer, target_vocab)
        mapping = {}
        for source in source_vocab:
            if source in SPECIAL_SOURCE_TARGET:
                continue
            if source in kept:
                mapping[source] = self._hard_choice(source, kept[source])
            elif self.fallback != "uniform" and target_vocab.get(source) in content:
                mapping[source] = source
        return mapping

    def distribution(self, source: str, temperature: float | None = None) -> dict[str, float]:
        """``P(w | v)`` over the entries of ``v`` at temperature τ (default: the lexicon's). Empty if no entries."""
        outputs = self.entries.get(source)
        if not outputs:
            return {}
        temperature = self.temperature if temperature is None else self._check_temperature(temperature)
        if temperature == 0:
            choice = self._hard_choice(source, outputs)
            return {w: float(w == choice) for w in outputs}
        probabilities = _softmax(np.array(list(outputs.values()), dtype=np.float64), temperature)
        return dict(zip(outputs, probabilities.tolist()))

    # ------------------------------------------------------------------ the matrix L
    def coverage(self, tokenizer) -> dict[str, Any]:
        """How many entries ``tokenizer`` can represent, without warning or raising.

        Returns ``{"total", "kept", "dropped", "missing_sources": {token: entries}, "missing_targets": {token:
        entries}}``: an entry is dropped when its source token is not an ordinary token of the source vocabulary or
        its target token is not a generatable, non-special token of the target vocabulary.
        """
        return self._resolve(tokenizer, check=False)[3]

    def _resolve(self, tokenizer, check: bool = True):
        """Map entries onto a tokenizer: ``{source: {target: score}}`` restricted to the entries it can represent;
        with ``check``, warn about dropped entries and raise if none is left."""
        source_vocab = dict(tokenizer.source_vocab)
        target_vocab = dict(tokenizer.target_vocab)
        missing_specials = [t for t in SPECIAL_TOKENS if t not in target_vocab]
        if missing_specials:
            raise ValueError(
                f"the tokenizer's target vocabulary lacks the special token(s) {missing_specials}; lexical_hf expects "
                f"{list(SPECIAL_TOKENS)} in both vocabularies"
            )
        non_generatable = self._non_generatable_ids(tokenizer, target_vocab)
        kept: dict[str, dict[str, float]] = {}
        missing_sources: dict[str, int] = {}
        missing_targets: dict[str, int] = {}
        for source, outputs in self.entries.items():
            source_id = source_vocab.get(source)
            if source_id is None or source in SPECIAL_SOURCE_TARGET:
                missing_sources[source] = len(outputs)
                continue
            row = {}
            for target, score in outputs.items():
                target_id = target_vocab.get(target)
                if target_id is None or target in SPECIAL_SOURCE_TARGET or target_id in non_generatable:
                    missing_targets[target] = missing_targets.get(target, 0) + 1
                else:
                    row[target] = score
            if row:
                kept[source] = row
        total = self.num_entries
        dropped = sum(missing_sources.values()) + sum(missing_targets.values())
        report = {
            "total": total,
            "kept": total - dropped,
            "dropped": dropped,
            "missing_sources": missing_sources,
            "missing_targets": missing_targets,
        }
        if dropped and check:
            message = (
                f"{dropped} of {total} lexicon entries were dropped because the tokenizer cannot represent them: "
                f"{sum(missing_sources.values())} have a source token that is not an ordinary (non-special) token of "
                f"its source vocabulary ({len(missing_sources)} distinct, e.g. {sorted(missing_sources)[:5]}), "
                f"{sum(missing_targets.values())} a target token that is not a generatable, non-special token of its "
                f"target vocabulary ({len(missing_targets)} distinct, e.g. {sorted(missing_targets)[:5]})"
            )
            if dropped == total:
                raise ValueError(
                    f"none of the lexicon's {total} entries fit this tokenizer ({message}). Was the lexicon learned "
                    "on another dataset, or the tokenizer built from another one?"
                )
            warnings.warn(message, LexiconCoverageWarning, stacklevel=3)
        return source_vocab, target_vocab, kept, report

    @staticmethod
    def _non_generatable_ids(tokenizer, target_vocab: Mapping[str, int]) -> set[int]:
        ids = {target_vocab[PAD], target_vocab[BOS]}
        ids.update(int(i) for i in (getattr(tokenizer, "non_generatable_target_ids", None) or []))
        return ids

    def _content_target_ids(self, tokenizer, target_vocab: Mapping[str, int]) -> set[int]:
        non_generatable = self._non_generatable_ids(tokenizer, target_vocab)
        return {i for t, i in target_vocab.items() if t not in SPECIAL_SOURCE_TARGET and i not in non_generatable}

    def to_matrix(self, tokenizer, temperature: float | None = None) -> torch.FloatTensor:
        """L for ``tokenizer``'s vocabularies: a (|V_x|, |V_y|) float32 tensor whose rows are distributions.

        Only ``tokenizer.source_vocab`` and ``tokenizer.target_vocab`` (``dict[str, int]``) and the special-token
        convention (``<pad>``, ``<s>``, ``</s>``, ``<unk>`` in both vocabularies) are used; the rules are in the
        module docstring. ``temperature=None`` uses the lexicon's own temperature.
        """
        temperature = self.temperature if temperature is None else self._check_temperature(temperature)
        source_vocab, target_vocab, kept, _ = self._resolve(tokenizer)
        n_rows = max(source_vocab.values()) + 1
        n_cols = max(target_vocab.values()) + 1
        content = self._content_target_ids(tokenizer, target_vocab)
        matrix = np.zeros((n_rows, n_cols), dtype=np.float32)  # rows are computed in float64, stored in float32
        unk_id = target_vocab[UNK]

        claimed: set[int] = set()
        for row in kept.values():
            claimed.update(target_vocab[w] for w in row)
        assigned = np.zeros(n_rows, dtype=bool)
        for source, row in kept.items():
            source_id = source_vocab[source]
            if temperature == 0:
                matrix[source_id, target_vocab[self._hard_choice(source, row)]] = 1.0
            else:
                target_ids = [target_vocab[w] for w in row]
                matrix[source_id, target_ids] = _softmax(np.array(list(row.values()), dtype=np.float64), temperature)
            assigned[source_id] = True

        # special source tokens, then unused ids
        for source, target in SPECIAL_SOURCE_TARGET.items():
            if source in source_vocab:
                source_id = source_vocab[source]
                matrix[source_id] = 0.0
                matrix[source_id, target_vocab[target]] = 1.0
                assigned[source_id] = True
        used = np.zeros(n_rows, dtype=bool)
        used[list(source_vocab.values())] = True
        matrix[~used, unk_id] = 1.0
        assigned |= ~used

        # rows without entries
        unassigned = [(s, i) for s, i in source_vocab.items() if not assigned[i]]
        every_content = np.array(sorted(content), dtype=np.int64)
        if self.fallback == "uniform":
            uniform_rows = [i for _, i in unassigned]
            spread_over = every_content
        else:
            copy_rows, uniform_rows = [], []
            for source, source_id in unassigned:
                target_id = target_vocab.get(source)
                (copy_rows if target_id in content else uniform_rows).append((source_id, target_id))
            for source_id, target_id in copy_rows:
                matrix[source_id, target_id] = 1.0
                claimed.add(target_id)
            uniform_rows = [source_id for source_id, _ in uniform_rows]
            unclaimed = np.array(sorted(content - claimed), dtype=np.int64)
            spread_over = unclaimed if len(unclaimed) else every_content
            if not len(unclaimed) and self.fallback == "mutual_exclusivity_or_abstain":
                spread_over = np.array([target_vocab[ABSTAIN_TARGET]], dtype=np.int64)
        if uniform_rows:
            if len(spread_over):
                matrix[np.ix_(np.array(uniform_rows), spread_over)] = 1.0 / len(spread_over)
            else:  # a target vocabulary with nothing but special tokens
                matrix[uniform_rows, unk_id] = 1.0
        return torch.from_numpy(matrix)

    # ------------------------------------------------------------------ metadata
    def config_summary(self) -> dict[str, Any]:
        """A small JSON-able summary for a model config (``config.lexicon_info``)."""
        provenance = {k: self.provenance.get(k) for k in ("dataset", "config", "split", "num_examples")}
        return {
            "method": self.method,
            "num_entries": self.num_entries,
            "temperature": self.temperature,
            "fallback": self.fallback,
            "lexical_hf_version": self.provenance.get("lexical_hf_version") or _package_version(),
            "provenance": {k: v for k, v in provenance.items() if v is not None},
            "content_sha256": self.content_sha256(),
        }

    def metadata(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "method": self.method,
            "temperature": self.temperature,
            "fallback": self.fallback,
            "num_entries": self.num_entries,
            "hyperparameters": self.hyperparameters,
            "provenance": self.provenance,
            "statistics": self.statistics,
        }

    def content_sha256(self) -> str:
        """A fingerprint of what `to_matrix` makes of this lexicon: entries, tie-breaks, temperature and fallback (not
        the method's name, hyperparameters or provenance). A model records it in ``config.lexicon_info`` when L is
        built, so that a ``lexicon.json`` that does not describe the weights beside it is recognised."""
        content = {"entries": self.entries, "tie_breaks": self.tie_breaks, "temperature": self.temperature,
                   "fallback": self.fallback}
        return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.metadata(),
            "entries": {s: dict(o) for s, o in self.entries.items()},
            "tie_breaks": dict(self.tie_breaks),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Lexicon":
        """Inverse of `to_dict`. A plain ``{v: {w: score}}`` mapping (the paper code's format) is also accepted."""
        if not isinstance(data, Mapping):
            raise ValueError(f"not a lexicon: expected a JSON object, got a {type(data).__name__}")
        if "entries" not in data:
            if data and all(isinstance(v, Mapping) for v in data.values()):
                return cls(data, method="external")
            raise ValueError("not a lexicon: expected an 'entries' key or a non-empty {input: {output: score}} mapping")
        if not isinstance(data["entries"], Mapping):
            raise ValueError(f"not a lexicon: 'entries' must be a mapping input -> {{output: score}}, got a "
                             f"{type(data['entries']).__name__}")
        if data.get("format", FORMAT_NAME) != FORMAT_NAME or int(data.get("format_version", 1)) > FORMAT_VERSION:
            raise ValueError(f"unsupported lexicon format {data.get('format')!r} version {data.get('format_version')}")
        return cls(
            data["entries"],
            method=data.get("method", "custom"),
            hyperparameters=data.get("hyperparameters"),
            provenance=data.get("provenance"),
            temperature=data.get("temperature", 0.0),
            fallback=data.get("fallback", "mutual_exclusivity"),
            statistics=data.get("statistics"),
            tie_breaks=data.get("tie_breaks"),
        )

    def to_json_string(self) -> str:
        """Human-readable JSON: metadata first, then one line per input token (``"jump": {"I_JUMP": 1467}``), then
        the tie-breaks (``"left": "I_TURN_LEFT"``)."""
        lines = ["{"]
        for key, value in self.metadata().items():
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False, allow_nan=False)},")
        rows = [
            f"    {json.dumps(source, ensure_ascii=False)}: {json.dumps(outputs, ensure_ascii=False, allow_nan=False)}"
            for source, outputs in self.entries.items()
        ]
        lines.append('  "entries": {' + ("\n" + ",\n".join(rows) + "\n  }" if rows else "}") + ",")
        ties = [f"    {json.dumps(v, ensure_ascii=False)}: {json.dumps(w, ensure_ascii=False)}" for v, w in self.tie_breaks.items()]
        lines.append('  "tie_breaks": {' + ("\n" + ",\n".join(ties) + "\n  }" if ties else "}"))
        lines.append("}")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ persistence
    def save_pretrained(self, save_directory: str | os.PathLike, **kwargs) -> Path:
        """Write ``lexicon.json`` into ``save_directory`` (created if needed) and return its path.

        ``push_to_hub=True, repo_id=...`` (plus `push_to_hub`'s keyword arguments) also uploads it.
        """
        push = kwargs.pop("push_to_hub", False)
        directory = Path(save_directory)
        if directory.is_file():
            raise ValueError(f"save_pretrained expects a directory, {directory} is a file")
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / LEXICON_FILE
        # written beside the target and moved over it: an interrupted save never leaves a truncated lexicon.json
        staging = directory / f".{LEXICON_FILE}.{os.getpid()}.tmp"
        try:
            staging.write_text(self.to_json_string(), encoding="utf-8")
            os.replace(staging, path)
        finally:
            staging.unlink(missing_ok=True)
        if push:
            repo_id = kwargs.pop("repo_id", None) or directory.name
            self.push_to_hub(repo_id, **kwargs)
        return path

    @classmethod
    def from_pretrained(
        cls,
        path_or_repo_id: str | os.PathLike,
        *,
        revision: str | None = None,
        token: str | bool | None = None,
        cache_dir: str | os.PathLike | None = None,
        local_files_only: bool = False,
        subfolder: str | None = None,
    ) -> "Lexicon":
        """Load from a folder holding ``lexicon.json``, a path to such a file, or a Hub repository id."""
        name = str(path_or_repo_id)
        path = Path(name) / subfolder if subfolder else Path(name)
        if path.is_dir():
            path = path / LEXICON_FILE
            if not path.is_file():
                raise FileNotFoundError(f"no {LEXICON_FILE} in {path.parent}")
        elif not path.is_file():
            if Path(name).is_absolute() or name.startswith(".") or name.count("/") > 1 or Path(name).exists():
                raise FileNotFoundError(f"no lexicon at {path} (neither a folder with {LEXICON_FILE} nor a file)")
            from huggingface_hub import hf_hub_download
            from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

            try:
                path = Path(
                    hf_hub_download(
                        repo_id=name,
                        filename=LEXICON_FILE,
                        subfolder=subfolder,
                        revision=revision,
                        token=token,
                        cache_dir=cache_dir,
                        local_files_only=local_files_only,
                    )
                )
            except (LocalEntryNotFoundError, HfHubHTTPError) as error:
                # keep the Hub's error type (callers tell a missing repository from a missing file by it), and say
                # that a local path was looked for too: a typo in a folder name ends up here
                error.add_note(f"no lexicon at {name!r}: it is not a local folder or file either (relative to "
                               f"{os.getcwd()})")
                raise
        return cls._read_file(path)

    @classmethod
    def _read_file(cls, path: Path) -> "Lexicon":
        """`from_dict` of a lexicon.json. A file that is not JSON (truncated, binary) is an `OSError`, as corrupt
        weights are; JSON that is not a lexicon keeps `from_dict`'s error type. Both name the file."""
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise OSError(f"{path} is not a readable lexicon file (corrupt or truncated JSON: {error})") from error
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{path}: {error}") from error

    def push_to_hub(
        self,
        repo_id: str,
        token: str | bool | None = None,
        private: bool | None = None,
        commit_message: str | None = None,
        *,
        revision: str | None = None,
        create_pr: bool = False,
        repo_type: str = "model",
    ):
        """Upload ``lexicon.json`` to a Hub repository (created if it does not exist); returns the commit info.

        The endpoint follows ``HF_ENDPOINT`` like every `huggingface_hub` call.
        """
        from huggingface_hub import HfApi

        api = HfApi(token=token)
        repo = api.create_repo(repo_id, private=private, exist_ok=True, repo_type=repo_type)
        return api.upload_file(
            path_or_fileobj=self.to_json_string().encode("utf-8"),
            path_in_repo=LEXICON_FILE,
            repo_id=getattr(repo, "repo_id", repo_id),
            repo_type=repo_type,
            revision=revision,
            commit_message=commit_message or f"Upload lexicon ({self.method}, {self.num_entries} entries)",
            create_pr=create_pr,
        )

    # ------------------------------------------------------------------ display
    def table(self, top_k: int | None = None, temperature: float | None = None) -> str:
        """The entries as an aligned text table: input, output, score, and P(output | input) at temperature τ."""
        rows = [("input", "output", "score", "P")]
        for source, outputs in self.entries.items():
            probabilities = self.distribution(source, temperature)
            for rank, (target, score) in enumerate(outputs.items()):
                if top_k is not None and rank >= top_k:
                    break
                rows.append((source, target, _format_score(score), f"{probabilities[target]:.3f}"))
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        justify = (str.ljust, str.ljust, str.rjust, str.rjust)
        lines = ["  ".join(fit(cell, width) for fit, cell, width in zip(justify, row, widths)) for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def plot(
        self,
        ax=None,
        *,
        temperature: float | None = None,
        annotate: bool = True,
        max_inputs: int = 40,
        max_outputs: int = 40,
        title: str | None = None,
        path: str | os.PathLike | None = None,
    ):
        """Draw the lexicon as a heat map (inputs × outputs, only rows and columns with entries), like the paper's
        figures. Colour = P(w | v) over the entries at temperature τ (default: the lexicon's); annotations = scores.

        Needs matplotlib (``pip install lexical_hf[plot]``). Returns the matplotlib Figure; ``path`` also saves it.
        With more than ``max_inputs`` inputs, those with the highest best score are kept (likewise for outputs).
        """
        plt = _pyplot()
        inputs, outputs = _select_axes([self], max_inputs, max_outputs)
        if ax is None:
            fig, ax = plt.subplots(figsize=(1.2 + 0.45 * max(len(outputs), 2), 1.0 + 0.35 * max(len(inputs), 2)))
        else:
            fig = ax.figure
        _draw(ax, self, inputs, outputs, temperature, annotate)
        ax.set_title(title if title is not None else f"{self.method} lexicon ({self.num_entries} entries)")
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=110)
        return fig

    # ------------------------------------------------------------------ dunder
    def __eq__(self, other) -> bool:
        if not isinstance(other, Lexicon):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        preview = ", ".join(f"{s}→{self._hard_choice(s, o)}" for s, o in list(self.entries.items())[:6])
        more = ", …" if len(self.entries) > 6 else ""
        return (
            f"Lexicon(method={self.method!r}, entries={self.num_entries}, inputs={len(self.entries)}, "
            f"temperature={self.temperature}, fallback={self.fallback!r}: {preview}{more})"
        )


# ---------------------------------------------------------------------- helpers
def _format_score(score: float) -> str:
    if isinstance(score, int):
        return str(score)
    return f"{score:.4g}"


def _pyplot():
    try:
        import matplotlib

        if not os.environ.get("MPLBACKEND"):
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("Lexicon.plot needs matplotlib: pip install 'lexical_hf[plot]'") from error
    return plt


def _select_axes(lexicons, max_inputs: int, max_outputs: int) -> tuple[list[str], list[str]]:
    """Rows and columns with entries in any of ``lexicons``, capped by best score, in string order."""
    best_in: dict[str, float] = {}
    best_out: dict[str, float] = {}
    for lexicon in lexicons:
        for source, target, score in lexicon.items():
            best_in[source] = max(best_in.get(source, -math.inf), score)
            best_out[target] = max(best_out.get(target, -math.inf), score)

    def cap(best, limit):
        keep = sorted(best, key=lambda t: (-best[t], t))[:limit]
        return sorted(keep)

    return cap(best_in, max_inputs), cap(best_out, max_outputs)


def _draw(ax, lexicon: Lexicon, inputs: list[str], outputs: list[str], temperature, annotate: bool) -> None:
    column = {w: j for j, w in enumerate(outputs)}
    values = np.zeros((max(len(inputs), 1), max(len(outputs), 1)))
    for i, source in enumerate(inputs):
        for target, p in lexicon.distribution(source, temperature).items():
            if target in column:
                values[i, column[target]] = p
    ax.imshow(values, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(outputs)), outputs, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(inputs)), inputs, fontsize=8)
    ax.set_xlabel("output token w")
    ax.set_ylabel("input token v")
    if annotate and len(inputs) * len(outputs) <= 400:
        for i, source in enumerate(inputs):
            for target, score in lexicon.entries.get(source, {}).items():
                if target in column:
                    colour = "white" if values[i, column[target]] > 0.6 else "black"
                    ax.text(column[target], i, _format_score(score), ha="center", va="center", fontsize=6, color=colour)


def plot_lexicons(
    lexicons: Mapping[str, Lexicon],
    path: str | os.PathLike | None = None,
    *,
    temperature: float | None = None,
    annotate: bool = True,
    max_inputs: int = 40,
    max_outputs: int = 40,
    suptitle: str | None = None,
    skip_empty: bool = True,
):
    """Side-by-side heat maps of several lexicons on shared axes (the union of their inputs and outputs).

    Colour = P(w | v) over the entries at τ (default: each lexicon's own), annotations = scores. Lexicons without
    entries (e.g. ``identity`` when no token is shared, ``uniform``) are left out unless ``skip_empty=False``; their
    names are listed in the title.
    """
    plt = _pyplot()
    empty = [name for name, lexicon in lexicons.items() if lexicon.num_entries == 0]
    if skip_empty and len(empty) < len(lexicons):
        lexicons = {name: lexicon for name, lexicon in lexicons.items() if lexicon.num_entries}
        if empty:
            suptitle = (suptitle + "; " if suptitle else "") + f"no entries: {', '.join(empty)}"
    inputs, outputs = _select_axes(list(lexicons.values()), max_inputs, max_outputs)
    n = len(lexicons)
    width = 0.4 * max(len(outputs), 2) + 1.4
    fig, axes = plt.subplots(1, n, figsize=(width * n, 1.4 + 0.3 * max(len(inputs), 2)), squeeze=False)
    for ax, (name, lexicon) in zip(axes[0], lexicons.items()):
        _draw(ax, lexicon, inputs, outputs, temperature, annotate)
        ax.set_title(f"{name} ({lexicon.num_entries} entries)", fontsize=9)
        if ax is not axes[0][0]:
            ax.set_ylabel("")
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=100)
    return fig
