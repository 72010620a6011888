"""The Lexicon artifact: to_matrix semantics, persistence, Hub upload, plotting, the map step and the CLI."""

import json
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from lexical_hf.lexicon import (
    LEXICON_FILE,
    Lexicon,
    LexiconCoverageWarning,
    apply_lexicon,
    learn_lexicon,
    plot_lexicons,
)

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]
COLORS = [
    ("dax", "RED"), ("lug", "BLUE"), ("wif", "GREEN"), ("zup", "YELLOW"),
    ("lug fep", "BLUE BLUE BLUE"), ("dax fep", "RED RED RED"), ("lug blicket wif", "BLUE GREEN BLUE"),
    ("wif blicket dax", "GREEN RED GREEN"), ("lug kiki wif", "GREEN BLUE"), ("dax kiki lug", "BLUE RED"),
    ("lug fep kiki wif", "GREEN BLUE BLUE BLUE"), ("wif kiki dax blicket lug", "RED BLUE RED GREEN"),
    ("lug kiki wif fep", "GREEN GREEN GREEN BLUE"), ("wif blicket dax kiki lug", "BLUE GREEN RED GREEN"),
]  # fmt: skip


def vocab(tokens, start=4, specials=SPECIALS):
    mapping = {t: i for i, t in enumerate(specials)}
    mapping.update({t: start + i for i, t in enumerate(tokens)})
    return mapping


def stand_in(source_tokens, target_tokens, **kwargs):
    """The tokenizer interface to_matrix relies on: two dicts and the special-token convention."""
    return types.SimpleNamespace(
        source_vocab=vocab(source_tokens),
        target_vocab=vocab(target_tokens),
        non_generatable_target_ids=[0, 1],
        **kwargs,
    )


def row(matrix, tokenizer, source):
    values = matrix[tokenizer.source_vocab[source]]
    inverse = {i: t for t, i in tokenizer.target_vocab.items()}
    return {inverse[i]: round(float(p), 6) for i, p in enumerate(values) if p > 0}


# ---------------------------------------------------------------------- to_matrix
def test_to_matrix_rows_follow_entries_copy_and_mutual_exclusivity():
    lexicon = Lexicon({"dax": {"RED": 3, "BLUE": 1}, "lug": {"BLUE": 2}})
    tokenizer = stand_in(["dax", "lug", "wif", "zup", "GREEN"], ["RED", "BLUE", "GREEN", "YELLOW", "PINK"])
    matrix = lexicon.to_matrix(tokenizer)
    assert matrix.dtype == torch.float32 and matrix.shape == (9, 9)
    assert row(matrix, tokenizer, "dax") == {"RED": 1.0}  # hard: argmax
    assert row(matrix, tokenizer, "lug") == {"BLUE": 1.0}
    assert row(matrix, tokenizer, "GREEN") == {"GREEN": 1.0}  # no entry, also a target token: copy
    # no entry, not a target token: uniform over targets nobody claims (GREEN is claimed by copying)
    assert row(matrix, tokenizer, "wif") == row(matrix, tokenizer, "zup") == {"YELLOW": 0.5, "PINK": 0.5}
    assert torch.allclose(matrix.sum(-1), torch.ones(9), atol=1e-6)
    assert matrix[:, [0, 1]].abs().sum() == 0


def test_special_source_tokens_and_unused_ids():
    source_vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "dax": 4, "lug": 6}  # id 5 unused
    tokenizer = types.SimpleNamespace(source_vocab=source_vocab, target_vocab=vocab(["RED", "BLUE"]))
    with pytest.warns(LexiconCoverageWarning, match="1 of 2"):  # special source rows follow the convention
        matrix = Lexicon({"dax": {"RED": 1}, "</s>": {"RED": 5}}).to_matrix(tokenizer)
    eos, unk = tokenizer.target_vocab["</s>"], tokenizer.target_vocab["<unk>"]
    assert matrix.shape == (7, 6)
    for source_id, target_id in [(0, unk), (1, unk), (2, eos), (3, unk), (5, unk)]:
        assert matrix[source_id, target_id] == 1.0 and matrix[source_id].sum() == 1.0
    assert row(matrix, tokenizer, "lug") == {"BLUE": 1.0}  # RED is claimed by dax


