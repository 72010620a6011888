"""Evaluation metrics: strings in, numbers out (no tensors, no models).

* :func:`exact_match`, :func:`token_accuracy` — sequence- and token-level accuracy (SCAN, COGS, Colors).
* :func:`cogs_category_report` — COGS accuracy per generalization category, and lexical vs structural.
* :func:`bleu_sacrebleu` — standard, detokenized-style BLEU with sacrebleu's Chinese tokenizer, with its signature.
* :func:`bleu_paper_protocol` — the paper's BLEU for English–Chinese: corpus BLEU on the given (jieba) tokens,
  unsmoothed, every reference translation of the same source sentence used as a reference.
* :func:`bleu_one_shot` — that BLEU on the test sentences flagged ``one_shot`` (Section 5.4 of the paper).
* :func:`benchmark_metrics` — everything above that applies to one split of a benchmark (what ``run_lexical.py``
  records and ``lexical-hf evaluate`` checks).

Predictions and references are whitespace-tokenized strings; tokens are compared after splitting on whitespace,
so runs of spaces never matter.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

STRUCTURAL_COGS_CATEGORIES = ("obj_pp_to_subj_pp", "cp_recursion", "pp_recursion")
"""COGS generalization categories that test structural generalization (all others in gen are lexical)."""

IN_DISTRIBUTION_CATEGORY = "in_distribution"


def _check_lengths(**named: Sequence) -> None:
    for name, values in named.items():
        if isinstance(values, str):  # a string is a sequence too: its characters would be scored as sequences
            raise TypeError(f"{name} must be a sequence of strings, not one string: wrap it in a list")
    lengths = {name: len(values) for name, values in named.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"inputs must have the same length, got {lengths}")


def _tokens(text: str) -> list[str]:
    if not isinstance(text, str):
        raise TypeError(f"expected a string, got {type(text).__name__}: {text!r}")
    return text.split()


def exact_match(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Fraction of predictions whose tokens equal the reference's tokens exactly (0.0 to 1.0; 0.0 when empty)."""
    _check_lengths(predictions=predictions, references=references)
    if not predictions:
        return 0.0
    correct = sum(_tokens(p) == _tokens(r) for p, r in zip(predictions, references))
    return correct / len(predictions)


