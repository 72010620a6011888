"""The Transformer backbone: the core model's head invariants and generation checks, over both backbones, plus the
Transformer's own cache (a broken cache must be caught), save/load and a Seq2SeqTrainer run."""

import pytest
import torch
from huggingface_hub.errors import StrictDataclassClassValidationError
from transformers import AutoModelForSeq2SeqLM

from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration
from lexical_hf.backbones.lstm import LSTMDecoderCache
from lexical_hf.backbones.transformer import TransformerDecoderCache
from lexical_hf.modeling_lexical import CACHE_NAME
from conftest import encode_batch, random_lexicon, small_model, train_on_toy_task
from test_model import peaky, sequence_log_probs

TRANSFORMER = dict(backbone="transformer", num_attention_heads=4)  # small_config: embedding 16 → d_model 24, 2 layers
CONFIGS = {
    "lstm": dict(backbone="lstm"),
    # the paper's code details (run_lexical.py --preset paper): feed dropout, W_o over the step input, query bias
    "lstm-paper_code-copy_token": dict(backbone="lstm", feed_dropout=True, combine_decoder_input=True,
                                       attention_query_bias=True, output_dropout=0.3, gate="copy_token"),
    "transformer-sinusoidal-cross_mean-prenorm": dict(**TRANSFORMER, position_encoding="sinusoidal"),
    "transformer-relative-dedicated-postnorm-copy_token": dict(
        **TRANSFORMER, position_encoding="relative", relative_attention_max_distance=2,
        attention_source="dedicated_head", norm_first=False, gate="copy_token"),
    "transformer-learned-no_projection": dict(**TRANSFORMER, position_encoding="learned", embedding_size=24),
    "transformer-relative-none": dict(**TRANSFORMER, position_encoding="relative", lexical_mode="none"),
}
TRANSFORMERS = [name for name in CONFIGS if name.startswith("transformer")]
CACHES = {"lstm": LSTMDecoderCache, "transformer": TransformerDecoderCache}


def lexical_model(tokenizer, name, seed=0, **overrides):
    model = small_model(tokenizer, seed=seed, **{**CONFIGS[name], **overrides})
    if model.config.lexical_mode != "none":
        model.set_lexicon(random_lexicon(tokenizer.source_vocab_size, tokenizer.target_vocab_size, seed=seed))
    return model


def stepwise_log_probs(model, batch, decoder_input_ids):
    """Decode one token at a time through the cache; returns (log-probs (B, T, V), the final cache)."""
    with torch.no_grad():
        encoder_outputs = model.get_encoder()(batch["input_ids"], batch["attention_mask"])
        cache, steps = None, []
        for i in range(decoder_input_ids.shape[1]):
            out = model(encoder_outputs=encoder_outputs, attention_mask=batch["attention_mask"],
                        decoder_input_ids=decoder_input_ids[:, i : i + 1], cache=cache, use_cache=True)
            cache = out[CACHE_NAME]
            steps.append(out.logits)
    return torch.cat(steps, 1), cache


def teacher_forced(model, batch, decoder_input_ids):
    with torch.no_grad():
        return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                     decoder_input_ids=decoder_input_ids)


def beam_scores_and_rescored(model, batch, max_new_tokens=6):
    out = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=max_new_tokens,
                         num_beams=4, length_penalty=0.0, output_scores=True, return_dict_in_generate=True)
    return out, sequence_log_probs(model, batch["input_ids"], batch["attention_mask"], out.sequences)


def content_lengths(sequences, eos_id=2):
    """Generated tokens before the first </s> (transformers fills finished beams with </s>, not padding, when the
    pad id is 0, so counting non-pad tokens would overstate the lengths)."""
    generated = sequences[:, 1:]
    return (torch.cumsum((generated == eos_id).long(), -1) == 0).sum(-1)


# ---------------------------------------------------------------------------------------------------- head invariants
@pytest.mark.parametrize("name", CONFIGS)
def test_head_invariants_through_the_model(toy_tokenizer, toy_data, name):
    model = lexical_model(toy_tokenizer, name)
    batch = encode_batch(toy_tokenizer, [toy_data[0], toy_data[30], toy_data[7]])  # different lengths: padding
    with torch.no_grad():
        out = model(**batch)
    probs = out.logits.exp()
    torch.testing.assert_close(probs.sum(-1), torch.ones(probs.shape[:2]), atol=1e-5, rtol=0)
    assert torch.all(probs[..., model.config.non_generatable_token_ids] == 0)
    assert torch.all((out.gate >= 0) & (out.gate <= 1))
    alpha = out.cross_attentions[0]  # the α the head used
    source_mask = batch["attention_mask"].bool()[:, None, :].expand_as(alpha)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(alpha.shape[:2]), atol=1e-5, rtol=0)
    assert torch.all(alpha[~source_mask] == 0), "attention mass on source padding"