def test_soft_rows_are_softmax_of_scores_over_entries():
    lexicon = Lexicon({"dax": {"RED": 3.0, "BLUE": 1.0, "GREEN": 0.5}}, temperature=0.5)
    tokenizer = stand_in(["dax"], ["RED", "BLUE", "GREEN"])
    scores = torch.tensor([3.0, 1.0, 0.5], dtype=torch.float64)
    expected = torch.softmax(scores / 0.5, 0)
    got = lexicon.to_matrix(tokenizer)[4, 4:7].double()  # the lexicon's own τ
    assert torch.allclose(got, expected, atol=1e-6)
    hotter = lexicon.to_matrix(tokenizer, temperature=2.0)[4, 4:7].double()
    assert torch.allclose(hotter, torch.softmax(scores / 2, 0), atol=1e-6)
    assert lexicon.to_matrix(tokenizer, temperature=0)[4, 4] == 1.0
    assert lexicon.distribution("dax", 0.5)["RED"] == pytest.approx(float(expected[0]))


def test_hard_tie_break_prefers_copy_then_smallest_string():
    lexicon = Lexicon({"cake": {"x": 2, "cake": 2, "AND": 2}, "dax": {"RED": 1, "BLUE": 1}})
    assert lexicon.hard_mapping() == {"cake": "cake", "dax": "BLUE"}
    tokenizer = stand_in(["cake", "dax"], ["x", "cake", "AND", "RED", "BLUE"])
    matrix = lexicon.to_matrix(tokenizer)
    assert row(matrix, tokenizer, "cake") == {"cake": 1.0}
    assert row(matrix, tokenizer, "dax") == {"BLUE": 1.0}


def test_recorded_tie_breaks_decide_ties_after_copying(tmp_path):
    entries = {"cake": {"x": 2, "cake": 2}, "dax": {"RED": 1, "BLUE": 1}, "lug": {"BLUE": 3, "RED": 1}}
    lexicon = Lexicon(entries, tie_breaks={"dax": "RED"})
    assert lexicon.hard_mapping() == {"cake": "cake", "dax": "RED", "lug": "BLUE"}
    assert Lexicon(entries).hard_mapping()["dax"] == "BLUE"  # without it: the smallest string
    assert lexicon.distribution("dax", 0) == {"RED": 1.0, "BLUE": 0.0}
    tokenizer = stand_in(["cake", "dax", "lug"], ["x", "cake", "RED", "BLUE"])
    assert row(lexicon.to_matrix(tokenizer), tokenizer, "dax") == {"RED": 1.0}
    assert row(lexicon.to_matrix(tokenizer, temperature=0.5), tokenizer, "dax") == {"RED": 0.5, "BLUE": 0.5}
    assert lexicon.hard_mapping(tokenizer)["dax"] == "RED"
    with pytest.raises(ValueError, match="not an entry"):
        Lexicon(entries, tie_breaks={"dax": "GREEN"})
    with pytest.raises(ValueError, match="not an entry"):
        Lexicon(entries, tie_breaks={"wif": "RED"})
    with pytest.raises(ValueError, match="highest-scoring"):
        Lexicon(entries, tie_breaks={"lug": "RED"})


def test_tie_breaks_are_saved_and_version_1_files_load_without_them(tmp_path):
    lexicon = Lexicon({"dax": {"RED": 1, "BLUE": 1}, "lug": {"BLUE": 1}}, tie_breaks={"dax": "RED"})
    text = lexicon.save_pretrained(tmp_path / "v2").read_text(encoding="utf-8")
    assert '"tie_breaks": {\n    "dax": "RED"\n  }' in text and json.loads(text)["format_version"] == 2
    loaded = Lexicon.from_pretrained(tmp_path / "v2")
    assert loaded == lexicon and loaded.hard_mapping()["dax"] == "RED"
    version_1 = {k: v for k, v in json.loads(text).items() if k != "tie_breaks"}
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / LEXICON_FILE).write_text(json.dumps({**version_1, "format_version": 1}))
    assert Lexicon.from_pretrained(tmp_path / "v1").hard_mapping()["dax"] == "BLUE"  # the rule it was saved under
    (tmp_path / "v3").mkdir()
    (tmp_path / "v3" / LEXICON_FILE).write_text(json.dumps({**json.loads(text), "format_version": 3}))
    with pytest.raises(ValueError, match="unsupported lexicon format"):
        Lexicon.from_pretrained(tmp_path / "v3")