def token_accuracy(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Position-wise token accuracy over the corpus.

    For each pair, a position counts as correct when both sequences have the same token there; the denominator is
    the longer of the two lengths, so missing and extra tokens both count as errors. Returns
    ``sum(correct) / sum(max(len(prediction), len(reference)))`` (1.0 when everything is empty).
    """
    _check_lengths(predictions=predictions, references=references)
    correct = total = 0
    for prediction, reference in zip(predictions, references):
        predicted, expected = _tokens(prediction), _tokens(reference)
        correct += sum(p == r for p, r in zip(predicted, expected))
        total += max(len(predicted), len(expected))
    return correct / total if total else 1.0


def cogs_category_report(
    predictions: Sequence[str],
    references: Sequence[str],
    categories: Sequence[str],
    structural: Iterable[str] = STRUCTURAL_COGS_CATEGORIES,
) -> dict:
    """Exact-match accuracy on COGS by generalization category.

    Args:
        predictions, references: logical forms as whitespace-tokenized strings.
        categories: the ``category`` column of the COGS split, aligned with the predictions.
        structural: categories counted as structural generalization.

    Returns:
        ``{"overall": {"accuracy", "n"}, "lexical": {...}, "structural": {...}, "in_distribution": {...},
        "per_category": {category: {"accuracy", "n"}}}``. ``lexical`` covers every category that is neither
        structural nor ``in_distribution``. A group with no examples has accuracy ``None``.
    """
    _check_lengths(predictions=predictions, references=references, categories=categories)
    if isinstance(structural, str):
        raise TypeError(f"structural must be a collection of category names, not one string: pass [{structural!r}]")
    structural = set(structural)
    outcomes: dict[str, list[bool]] = defaultdict(list)
    groups: dict[str, list[bool]] = {"overall": [], "lexical": [], "structural": [], IN_DISTRIBUTION_CATEGORY: []}
    for prediction, reference, category in zip(predictions, references, categories):
        correct = _tokens(prediction) == _tokens(reference)
        outcomes[category].append(correct)
        groups["overall"].append(correct)
        if category in structural:
            groups["structural"].append(correct)
        elif category == IN_DISTRIBUTION_CATEGORY:
            groups[IN_DISTRIBUTION_CATEGORY].append(correct)
        else:
            groups["lexical"].append(correct)

    def summary(values: list[bool]) -> dict:
        return {"accuracy": sum(values) / len(values) if values else None, "n": len(values)}

    report = {group: summary(values) for group, values in groups.items()}
    report["per_category"] = {category: summary(outcomes[category]) for category in sorted(outcomes)}
    return report


def bleu_sacrebleu(
    predictions: Sequence[str],
    references: Sequence[str] | Sequence[Sequence[str]],
    tokenize: str = "zh",
) -> dict:
    """Corpus BLEU from ``sacrebleu`` (default: its Chinese tokenizer), with the signature to report alongside.

    Args:
        predictions: one string per segment.
        references: one reference string per segment, or one list of references per segment (lists may differ in
            length).
        tokenize: sacrebleu tokenizer name (``"zh"`` splits Chinese characters, so jieba's spaces do not matter).

    Returns:
        ``{"score": float (0-100), "signature": str, "precisions": [p1..p4], "bp": float}``.
    """
    from sacrebleu.metrics import BLEU

    _check_lengths(predictions=predictions, references=references)
    if not predictions:
        raise ValueError("no predictions to score")
    streams = _reference_streams([[r] if isinstance(r, str) else list(r) for r in references])
    metric = BLEU(tokenize=tokenize)
    result = metric.corpus_score(list(predictions), streams)
    return {
        "score": result.score,
        "signature": str(metric.get_signature()),
        "precisions": list(result.precisions),
        "bp": result.bp,
    }


def _reference_streams(references_per_segment: list[list[str]]) -> list[list[str | None]]:
    """sacrebleu wants one stream per reference slot; segments with fewer references are padded with None."""
    if any(not refs for refs in references_per_segment):
        raise ValueError("every segment needs at least one reference")
    width = max((len(refs) for refs in references_per_segment), default=1)
    return [[refs[i] if i < len(refs) else None for refs in references_per_segment] for i in range(width)]


def group_references_by_source(sources: Sequence[str], references: Sequence[str]) -> dict[str, list[str]]:
    """All references of each distinct source string (sources compared after whitespace normalization)."""
    _check_lengths(sources=sources, references=references)
    grouped: dict[str, list[str]] = defaultdict(list)
    for source, reference in zip(sources, references):
        grouped[" ".join(_tokens(source))].append(reference)
    return dict(grouped)


def bleu_paper_protocol(
    sources: Sequence[str],
    predictions: Sequence[str],
    references: Sequence[str],
    reference_pool: tuple[Sequence[str], Sequence[str]] | None = None,
) -> dict:
    """The paper's BLEU for English–Chinese (``nltk.corpus_bleu`` in the original code), via sacrebleu.

    Corpus BLEU-4 on whitespace tokens (no further tokenization: the Chinese side is already jieba-segmented),
    unsmoothed (0 when some n-gram order has no match), brevity penalty from the closest reference length. Every
    prediction is scored against *all* references whose source string equals its source — Tatoeba has many
    sentences with several translations.

    Args:
        sources: the source sentences (English), aligned with ``predictions``.
        predictions: the system's translations.
        references: the reference translation of each row.
        reference_pool: optional ``(pool_sources, pool_references)`` of extra pairs whose translations also count
            as references for an identical source. The paper grouped over train+dev+test (``cmn.tsv``); pass all
            splits here to reproduce that exactly. By default references are grouped within the given rows.

    Returns:
        ``{"score": float (0-100), "precisions": [...], "bp": float, "num_segments": int, "signature": str}``.
    """
    from sacrebleu.metrics import BLEU

    _check_lengths(sources=sources, predictions=predictions, references=references)
    pool_sources, pool_references = list(sources), list(references)
    if reference_pool is not None:
        pool_sources += list(reference_pool[0])
        pool_references += list(reference_pool[1])
    grouped = group_references_by_source(pool_sources, pool_references)
    # The same reference may appear twice (e.g. the row itself in the pool); duplicates do not change BLEU's
    # clipped counts or closest length, but dropping them keeps the streams small.
    per_segment = [
        list(dict.fromkeys(" ".join(_tokens(r)) for r in grouped[" ".join(_tokens(s))])) for s in sources
    ]
    if not predictions:
        raise ValueError("no predictions to score")
    metric = BLEU(tokenize="none", smooth_method="none", force=True)
    result = metric.corpus_score([" ".join(_tokens(p)) for p in predictions], _reference_streams(per_segment))
    return {
        "score": result.score,
        "precisions": list(result.precisions),
        "bp": result.bp,
        "num_segments": len(predictions),
        "signature": str(metric.get_signature()),
    }


def bleu_one_shot(
    sources: Sequence[str],
    predictions: Sequence[str],
    references: Sequence[str],
    one_shot: Sequence[bool],
    reference_pool: tuple[Sequence[str], Sequence[str]] | None = None,
) -> dict:
    """:func:`bleu_paper_protocol` restricted to the rows flagged ``one_shot`` (the eng_cmn column).

    References are still grouped over all given rows (and the pool), as in the paper's ``resultdiff.py``.
    """
    _check_lengths(sources=sources, predictions=predictions, references=references, one_shot=one_shot)
    keep = [i for i, flag in enumerate(one_shot) if flag]
    pool = (list(sources), list(references))
    if reference_pool is not None:
        pool = (pool[0] + list(reference_pool[0]), pool[1] + list(reference_pool[1]))
    return bleu_paper_protocol(
        [sources[i] for i in keep],
        [predictions[i] for i in keep],
        [references[i] for i in keep],
        reference_pool=pool,
    )


def benchmark_metrics(data, split: str, predictions: Sequence[str]) -> dict:
    """The metrics of one split of a benchmark ``DatasetDict`` (string columns ``source``, ``target``): exact match
    and token accuracy always; the COGS category report when the split has a ``category`` column; the paper's BLEU,
    its one-shot BLEU and sacreBLEU when it has a ``one_shot`` column (English–Chinese), with the references of
    identical English sentences pooled over every split of ``data``, as the paper does over all of cmn.tsv."""
    split_data = data[split]
    references = list(split_data["target"])
    _check_lengths(predictions=predictions, references=references)
    metrics = {
        "exact_match": exact_match(predictions, references),
        "token_accuracy": token_accuracy(predictions, references),
        "num_examples": len(references),
    }
    if "category" in split_data.column_names:
        metrics["cogs"] = cogs_category_report(predictions, references, list(split_data["category"]))
    if "one_shot" in split_data.column_names:
        others = [s for s in data if s != split]
        pool = ([x for s in others for x in data[s]["source"]], [y for s in others for y in data[s]["target"]])
        sources = list(split_data["source"])
        metrics["bleu_paper"] = bleu_paper_protocol(sources, predictions, references, reference_pool=pool)
        metrics["bleu_paper_one_shot"] = bleu_one_shot(
            sources, predictions, references, list(split_data["one_shot"]), reference_pool=pool
        )
        metrics["sacrebleu"] = bleu_sacrebleu(predictions, references)
    if split_data.info.builder_name == "transduction":  # Grefenstette et al. (2015): coarse and fine accuracy
        from .transduction_metrics import transduction_metrics

        metrics.update(transduction_metrics(predictions, references))
    return metrics
