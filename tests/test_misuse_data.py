"""Misuse at the data boundaries: pairs files, the tokenizer, the lexicon learners, decoding and the command line.

Each test is a mistake a user makes (a number in a JSON-lines file, a header line, bytes, a literal </s>, …) that
once gave a silently wrong result or an error that did not say what was wrong; each now gives the right result or an
error that names the file, line, field or argument."""

import json
import logging
import re
import shutil

import pytest
import torch

import lexical_hf
from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer, cli, evaluation
from lexical_hf.data import load_pairs_file, read_pairs_file
from lexical_hf.decoding import generate_texts
from lexical_hf.lexicon import Lexicon, ParallelCorpus, bayesian_learner, learn_lexicon
from lexical_hf.results import parse_seeds


# ---------------------------------------------------------------------- pairs files
def test_one_number_in_a_json_lines_file_leaves_the_other_values_as_they_are(tmp_path):
    """A JSON number used to make `datasets` cast the whole column, quoting every other value ('"dax"')."""
    path = tmp_path / "train.jsonl"
    path.write_text('{"source": "dax", "target": "RED"}\n{"source": 1, "target": 2.50}\n'
                    '{"source": "lug", "target": "BLUE"}\n')
    data = load_pairs_file(path)
    assert data["source"] == ["dax", "1", "lug"]
    assert data["target"] == ["RED", "2.50", "BLUE"]  # a number is its text as written


@pytest.mark.parametrize("value, kind", [('["dax"]', "array"), ('{"w": "dax"}', "object"), ("true", "true/false")])
def test_a_json_value_that_is_not_a_string_is_an_error_naming_file_line_and_field(tmp_path, value, kind):
    path = tmp_path / "train.jsonl"
    path.write_text(f'{{"source": "dax", "target": "RED"}}\n{{"source": "lug", "target": {value}}}\n')
    with pytest.raises(ValueError, match=rf"train.jsonl:2: the target of row 2 is a JSON {kind}.*not a string"):
        load_pairs_file(path)