def test_every_target_claimed_falls_back_to_uniform_over_all_targets():
    lexicon = Lexicon({"dax": {"RED": 1}, "lug": {"BLUE": 1}})
    tokenizer = stand_in(["dax", "lug", "wif"], ["RED", "BLUE"])
    assert row(lexicon.to_matrix(tokenizer), tokenizer, "wif") == {"RED": 0.5, "BLUE": 0.5}


def test_abstain_fallback_sends_rows_to_unk_only_when_every_target_is_claimed():
    # the paper code's rule: copy, else an unclaimed target, else no target at all (here <unk>)
    lexicon = Lexicon({"dax": {"RED": 1}, "lug": {"BLUE": 1}}, fallback="mutual_exclusivity_or_abstain")
    tokenizer = stand_in(["dax", "lug", "fep", "RED"], ["RED", "BLUE"])
    matrix = lexicon.to_matrix(tokenizer)
    assert row(matrix, tokenizer, "fep") == {"<unk>": 1.0}
    assert row(matrix, tokenizer, "RED") == {"RED": 1.0}  # copying still comes first
    assert lexicon.hard_mapping(tokenizer) == {"dax": "RED", "lug": "BLUE", "RED": "RED"}
    with_unclaimed = stand_in(["dax", "lug", "fep"], ["RED", "BLUE", "PURPLE"])
    assert row(lexicon.to_matrix(with_unclaimed), with_unclaimed, "fep") == {"PURPLE": 1.0}
    assert Lexicon.from_dict(lexicon.to_dict()).fallback == "mutual_exclusivity_or_abstain"


def test_uniform_fallback():
    lexicon = learn_lexicon((["dax lug"], ["RED BLUE"]), "uniform")
    assert lexicon.num_entries == 0 and lexicon.fallback == "uniform"
    tokenizer = stand_in(["dax", "lug", "RED"], ["RED", "BLUE", "GREEN"])
    matrix = lexicon.to_matrix(tokenizer)
    for source in ["dax", "lug", "RED"]:  # no copying either: every row is uniform
        assert row(matrix, tokenizer, source) == {"RED": 0.333333, "BLUE": 0.333333, "GREEN": 0.333333}


def test_dropped_entries_warn_with_counts_and_all_dropped_raises():
    lexicon = Lexicon({"dax": {"RED": 2, "MAUVE": 1}, "blorp": {"RED": 1}, "lug": {"<pad>": 3, "BLUE": 1}})
    tokenizer = stand_in(["dax", "lug"], ["RED", "BLUE"])
    with pytest.warns(LexiconCoverageWarning, match=r"3 of 5 lexicon entries were dropped"):
        matrix = lexicon.to_matrix(tokenizer)
    assert row(matrix, tokenizer, "lug") == {"BLUE": 1.0}  # the <pad> entry was dropped, not used
    assert lexicon.coverage(tokenizer) == {
        "total": 5,
        "kept": 2,
        "dropped": 3,
        "missing_sources": {"blorp": 1},
        "missing_targets": {"MAUVE": 1, "<pad>": 1},
    }
    other = stand_in(["wif"], ["GREEN"])
    with pytest.raises(ValueError, match="none of the lexicon's 5 entries fit this tokenizer"):
        lexicon.to_matrix(other)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Lexicon({"dax": {"RED": 1}}).to_matrix(tokenizer)  # nothing dropped: no warning


def test_target_vocabulary_without_special_tokens_is_rejected():
    tokenizer = types.SimpleNamespace(source_vocab=vocab(["dax"]), target_vocab={"RED": 0, "BLUE": 1})
    with pytest.raises(ValueError, match="lacks the special token"):
        Lexicon({"dax": {"RED": 1}}).to_matrix(tokenizer)