def backbone_parameters(model):
    """Named parameters that must all receive gradients: encoder, decoder and the attention α comes from."""
    backbone, config = model.model, model.config
    if config.backbone == "lstm":
        return {"encoder": backbone.encoder.lstm.weight_ih_l0, "encoder embeddings": backbone.encoder.embed_tokens.weight,
                "decoder": backbone.decoder.lstm.weight_hh_l0, "attention": backbone.decoder.attention_query.weight}
    decoder = backbone.decoder
    found = {
        "encoder embeddings": backbone.encoder.embed_tokens.weight,
        "encoder first layer": backbone.encoder.layers[0].self_attention.query.weight,
        "encoder last feed-forward": backbone.encoder.layers[-1].feed_forward.outer.weight,
        "decoder embeddings": decoder.embed_tokens.weight,
        "decoder first self-attention": decoder.layers[0].self_attention.key.weight,
        "decoder last cross-attention": decoder.layers[-1].cross_attention.query.weight,
    }
    if config.attention_source == "dedicated_head":
        found["dedicated α head"] = decoder.lexical_attention.query.weight
    if config.position_encoding == "relative":
        found["relative keys"] = decoder.layers[0].self_attention.relative_keys.weight
    if config.position_encoding == "learned":
        found["learned positions"] = decoder.embedding.positions.weight
    return found


@pytest.mark.parametrize("name", [n for n in CONFIGS if CONFIGS[n].get("lexical_mode") != "none"])
def test_gradients_reach_gate_encoder_decoder_attention_and_lexicon(toy_tokenizer, toy_data, name):
    model = lexical_model(toy_tokenizer, name, train_lexicon=True).train()
    model(**encode_batch(toy_tokenizer, toy_data[:6])).loss.backward()
    head = model.lexical_head
    params = {"gate": head.gate_projection.weight if model.config.gate == "sigmoid" else head.write_projection.weight,
              "lexicon": head.lexicon_logits, **backbone_parameters(model)}
    for label, param in params.items():
        assert param.grad is not None and param.grad.abs().sum() > 0, f"no gradient reaches the {label}"
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


# ---------------------------------------------------------------------------------------------------- cached decoding
@pytest.mark.parametrize("name", CONFIGS)
def test_cached_stepwise_decoding_equals_teacher_forcing(toy_tokenizer, toy_data, name):
    model = lexical_model(toy_tokenizer, name)
    batch = encode_batch(toy_tokenizer, toy_data[5:9])
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    full = teacher_forced(model, batch, decoder_input_ids).logits
    steps, cache = stepwise_log_probs(model, batch, decoder_input_ids)
    assert isinstance(cache, CACHES[model.config.backbone]) and cache.get_seq_length() == decoder_input_ids.shape[1]
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=1e-5)


