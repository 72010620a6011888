"""Model-level behaviour: cached decoding, generate(), save/load, input validation."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, GenerationConfig

import lexical_hf
from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration
from lexical_hf.backbones.lstm import LSTMDecoderCache
from lexical_hf.modeling_lexical import CACHE_NAME
from conftest import encode_batch, random_lexicon, small_model

CONFIGS = {
    "lexical-sigmoid": dict(lexical_mode="lexical", gate="sigmoid"),
    "lexical-copy_token-bidirectional": dict(lexical_mode="lexical", gate="copy_token", bidirectional_encoder=True),
    "none": dict(lexical_mode="none"),
}


def lexical_model(tokenizer, seed=0, **overrides):
    model = small_model(tokenizer, seed=seed, **overrides)
    if model.config.lexical_mode != "none":
        model.set_lexicon(random_lexicon(tokenizer.source_vocab_size, tokenizer.target_vocab_size, seed=seed))
    return model


def peaky(model, scale=3.0, eos_penalty=4.0):
    """A random model is near-uniform and stops at once; sharper weights and a late </s> give long, diverse beams,
    which are what exercise the state reorder."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(scale)
        model.lexical_head.write_projection.bias[model.config.eos_token_id] -= eos_penalty
    return model


def sequence_log_probs(model, input_ids, attention_mask, sequences, eos_id=2, pad_id=0):
    """Σ log p of each generated sequence (after the start token, up to and including </s>) by teacher forcing."""
    labels = sequences[:, 1:].clone()
    finished = torch.cumsum((labels == eos_id).long(), -1)
    after_eos = (finished - (labels == eos_id).long()) > 0
    labels[after_eos | (labels == pad_id)] = -100
    with torch.no_grad():
        log_probs = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=sequences[:, :-1]).logits
    picked = log_probs.gather(-1, labels.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return torch.where(labels != -100, picked, torch.zeros_like(picked)).sum(-1)


@pytest.mark.parametrize("name", CONFIGS)
def test_cached_stepwise_decoding_equals_teacher_forcing(toy_tokenizer, toy_data, name):
    model = lexical_model(toy_tokenizer, **CONFIGS[name])
    batch = encode_batch(toy_tokenizer, toy_data[5:9])
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    with torch.no_grad():
        full = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                     decoder_input_ids=decoder_input_ids).logits
        encoder_outputs = model.get_encoder()(batch["input_ids"], batch["attention_mask"])
        cache, steps = None, []
        for i in range(decoder_input_ids.shape[1]):
            out = model(encoder_outputs=encoder_outputs, attention_mask=batch["attention_mask"],
                        decoder_input_ids=decoder_input_ids[:, i : i + 1], cache=cache, use_cache=True)
            cache = out[CACHE_NAME]
            steps.append(out.logits)
    assert isinstance(cache, LSTMDecoderCache) and cache.get_seq_length() == decoder_input_ids.shape[1]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("num_beams", [1, 4])
def test_generate_with_and_without_cache_agree(toy_tokenizer, toy_data, name, num_beams):
    model = lexical_model(toy_tokenizer, **CONFIGS[name])
    batch = encode_batch(toy_tokenizer, toy_data[:7])
    kwargs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=8,
                  num_beams=num_beams, do_sample=False)
    cached = model.generate(**kwargs, use_cache=True)
    uncached = model.generate(**kwargs, use_cache=False)
    assert torch.equal(cached, uncached)


@pytest.mark.parametrize("name", ["lexical-sigmoid", "transformer-lexical"])
@pytest.mark.parametrize("num_beams", [1, 3])
def test_cached_generate_feeds_the_decoder_one_new_token_per_step(toy_tokenizer, toy_data, name, num_beams):
    """generate() must hand the decoder state back each step (its name changed in transformers 5.24): without it
    the output is the same but every step re-runs the whole prefix, so agreement with use_cache=False is not enough."""
    config = CONFIGS[name] if name in CONFIGS else dict(backbone="transformer", lexical_mode="lexical")
    model = lexical_model(toy_tokenizer, **config)
    batch = encode_batch(toy_tokenizer, toy_data[:4])
    lengths, forward = [], model.model.decoder.forward

    def recording_forward(decoder_input_ids, *args, **kwargs):
        lengths.append(decoder_input_ids.shape[1])
        return forward(decoder_input_ids, *args, **kwargs)

    model.model.decoder.forward = recording_forward
    model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, min_new_tokens=6,
                   num_beams=num_beams, do_sample=False)
    assert lengths == [1] * 6, lengths


@pytest.mark.parametrize("name", ["lexical-sigmoid", "transformer-lexical"])
def test_generate_works_if_transformers_hands_the_model_its_own_empty_cache(toy_tokenizer, toy_data, name, monkeypatch):
    """The opt-out from generate()'s default key/value cache is a private hook; should a release stop consulting it,
    forward must treat the empty transformers cache as no state (a filled one is an error)."""
    config = CONFIGS[name] if name in CONFIGS else dict(backbone="transformer", lexical_mode="lexical")
    model = lexical_model(toy_tokenizer, **config)
    batch = encode_batch(toy_tokenizer, toy_data[:5])
    kwargs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, do_sample=False)
    expected = {beams: model.generate(**kwargs, num_beams=beams) for beams in (1, 3)}
    monkeypatch.setattr(type(model), "_supports_default_dynamic_cache", classmethod(lambda cls: True))
    for beams in (1, 3):
        assert torch.equal(model.generate(**kwargs, num_beams=beams), expected[beams])
    from transformers import DynamicCache

    filled = DynamicCache()
    filled.update(torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2, 4), layer_idx=0)
    decoder_input_ids = torch.full((5, 1), model.config.decoder_start_token_id)
    with pytest.raises(TypeError, match="decoder's own state"):
        model(**{k: batch[k] for k in ("input_ids", "attention_mask")}, decoder_input_ids=decoder_input_ids, cache=filled)