def test_to_matrix_with_the_real_tokenizer_is_accepted_by_the_model_head():
    from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer

    sources, targets = zip(*COLORS)
    tokenizer = LexicalTokenizer.from_texts(list(sources), list(targets))
    lexicon = learn_lexicon((sources, targets), "simple")
    matrix = lexicon.to_matrix(tokenizer)
    assert matrix.shape == (tokenizer.source_vocab_size, tokenizer.target_vocab_size)
    assert torch.allclose(matrix.sum(-1), torch.ones(len(matrix)), atol=1e-6)
    assert matrix[:, tokenizer.non_generatable_target_ids].sum() == 0
    assert lexicon.hard_mapping(tokenizer) == {"dax": "RED", "lug": "BLUE", "wif": "GREEN", "zup": "YELLOW"}
    config = LexicalSeq2SeqConfig(
        source_vocab_size=tokenizer.source_vocab_size,
        target_vocab_size=tokenizer.target_vocab_size,
        embedding_size=8,
        hidden_size=8,
        num_layers=1,
    )
    model = LexicalSeq2SeqForConditionalGeneration(config)
    model.set_lexicon(lexicon, tokenizer)
    assert torch.equal(model.lexical_head.lexicon_matrix(), matrix)
    assert json.loads(json.dumps(model.config.lexicon_info)) == {**lexicon.config_summary(), "abstains": False}


def test_model_saved_with_a_lexicon_writes_lexicon_json(tmp_path):
    from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer

    sources, targets = zip(*COLORS)
    tokenizer = LexicalTokenizer.from_texts(list(sources), list(targets))
    lexicon = learn_lexicon((sources, targets), "simple", provenance={"dataset": "colors"})
    config = LexicalSeq2SeqConfig(
        source_vocab_size=tokenizer.source_vocab_size,
        target_vocab_size=tokenizer.target_vocab_size,
        embedding_size=8,
        hidden_size=8,
        num_layers=1,
    )
    model = LexicalSeq2SeqForConditionalGeneration(config)
    model.set_lexicon(lexicon, tokenizer)
    model.save_pretrained(tmp_path)
    assert (tmp_path / LEXICON_FILE).is_file()
    loaded = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)
    assert loaded.lexicon == lexicon
    assert loaded.config.lexicon_info["method"] == "simple" and loaded.config.lexicon_info["num_entries"] == 4


# ---------------------------------------------------------------------- metadata and persistence
def test_config_summary_is_small_and_json_able():
    lexicon = learn_lexicon(tuple(zip(*COLORS)), "simple", temperature=0.1, provenance={"dataset": "colors"})
    summary = lexicon.config_summary()
    assert json.loads(json.dumps(summary)) == summary
    assert {k: summary[k] for k in ("method", "num_entries", "temperature", "fallback")} == {
        "method": "simple",
        "num_entries": 4,
        "temperature": 0.1,
        "fallback": "mutual_exclusivity",
    }
    from lexical_hf import __version__

    assert summary["lexical_hf_version"] == __version__
    assert summary["provenance"] == {"dataset": "colors", "num_examples": 14}


def test_save_and_load_round_trip_human_readable(tmp_path):
    lexicon = learn_lexicon(
        (["jump twice", "walk", "jump", "看 书"], ["I_JUMP I_JUMP", "I_WALK", "I_JUMP", "read book"]),
        "pmi",
        temperature=0.1,
        provenance={"dataset": "toy", "split": "train"},
    )
    path = lexicon.save_pretrained(tmp_path / "out")
    assert path == tmp_path / "out" / LEXICON_FILE
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    assert data["method"] == "pmi" and data["temperature"] == 0.1 and data["provenance"]["split"] == "train"
    assert '    "walk": {"I_WALK": ' in text  # one line per input, readable
    assert '"看": {' in text  # not \\u-escaped
    for source in (tmp_path / "out", path, str(tmp_path / "out")):
        loaded = Lexicon.from_pretrained(source)
        assert loaded == lexicon
        assert loaded.entries["walk"]["I_WALK"] == lexicon.entries["walk"]["I_WALK"]  # floats round-trip exactly
    integer = learn_lexicon(tuple(zip(*COLORS)), "simple")
    integer.save_pretrained(tmp_path / "int")
    assert '"dax": {"RED": 6}' in (tmp_path / "int" / LEXICON_FILE).read_text()
    assert Lexicon.from_pretrained(tmp_path / "int").entries["dax"] == {"RED": 6}


def test_empty_lexicon_round_trips(tmp_path):
    lexicon = Lexicon(method="uniform", fallback="uniform")
    lexicon.save_pretrained(tmp_path)
    assert Lexicon.from_pretrained(tmp_path) == lexicon


def test_loads_the_paper_codes_flat_format(tmp_path):
    (tmp_path / LEXICON_FILE).write_text('{"jump": {"I_JUMP": 1467}, "walk": {"I_WALK": 6777}}')
    lexicon = Lexicon.from_pretrained(tmp_path)
    assert lexicon.method == "external" and lexicon.hard_mapping() == {"jump": "I_JUMP", "walk": "I_WALK"}


