"""The transduction tasks (copy, reversal, bigram flip, SVO -> SOV, gender) and the coarse/fine accuracy metrics."""

import itertools
import json
import random
import re
from functools import lru_cache

import pytest

from lexical_hf import LexicalSeq2SeqForConditionalGeneration
from lexical_hf.data import config_fields, load_benchmark
from lexical_hf.data.transduction import (
    GENDER_GRAMMAR,
    SVO_SOV_GRAMMAR,
    SYMBOLS,
    TASKS,
    TEST_LENGTHS,
    TRAIN_LENGTHS,
    Transduction,
    gender_grammar,
    generate_split,
    parse_grammar,
    sample_in_range,
    split_rng,
    stream_pairs,
)
from lexical_hf.lexicon.registry import parse_params_text
from lexical_hf.transduction_metrics import (
    coarse_accuracy,
    correct_prefix_length,
    fine_accuracy,
    transduction_metrics,
)

# The spec's samples (the gender one respelled as the grammar spells nouns: en/gn -> ne/ng, em/gm -> me/mg)
SVO_SAMPLE = ("si1 vi28 oi5 oi7 si15 rpi si19 vi16 oi10 oi24",
              "so1 oo5 oo7 so15 rpo so19 vo16 oo10 oo24 vo28")
GENDER_SAMPLE = ("we11 the ne19 and the me17", "wg11 das ng19 und der mg17")


def pairs(task, split, size, seed=0):
    lengths = TEST_LENGTHS if split == "test" else TRAIN_LENGTHS
    return [(e["source"].split(), e["target"].split())
            for e in generate_split(task, size, lengths, split_rng(task, split, seed))]


# ----- independent transcriptions of each task's transformation -------------------------------------------------------

def svo_to_sov(source):
    """Map i -> o and move the main verb to the end. The main verb is the first verb with more verbs than relative
    pronouns up to it: inside a subject every `rpi` is closed by exactly one later verb."""
    verbs = pronouns = 0
    for position, token in enumerate(source):
        pronouns += token == "rpi"
        verbs += token.startswith("vi")
        if verbs > pronouns:
            break
    mapped = [re.sub(r"^(s|o|v|rp)i", r"\1o", token) for token in source]
    return mapped[:position] + mapped[position + 1:] + [mapped[position]]


ARTICLES = {("the", "m"): "der", ("the", "f"): "die", ("the", "n"): "das",
            ("a", "m"): "ein", ("a", "f"): "eine", ("a", "n"): "ein"}


def genderless_to_gendered(source):
    """Word by word: an article takes the gender of the noun after it; `and`/`or` -> `und`/`oder`; Xe_i -> Xg_i."""
    target = []
    for position, token in enumerate(source):
        if token in ("the", "a"):
            target.append(ARTICLES[token, source[position + 1][0]])
        elif token in ("and", "or"):
            target.append({"and": "und", "or": "oder"}[token])
        else:
            target.append(re.sub(r"^([wmfn])e(\d+)$", r"\1g\2", token))
    return target


def derives(grammar, symbol, tokens):
    """Whether the source side of `grammar` derives `tokens` from `symbol` (a memoised top-down recogniser)."""
    tokens = tuple(tokens)

    @lru_cache(maxsize=None)
    def spans(symbol, i, j):
        if symbol in grammar.lexicon:
            prefix, _, count = grammar.lexicon[symbol]
            match = j == i + 1 and re.fullmatch(rf"{prefix}(\d+)", tokens[i])
            return bool(match) and 1 <= int(match.group(1)) <= count
        return any(matches(rule.source, 0, i, j) for rule in grammar.rules[symbol])

    def matches(items, k, i, j):  # items[k:] derive tokens[i:j]; every item yields at least one token
        if k == len(items):
            return i == j
        nonterminal = grammar.nonterminal(items[k])
        if nonterminal is None:
            return i < j and tokens[i] == items[k] and matches(items, k + 1, i + 1, j)
        last = j - (len(items) - k - 1)
        return any(spans(nonterminal, i, m) and matches(items, k + 1, m, j) for m in range(i + 1, last + 1))

    return spans(symbol, 0, len(tokens))


# ----- the spec's samples ---------------------------------------------------------------------------------------------

