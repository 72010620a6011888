"""Tests of lexical_hf.evaluation (strings in, numbers out)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from sacrebleu.metrics import BLEU

from lexical_hf.evaluation import (
    benchmark_metrics,
    bleu_one_shot,
    bleu_paper_protocol,
    bleu_sacrebleu,
    cogs_category_report,
    exact_match,
    group_references_by_source,
    token_accuracy,
)


def test_exact_match_ignores_whitespace_runs_only():
    assert exact_match(["a b", "a  b ", "a c"], ["a b", "a b", "a b"]) == pytest.approx(2 / 3)
    assert exact_match([], []) == 0.0
    with pytest.raises(ValueError, match="same length"):
        exact_match(["a"], ["a", "b"])
    with pytest.raises(TypeError, match="expected a string"):
        exact_match([["a"]], ["a"])


def test_token_accuracy_counts_missing_and_extra_tokens():
    # 2 of 3 right; then 1 right of max(1, 2) = 2; total 3 / 5
    assert token_accuracy(["a b x", "a"], ["a b c", "a b"]) == pytest.approx(3 / 5)
    assert token_accuracy(["a b"], ["a b"]) == 1.0


def test_cogs_category_report_splits_lexical_and_structural():
    categories = ["subj_to_obj_common", "subj_to_obj_common", "obj_pp_to_subj_pp", "cp_recursion",
                  "pp_recursion", "prim_to_inf_arg", "in_distribution"]
    references = [f"lf {i}" for i in range(len(categories))]
    predictions = ["lf 0", "wrong", "lf 2", "wrong", "wrong", "lf 5", "lf 6"]
    report = cogs_category_report(predictions, references, categories)
    assert report["overall"] == {"accuracy": pytest.approx(4 / 7), "n": 7}
    assert report["lexical"] == {"accuracy": pytest.approx(2 / 3), "n": 3}  # subj_to_obj x2, prim_to_inf_arg
    assert report["structural"] == {"accuracy": pytest.approx(1 / 3), "n": 3}
    assert report["in_distribution"] == {"accuracy": 1.0, "n": 1}
    assert report["per_category"]["subj_to_obj_common"] == {"accuracy": 0.5, "n": 2}
    assert report["per_category"]["cp_recursion"] == {"accuracy": 0.0, "n": 1}
    empty = cogs_category_report(["a"], ["a"], ["in_distribution"])
    assert empty["structural"] == {"accuracy": None, "n": 0}


def test_bleu_sacrebleu_chinese_tokenizer_and_signature():
    perfect = bleu_sacrebleu(["我 爱 你 们 ."], ["我 爱 你 们 ."])
    assert perfect["score"] == pytest.approx(100.0)
    assert "tok:zh" in perfect["signature"]
    # the zh tokenizer splits characters: jieba's word boundaries do not change the score
    assert bleu_sacrebleu(["我爱你们。"], ["我 爱 你们 。"])["score"] == pytest.approx(100.0)
    assert bleu_sacrebleu(["我 爱 猫 ."], ["我 爱 你 们 ."])["score"] < 50


def reference_corpus_bleu(references_per_segment: list[list[list[str]]], hypotheses: list[list[str]]) -> float:
    """An independent corpus BLEU-4 (as nltk's corpus_bleu, unsmoothed), on 0–100."""
    matches, totals = [0] * 4, [0] * 4
    hyp_length = ref_length = 0
    for refs, hyp in zip(references_per_segment, hypotheses):
        for n in range(1, 5):
            hyp_ngrams = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
            max_ref = Counter()
            for ref in refs:
                for ngram, count in Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1)).items():
                    max_ref[ngram] = max(max_ref[ngram], count)
            matches[n - 1] += sum(min(count, max_ref[ngram]) for ngram, count in hyp_ngrams.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
        hyp_length += len(hyp)
        ref_length += min((abs(len(ref) - len(hyp)), len(ref)) for ref in refs)[1]
    if min(matches) == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / 4
    brevity = 1.0 if hyp_length > ref_length else math.exp(1 - ref_length / hyp_length)
    return 100 * brevity * math.exp(log_precision)


SOURCES = ["I see .", "I see .", "Go now .", "He runs fast ."]
REFERENCES = ["我 看到 了 。", "我 明白 了 。", "现在 就 走 吧 。", "他 跑 得 很 快 。"]
PREDICTIONS = ["我 明白 了 。", "我 看到 了 。", "现在 走 吧 。", "他 跑 得 快 。"]


def test_bleu_paper_protocol_uses_all_references_of_the_same_source():
    result = bleu_paper_protocol(SOURCES, PREDICTIONS, REFERENCES)
    grouped = group_references_by_source(SOURCES, REFERENCES)
    expected = reference_corpus_bleu(
        [[r.split() for r in grouped[s]] for s in SOURCES], [p.split() for p in PREDICTIONS]
    )
    assert result["score"] == pytest.approx(expected)
    assert result["num_segments"] == 4
    assert "tok:none" in result["signature"] and "smooth:none" in result["signature"]
    # with one reference per row, the swapped "I see ." translations would be wrong; grouped, they are right
    single = BLEU(tokenize="none", smooth_method="none", force=True).corpus_score(PREDICTIONS, [REFERENCES]).score
    assert result["score"] > single
    assert single == pytest.approx(reference_corpus_bleu([[r.split()] for r in REFERENCES],
                                                         [p.split() for p in PREDICTIONS]))


def test_bleu_paper_protocol_is_unsmoothed_and_uses_the_pool():
    assert bleu_paper_protocol(["a"], ["x y z"], ["p q r s"])["score"] == 0.0  # no 4-gram match: 0
    # a reference only in the pool (e.g. from train) counts for an identical source
    with_pool = bleu_paper_protocol(["Go now ."], ["快 走 吧 。"], ["现在 就 走 吧 。"],
                                    reference_pool=(["Go now ."], ["快 走 吧 。"]))
    assert with_pool["score"] == pytest.approx(100.0)


def test_bleu_one_shot_scores_only_flagged_rows():
    one_shot = [False, False, True, True]
    result = bleu_one_shot(SOURCES, PREDICTIONS, REFERENCES, one_shot)
    assert result["num_segments"] == 2
    expected = reference_corpus_bleu([[REFERENCES[2].split()], [REFERENCES[3].split()]],
                                     [PREDICTIONS[2].split(), PREDICTIONS[3].split()])
    assert result["score"] == pytest.approx(expected)


def test_benchmark_metrics_add_what_the_split_columns_call_for():
    import datasets

    plain = datasets.DatasetDict({"test": datasets.Dataset.from_dict({"source": ["a", "b"], "target": ["A", "B B"]})})
    metrics = benchmark_metrics(plain, "test", ["A", "B"])
    assert metrics == {"exact_match": 0.5, "token_accuracy": pytest.approx(2 / 3), "num_examples": 2}
    cogs = datasets.DatasetDict({"gen": plain["test"].add_column("category", ["in_distribution", "pp_recursion"])})
    assert "cogs" in benchmark_metrics(cogs, "gen", ["A", "B"])
    # English–Chinese: the references of an identical English sentence in another split count (the paper's pool)
    sentence = "I like tea ."
    mt = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"source": [sentence], "target": ["我 喜欢 喝 茶 。"], "one_shot": [False]}),
        "test": datasets.Dataset.from_dict({"source": [sentence], "target": ["我 爱 喝 茶 。"], "one_shot": [True]}),
    })
    prediction = ["我 喜欢 喝 茶 。"]
    pooled = benchmark_metrics(mt, "test", prediction)
    assert pooled["bleu_paper"]["score"] == pytest.approx(100.0)
    assert pooled["bleu_paper_one_shot"]["score"] == pytest.approx(100.0)
    assert pooled["sacrebleu"]["score"] < 100.0  # one reference only
    with pytest.raises(ValueError, match="same length"):
        benchmark_metrics(plain, "test", ["A"])


def test_a_single_string_where_a_list_belongs_is_an_error_not_characters():
    """A string is a sequence too: exact_match("ab c", "ab d") would score its characters (0.75)."""
    for metric in (exact_match, token_accuracy):
        with pytest.raises(TypeError, match="not one string"):
            metric("ab c", "ab d")
        with pytest.raises(TypeError, match="not one string"):
            metric("a", ["a"])
    with pytest.raises(TypeError, match="not one string"):
        cogs_category_report(["a"], ["a"], ["pp_recursion"], structural="pp_recursion")
    with pytest.raises(ValueError, match="no predictions"):
        bleu_sacrebleu([], [])