def test_from_pretrained_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=LEXICON_FILE):
        Lexicon.from_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError):
        Lexicon.from_pretrained(tmp_path / "missing" / "folder")
    (tmp_path / LEXICON_FILE).write_text('{"entries": {}, "format": "something.else"}')
    with pytest.raises(ValueError, match="unsupported lexicon format"):
        Lexicon.from_pretrained(tmp_path)


def test_a_file_that_is_not_a_lexicon_is_a_clear_error_naming_it(tmp_path):
    cases = {
        "truncated": ('{"format": "lexical_hf.lexicon", "entries": {"dax', OSError, "not a readable lexicon file"),
        "empty_file": ("", OSError, "not a readable lexicon file"),
        "a_list": ("[1, 2]", ValueError, "expected a JSON object, got a list"),
        "empty_object": ("{}", ValueError, "non-empty"),
        "entries_list": ('{"entries": []}', ValueError, "'entries' must be a mapping"),
    }
    for name, (text, error, message) in cases.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / LEXICON_FILE).write_text(text)
        with pytest.raises(error, match=message) as raised:
            Lexicon.from_pretrained(tmp_path / name)
        assert str(tmp_path / name / LEXICON_FILE) in str(raised.value), name
    (tmp_path / "binary" / LEXICON_FILE).parent.mkdir()
    (tmp_path / "binary" / LEXICON_FILE).write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(OSError, match="not a readable lexicon file"):
        Lexicon.from_pretrained(tmp_path / "binary")