def test_decoding_in_chunks_equals_teacher_forcing_and_leaves_the_given_cache_untouched(toy_tokenizer, toy_data):
    model = lexical_model(toy_tokenizer, "transformer-relative-dedicated-postnorm-copy_token")
    batch = encode_batch(toy_tokenizer, toy_data[-4:])
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    full = teacher_forced(model, batch, decoder_input_ids).logits
    with torch.no_grad():
        first = model(**{k: batch[k] for k in ("input_ids", "attention_mask")}, decoder_input_ids=decoder_input_ids[:, :2])
        cache = first[CACHE_NAME]
        snapshot = [t.clone() for t in cache.self_keys + cache.self_values]
        second = model(**{k: batch[k] for k in ("input_ids", "attention_mask")},
                       decoder_input_ids=decoder_input_ids[:, 2:], cache=cache)
    assert decoder_input_ids.shape[1] > 3 and cache.get_seq_length() == 2 and second[CACHE_NAME] is not cache
    assert all(torch.equal(a, b) for a, b in zip(snapshot, cache.self_keys + cache.self_values))
    torch.testing.assert_close(torch.cat([first.logits, second.logits], 1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("num_beams", [1, 4])
def test_generate_with_and_without_cache_agree(toy_tokenizer, toy_data, name, num_beams):
    model = peaky(lexical_model(toy_tokenizer, name))
    batch = encode_batch(toy_tokenizer, toy_data[:7])
    kwargs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=8,
                  num_beams=num_beams, do_sample=False, output_scores=True, return_dict_in_generate=True)
    cached = model.generate(**kwargs, use_cache=True)
    uncached = model.generate(**kwargs, use_cache=False)
    assert torch.equal(cached.sequences, uncached.sequences)
    torch.testing.assert_close(torch.stack(cached.scores), torch.stack(uncached.scores), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", CONFIGS)
def test_beam_scores_are_the_models_own_log_probabilities(toy_tokenizer, toy_data, name):
    model = peaky(lexical_model(toy_tokenizer, name))
    batch = encode_batch(toy_tokenizer, toy_data[:6])
    out, rescored = beam_scores_and_rescored(model, batch)
    torch.testing.assert_close(out.sequences_scores, rescored, atol=1e-4, rtol=1e-4)
    greedy = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6)
    greedy_scores = sequence_log_probs(model, batch["input_ids"], batch["attention_mask"], greedy)
    assert torch.all(out.sequences_scores >= greedy_scores - 1e-4), "beam search found worse sequences than greedy"
    assert content_lengths(out.sequences).float().mean() > 3, "beams too short to test reordering"


@pytest.mark.parametrize("name", TRANSFORMERS[:2])
def test_greedy_generate_equals_a_manual_argmax_loop_and_batching_does_not_leak(toy_tokenizer, toy_data, name):
    model = peaky(lexical_model(toy_tokenizer, name))
    pairs = [toy_data[0], toy_data[30], toy_data[7]]  # different lengths: padding must not leak
    batch = encode_batch(toy_tokenizer, pairs)
    generated = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6)
    sequences = torch.full((3, 1), model.config.decoder_start_token_id)
    done = torch.zeros(3, dtype=torch.bool)
    for _ in range(6):  # no cache at all: re-score the whole prefix each step
        logits = teacher_forced(model, batch, sequences).logits[:, -1]
        next_ids = logits.argmax(-1).masked_fill(done, model.config.pad_token_id)
        sequences = torch.cat([sequences, next_ids[:, None]], 1)
        done |= next_ids == model.config.eos_token_id
        if done.all():
            break
    assert torch.equal(generated, sequences[:, : generated.shape[1]])
    together = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=3)
    for pair, row in zip(pairs, together):
        alone = model.generate(encode_batch(toy_tokenizer, [pair])["input_ids"], max_new_tokens=6, num_beams=3)
        assert toy_tokenizer.decode(alone[0], skip_special_tokens=True) == toy_tokenizer.decode(row, skip_special_tokens=True)


# ---------------------------------------------------------------------------------------------------- broken caches
@pytest.mark.parametrize("name", TRANSFORMERS[:2])
def test_a_wrong_beam_reorder_is_caught(toy_tokenizer, toy_data, name, monkeypatch):
    """The beam-score check must fail when the cache is not reordered with the beams. A random Transformer often
    repeats one token, so beams can share their histories and a missing reorder is then harmless: the check has to
    fire on at least one of a few seeds (and the intact cache must pass on all of them)."""
    batch = encode_batch(toy_tokenizer, toy_data[:6])
    models = [peaky(lexical_model(toy_tokenizer, name, seed=seed), scale=2.0) for seed in range(4)]
    for model in models:
        out, rescored = beam_scores_and_rescored(model, batch)
        torch.testing.assert_close(out.sequences_scores, rescored, atol=1e-4, rtol=1e-4)
    monkeypatch.setattr(TransformerDecoderCache, "reorder_cache", lambda self, beam_idx: None)
    caught = []
    for model in models:
        out, rescored = beam_scores_and_rescored(model, batch)
        caught.append(not torch.allclose(out.sequences_scores, rescored, atol=1e-4, rtol=1e-4))
    assert any(caught), "no seed's beam scores exposed the missing reorder"