def test_svo_sample_is_a_sentence_of_the_grammar_and_the_rule_transduces_it():
    source, target = (side.split() for side in SVO_SAMPLE)
    assert derives(SVO_SOV_GRAMMAR, "A", source)
    assert svo_to_sov(source) == target


def test_gender_sample_is_a_verb_phrase_of_the_grammar_and_the_rule_transduces_it():
    source, target = (side.split() for side in GENDER_SAMPLE)
    assert genderless_to_gendered(source) == target
    # it starts with a verb: a V phrase (verb + coordinated object), not a sentence, under either reading of B
    for grammar in (GENDER_GRAMMAR, gender_grammar(printed_b_rule=True)):
        assert derives(grammar, "V", source)
        assert not derives(grammar, "A", source)


def test_the_recogniser_rejects_non_sentences():
    assert not derives(SVO_SOV_GRAMMAR, "A", "si1 oi5 vi28".split())  # SOV is the target order
    assert not derives(SVO_SOV_GRAMMAR, "A", "si1 vi28 oi5 vi3".split())
    assert not derives(SVO_SOV_GRAMMAR, "A", "si34 vi28 oi5".split())  # indices run 1..33
    assert not derives(GENDER_GRAMMAR, "A", "the me1 and".split())


# ----- generated pairs ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("task", TASKS)
def test_lengths_are_in_range_and_kept(task):
    for split, (low, high) in (("train", TRAIN_LENGTHS), ("validation", TRAIN_LENGTHS), ("test", TEST_LENGTHS)):
        generated = pairs(task, split, 200)
        lengths = [len(source) for source, _ in generated]
        assert all(low <= n <= high for n in lengths), (split, min(lengths), max(lengths))
        assert all(len(source) == len(target) for source, target in generated)
        if task == "bigram_flip":
            assert all(n % 2 == 0 for n in lengths)
        assert len(set(lengths)) > 10  # spread over the range, not one length


@pytest.mark.parametrize("task", ["copy", "reversal", "bigram_flip"])
def test_synthetic_targets(task):
    for source, target in pairs("copy", "train", 50) if task == "copy" else pairs(task, "test", 50):
        assert set(source) <= set(SYMBOLS)
        if task == "copy":
            assert target == source
        elif task == "reversal":
            assert target == source[::-1]
        else:
            assert target == [source[i + 1 - 2 * (i % 2)] for i in range(len(source))]
    symbols = [token for source, _ in pairs(task, "train", 300) for token in source]
    assert len(set(symbols)) == 128  # all 128 symbols occur


def test_svo_sov_targets_and_token_classes():
    generated = pairs("svo_sov", "train", 300) + pairs("svo_sov", "test", 30)
    for source, target in generated:
        assert target == svo_to_sov(source)
        assert all(re.fullmatch(r"(si|oi|vi)([1-9]|[12]\d|3[0-3])|rpi", token) for token in source)
    short = [source for source, _ in generated if len(source) <= 12][:20]
    assert short and all(derives(SVO_SOV_GRAMMAR, "A", source) for source in short)
    # relative clauses and the three word classes all occur
    tokens = {token[:2] for source, _ in generated for token in source}
    assert tokens == {"si", "oi", "vi", "rp"}


@pytest.mark.parametrize("printed_b_rule", [False, True])
def test_gender_targets_and_token_classes(printed_b_rule):
    grammar = gender_grammar(printed_b_rule)
    rng = random.Random(0)
    generated = [sample_in_range(grammar, rng, TRAIN_LENGTHS)[:2] for _ in range(200)]
    if not printed_b_rule:
        generated += pairs("gender_conjugation", "test", 30)
    for source, target in generated:
        assert target == genderless_to_gendered(source)
        assert all(re.fullmatch(r"the|a|and|or|[wmfn]e([1-9]|1\d|2[0-5])", token) for token in source)
    short = [source for source, _ in generated if len(source) <= 12][:20]
    assert short and all(derives(grammar, "A", source) for source in short)


def test_rejection_sampling_holds_the_range():
    rng = random.Random(1)
    for grammar in (SVO_SOV_GRAMMAR, GENDER_GRAMMAR):
        for low, high in ((8, 8), (10, 12), (65, 70)):
            for _ in range(5):
                source, target, attempts = sample_in_range(grammar, rng, (low, high))
                assert low <= len(source) <= high and attempts >= 1
        # an unconstrained draw is abandoned as soon as it must pass the limit, never returned too long
        drawn = [grammar.sample(rng, 16) for _ in range(300)]
        assert any(pair is None for pair in drawn)
        assert all(len(pair[0]) <= 16 for pair in drawn if pair is not None)


