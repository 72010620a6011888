"""LexicalTokenizer: two vocabularies used the transformers way."""

import pytest
import torch
from datasets import Dataset
from transformers import AutoTokenizer, DataCollatorForSeq2Seq

import lexical_hf  # noqa: F401  (registers the Auto classes)
from lexical_hf import LexicalTokenizer


@pytest.fixture()
def tokenizer():
    return LexicalTokenizer.from_texts(["jump twice", "walk left", "walk"], ["I_JUMP I_JUMP", "I_TURN_LEFT I_WALK", "I_WALK"])


def test_separate_vocabularies_share_the_special_ids(tokenizer):
    assert set(tokenizer.source_vocab) - {"<pad>", "<s>", "</s>", "<unk>"} == {"jump", "twice", "walk", "left"}
    assert set(tokenizer.target_vocab) - {"<pad>", "<s>", "</s>", "<unk>"} == {"I_JUMP", "I_TURN_LEFT", "I_WALK"}
    for side in (tokenizer.source_vocab, tokenizer.target_vocab):
        assert [side[t] for t in ("<pad>", "<s>", "</s>", "<unk>")] == [0, 1, 2, 3]
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (0, 1, 2)
    # frequency order, ties alphabetical: walk (2) first
    assert tokenizer.source_vocab["walk"] == 4