@pytest.mark.parametrize("name", TRANSFORMERS[:2])
def test_a_cache_that_loses_past_keys_is_caught(toy_tokenizer, toy_data, name, monkeypatch):
    """A cache that keeps shapes and positions but forgets what the past tokens were (zeroed keys/values) is the
    silent failure: generate() feeds only the new token. Step-by-step decoding and cached generation must notice."""
    model = peaky(lexical_model(toy_tokenizer, name))
    batch = encode_batch(toy_tokenizer, toy_data[:7])
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    full = teacher_forced(model, batch, decoder_input_ids).logits
    kwargs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=8, num_beams=1)
    uncached = model.generate(**kwargs, use_cache=False)

    forgetful = staticmethod(lambda past, new: new if past is None else torch.cat([torch.zeros_like(past), new], 2))
    monkeypatch.setattr(TransformerDecoderCache, "extend", forgetful)
    steps, _ = stepwise_log_probs(model, batch, decoder_input_ids)
    finite = torch.isfinite(full)
    assert not torch.allclose(steps[finite], full[finite], atol=1e-3), "stepwise check missed a forgetful cache"
    assert not torch.equal(model.generate(**kwargs, use_cache=True), uncached), "generate check missed it"


def test_a_cache_that_restarts_positions_is_caught(toy_tokenizer, toy_data, monkeypatch):
    model = lexical_model(toy_tokenizer, "transformer-sinusoidal-cross_mean-prenorm")
    batch = encode_batch(toy_tokenizer, toy_data[5:9])
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    full = teacher_forced(model, batch, decoder_input_ids).logits
    embedding = model.model.decoder.embedding
    original = embedding.forward
    monkeypatch.setattr(embedding, "forward", lambda ids, positions: original(ids, positions - positions[0]))
    steps, _ = stepwise_log_probs(model, batch, decoder_input_ids)
    finite = torch.isfinite(full)
    assert not torch.allclose(steps[finite], full[finite], atol=1e-3)


# ---------------------------------------------------------------------------------------------------- save / load / config
def test_save_and_load_through_auto_class_is_strict_and_bit_exact(toy_tokenizer, toy_data, tmp_path):
    model = lexical_model(toy_tokenizer, "transformer-relative-dedicated-postnorm-copy_token")
    model.save_pretrained(tmp_path)
    toy_tokenizer.save_pretrained(tmp_path)
    batch = encode_batch(toy_tokenizer, toy_data[:4])
    expected = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=2)

    loaded, info = AutoModelForSeq2SeqLM.from_pretrained(tmp_path, output_loading_info=True)
    assert type(loaded) is LexicalSeq2SeqForConditionalGeneration and loaded.config.backbone == "transformer"
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    for key in ("position_encoding", "attention_source", "norm_first", "relative_attention_max_distance"):
        assert getattr(loaded.config, key) == getattr(model.config, key), key
    state, reference = loaded.state_dict(), model.state_dict()
    assert state.keys() == reference.keys()
    assert all(torch.equal(state[key], reference[key]) for key in reference)
    out = loaded.eval().generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=2)
    assert torch.equal(out, expected)

    from safetensors.torch import load_file, save_file

    weights = load_file(tmp_path / "model.safetensors")
    weights.pop("model.decoder.layers.0.self_attention.relative_keys.weight")
    save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    (tmp_path / "weights_sha256.json").unlink()  # else the changed file is refused before it is read
    with pytest.raises(ValueError, match="relative_keys"):
        AutoModelForSeq2SeqLM.from_pretrained(tmp_path)


@pytest.mark.parametrize("overrides,message", [
    (dict(hidden_size=30, num_attention_heads=4), "multiple of num_attention_heads"),
    (dict(position_encoding="rotary"), "position_encoding"),
    (dict(attention_source="first_layer"), "attention_source"),
    (dict(attention_dropout=1.0), "attention_dropout"),
    (dict(ffn_size=0), "ffn_size"),
    (dict(feed_dropout=True), "feed_dropout: LSTM options"),
    (dict(combine_decoder_input=True, attention_query_bias=True), "combine_decoder_input, attention_query_bias: LSTM"),
])
def test_config_rejects_bad_transformer_settings(overrides, message):
    with pytest.raises((ValueError, StrictDataclassClassValidationError), match=message):
        LexicalSeq2SeqConfig(backbone="transformer", **overrides)
    if "hidden_size" in overrides or "feed_dropout" in overrides or "combine_decoder_input" in overrides:
        # transformer-only constraints, or LSTM-only options: the LSTM accepts them
        LexicalSeq2SeqConfig(backbone="lstm", **overrides)