def test_generation_is_deterministic_and_split_streams_are_independent():
    for task in TASKS:
        first, again = pairs(task, "train", 30), pairs(task, "train", 30)
        assert first == again
        assert pairs(task, "train", 30, seed=1) != first
        assert pairs(task, "train", 10) == first[:10]  # a prefix does not depend on the size asked for
        assert pairs(task, "validation", 30) != first
    stream = stream_pairs("reversal", lengths=(3, 5), seed=4)
    drawn = list(itertools.islice(stream, 20))
    assert drawn == list(itertools.islice(stream_pairs("reversal", lengths=(3, 5), seed=4), 20))
    assert all(3 <= len(e["source"].split()) <= 5 for e in drawn)


def test_bad_lengths_and_grammars_are_refused():
    with pytest.raises(ValueError, match="even length"):
        generate_split("bigram_flip", 1, (9, 9), random.Random(0))
    with pytest.raises(ValueError, match="low <= high"):
        generate_split("copy", 1, (5, 4), random.Random(0))
    with pytest.raises(ValueError, match="unknown transduction task"):
        generate_split("sorting", 1, (5, 6), random.Random(0))
    with pytest.raises(ValueError, match="sum to"):
        parse_grammar("A", "1/2 A -> x | y", {})
    with pytest.raises(ValueError, match="link the same"):
        parse_grammar("A", "1 A -> B1 | x", {"B": ("b", "c", 2)})


# ----- the builder ----------------------------------------------------------------------------------------------------

def build(tmp_path, task, **options):
    builder = Transduction(task, cache_dir=str(tmp_path), **options)
    builder.download_and_prepare()
    return builder.as_dataset()


def test_builder_splits_sizes_and_content(tmp_path):
    data = build(tmp_path / "a", "svo_sov", train_size=40, eval_size=15)
    assert list(data) == ["train", "validation", "test"]
    assert [data[split].num_rows for split in data] == [40, 15, 15]
    assert data["train"].column_names == ["source", "target"]
    expected = generate_split("svo_sov", 40, TRAIN_LENGTHS, split_rng("svo_sov", "train", 0))
    assert data["train"].to_list() == expected
    # the same options rebuild the same data elsewhere; another seed gives other data; one split alone is the same
    assert build(tmp_path / "b", "svo_sov", train_size=40, eval_size=15)["test"].to_list() == data["test"].to_list()
    assert build(tmp_path / "c", "svo_sov", train_size=40, eval_size=15, data_seed=1)["test"].to_list() \
        != data["test"].to_list()
    assert build(tmp_path / "d", "svo_sov", eval_size=15, splits=["test"])["test"].to_list() == data["test"].to_list()


def test_builder_defaults(tmp_path):
    data = build(tmp_path, "bigram_flip")
    assert [data[split].num_rows for split in data] == [10_000, 1_000, 1_000]
    test_lengths = [len(source.split()) for source in data["test"]["source"]]
    assert min(test_lengths) >= 65 and max(test_lengths) <= 128 and all(n % 2 == 0 for n in test_lengths)
    assert {config.name for config in Transduction.BUILDER_CONFIGS} == set(TASKS)
    with pytest.raises(ValueError, match="unknown config"):
        Transduction("sorting", cache_dir=str(tmp_path))


def test_builder_lengths_can_be_reduced(tmp_path):
    data = build(tmp_path, "reversal", train_size=20, eval_size=10, train_lengths=(2, 4), test_lengths=(5, 6))
    assert all(2 <= len(s.split()) <= 4 for s in data["train"]["source"])
    assert all(5 <= len(s.split()) <= 6 for s in data["test"]["source"])


# ----- metrics --------------------------------------------------------------------------------------------------------