def test_text_target_gives_inputs_and_labels(tokenizer):
    enc = tokenizer(["walk left", "jump"], text_target=["I_TURN_LEFT I_WALK", "I_JUMP"])
    s, t = tokenizer.source_vocab, tokenizer.target_vocab
    assert enc["input_ids"] == [[s["walk"], s["left"], 2], [s["jump"], 2]]
    assert enc["attention_mask"] == [[1, 1, 1], [1, 1]]
    assert enc["labels"] == [[t["I_TURN_LEFT"], t["I_WALK"], 2], [t["I_JUMP"], 2]]
    padded = tokenizer(["walk left", "jump"], text_target=["I_WALK", "I_JUMP I_JUMP"], padding=True, return_tensors="pt")
    assert padded["input_ids"].shape == (2, 3) and padded["labels"].shape == (2, 3)
    assert padded["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]


def test_batch_decode_returns_target_strings(tokenizer):
    t = tokenizer.target_vocab
    generated = torch.tensor([[1, t["I_JUMP"], t["I_JUMP"], 2, 0], [1, t["I_WALK"], 2, 0, 0]])
    assert tokenizer.batch_decode(generated, skip_special_tokens=True) == ["I_JUMP I_JUMP", "I_WALK"]
    assert tokenizer.decode([t["I_WALK"], -100]) == "I_WALK"
    s = tokenizer.source_vocab
    assert tokenizer.decode_source([s["walk"], s["left"], 2]) == "walk left"


def test_unknown_words_become_unk_and_are_reported(tokenizer):
    enc = tokenizer(["walk around", "crawl"], text_target=["I_FLY", "I_WALK"])
    assert enc["input_ids"][0][1] == tokenizer.unk_token_id and enc["input_ids"][1][0] == tokenizer.unk_token_id
    assert enc["labels"][0][0] == tokenizer.unk_token_id
    assert tokenizer.unknown_token_counts["source"] == {"around": 1, "crawl": 1}
    assert tokenizer.unknown_token_counts["target"] == {"I_FLY": 1}


def test_from_dataset_and_auto_tokenizer_round_trip(tmp_path):
    data = Dataset.from_dict({"source": ["dax fep", "lug"], "target": ["RED RED RED", "BLUE"]})
    tok = LexicalTokenizer.from_dataset(data)
    tok.save_pretrained(tmp_path)
    assert (tmp_path / "source_tokenizer.json").exists() and (tmp_path / "target_tokenizer.json").exists()
    from lexical_hf import LexicalSeq2SeqConfig

    LexicalSeq2SeqConfig(source_vocab_size=tok.source_vocab_size, target_vocab_size=tok.target_vocab_size).save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert isinstance(loaded, LexicalTokenizer)
    assert loaded.source_vocab == tok.source_vocab and loaded.target_vocab == tok.target_vocab
    assert loaded(["dax fep"], text_target=["RED"]) == tok(["dax fep"], text_target=["RED"])


def test_from_dataset_errors():
    with pytest.raises(ValueError, match="no column"):
        LexicalTokenizer.from_dataset(Dataset.from_dict({"src": ["a"], "target": ["b"]}))
    with pytest.raises(ValueError, match="empty"):
        LexicalTokenizer.from_dataset(Dataset.from_dict({"source": [], "target": []}))


def test_data_collator_pads_labels_with_minus_100(tokenizer):
    enc = tokenizer(["walk left", "jump"], text_target=["I_TURN_LEFT I_WALK", "I_JUMP"])
    features = [{key: enc[key][i] for key in enc} for i in range(2)]
    batch = DataCollatorForSeq2Seq(tokenizer)(features)
    assert batch["labels"].tolist()[1] == [tokenizer.target_vocab["I_JUMP"], 2, -100]
    assert batch["input_ids"].tolist()[1][-1] == 0


def test_vocabularies_are_fixed(tokenizer):
    with pytest.raises(NotImplementedError, match="fixed"):
        tokenizer.add_tokens(["crawl"])


def test_source_bos_prepends_start_to_sources_only_and_survives_saving(tmp_path):
    tokenizer = LexicalTokenizer.from_texts(["dax lug"], ["RED BLUE"], source_bos=True)
    batch = tokenizer(["dax lug"], text_target=["RED BLUE"])
    assert batch["input_ids"] == [[1, 4, 5, 2]] and batch["labels"] == [[5, 4, 2]]
    assert tokenizer.decode_source(batch["input_ids"][0], skip_special_tokens=True) == "dax lug"
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded.source_bos and reloaded(["lug"])["input_ids"] == [[1, 5, 2]]
    assert not LexicalTokenizer.from_texts(["dax"], ["RED"]).source_bos
    with pytest.raises(ValueError, match="source_bos"):
        LexicalTokenizer.from_pretrained(tmp_path, source_bos=False)


def test_truncation_follows_the_transformers_flags_and_keeps_the_special_tokens(tokenizer):
    s = tokenizer.source_vocab
    words = [s["walk"], s["left"], s["jump"], s["twice"]]
    text = "walk left jump twice"
    # max_length alone, truncation=False, or padding="max_length" never cut a sequence (as in PreTrainedTokenizerFast)
    assert tokenizer(text, max_length=2, truncation=False)["input_ids"] == words + [2]
    assert tokenizer(text, padding="max_length", max_length=2)["input_ids"] == words + [2]
    # truncation drops words, not the </s> that teaches the model to stop; without specials it keeps the first words
    assert tokenizer(text, truncation=True, max_length=3)["input_ids"] == words[:2] + [2]
    assert tokenizer(text, truncation=True, max_length=2, add_special_tokens=False)["input_ids"] == words[:2]
    tokenizer.truncation_side = "left"
    assert tokenizer(text, truncation=True, max_length=3)["input_ids"] == words[2:] + [2]
    tokenizer.truncation_side = "right"
    t = tokenizer.target_vocab
    batch = tokenizer("walk", text_target="I_JUMP I_WALK I_JUMP", truncation=True, max_length=2)
    assert batch["labels"] == [t["I_JUMP"], 2]
    with_bos = LexicalTokenizer.from_texts(["walk left jump twice"], ["I_WALK"], source_bos=True)
    b = with_bos.source_vocab
    assert with_bos(text, truncation=True, max_length=3)["input_ids"] == [1, b["walk"], 2]
    with pytest.raises(ValueError, match="no room for the special tokens"):
        with_bos(text, truncation=True, max_length=1)


def test_unsupported_outputs_are_an_error_not_silently_missing(tokenizer):
    for flag in ("return_offsets_mapping", "return_overflowing_tokens", "return_special_tokens_mask"):
        with pytest.raises(NotImplementedError, match=flag):
            tokenizer(["walk left"], **{flag: True})


def test_a_target_token_looked_up_on_the_source_side_is_warned_about(tokenizer, caplog):
    """convert_tokens_to_ids reads the source side (like encoding): a target token gives <unk>, e.g. in bad_words_ids
    it would silently ban <unk>; the warning says where the token's id is."""
    with caplog.at_level("WARNING"):
        assert tokenizer.convert_tokens_to_ids("walk") == tokenizer.source_vocab["walk"]
        assert "vocabulary" not in caplog.text
        assert tokenizer.convert_tokens_to_ids("I_JUMP") == tokenizer.unk_token_id
    assert "target_vocab" in caplog.text
    assert tokenizer.convert_ids_to_tokens([tokenizer.target_vocab["I_JUMP"]]) == ["I_JUMP"]


def test_a_damaged_saved_tokenizer_gives_an_error_naming_the_file(tokenizer, tmp_path):
    tokenizer.save_pretrained(tmp_path)
    source_file = tmp_path / "source_tokenizer.json"
    text = source_file.read_text()
    source_file.write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match="source_tokenizer.json: not a readable source tokenizer file"):
        AutoTokenizer.from_pretrained(tmp_path)
    source_file.unlink()
    with pytest.raises(ValueError, match="holds source_tokenizer.json; is it missing"):
        AutoTokenizer.from_pretrained(tmp_path)


def test_an_empty_batch_has_the_same_keys_as_any_batch(tokenizer):
    assert set(tokenizer([])) == set(tokenizer(["dax"])) == {"input_ids", "attention_mask"}
    assert tokenizer([]) == {"input_ids": [], "attention_mask": []}
    assert set(tokenizer([], return_attention_mask=False)) == {"input_ids"}