@pytest.mark.parametrize("overrides", [
    dict(position_encoding="relative"), dict(num_attention_heads=8), dict(ffn_size=256), dict(norm_first=False),
    dict(max_position_embeddings=1024), dict(relative_attention_max_distance=8),
    dict(attention_source="dedicated_head"), dict(attention_dropout=0.1),
])
def test_transformer_options_on_the_lstm_are_an_error_not_ignored(overrides):
    """A Transformer option with backbone="lstm" is a forgotten backbone="transformer": the LSTM would build without
    it and say nothing."""
    (name,) = overrides
    with pytest.raises(StrictDataclassClassValidationError, match=f"{name}: Transformer options, but backbone='lstm'"):
        LexicalSeq2SeqConfig(**overrides)
    LexicalSeq2SeqConfig(backbone="transformer", hidden_size=64, **overrides)  # where they belong
    with pytest.raises(StrictDataclassClassValidationError, match="position_encoding must be one of"):
        LexicalSeq2SeqConfig(position_encoding="rotary")  # a bad value is bad on either backbone


def test_learned_positions_past_the_table_are_a_clear_error(toy_tokenizer):
    model = small_model(toy_tokenizer, **TRANSFORMER, position_encoding="learned", max_position_embeddings=4,
                        max_decode_length=3)
    with pytest.raises(ValueError, match="max_position_embeddings"):  # a source longer than the table
        model(input_ids=torch.tensor([[5, 6, 7, 8, 2]]), decoder_input_ids=torch.tensor([[1, 5]]))
    # a table too short for the decoding limit fails when the config is built, not in the middle of generate()
    with pytest.raises(StrictDataclassClassValidationError, match=r"max_position_embeddings \(4\) must cover max_decode_length \+ 1 \(129\)"):
        small_model(toy_tokenizer, **TRANSFORMER, position_encoding="learned", max_position_embeddings=4)


@pytest.mark.parametrize("name", TRANSFORMERS[:3])
def test_source_padding_never_leaks_into_encoder_states(toy_tokenizer, name):
    encoder = lexical_model(toy_tokenizer, name).get_encoder()
    ids = torch.tensor([[5, 6, 2]])
    with torch.no_grad():
        alone = encoder(ids, torch.ones_like(ids)).last_hidden_state
        padded = encoder(torch.tensor([[5, 6, 2, 0, 0]]), torch.tensor([[1, 1, 1, 0, 0]])).last_hidden_state
    torch.testing.assert_close(padded[:, :3], alone, atol=1e-6, rtol=1e-5)


def test_relative_attention_is_shaw_et_al_with_clipping(toy_tokenizer):
    """score_ij = q_i · (k_j + a[clip(j − i, −k, k)]) / √d_h, written out with loops over positions."""
    model = small_model(toy_tokenizer, **TRANSFORMER, position_encoding="relative", relative_attention_max_distance=2)
    attention = model.model.encoder.layers[0].self_attention
    torch.manual_seed(0)
    states = torch.randn(1, 6, 24)
    positions = torch.arange(6)
    blocked = torch.zeros(1, 1, 1, 6, dtype=torch.bool)
    with torch.no_grad():
        keys, values = attention.project_key_value(states)
        _, weights = attention(states, keys, values, blocked, positions, positions)
        queries = attention._split_heads(attention.query(states))
        table = attention.relative_keys.weight  # (2k + 1, d_h)
        scores = torch.empty(1, 4, 6, 6)
        for i in range(6):
            for j in range(6):
                relative = table[max(-2, min(2, j - i)) + 2]
                scores[0, :, i, j] = (queries[0, :, i] * (keys[0, :, j] + relative)).sum(-1) / 6**0.5
    assert table.shape == (5, 6)
    torch.testing.assert_close(weights, scores.softmax(-1), atol=1e-6, rtol=1e-5)


# ---------------------------------------------------------------------------------------------------- training
@pytest.mark.parametrize("name", TRANSFORMERS[:2])
def test_seq2seq_trainer_reaches_full_exact_match_on_a_toy_task(toy_tokenizer, toy_data, tmp_path, name):
    tok = toy_tokenizer
    model = small_model(tok, **{**CONFIGS[name], "embedding_size": 32, "hidden_size": 32})
    model.set_lexicon(model.lexical_head.uniform_lexicon())  # no lexical prior: the model must learn it all
    before, after = train_on_toy_task(model, tok, toy_data, tmp_path, max_steps=300, learning_rate=3e-3)
    assert before < 0.2
    assert after == 1.0, f"exact match after training: {after}"