def test_past_key_values_is_the_cache_under_its_old_name(toy_tokenizer, toy_data):
    model = lexical_model(toy_tokenizer, **CONFIGS["lexical-sigmoid"])
    batch = encode_batch(toy_tokenizer, toy_data[:3])
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], use_cache=True)
    with torch.no_grad():
        def state_after_two_tokens():
            return model(**inputs, decoder_input_ids=decoder_input_ids[:, :2])[CACHE_NAME]

        new_name = model(**inputs, decoder_input_ids=decoder_input_ids[:, 2:], cache=state_after_two_tokens())
        old_name = model(**inputs, decoder_input_ids=decoder_input_ids[:, 2:], past_key_values=state_after_two_tokens())
        with pytest.raises(ValueError, match="not both"):
            model(**inputs, decoder_input_ids=decoder_input_ids[:, 2:], cache=state_after_two_tokens(),
                  past_key_values=state_after_two_tokens())
    assert decoder_input_ids.shape[1] > 2 and isinstance(new_name[CACHE_NAME], LSTMDecoderCache)
    assert torch.equal(new_name.logits, old_name.logits)


@pytest.mark.parametrize("name", ["lexical-sigmoid", "transformer-lexical"])
@pytest.mark.parametrize("num_beams", [1, 2])
def test_generate_returns_the_attention_of_every_step(toy_tokenizer, toy_data, name, num_beams):
    """generate(return_dict_in_generate=True, output_attentions=True, output_hidden_states=True) used to fail with
    AttributeError: α per step is what shows where the lexicon read from."""
    config = CONFIGS[name] if name in CONFIGS else dict(backbone="transformer", lexical_mode="lexical")
    model = lexical_model(toy_tokenizer, **config)
    batch = encode_batch(toy_tokenizer, toy_data[:3])
    out = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=4, min_new_tokens=4,
                         num_beams=num_beams, do_sample=False, return_dict_in_generate=True, output_attentions=True,
                         output_hidden_states=True)
    assert len(out.cross_attentions) == 4 and len(out.decoder_hidden_states) == 4
    alpha = torch.cat([step[0] for step in out.cross_attentions], 1)  # (B·beams, steps, S)
    assert alpha.shape == (3 * num_beams, 4, batch["input_ids"].shape[1])
    torch.testing.assert_close(alpha.sum(-1), torch.ones(3 * num_beams, 4))
    assert (alpha.masked_select(~batch["attention_mask"].bool().repeat_interleave(num_beams, 0)[:, None, :]) == 0).all()
    assert out.decoder_hidden_states[0][0].shape == (3 * num_beams, 1, model.config.hidden_size)


def test_greedy_generate_equals_a_manual_argmax_loop(toy_tokenizer, toy_data):
    model = lexical_model(toy_tokenizer, **CONFIGS["lexical-sigmoid"])
    batch = encode_batch(toy_tokenizer, toy_data[:5])
    generated = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6,
                               num_beams=1, do_sample=False)
    sequences = torch.full((5, 1), model.config.decoder_start_token_id)
    done = torch.zeros(5, dtype=torch.bool)
    with torch.no_grad():
        for _ in range(6):  # no cache at all: re-score the whole prefix each step
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                           decoder_input_ids=sequences).logits[:, -1]
            next_ids = logits.argmax(-1).masked_fill(done, model.config.pad_token_id)
            sequences = torch.cat([sequences, next_ids[:, None]], 1)
            done |= next_ids == model.config.eos_token_id
            if done.all():
                break
    assert torch.equal(generated, sequences[:, : generated.shape[1]])


@pytest.mark.parametrize("name", CONFIGS)
def test_beam_scores_are_the_models_own_log_probabilities(toy_tokenizer, toy_data, name):
    model = peaky(lexical_model(toy_tokenizer, **CONFIGS[name]))
    batch = encode_batch(toy_tokenizer, toy_data[:6])
    out = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=4,
                         length_penalty=0.0, output_scores=True, return_dict_in_generate=True)
    rescored = sequence_log_probs(model, batch["input_ids"], batch["attention_mask"], out.sequences)
    torch.testing.assert_close(out.sequences_scores, rescored, atol=1e-4, rtol=1e-4)
    greedy = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6)
    greedy_scores = sequence_log_probs(model, batch["input_ids"], batch["attention_mask"], greedy)
    assert torch.all(out.sequences_scores >= greedy_scores - 1e-4), "beam search found worse sequences than greedy"
    assert (out.sequences != model.config.pad_token_id).sum(-1).float().mean() > 3, "beams too short to test reordering"


def test_a_wrong_beam_reorder_is_caught(toy_tokenizer, toy_data, monkeypatch):
    """The score check above must fail when the recurrent state is not reordered with the beams."""
    model = peaky(lexical_model(toy_tokenizer, seed=3, **CONFIGS["lexical-sigmoid"]))
    batch = encode_batch(toy_tokenizer, toy_data[:6])
    monkeypatch.setattr(LSTMDecoderCache, "reorder_cache", lambda self, beam_idx: None)
    out = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=4,
                         length_penalty=0.0, output_scores=True, return_dict_in_generate=True)
    rescored = sequence_log_probs(model, batch["input_ids"], batch["attention_mask"], out.sequences)
    assert not torch.allclose(out.sequences_scores, rescored, atol=1e-4, rtol=1e-4)