def test_empty_broken_and_wrongly_shaped_json_files_are_clear_errors(tmp_path):
    cases = {
        "empty.jsonl": ("", r"empty.jsonl: no pairs in the file"),
        "broken.jsonl": ('{"source": "dax", "target": "RED"}\n{"source": "lug", "target": \n',
                         r"broken.jsonl:2: not valid JSON"),
        "lists.jsonl": ('["dax", "RED"]\n',
                        r'lists.jsonl:1: expected an object with "source" and "target", got a JSON array'),
        "null.jsonl": ('{"source": "dax", "target": null}\n', r"null.jsonl:1: row 1 has no target"),
        "nan.jsonl": ('{"source": "dax", "target": NaN}\n', r"nan.jsonl:1: not valid JSON \(NaN is not a JSON value\)"),
        "array.json": ('[{"source": "dax", "target": "RED"},\n {"source": "lug"}]',
                       r"array.json: array item 2: row 2 has no target"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=message):
            load_pairs_file(tmp_path / name)
    (tmp_path / "good.json").write_text('[{"source": "dax", "target": "RED"}, {"source": "lug", "target": "BLUE"}]')
    assert load_pairs_file(tmp_path / "good.json")["target"] == ["RED", "BLUE"]


def test_a_header_line_with_the_column_names_is_skipped_with_a_warning(tmp_path, caplog):
    path = tmp_path / "train.tsv"
    path.write_text("source\ttarget\ndax\tRED\nlug\tBLUE\n")
    with caplog.at_level(logging.WARNING, logger="lexical_hf.data.pairs_files"):
        data = load_pairs_file(path)
    assert data["source"] == ["dax", "lug"] and data["target"] == ["RED", "BLUE"]
    assert "train.tsv:1: skipped the header line" in caplog.text
    # only the first line is a header: the same words later are a pair
    path.write_text("dax\tRED\nsource\ttarget\n")
    assert load_pairs_file(path)["source"] == ["dax", "source"]


def test_lines_end_at_newlines_only(tmp_path):
    """str.splitlines() also breaks at U+2028, U+0085, form feeds…, which split one pair into two lines."""
    path = tmp_path / "train.tsv"
    path.write_bytes("dax lug\u2028wif\tRED\u2028BLUE GREEN\r\nlug\x0cwif\tBLUE\x85GREEN\n".encode("utf-8"))
    sources, targets = read_pairs_file(path)
    assert sources == ["dax lug\u2028wif", "lug\x0cwif"]
    assert targets == ["RED\u2028BLUE GREEN", "BLUE\x85GREEN"]  # the \r of \r\n is gone
    assert [t.split() for t in targets] == [["RED", "BLUE", "GREEN"], ["BLUE", "GREEN"]]  # whitespace between words


@pytest.mark.parametrize("encoding, guess", [("latin-1", "Latin-1"), ("utf-16", "UTF-16")])
def test_a_file_that_is_not_utf8_is_an_error_naming_line_and_byte(tmp_path, encoding, guess):
    path = tmp_path / "train.tsv"
    path.write_bytes("dax\tRED\ncafé\tCOFFEE\n".encode(encoding))
    line = 2 if encoding == "latin-1" else 1
    message = rf"train.tsv:{line}: the file is not UTF-8 \(.*{guess}.*byte offset.*Save it as UTF-8"
    with pytest.raises(ValueError, match=message):
        load_pairs_file(path)


# ---------------------------------------------------------------------- tokenizer
@pytest.fixture()
def tokenizer():
    return LexicalTokenizer.from_texts(["dax", "lug dax"], ["RED", "BLUE RED"])


@pytest.mark.parametrize("side, text, token", [
    ("target", "RED </s> BLUE", "</s>"),  # would teach the model to stop after RED
    ("target", "<s> RED", "<s>"),  # was reported as "pad labels with -100"
    ("target", "RED</s>", "</s>"),  # the tokenizer splits special tokens out of words
    ("source", "dax <pad>", "<pad>"),
    ("source", "<unk> dax", "<unk>"),
])
def test_a_special_token_written_in_a_text_is_refused(tokenizer, side, text, token):
    sources, targets = (["lug", text], ["RED", "BLUE"]) if side == "source" else (["lug", "dax"], ["RED", text])
    with pytest.raises(ValueError, match=rf"{side} text 1 contains the special token {token}: '{text}'.*remove it"):
        tokenizer(sources, text_target=targets)


def test_what_is_encoded_must_be_strings(tokenizer):
    for texts, index in (([None], 0), (["dax", b"lug"], 1), (["dax", 3], 1), ([["dax", None]], 0)):
        with pytest.raises(TypeError, match=rf"source text {index} is \w+ .*not a string"):
            tokenizer(texts)
    with pytest.raises(TypeError, match=r"target text 0 is NoneType None, not a string"):
        tokenizer(["dax"], text_target=[None])
    assert tokenizer([["lug", "dax"]])["input_ids"] == tokenizer(["lug dax"])["input_ids"]  # word lists still work


def test_generate_texts_names_a_source_that_is_not_a_string(tokenizer):
    torch.manual_seed(0)
    model = LexicalSeq2SeqForConditionalGeneration(LexicalSeq2SeqConfig(
        source_vocab_size=tokenizer.source_vocab_size, target_vocab_size=tokenizer.target_vocab_size,
        embedding_size=8, hidden_size=8, num_layers=1))
    with pytest.raises(TypeError, match=r"sources\[1\] is NoneType None, not a string"):
        generate_texts(model, tokenizer, ["dax", None])


# ---------------------------------------------------------------------- lexicons
def test_bytes_are_not_learned_as_a_lexicon_of_byte_values():
    data = {"source": [b"dax", b"lug dax"], "target": [b"RED", b"BLUE RED"]}
    with pytest.raises(TypeError, match=r"column 'source', row 0: expected a string .*got bytes"):
        learn_lexicon(data)
    with pytest.raises(TypeError, match=r"column 'tgt', row 1: expected a string .*got NoneType"):
        learn_lexicon({"src": ["dax", "lug"], "tgt": ["RED", None]}, source_column="src", target_column="tgt")
    with pytest.raises(TypeError, match=r"column 'source', row 1: expected a list of token strings .*got list"):
        learn_lexicon({"source": [["dax"], ["lug", 7]], "target": [["RED"], ["BLUE"]]})
    with pytest.raises(TypeError, match=r"data\[0\]\[0\] \(the source of pair 0\) is bytes"):
        learn_lexicon([(b"dax", b"RED"), (b"lug", b"BLUE"), (b"wif", b"GREEN")])


def test_seeds_that_numpy_or_the_trainer_cannot_take_are_errors_naming_the_argument():
    data = {"source": ["dax", "lug dax"], "target": ["RED", "BLUE RED"]}
    for seed in (-1, 1.5, "a"):
        with pytest.raises(ValueError, match=r"learn_lexicon: seed must be a whole number >= 0"):
            learn_lexicon(data, method="bayesian", seed=seed)
    with pytest.raises(ValueError, match=r"bayesian_learner: seed must be a whole number >= 0, got -1"):
        bayesian_learner(ParallelCorpus.from_pairs(data["source"], data["target"]), seed=-1)
    for text in ("a", "-1", "1.5", "0--2"):
        with pytest.raises(ValueError, match=rf"--seeds '{text}': '{text}' is not a seed or a range of seeds"):
            parse_seeds(text)
    assert parse_seeds("0-2, 7") == [0, 1, 2, 7]


def test_a_tiny_temperature_gives_exact_probabilities_not_nan(tokenizer):
    """score / τ overflowed to inf and inf - inf is NaN; the difference to the maximum divided by τ never is."""
    lexicon = Lexicon({"dax": {"RED": 5, "BLUE": 3}, "lug": {"BLUE": 2, "RED": 2}}, temperature=1e-320)
    assert lexicon.distribution("dax") == {"RED": 1.0, "BLUE": 0.0}
    assert lexicon.distribution("lug") == {"BLUE": 0.5, "RED": 0.5}  # tied maxima share the mass, as τ → 0
    matrix = lexicon.to_matrix(tokenizer)
    assert torch.isfinite(matrix).all() and torch.allclose(matrix.sum(-1), torch.ones(len(matrix)))
    huge = Lexicon({"dax": {"RED": 1e308, "BLUE": -1e308}}, temperature=1.0)  # the difference overflows: weight 0
    assert huge.distribution("dax") == {"RED": 1.0, "BLUE": 0.0}


# ---------------------------------------------------------------------- command line
def test_lexicon_command_refuses_an_empty_method_and_prints_json_for_several(tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("dax\tRED\nlug dax\tBLUE RED\n")
    for method in ("", " , "):
        assert cli.main(["lexicon", "--data-file", str(pairs), "--method", method]) == 2
        assert "names no learner" in capsys.readouterr().err
    assert cli.main(["lexicon", "--data-file", str(pairs), "--method", "simple,pmi", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == ["simple", "pmi"]
    assert Lexicon.from_dict(printed["simple"]).hard_mapping() == {"dax": "RED", "lug": "BLUE"}
    # JSON lines work as --data-file too
    (tmp_path / "pairs.jsonl").write_text('{"source": "dax", "target": "RED"}\n')
    assert cli.main(["lexicon", "--data-file", str(tmp_path / "pairs.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == {"dax": {"RED": 1}}


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A folder as the training pipeline publishes it (tiny untrained model, Colors), with its results.json."""
    folder = tmp_path_factory.mktemp("published")
    data = lexical_hf.load_benchmark("colors")
    train = data["train"]
    tokenizer = LexicalTokenizer.from_dataset(train)
    torch.manual_seed(0)
    model = LexicalSeq2SeqForConditionalGeneration(LexicalSeq2SeqConfig(
        source_vocab_size=tokenizer.source_vocab_size, target_vocab_size=tokenizer.target_vocab_size,
        embedding_size=8, hidden_size=8, num_layers=1))
    model.set_lexicon(learn_lexicon(train), tokenizer)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    predictions = generate_texts(model, tokenizer, list(data["test"]["source"]))
    measured = evaluation.benchmark_metrics(data, "test", predictions)  # what `evaluate` reproduces unedited
    results = {"benchmark": "colors", "benchmark_config": None, "seeds": [0], "training": {"generation_num_beams": 1},
               "per_seed": {"0": {"test": measured}}}
    (folder / "results.json").write_text(json.dumps(results))
    return folder


def edited_copy(published, tmp_path, name, edit):
    folder = tmp_path / "folder"
    shutil.copytree(published, folder)
    data = json.loads((folder / name).read_text())
    edit(data)
    (folder / name).write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize("name, edit, message", [
    ("results.json", lambda d: d["per_seed"]["0"]["test"].update(exact_match="0.93"),
     r"results.json: seed 0, split test, metric exact_match is '0.93' \(str\), not a number"),
    ("results.json", lambda d: d["training"].update(generation_num_beams=-3),
     r"results.json: training.generation_num_beams is -3: the beam width must be a whole number >= 1"),
    ("config.json", lambda d: d.update(gate="softmax"),
     r"config.json: not a valid model configuration \(gate must be one of"),
    ("config.json", lambda d: d.update(num_layers="two"),
     r"config.json: not a valid model configuration \(.*num_layers"),
    ("tokenizer_config.json", lambda d: d.update(tokenizer_class="BertTokenizer"),
     r"tokenizer_config.json: tokenizer_class is 'BertTokenizer', but a lexical_hf model is read by LexicalTokenizer"),
], ids=["string-metric", "negative-beams", "invalid-gate", "string-num_layers", "bert-tokenizer"])
def test_evaluate_names_what_is_wrong_in_a_published_folder(published, tmp_path, capsys, name, edit, message):
    """A string metric was skipped and the folder reported as reproduced (exit 0); a config that fails validation
    or another tokenizer class ended in a traceback and "unexpected error"."""
    assert cli.main(["evaluate", str(published)]) == 0  # unedited, the folder reproduces its metrics
    capsys.readouterr()
    folder = edited_copy(published, tmp_path, name, edit)
    assert cli.main(["evaluate", str(folder)]) == 2
    captured = capsys.readouterr()
    assert "reproduced" not in captured.out
    assert "Traceback" not in captured.err and "unexpected error" not in captured.err, captured.err[-2000:]
    errors = [line for line in captured.err.splitlines() if line.startswith("lexical-hf evaluate: error: ")]
    assert len(errors) == 1 and re.search(message, errors[0]), captured.err[-2000:]