def test_a_missing_local_lexicon_says_so_when_the_hub_cannot_help(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(OSError) as raised:
        Lexicon.from_pretrained("my_lexicon_typo", cache_dir=tmp_path / "cache")
    assert "no lexicon at 'my_lexicon_typo': it is not a local folder or file either" in raised.value.__notes__[0]


def test_save_pretrained_replaces_lexicon_json_atomically(tmp_path, monkeypatch):
    first = Lexicon({"dax": {"RED": 1}})
    second = Lexicon({"dax": {"BLUE": 1}})
    first.save_pretrained(tmp_path)
    real_write_text = Path.write_text

    def interrupted_write(self, text, *args, **kwargs):  # the disk fills up half-way through the file
        real_write_text(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError("No space left on device")

    monkeypatch.setattr(Path, "write_text", interrupted_write)
    with pytest.raises(OSError, match="No space left"):
        second.save_pretrained(tmp_path)
    monkeypatch.undo()
    assert Lexicon.from_pretrained(tmp_path) == first  # the saved lexicon survives a failed save
    second.save_pretrained(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [LEXICON_FILE]  # no staging file left behind
    assert Lexicon.from_pretrained(tmp_path) == second


def test_invalid_entries_and_temperature_are_rejected():
    with pytest.raises(ValueError, match="not finite"):
        Lexicon({"dax": {"RED": float("nan")}})
    with pytest.raises(TypeError, match="must be a number"):
        Lexicon({"dax": {"RED": "high"}})
    with pytest.raises(ValueError, match="temperature"):
        Lexicon({"dax": {"RED": 1}}, temperature=-1)
    with pytest.raises(ValueError, match="fallback"):
        Lexicon({}, fallback="random")


def test_push_to_hub_uploads_lexicon_json(monkeypatch):
    calls = []

    class FakeApi:
        def __init__(self, token=None):
            calls.append(("init", token))

        def create_repo(self, repo_id, private=None, exist_ok=False, repo_type=None):
            calls.append(("create_repo", repo_id, private, exist_ok, repo_type))
            return types.SimpleNamespace(repo_id=repo_id)

        def upload_file(self, **kwargs):
            calls.append(("upload_file", kwargs))
            return "commit-info"

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    lexicon = learn_lexicon(tuple(zip(*COLORS)), "simple")
    result = lexicon.push_to_hub("me/colors-lexicon", token="t0k", private=True, commit_message="lexicon")
    assert result == "commit-info"
    assert calls[0] == ("init", "t0k")
    assert calls[1] == ("create_repo", "me/colors-lexicon", True, True, "model")
    upload = calls[2][1]
    assert upload["path_in_repo"] == LEXICON_FILE and upload["repo_id"] == "me/colors-lexicon"
    assert upload["commit_message"] == "lexicon"
    assert Lexicon.from_dict(json.loads(upload["path_or_fileobj"].decode("utf-8"))) == lexicon


# ---------------------------------------------------------------------- display
def test_table_and_repr():
    lexicon = Lexicon({"jump": {"I_JUMP": 1467}, "left": {"I_TURN_LEFT": 10, "I_WALK": 2}}, method="simple")
    table = lexicon.table()
    assert table.splitlines()[0].split() == ["input", "output", "score", "P"]
    assert table.splitlines()[2].split() == ["jump", "I_JUMP", "1467", "1.000"]
    assert len(lexicon.table(top_k=1).splitlines()) == 4
    assert "jump→I_JUMP" in repr(lexicon)


def test_plot_draws_only_rows_and_columns_with_entries(tmp_path):
    pytest.importorskip("matplotlib")
    lexicon = Lexicon({"jump": {"I_JUMP": 1467}, "left": {"I_TURN_LEFT": 10, "I_WALK": 2}})
    figure = lexicon.plot(path=tmp_path / "lexicon.png")
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["jump", "left"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["I_JUMP", "I_TURN_LEFT", "I_WALK"]
    assert (tmp_path / "lexicon.png").stat().st_size > 1000
    figure = plot_lexicons({"a": lexicon, "b": Lexicon({"walk": {"I_WALK": 1}})}, tmp_path / "both.png")
    assert len(figure.axes) == 2
    assert [t.get_text() for t in figure.axes[1].get_yticklabels()] == ["jump", "left", "walk"]  # shared axes
    import matplotlib.pyplot as plt

    plt.close("all")


# ---------------------------------------------------------------------- the map step
def test_apply_lexicon_adds_columns_and_is_fingerprinted(tmp_path):
    datasets = pytest.importorskip("datasets")
    sources, targets = zip(*COLORS)
    Dataset = datasets.Dataset
    Dataset.from_dict({"source": list(sources), "target": list(targets)}).save_to_disk(tmp_path / "colors")
    dataset = datasets.load_from_disk(tmp_path / "colors")  # backed by files, so map results are cached
    lexicon = learn_lexicon(dataset, "simple")
    first = apply_lexicon(dataset, lexicon)
    assert first["lexical_targets"][4] == ["BLUE", None]  # lug fep
    assert first["lexicon_coverage"][4] == 1.0  # every BLUE of BLUE BLUE BLUE is lug's translation
    assert first["lexicon_coverage"][8] == pytest.approx(1.0)  # lug kiki wif -> GREEN BLUE
    again = apply_lexicon(dataset, lexicon)
    assert again._fingerprint == first._fingerprint and again.cache_files == first.cache_files  # cache hit
    other = apply_lexicon(dataset, Lexicon({"lug": {"GREEN": 1}}))
    assert other._fingerprint != first._fingerprint
    assert other["lexical_targets"][4] == ["GREEN", None]
    unlabelled = apply_lexicon(Dataset.from_dict({"source": ["dax wif"]}), lexicon)
    assert unlabelled.column_names == ["source", "lexical_targets"]
    assert unlabelled["lexical_targets"] == [["RED", "GREEN"]]


def test_apply_lexicon_on_a_dataset_dict_reads_each_splits_columns():
    """An unlabelled test split beside a labelled train split: train gets its coverage, test only translations,
    whichever split comes first."""
    import datasets

    train = datasets.Dataset.from_dict({"source": ["dax lug"], "target": ["RED BLUE"]})
    test = datasets.Dataset.from_dict({"source": ["lug dax"]})
    lexicon = Lexicon({"dax": {"RED": 1}, "lug": {"BLUE": 1}})
    for order in (("train", "test"), ("test", "train")):
        splits = {"train": train, "test": test}
        result = apply_lexicon(datasets.DatasetDict({name: splits[name] for name in order}), lexicon)
        assert "lexicon_coverage" in result["train"].column_names
        assert "lexicon_coverage" not in result["test"].column_names
        assert result["test"]["lexical_targets"] == apply_lexicon(test, lexicon)["lexical_targets"]


def test_apply_lexicon_with_tokenizer_copies_shared_tokens():
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_dict({"source": ["the cake"], "target": ["cake"]})
    tokenizer = stand_in(["the", "cake"], ["cake"])
    result = apply_lexicon(dataset, Lexicon({}), tokenizer=tokenizer)
    assert result["lexical_targets"] == [[None, "cake"]] and result["lexicon_coverage"] == [1.0]


# ---------------------------------------------------------------------- command line
def test_cli_prints_a_table_and_saves(tmp_path, capsys):
    from lexical_hf.cli import main

    data_file = tmp_path / "colors.tsv"
    data_file.write_text("".join(f"{s}\t{t}\n" for s, t in COLORS))
    code = main(["lexicon", "--data-file", str(data_file), "--method", "simple", "--save", str(tmp_path / "lex")])
    out = capsys.readouterr().out
    assert code == 0
    assert "4 entries over 4 inputs" in out
    assert [line.split()[:3] for line in out.splitlines()[3:]] == [
        ["dax", "RED", "6"], ["lug", "BLUE", "9"], ["wif", "GREEN", "8"], ["zup", "YELLOW", "1"]
    ]  # fmt: skip
    assert Lexicon.from_pretrained(tmp_path / "lex").hard_mapping()["dax"] == "RED"
    # PMI ties blicket between GREEN and RED, co-occurring twice each: recorded by default, not with --tie-break string
    for tie_break, recorded in (("cooccurrence", {"blicket": "GREEN"}), ("string", {})):
        assert main(["lexicon", "--data-file", str(data_file), "--method", "pmi", "--tie-break", tie_break,
                     "--save", str(tmp_path / tie_break)]) == 0
        assert Lexicon.from_pretrained(tmp_path / tie_break).tie_breaks == recorded


def test_cli_compares_methods_and_reports_errors(tmp_path, capsys):
    from lexical_hf.cli import main

    data_file = tmp_path / "scan.txt"
    data_file.write_text("IN: jump twice OUT: I_JUMP I_JUMP\nIN: walk OUT: I_WALK\nIN: jump OUT: I_JUMP\n")
    report = tmp_path / "report.md"
    assert main(["lexicon", "--data-file", str(data_file), "--method", "simple,ibm2", "--markdown", str(report)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["input", "simple", "ibm2"]
    assert "| `jump` | I_JUMP 2 |" in report.read_text()
    assert main(["lexicon", "--data-file", str(data_file), "--method", "nonsense"]) == 2
    assert "known methods: simple, pmi, ibm2, bayesian, identity, uniform" in capsys.readouterr().err
    assert main(["lexicon", "--data-file", str(data_file), "--param", "epsilon=2", "--param", "bogus=1"]) == 2
    assert "does not take ['bogus']" in capsys.readouterr().err
    assert main(["lexicon", "--data-file", str(data_file), "--param", "epsilon=abc"]) == 2
    assert "learner 'simple': epsilon must be a number (default 3), got 'abc'" in capsys.readouterr().err
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    assert main(["lexicon", "--data-file", str(empty)]) == 2
    assert f"{empty}: no pairs in the file" in capsys.readouterr().err


def test_cli_loads_benchmarks_through_load_benchmark(tmp_path, capsys, monkeypatch):
    from lexical_hf import data as benchmarks
    from lexical_hf.cli import main

    seen = {}
    real = benchmarks.load_benchmark

    def spy(name, config=None, **kwargs):
        seen.update(name=name, config=config, **kwargs)
        return real(name, config, cache_dir=tmp_path / "cache", **kwargs)

    monkeypatch.setattr(benchmarks, "load_benchmark", spy)
    assert main(["lexicon", "--dataset", "colors", "--method", "simple", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert seen["name"] == "colors" and seen["splits"] == ["train"]
    assert data["entries"] == {"dax": {"RED": 6}, "lug": {"BLUE": 9}, "wif": {"GREEN": 8}, "zup": {"YELLOW": 1}}
    assert data["provenance"]["dataset"] == "colors" and data["provenance"]["split"] == "train"


def test_matrix_rows_are_exact_probability_vectors_for_large_scores():
    # huge count differences at small τ must not overflow
    lexicon = Lexicon({"dax": {"RED": 100000, "BLUE": 99999}}, temperature=0.001)
    matrix = lexicon.to_matrix(stand_in(["dax"], ["RED", "BLUE"]))
    assert np.isfinite(matrix.numpy()).all() and matrix[4, 4] == 1.0