def test_generate_batched_equals_one_by_one(toy_tokenizer, toy_data):
    model = lexical_model(toy_tokenizer, **CONFIGS["lexical-sigmoid"])
    pairs = [toy_data[0], toy_data[30], toy_data[7]]  # different lengths: padding must not leak
    batch = encode_batch(toy_tokenizer, pairs)
    together = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=3)
    texts = toy_tokenizer.batch_decode(together, skip_special_tokens=True)
    for pair, text in zip(pairs, texts):
        single = encode_batch(toy_tokenizer, [pair])
        alone = model.generate(single["input_ids"], max_new_tokens=6, num_beams=3)
        assert toy_tokenizer.decode(alone[0], skip_special_tokens=True) == text


def test_save_and_load_round_trip_is_strict_and_bit_exact_in_a_fresh_process(toy_tokenizer, toy_data, tmp_path):
    model = lexical_model(toy_tokenizer, **CONFIGS["lexical-sigmoid"])
    model.save_pretrained(tmp_path)
    toy_tokenizer.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "lexical_seq2seq"
    assert "lexicon" not in json.loads((tmp_path / "config.json").read_text())  # L lives in the weights only
    batch = encode_batch(toy_tokenizer, toy_data[:4])
    expected = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=2)
    torch.save({"state": model.state_dict(), "batch": dict(batch), "expected": expected}, tmp_path / "reference.pt")

    script = textwrap.dedent(f"""
        import torch, lexical_hf
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
        model, info = AutoModelForSeq2SeqLM.from_pretrained({str(tmp_path)!r}, output_loading_info=True)
        tok = AutoTokenizer.from_pretrained({str(tmp_path)!r})
        assert type(model).__name__ == "LexicalSeq2SeqForConditionalGeneration", type(model)
        assert type(tok).__name__ == "LexicalTokenizer", type(tok)
        assert not info["missing_keys"] and not info["unexpected_keys"], info
        ref = torch.load({str(tmp_path / "reference.pt")!r})
        state = model.state_dict()
        assert state.keys() == ref["state"].keys(), set(state) ^ set(ref["state"])
        for key, value in ref["state"].items():
            assert torch.equal(state[key], value), key
        batch = ref["batch"]
        out = model.eval().generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=2)
        assert torch.equal(out, ref["expected"])
        print("ROUNDTRIP-OK")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert "ROUNDTRIP-OK" in result.stdout, result.stderr[-3000:]


def test_loading_a_partial_or_corrupt_checkpoint_is_an_error(toy_tokenizer, tmp_path):
    from safetensors.torch import load_file, save_file

    model = lexical_model(toy_tokenizer, **CONFIGS["lexical-sigmoid"])
    model.save_pretrained(tmp_path)
    weights = load_file(tmp_path / "model.safetensors")
    weights.pop("lexical_head.lexicon")
    save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(OSError, match="differs from the sha256 recorded when it was saved"):
        LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)
    (tmp_path / "weights_sha256.json").unlink()  # a folder written without digests: strict loading still catches it
    with pytest.raises(ValueError, match="lexical_head.lexicon"):
        LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"\x10\x00\x00\x00garbage")
    with pytest.raises(OSError, match="corrupt or truncated"):
        LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)


def test_save_replaces_files_without_leaving_staging_folders(toy_tokenizer, tmp_path):
    model = lexical_model(toy_tokenizer)
    model.save_pretrained(tmp_path)
    model.save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "generation_config.json", "model.safetensors",
                                                          "weights_sha256.json"]


def test_clear_errors_for_bad_inputs(toy_tokenizer, toy_data):
    model = lexical_model(toy_tokenizer)
    batch = encode_batch(toy_tokenizer, toy_data[:3])
    with pytest.raises(ValueError, match="shape"):
        model.set_lexicon(torch.full((toy_tokenizer.source_vocab_size + 2, toy_tokenizer.target_vocab_size), 0.1))
    bad_labels = batch["labels"].clone()
    bad_labels[0, 0] = toy_tokenizer.target_vocab_size + 5
    with pytest.raises(ValueError, match="labels must be"):
        model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=bad_labels)
    pad_labels = batch["labels"].clone()
    pad_labels[0, 0] = toy_tokenizer.pad_token_id
    with pytest.raises(ValueError, match="-100"):
        model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=pad_labels)
    with pytest.raises(ValueError, match="non-empty"):
        model(input_ids=torch.zeros(2, 0, dtype=torch.long), labels=batch["labels"][:2])
    empty_row = batch["attention_mask"].clone()
    empty_row[1] = 0
    with pytest.raises(ValueError, match="empty source"):
        model(input_ids=batch["input_ids"], attention_mask=empty_row, labels=batch["labels"])
    with pytest.raises(ValueError, match="source_vocab_size"):
        model(input_ids=batch["input_ids"] + 100, labels=batch["labels"])
    left_padded = batch["attention_mask"].flip(-1)
    if not torch.equal(left_padded, batch["attention_mask"]):
        with pytest.raises(ValueError, match="right-padded"):
            model(input_ids=batch["input_ids"], attention_mask=left_padded, labels=batch["labels"])


@pytest.mark.parametrize("backbone", ["lstm", "transformer"])
def test_generate_checks_the_source_like_forward(toy_tokenizer, toy_data, backbone):
    """generate() runs the encoder through get_encoder(), not forward(): the encoder itself must refuse bad sources,
    or a left-padded batch decodes silently wrong (the LSTM reads the padding as input)."""
    model = small_model(toy_tokenizer, backbone=backbone)
    sources = [source for source, _ in toy_data[:3]]
    right = toy_tokenizer(sources, padding=True, return_tensors="pt")
    assert not right["attention_mask"].all(), "the test needs a padded batch"
    model.generate(**right, max_new_tokens=3)  # the valid batch decodes
    toy_tokenizer.padding_side = "left"
    try:
        left = toy_tokenizer(sources, padding=True, return_tensors="pt")
    finally:
        toy_tokenizer.padding_side = "right"
    with pytest.raises(ValueError, match="right-padded"):
        model.generate(**left, max_new_tokens=3)
    with pytest.raises(ValueError, match="right-padded"):
        model.generate(left["input_ids"], max_new_tokens=3)  # the mask transformers builds from the pad id
    empty_row = right["attention_mask"].clone()
    empty_row[1] = 0
    with pytest.raises(ValueError, match="empty source"):
        model.generate(input_ids=right["input_ids"], attention_mask=empty_row, max_new_tokens=3)
    with pytest.raises(ValueError, match="another tokenizer"):
        model.generate(input_ids=right["input_ids"] + 100, attention_mask=right["attention_mask"], max_new_tokens=3)


def test_set_lexicon_rejects_a_tokenizer_of_other_vocabularies(toy_tokenizer):
    other = lexical_hf.LexicalTokenizer.from_texts(["a b"], ["A"])

    class FakeLexicon:
        def to_matrix(self, tokenizer):
            raise AssertionError("must fail before building the matrix")

    with pytest.raises(ValueError, match="do not match"):
        lexical_model(toy_tokenizer).set_lexicon(FakeLexicon(), other)


def test_default_config_builds_a_working_model():
    model = LexicalSeq2SeqForConditionalGeneration(LexicalSeq2SeqConfig()).eval()
    ids = torch.tensor([[5, 6, 2], [7, 2, 0]])
    out = model.generate(ids, attention_mask=ids.ne(0), max_new_tokens=4, num_beams=2)
    assert out.shape[0] == 2 and out[:, 0].eq(model.config.decoder_start_token_id).all()
    # the encoder–decoder plumbing names its two halves (the base lookup would return the whole model as decoder)
    assert model.get_encoder() is model.model.encoder and model.get_decoder() is model.model.decoder
    transformer = LexicalSeq2SeqForConditionalGeneration(LexicalSeq2SeqConfig(backbone="transformer"))
    assert transformer.get_decoder() is transformer.model.decoder


def test_non_finite_loss_is_an_error(toy_tokenizer, toy_data):
    model = lexical_model(toy_tokenizer)
    with torch.no_grad():
        model.lexical_head.write_projection.weight.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="non-finite loss"):
        model(**encode_batch(toy_tokenizer, toy_data[:3]))


def test_lstm_step_matches_torch_lstm(toy_tokenizer, toy_data):
    """The decoder's hand-written recurrence (forward) is exactly nn.LSTM's arithmetic on the same weights (its
    LSTMWeights hold them under nn.LSTM's names, so an nn.LSTM loads them as they are)."""
    model = lexical_model(toy_tokenizer, num_layers=2)
    decoder = model.model.decoder
    batch = encode_batch(toy_tokenizer, toy_data[:3])
    encoder_outputs = model.get_encoder()(batch["input_ids"], batch["attention_mask"])
    cache = decoder.initial_cache(encoder_outputs)
    cache.feed = torch.randn_like(cache.feed)
    tokens = torch.tensor([[4], [5], [6]])
    with torch.no_grad():
        *_, new_cache = decoder(tokens, encoder_outputs, batch["attention_mask"], cache)
        step_input = torch.cat([decoder.embed_tokens(tokens[:, 0]), cache.feed], -1).unsqueeze(1)
        reference = torch.nn.LSTM(decoder.lstm.input_size, decoder.lstm.hidden_size, decoder.lstm.num_layers,
                                  batch_first=True)
        reference.load_state_dict(decoder.lstm.state_dict())
        _, (expected_h, expected_c) = reference(step_input, (cache.hidden, cache.cell))
    torch.testing.assert_close(new_cache.hidden, expected_h, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(new_cache.cell, expected_c, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("code_details", [False, True])
def test_teacher_forcing_skips_steps_past_each_target_without_changing_the_result(toy_tokenizer, toy_data, code_details):
    """With labels the LSTM decoder runs each row only up to its last label (rows sorted, finished ones dropped).
    Loss, log-probs on labelled positions and every gradient equal those of the full T-step run, which is what
    the decoder does without labels; skipped positions carry zero features and even attention."""
    options = dict(feed_dropout=True, combine_decoder_input=True, attention_query_bias=True, gate="copy_token") if code_details else {}
    model = lexical_model(toy_tokenizer, num_layers=2, **options).eval()  # eval: no dropout draws to compare
    pairs = [toy_data[i] for i in (7, 0, 30, 2, 11, 1)]  # targets of different lengths, not sorted
    batch = encode_batch(toy_tokenizer, pairs)
    labels = batch["labels"]
    lengths = labels.ne(-100).sum(1)
    assert len(set(lengths.tolist())) > 1
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)

    skipped = model(**batch)
    skipped.loss.backward()
    skipped_grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    full = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], decoder_input_ids=decoder_input_ids)
    full_loss = torch.nn.functional.nll_loss(full.logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
    full_loss.backward()

    torch.testing.assert_close(skipped.loss, full_loss)
    real = labels.ne(-100)
    torch.testing.assert_close(skipped.logits[real], full.logits[real])
    assert skipped_grads.keys() == {name for name, p in model.named_parameters() if p.grad is not None}
    for name, p in model.named_parameters():
        if p.grad is not None:
            torch.testing.assert_close(skipped_grads[name], p.grad, atol=1e-6, rtol=1e-5, msg=name)
    attention = skipped.cross_attentions[0]
    source_tokens = batch["attention_mask"].float()
    even = (source_tokens / source_tokens.sum(-1, keepdim=True)).unsqueeze(1).expand_as(attention)
    torch.testing.assert_close(attention[~real], even[~real])
    torch.testing.assert_close(skipped.logits.exp().sum(-1), torch.ones(labels.shape))


def test_skipped_steps_leave_each_rows_own_final_state_in_the_cache(toy_tokenizer, toy_data):
    """The cache after a length-skipping run holds, for every row, the state after its own last target step."""
    model = lexical_model(toy_tokenizer, num_layers=2).eval()
    pairs = [toy_data[i] for i in (7, 0, 11, 2)]  # longest first is rows (2, 0, 1, 3): not its own inverse
    batch = encode_batch(toy_tokenizer, pairs)
    decoder = model.model.decoder
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    lengths = batch["labels"].ne(-100).sum(1)
    with torch.no_grad():
        encoder_outputs = model.get_encoder()(batch["input_ids"], batch["attention_mask"])
        *_, cache = decoder(decoder_input_ids, encoder_outputs, batch["attention_mask"], target_lengths=lengths)
        for row, length in enumerate(lengths.tolist()):
            row_outputs = type(encoder_outputs)(**{key: value[row : row + 1] for key, value in encoder_outputs.items()})
            *_, own = decoder(decoder_input_ids[row : row + 1, :length], row_outputs, batch["attention_mask"][row : row + 1])
            torch.testing.assert_close(cache.hidden[:, row], own.hidden[:, 0], atol=1e-6, rtol=1e-5)
            torch.testing.assert_close(cache.cell[:, row], own.cell[:, 0], atol=1e-6, rtol=1e-5)
            torch.testing.assert_close(cache.feed[row], own.feed[0], atol=1e-6, rtol=1e-5)


def test_feed_dropout_drops_the_fed_back_vector_only_in_training(toy_tokenizer, toy_data):
    """feed_dropout (the paper's code): output_dropout moves from the head into the decoder, where it also hits the
    fed-back vector. Same weights, eval mode: identical log-probs; training mode: the feed is dropped."""
    batch = encode_batch(toy_tokenizer, toy_data[:6])
    plain = lexical_model(toy_tokenizer, output_dropout=0.5)
    code = lexical_model(toy_tokenizer, output_dropout=0.5, feed_dropout=True)
    code.load_state_dict(plain.state_dict())
    assert plain.lexical_head.output_dropout.p == 0.5 and code.lexical_head.output_dropout.p == 0.0
    assert code.model.decoder.output_dropout.p == 0.5
    with torch.no_grad():
        torch.testing.assert_close(code(**batch).logits, plain(**batch).logits)

    def zero_fraction(model):
        model.train()
        torch.manual_seed(0)
        with torch.no_grad():
            encoder_outputs = model.get_encoder()(batch["input_ids"], batch["attention_mask"])
            features, *_ = model.model.decoder(batch["labels"].clamp(min=1), encoder_outputs, batch["attention_mask"])
        model.eval()
        return (features == 0).float().mean().item()

    # the head reads the decoder's features: with feed_dropout they (and so the fed-back vector) carry the 0.5 drop
    dropout = plain.config.dropout
    assert zero_fraction(plain) == pytest.approx(dropout, abs=0.08)
    assert zero_fraction(code) == pytest.approx(1 - (1 - dropout) * 0.5, abs=0.08)


def test_a_decoder_state_that_overflows_ends_its_hypothesis_instead_of_poisoning_beam_search(toy_tokenizer, toy_data):
    """With combine_decoder_input (the paper code's W_o over the unsquashed o_{i-1}) a long decode can overflow the
    fed-back vector. The NaN scores must not reach generate(): a diverged hypothesis ends with </s>, so greedy and
    beam search return finished sequences with finite scores."""
    model = lexical_model(toy_tokenizer, lexical_mode="none", combine_decoder_input=True)
    hidden, eos = model.config.hidden_size, toy_tokenizer.eos_token_id
    with torch.no_grad():  # o_i ≈ 40 · o_{i-1} overflows float32 after ~25 steps; </s> is never chosen before
        model.model.decoder.combine.weight[:, -hidden:] = 40.0 * torch.eye(hidden)
        model.lexical_head.write_projection.bias[eos] -= 1000.0
    batch = encode_batch(toy_tokenizer, toy_data[:3])
    for num_beams, use_cache in ((1, True), (3, True), (1, False), (3, False)):
        out = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], num_beams=num_beams,
                             max_length=60, output_scores=True, return_dict_in_generate=True, use_cache=use_cache)
        assert out.sequences.shape[1] < 60  # stopped at the overflow, not at max_length
        assert (out.sequences == eos).any(-1).all()  # every returned sequence ended
        assert not any(torch.isnan(step).any() for step in out.scores)
        if num_beams > 1:
            assert torch.isfinite(out.sequences_scores).all()


