"""Coarse and fine accuracy of Grefenstette et al. (2015), "Learning to Transduce with Unbounded Memory".

Strings in, numbers out, like :mod:`lexical_hf.evaluation`: predictions and references are whitespace-tokenized
strings (runs of spaces never matter). Both metrics score the target *including its end of sequence*, as the paper
does: each token list is followed by an end symbol, so a prediction that stops early or runs on is wrong at that
position.

* coarse accuracy: the share of sequences predicted entirely correctly (end of sequence included);
* fine accuracy: the mean over sequences of (symbols predicted correctly before the first error) / (|reference|
  + 1), the ``+ 1`` being the end of sequence.

For a pair (prediction, reference) with n = |reference|, let k be the length of the longest common prefix of
``prediction + [</s>]`` and ``reference + [</s>]``; then the pair counts 1 in coarse accuracy when k = n + 1 and
``k / (n + 1)`` in fine accuracy.

A prediction is taken to end where its string ends, i.e. the decoder emitted end of sequence there. A decoder cut
off by a length limit exactly at the reference's length would be scored as correct: give greedy decoding at least
|reference| + 1 steps.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["coarse_accuracy", "correct_prefix_length", "fine_accuracy", "transduction_metrics"]

_END = None  # the end-of-sequence symbol: equal to no token (tokens are strings)


def _check_inputs(predictions: Sequence[str], references: Sequence[str]) -> None:
    for name, values in (("predictions", predictions), ("references", references)):
        if isinstance(values, str):  # a string is a sequence too: its characters would be scored as sequences
            raise TypeError(f"{name} must be a sequence of strings, not one string: wrap it in a list")
        for value in values:
            if not isinstance(value, str):
                raise TypeError(f"{name} must hold strings, got {type(value).__name__}: {value!r}")
    if len(predictions) != len(references):
        raise ValueError(f"inputs must have the same length, got predictions={len(predictions)} "
                         f"references={len(references)}")


def correct_prefix_length(prediction: str, reference: str) -> int:
    """Symbols of ``reference + </s>`` that ``prediction + </s>`` gets right before its first error (0 to n + 1)."""
    predicted, expected = prediction.split() + [_END], reference.split() + [_END]
    correct = 0
    for predicted_token, expected_token in zip(predicted, expected):
        if predicted_token != expected_token:
            break
        correct += 1
    return correct


def coarse_accuracy(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Share of predictions equal to their reference, end of sequence included (0.0 when empty)."""
    _check_inputs(predictions, references)
    if not predictions:
        return 0.0
    return sum(prediction.split() == reference.split()
               for prediction, reference in zip(predictions, references)) / len(predictions)


def fine_accuracy(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Mean over pairs of (symbols correct before the first error) / (|reference| + 1) (0.0 when empty)."""
    _check_inputs(predictions, references)
    if not predictions:
        return 0.0
    return sum(correct_prefix_length(prediction, reference) / (len(reference.split()) + 1)
               for prediction, reference in zip(predictions, references)) / len(predictions)


def transduction_metrics(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """``{"coarse_accuracy": ..., "fine_accuracy": ...}`` of one set of predictions."""
    return {"coarse_accuracy": coarse_accuracy(predictions, references),
            "fine_accuracy": fine_accuracy(predictions, references)}