def test_fine_and_coarse_accuracy_by_hand():
    reference = "a b c"  # 3 symbols + end of sequence = 4
    assert correct_prefix_length("a b c", reference) == 4
    assert correct_prefix_length("a b", reference) == 2  # stopped early: wrong where `c` was due
    assert correct_prefix_length("a b c d", reference) == 3  # ran on: wrong where the end was due
    assert correct_prefix_length("a x c", reference) == 1  # only symbols before the first error count
    assert correct_prefix_length("", "") == 1
    predictions = ["a b c", "a b", "a b c d", "x b c"]
    references = [reference] * 4
    assert coarse_accuracy(predictions, references) == 0.25
    assert fine_accuracy(predictions, references) == pytest.approx((4 / 4 + 2 / 4 + 3 / 4 + 0 / 4) / 4)
    assert transduction_metrics(["a  b c "], [reference]) == {"coarse_accuracy": 1.0, "fine_accuracy": 1.0}
    assert transduction_metrics([], []) == {"coarse_accuracy": 0.0, "fine_accuracy": 0.0}


def test_metrics_refuse_bad_inputs():
    with pytest.raises(TypeError, match="not one string"):
        coarse_accuracy("a b", ["a b"])
    with pytest.raises(TypeError, match="not one string"):
        fine_accuracy(["a b"], "a b")
    with pytest.raises(TypeError, match="must hold strings"):
        fine_accuracy([["a", "b"]], ["a b"])
    with pytest.raises(ValueError, match="same length"):
        coarse_accuracy(["a"], ["a", "b"])


# ----- config overrides through load_benchmark and the command line ---------------------------------------------------

def test_load_benchmark_takes_config_overrides_and_caches_each_variant_apart(tmp_path):
    short = load_benchmark("transduction", "reversal", cache_dir=tmp_path,
                           config_overrides={"train_lengths": [2, 4], "train_size": 20, "eval_size": 5})
    assert [short[split].num_rows for split in short] == [20, 5, 5]
    assert all(2 <= len(s.split()) <= 4 for split in ("train", "validation") for s in short[split]["source"])
    longer = load_benchmark("transduction", "reversal", cache_dir=tmp_path,
                            config_overrides={"train_lengths": (5, 6), "train_size": 20, "eval_size": 5})
    assert all(5 <= len(s.split()) <= 6 for s in longer["train"]["source"])  # not the cached short variant
    assert config_fields("transduction")["train_lengths"] == TRAIN_LENGTHS and config_fields("scan") == {}


@pytest.mark.parametrize("name,overrides,message", [
    ("transduction", {"train_lenghts": [2, 4]}, "no config field 'train_lenghts' to override .fields: data_seed"),
    ("transduction", {"train_size": "many"}, "'train_size' of 'transduction' takes an int like 10000, got 'many'"),
    ("transduction", {"train_lengths": [8]}, "'train_lengths' of 'transduction' takes 2 ints like \\[8, 64\\]"),
    ("scan", {"train_size": 10}, "'scan' has no config field 'train_size' to override .fields: none"),
])
def test_bad_config_overrides_are_clear_errors(name, overrides, message):
    with pytest.raises(ValueError, match=message):
        load_benchmark(name, "addprim_jump" if name == "scan" else "copy", config_overrides=overrides)


def test_params_text_keeps_commas_inside_brackets():
    assert parse_params_text("train_lengths=[8,16],train_size=75000,variant=code") == {
        "train_lengths": [8, 16], "train_size": 75000, "variant": "code"}
    assert parse_params_text("wug_size=1") == {"wug_size": 1}
    with pytest.raises(ValueError, match="NAME=VALUE"):
        parse_params_text("train_lengths=[8,16],16")


def test_a_run_trains_and_tests_on_the_data_benchmark_params_describe(tmp_path):
    from lexical_hf.training import main

    params = "train_lengths=[2,3],test_lengths=[5,6],train_size=40,eval_size=6"
    results = main(["--benchmark", "transduction", "--benchmark_config", "copy", "--backbone", "queue_lstm",
                    "--lexicon", "none", "--benchmark_params", params, "--embedding_size", "8", "--hidden_size", "8",
                    "--memory_width", "8", "--max_steps", "2", "--seeds", "0", "--disable_tqdm", "true",
                    "--output_dir", str(tmp_path / "run")])
    seed = results["per_seed"]["0"]
    assert seed["test"]["num_examples"] == 6 and seed["validation"]["num_examples"] == 6
    assert results["settings"]["data"]["benchmark_params"] == params
    history = json.loads((tmp_path / "run" / "seeds" / "seed-0" / "log_history.json").read_text())
    assert history[-1]["step"] == 2 and "train_loss" in history[-1]  # the seed's Trainer log, kept beside its metrics
    with pytest.raises(ValueError, match="--benchmark_params changes a benchmark's config"):
        main(["--train_file", str(tmp_path / "pairs.tsv"), "--benchmark_params", "train_size=5",
              "--output_dir", str(tmp_path / "other")])