def test_an_abstaining_lexicon_is_never_decoded_to_unk_even_after_reloading(toy_tokenizer, toy_data, tmp_path):
    # `twice` has no entry and every colour is claimed: with the paper code's fallback its row goes to <unk>,
    # which the model must then never generate (the paper's code masks it at decoding too)
    lexicon = lexical_hf.Lexicon(
        {"dax": {"RED": 1}, "lug": {"BLUE": 1}, "wif": {"GREEN": 1}, "zup": {"YELLOW": 1}},
        fallback="mutual_exclusivity_or_abstain",
    )
    unk = toy_tokenizer.target_vocab["<unk>"]
    assert lexicon.to_matrix(toy_tokenizer)[toy_tokenizer.source_vocab["twice"], unk] == 1.0
    model = small_model(toy_tokenizer, gate="copy_token")
    with torch.no_grad():
        model.lexical_head.write_projection.bias[unk] += 50.0  # the write path now prefers <unk> at every step
    batch = encode_batch(toy_tokenizer, toy_data[:6])
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=5)
    model.set_lexicon(lexicon.to_matrix(toy_tokenizer))  # a bare matrix carries no fallback: nothing suppressed
    assert model.generate(**inputs)[:, 1:].eq(unk).any()
    model.set_lexicon(lexicon, toy_tokenizer)
    assert model.generation_config.suppress_tokens == [unk]
    assert not model.generate(**inputs).eq(unk).any()
    # a call's own suppress_tokens or generation_config adds to the suppression instead of lifting it
    assert not model.generate(**inputs, suppress_tokens=[toy_tokenizer.target_vocab["RED"]]).eq(unk).any()
    assert not model.generate(**inputs, generation_config=GenerationConfig(num_beams=2)).eq(unk).any()
    model.save_pretrained(tmp_path)
    reloaded = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path).eval()
    assert reloaded.generation_config.suppress_tokens == [unk]
    assert torch.equal(reloaded.generate(**inputs), model.generate(**inputs))
    # the source <s> of a source_bos tokenizer abstains too, whatever the fallback
    sources, targets = zip(*toy_data)
    bos_tokenizer = lexical_hf.LexicalTokenizer.from_texts(sources, targets, source_bos=True)
    plain = lexical_hf.Lexicon(dict(lexicon.entries))
    assert plain.to_matrix(bos_tokenizer)[bos_tokenizer.bos_token_id, unk] == 1.0
    bos_model = small_model(bos_tokenizer)
    bos_model.set_lexicon(plain, bos_tokenizer)
    assert bos_model.generation_config.suppress_tokens == [unk]
    no_bos_model = small_model(toy_tokenizer)
    no_bos_model.set_lexicon(plain, toy_tokenizer)
    assert not no_bos_model.generation_config.suppress_tokens


def test_generate_texts_keeps_the_order_of_sources_and_matches_one_at_a_time(toy_tokenizer, toy_data):
    from lexical_hf.decoding import generate_texts

    model = lexical_model(toy_tokenizer, **CONFIGS["lexical-sigmoid"])
    model.generation_config.max_new_tokens = 6
    sources = [toy_data[k][0] for k in (30, 0, 7, 31, 1)]  # mixed lengths: sorted into batches, returned in order
    batched = generate_texts(model, toy_tokenizer, sources, batch_size=2)
    assert batched == [generate_texts(model, toy_tokenizer, [source])[0] for source in sources]
    assert len(set(batched)) > 1  # the sources decode differently, so a reordering would show



def test_generate_texts_returns_every_sequence_asked_for_and_refuses_bad_arguments(toy_tokenizer, toy_data):
    from lexical_hf.decoding import generate_texts

    model = lexical_model(toy_tokenizer, **CONFIGS["lexical-sigmoid"])
    sources = [toy_data[k][0] for k in (30, 0, 7)]
    # k outputs per source, each source's own: the beams of one source decoded alone
    several = generate_texts(model, toy_tokenizer, sources, batch_size=2, num_beams=3, num_return_sequences=2,
                             max_new_tokens=6)
    assert [len(outputs) for outputs in several] == [2, 2, 2]
    assert several == [generate_texts(model, toy_tokenizer, [source], num_beams=3, num_return_sequences=2,
                                      max_new_tokens=6)[0] for source in sources]
    assert [outputs[0] for outputs in several] == generate_texts(model, toy_tokenizer, sources, num_beams=3,
                                                                 max_new_tokens=6)
    # max_new_tokens caps the output without transformers' "both max_new_tokens and max_length" warning, in
    # generate() itself (the model's own cap is a max_new_tokens too) and in generate_texts
    from transformers.testing_utils import CaptureLogger
    from transformers.utils import logging as transformers_logging

    with CaptureLogger(transformers_logging.get_logger("transformers")) as captured:
        direct = model.generate(**toy_tokenizer(sources[:1], return_tensors="pt"), max_new_tokens=2)
    assert "max_new_tokens" not in captured.out and direct.shape[1] <= 3
    with CaptureLogger(transformers_logging.get_logger("transformers")) as captured:
        capped = generate_texts(model, toy_tokenizer, sources, max_new_tokens=2)
    assert "max_new_tokens" not in captured.out
    assert all(len(text.split()) <= 2 for text in capped)
    with pytest.raises(TypeError, match="not one string"):
        generate_texts(model, toy_tokenizer, "dax lug")
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="batch_size"):
            generate_texts(model, toy_tokenizer, sources, batch_size=bad)