@pytest.mark.parametrize("backbone", ["stack_lstm", "queue_lstm", "deque_lstm", "deep_lstm"])
def test_the_cpu_preset_is_the_recipe_that_learned_reversal(backbone):
    """The `cpu` preset on the transduction tasks is the recipe measured in results/neural_memory.md: the paper's
    training lengths, batches of 50 drawn at random (grouping by length cost the Queue-LSTM its length
    generalisation), Adam, at most one pass over the training set, to convergence (the first logged training loss
    at or below 0.001; the Queue-LSTM found copy after 3,000 updates on one seed); the memory controllers 1 × 64 with
    a target-side LSTM of their own (with one LSTM over the joint sequence the Stack-LSTM never found the stack); the
    deep LSTM the paper's network. Both presets train to convergence, as the paper does, and neither shows a
    sequence twice: the paper samples its training sequences afresh."""
    from lexical_hf.data.loading import _check_config_overrides
    from lexical_hf.training.arguments import preset_defaults

    _, values = preset_defaults(backbone, "cpu", "transduction", "copy")
    assert values.get("train_sampling_strategy", "random") == "random"
    overrides = _check_config_overrides("transduction", parse_params_text(values["benchmark_params"]))
    assert overrides["train_lengths"] == (8, 64)
    assert overrides["train_size"] == values["max_steps"] * values["per_device_train_batch_size"]  # one pass
    assert values["optim"] == "adamw_torch" and values["weight_decay"] == 0.0 and values["max_grad_norm"] == 1.0
    assert values["max_steps"] == 6000 and values["stop_at_train_loss"] == 0.001 and values["logging_steps"] == 100
    memory = backbone != "deep_lstm"
    assert values.get("separate_target_lstm", False) is memory
    assert values["hidden_size"] == (64 if memory else 128)
    _, paper = preset_defaults(backbone, "paper", "transduction", "copy")
    assert paper["per_device_train_batch_size"] == 10  # the paper's protocol, on fresh sequences: one pass at most
    paper_data = _check_config_overrides("transduction", parse_params_text(paper["benchmark_params"]))
    assert paper_data["train_lengths"] == (8, 64)
    assert paper_data["train_size"] == paper["max_steps"] * paper["per_device_train_batch_size"]
    assert paper["optim"] == "rmsprop" and "separate_target_lstm" not in paper
    assert paper["stop_at_train_loss"] == 0.001 and paper["max_steps"] == 100000


def test_the_bottom_push_bias_flag_reaches_the_saved_deque(tmp_path):
    from lexical_hf.training import main

    main(["--benchmark", "transduction", "--benchmark_config", "copy", "--backbone", "deque_lstm",
          "--lexicon", "none", "--memory_bottom_push_bias", "-3",
          "--benchmark_params", "train_lengths=[2,3],test_lengths=[4,5],train_size=20,eval_size=4",
          "--embedding_size", "8", "--hidden_size", "8", "--memory_width", "8", "--max_steps", "1", "--seeds", "0",
          "--disable_tqdm", "true", "--output_dir", str(tmp_path / "run")])
    model = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path / "run")
    assert model.config.memory_bottom_push_bias == -3 and model.config.memory_push_bias is None


def test_the_separate_target_lstm_flag_reaches_the_saved_model(tmp_path):
    from lexical_hf.training import main

    main(["--benchmark", "transduction", "--benchmark_config", "reversal", "--backbone", "stack_lstm",
          "--lexicon", "none", "--separate_target_lstm", "true", "--memory_push_bias", "-1",
          "--benchmark_params", "train_lengths=[2,3],test_lengths=[4,5],train_size=20,eval_size=4",
          "--embedding_size", "8", "--hidden_size", "8", "--memory_width", "8", "--max_steps", "1", "--seeds", "0",
          "--disable_tqdm", "true", "--output_dir", str(tmp_path / "run")])
    model = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path / "run")
    assert model.config.separate_target_lstm is True and model.config.memory_push_bias == -1
    assert model.model.decoder.recurrence is model.model.target_recurrence is not model.model.recurrence