def _permuted_tokenizer(tokenizer):
    """The same words at other ids (two source words swapped): what a tokenizer rebuilt from other data can be."""
    source = dict(tokenizer.source_vocab)
    source["dax"], source["lug"] = source["lug"], source["dax"]
    return lexical_hf.LexicalTokenizer(source_vocab=source, target_vocab=dict(tokenizer.target_vocab))


def test_a_tokenizer_with_the_same_sizes_but_other_ids_is_refused(toy_tokenizer, toy_data, tmp_path):
    """Sizes alone cannot tell a rebuilt tokenizer from the model's: L and the embeddings would be silently
    permuted (the model would read `dax` as `lug`). The fingerprint recorded by set_lexicon catches it."""
    from lexical_hf.decoding import generate_texts

    permuted = _permuted_tokenizer(toy_tokenizer)
    assert (permuted.source_vocab_size, permuted.target_vocab_size) == (toy_tokenizer.source_vocab_size,
                                                                        toy_tokenizer.target_vocab_size)
    lexicon = lexical_hf.learn_lexicon(tuple(zip(*toy_data)), method="simple")
    model = lexical_model(toy_tokenizer)
    model.set_lexicon(lexicon, toy_tokenizer)
    assert model.config.vocabulary_sha256 == toy_tokenizer.vocabulary_sha256 != permuted.vocabulary_sha256
    with pytest.raises(ValueError, match="differ from the ones the model was built with"):
        model.set_lexicon(lexicon, permuted)
    with pytest.raises(ValueError, match="differ from the ones the model was built with"):
        generate_texts(model, permuted, ["dax"], max_new_tokens=3)
    model.save_pretrained(tmp_path)
    reloaded = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)
    assert generate_texts(reloaded, toy_tokenizer, ["dax lug"], max_new_tokens=3) == generate_texts(
        model, toy_tokenizer, ["dax lug"], max_new_tokens=3)
    with pytest.raises(ValueError, match="differ from the ones the model was built with"):
        generate_texts(reloaded, permuted, ["dax"], max_new_tokens=3)
    model.set_lexicon(model.lexical_head.uniform_lexicon())  # a bare matrix keeps the ids: the fingerprint stays
    assert model.config.vocabulary_sha256 == toy_tokenizer.vocabulary_sha256


def test_lexicon_json_beside_the_weights_always_describes_them(toy_tokenizer, toy_data, tmp_path):
    from transformers.testing_utils import CaptureLogger

    from lexical_hf.modeling_lexical import logger as modeling_logger

    simple = lexical_hf.learn_lexicon(tuple(zip(*toy_data)), method="simple")
    model = lexical_model(toy_tokenizer)
    model.set_lexicon(simple, toy_tokenizer)
    model.save_pretrained(tmp_path / "a")
    assert (tmp_path / "a" / "lexicon.json").is_file()
    assert LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path / "a").lexicon == simple
    # L replaced by a matrix, saved over the same folder: the old lexicon.json would describe another L
    model.set_lexicon(model.lexical_head.uniform_lexicon())
    model.save_pretrained(tmp_path / "a")
    assert not (tmp_path / "a" / "lexicon.json").exists()
    assert LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path / "a").lexicon is None
    # a lexicon.json that is not the one L was built from (copied in, or left by an older version) is not attached
    other = lexical_hf.Lexicon({"dax": {"BLUE": 1}, "lug": {"RED": 1}})
    assert other.content_sha256() != simple.content_sha256()
    model.set_lexicon(simple, toy_tokenizer)
    model.save_pretrained(tmp_path / "b")
    other.save_pretrained(tmp_path / "b")
    with CaptureLogger(modeling_logger) as captured:
        reloaded = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path / "b")
    assert reloaded.lexicon is None
    assert "does not describe the L in these weights" in captured.out
    torch.testing.assert_close(reloaded.lexical_head.lexicon_matrix(), model.lexical_head.lexicon_matrix())
    # a lexicon.json that is not JSON is a damaged checkpoint: an error naming the file, not a bare parser error
    (tmp_path / "b" / "lexicon.json").write_text('{"format": "lexical_hf.lexicon", "entries": {"dax')
    with pytest.raises(OSError, match=r"lexicon\.json is not a readable lexicon file"):
        LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path / "b")


def test_a_matrix_replacing_an_abstaining_lexicon_clears_what_that_lexicon_set(toy_tokenizer):
    abstaining = lexical_hf.Lexicon({"dax": {"RED": 1}}, fallback="mutual_exclusivity_or_abstain", temperature=0.5)
    model = lexical_model(toy_tokenizer)
    unk = toy_tokenizer.unk_token_id
    model.generation_config.suppress_tokens = [toy_tokenizer.target_vocab["RED"]]  # the user's own choice stays
    model.set_lexicon(abstaining, toy_tokenizer)
    assert model.generation_config.suppress_tokens == sorted([unk, toy_tokenizer.target_vocab["RED"]])
    assert model.config.lexicon_temperature == 0.5
    model.set_lexicon(model.lexical_head.uniform_lexicon())
    assert model.generation_config.suppress_tokens == [toy_tokenizer.target_vocab["RED"]]
    assert model.config.lexicon_temperature == 0.0 and model.config.lexicon_info == {"source": "matrix"}
    model.set_lexicon(abstaining, toy_tokenizer)
    model.set_lexicon(lexical_hf.Lexicon({"dax": {"RED": 1}}), toy_tokenizer)  # no abstaining rows either
    assert model.generation_config.suppress_tokens == [toy_tokenizer.target_vocab["RED"]]



def test_transformers_api_edges_behave_as_for_a_stock_seq2seq_model(toy_tokenizer, toy_data, tmp_path):
    model = lexical_model(toy_tokenizer)
    batch = encode_batch(toy_tokenizer, toy_data[:3])
    # return_dict=False gives a tuple, loss first (unpacking a ModelOutput would give its keys)
    loss, logits, *_ = model(**batch, return_dict=False)
    as_dict = model(**batch)
    assert torch.equal(loss, as_dict.loss) and torch.equal(logits, as_dict.logits)
    # encoder_outputs must be the encoder's own output: a tuple has lost the source ids the lexicon reads
    encoder_outputs = model.get_encoder()(batch["input_ids"], batch["attention_mask"])
    assert torch.equal(model(encoder_outputs=encoder_outputs, attention_mask=batch["attention_mask"],
                             labels=batch["labels"]).loss, as_dict.loss)
    with pytest.raises(TypeError, match="LexicalEncoderOutput"):
        model(encoder_outputs=encoder_outputs.to_tuple(), labels=batch["labels"])
    with pytest.raises(ValueError, match="every label is -100"):
        model(input_ids=batch["input_ids"], labels=torch.full_like(batch["labels"], -100))
    with pytest.raises(NotImplementedError, match="vocabularies are fixed"):
        model.resize_token_embeddings()
    # from_config: new weights, so no lexicon, whatever the config's lexicon_info says
    model.set_lexicon(lexical_hf.learn_lexicon(tuple(zip(*toy_data)), method="simple"), toy_tokenizer)
    fresh = AutoModelForSeq2SeqLM.from_config(model.config)
    assert fresh.config.lexicon_info is None and model.config.lexicon_info is not None
    # a max_decode_length given to from_pretrained caps generation (the saved generation_config.json would not)
    model.save_pretrained(tmp_path)
    capped = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path, max_decode_length=4)
    assert capped.generation_config.max_new_tokens == 4
    # a sharded save followed by a single-file one leaves no stale shards behind
    model.save_pretrained(tmp_path, max_shard_size="20KB")
    assert any("-of-" in name for name in os.listdir(tmp_path))
    model.save_pretrained(tmp_path)
    assert not any("-of-" in name or name.endswith(".index.json") for name in os.listdir(tmp_path))
    reloaded = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)
    assert torch.equal(reloaded.lexical_head.lexicon, model.lexical_head.lexicon)


def test_config_refuses_special_ids_the_tokenizer_does_not_use_and_takes_whole_numbers():
    for wrong in (dict(eos_token_id=0), dict(decoder_start_token_id=2), dict(pad_token_id=None)):
        with pytest.raises(Exception, match="special token ids are fixed"):
            LexicalSeq2SeqConfig(**wrong)
    with pytest.raises(Exception, match="max_decode_length must be >= 1"):
        LexicalSeq2SeqConfig(max_decode_length=0)
    config = LexicalSeq2SeqConfig(dropout=0, output_dropout=0, lexicon_temperature=1)
    assert config.dropout == 0 and config.lexicon_temperature == 1
    with pytest.raises(Exception, match="train_lexicon=True needs a lexicon"):  # nothing to fine-tune
        LexicalSeq2SeqConfig(lexical_mode="none", train_lexicon=True)
    assert LexicalSeq2SeqConfig(lexical_mode="copy", train_lexicon=True).train_lexicon


def test_cached_decoding_reads_the_attention_keys_from_the_state(toy_tokenizer, toy_data):
    """The keys W_attᵀ e_j depend only on the source: computed once when the state is created, reordered with the
    beams, and a state built without them (as before they were cached) decodes the same."""
    model = lexical_model(toy_tokenizer, **CONFIGS["lexical-copy_token-bidirectional"], attention_query_bias=True)
    batch = encode_batch(toy_tokenizer, toy_data[5:9])
    start = torch.full((4, 1), model.config.decoder_start_token_id)
    with torch.no_grad():
        encoder_outputs = model.get_encoder()(batch["input_ids"], batch["attention_mask"])
        step = lambda cache: model(encoder_outputs=encoder_outputs, attention_mask=batch["attention_mask"],  # noqa: E731
                                   decoder_input_ids=start, cache=cache, use_cache=True)
        first = step(None)
        cache = first[CACHE_NAME]
        memory = encoder_outputs.last_hidden_state
        torch.testing.assert_close(cache.keys, (memory @ model.model.decoder.attention_query.weight).transpose(1, 2))
        torch.testing.assert_close(cache.query_bias_scores, memory @ model.model.decoder.attention_query.bias)
        without_keys = LSTMDecoderCache(cache.hidden, cache.cell, cache.feed, cache.seq_length)
        torch.testing.assert_close(step(without_keys).logits, step(cache).logits)
        cache.keys = torch.zeros_like(cache.keys)  # the step reads the state's keys: uniform attention now
        assert not torch.allclose(step(cache).logits, step(without_keys).logits)
    order = torch.tensor([3, 0, 0, 2])
    reordered = first[CACHE_NAME]
    keys, bias_scores = reordered.keys.clone(), reordered.query_bias_scores.clone()
    reordered.reorder_cache(order)
    assert torch.equal(reordered.keys, keys[order]) and torch.equal(reordered.query_bias_scores, bias_scores[order])
