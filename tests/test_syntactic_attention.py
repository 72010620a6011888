"""The Syntactic Attention backbone (Russin et al. 2019): its equations against a row-at-a-time reference, batching
(padding never changes a row), neighbour-only annotations, a decoder that ignores its outputs (teacher forcing =
greedy decoding), cached generation, save/load, config errors, and training with Seq2SeqTrainer and `lexical-hf train`."""

import json

import pytest
import torch
from huggingface_hub.errors import StrictDataclassClassValidationError
from torch import nn
from torch.nn import functional as F
from transformers import AutoModelForSeq2SeqLM

from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration
from lexical_hf.backbones.syntactic_attention import SyntacticAttentionCache
from lexical_hf.modeling_lexical import CACHE_NAME
from conftest import encode_batch, random_lexicon, small_config, small_model, train_on_toy_task

SYNTATT = dict(backbone="syntactic_attention", embedding_size=10, hidden_size=8)  # annotations and decoder: 16 wide
CONFIGS = {
    "paper": dict(**SYNTATT),
    "code-copy_token": dict(**SYNTATT, syntax_encoder="code", gate="copy_token"),
    "paper-syntax_action-sequential_semantics": dict(**SYNTATT, syntax_action=True, sequential_semantics=True, num_layers=1),
    "code-none": dict(**SYNTATT, syntax_encoder="code", lexical_mode="none"),
}


def syntatt_model(tokenizer, name, seed=0, **overrides):
    model = small_model(tokenizer, seed=seed, **{**CONFIGS[name], **overrides})
    if model.config.lexical_mode != "none":
        model.set_lexicon(random_lexicon(tokenizer.source_vocab_size, tokenizer.target_vocab_size, seed=seed))
    return model


def peaky(model, scale=3.0, eos_penalty=4.0):
    """Sharper weights and a late </s>: long, varied outputs instead of a random model's near-uniform ones."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(scale)
        model.lexical_head.write_projection.bias[model.config.eos_token_id] -= eos_penalty
    return model


# ---------------------------------------------------------------------------------------------------- the equations
def reference_log_probs(model, source_ids: torch.Tensor, steps: int) -> torch.Tensor:
    """Paper v1 for one unpadded source, written out position by position with PyTorch's own LSTM modules and the
    model's weights; `lexical_mode="none"`: log p(y_i) = log softmax(W d_i). Returns (steps, |V_y|)."""
    encoder, decoder = model.model.encoder, model.model.decoder
    hidden = model.config.hidden_size
    embedded = encoder.embed_tokens(source_ids[None])  # m_j (1, n, E)
    forward, (forward_final, _) = encoder.syntax_forward(embedded)  # unpacked: a lone row has no padding
    backward, (backward_final, _) = encoder.syntax_backward(embedded.flip(1))
    forward, backward = forward[0], backward[0].flip(0)  # b_j: read from x_n down to x_j
    n = source_ids.shape[0]
    annotations = torch.stack([torch.cat([forward[j - 1] if j > 0 else torch.zeros(hidden),
                                          backward[j + 1] if j < n - 1 else torch.zeros(hidden)]) for j in range(n)])
    query = torch.relu(encoder.initial_query(torch.cat([forward_final[-1, 0], backward_final[-1, 0]])))  # s_0
    cell = nn.LSTMCell(2 * hidden, 2 * hidden)
    cell.load_state_dict({name.replace("_l0", ""): value for name, value in decoder.lstm.state_dict().items()})
    state = (torch.zeros(1, 2 * hidden), torch.zeros(1, 2 * hidden))
    head = model.lexical_head
    rows = []
    for _ in range(steps):
        alpha = torch.softmax(annotations @ query, 0)  # α_ij ∝ exp(s_{i-1}·h_j)
        context, meaning = alpha @ annotations, alpha @ embedded[0]  # c_i, d_i
        logits = head.write_projection(meaning)
        logits[model.config.non_generatable_token_ids] = float("-inf")
        rows.append(F.log_softmax(logits, -1))
        state = cell(context[None], state)  # s_i = g(c_i, s_{i-1})
        query = state[0][0]
    return torch.stack(rows)


def test_lexical_mode_none_is_plain_syntactic_attention_written_out_position_by_position(toy_tokenizer, toy_data):
    model = syntatt_model(toy_tokenizer, "paper", lexical_mode="none", num_layers=2)
    batch = encode_batch(toy_tokenizer, [toy_data[0], toy_data[30], toy_data[7]])
    with torch.no_grad():
        out = model(**batch)
        assert torch.equal(out.gate, torch.ones_like(out.gate))
        for row in range(3):
            source = batch["input_ids"][row][batch["attention_mask"][row].bool()]
            steps = int((batch["labels"][row] != -100).sum())
            expected = reference_log_probs(model, source, steps)
            torch.testing.assert_close(out.logits[row, :steps], expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", CONFIGS)
def test_the_head_reads_d_i_and_the_attention_the_decoder_used(toy_tokenizer, toy_data, name):
    """Through the model: α is a distribution over the source tokens only, the head's p_write is softmax(W d_i) with
    d_i = Σ_j α_ij m_j (or [d_i; c_i] with syntax_action), and the mixture is a distribution."""
    model = syntatt_model(toy_tokenizer, name)
    batch = encode_batch(toy_tokenizer, [toy_data[0], toy_data[30], toy_data[7]])
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
        encoded = model.get_encoder()(batch["input_ids"], batch["attention_mask"])
    alpha = out.cross_attentions[0]
    source_mask = batch["attention_mask"].bool()[:, None, :].expand_as(alpha)
    torch.testing.assert_close(alpha.sum(-1), torch.ones(alpha.shape[:2]), atol=1e-5, rtol=0)
    assert torch.all(alpha[~source_mask] == 0), "attention mass on source padding"
    targets = batch["labels"] != -100
    expected = alpha @ encoded.semantic_states
    if model.config.syntax_action:
        expected = torch.cat([expected, alpha @ encoded.last_hidden_state], -1)
    torch.testing.assert_close(out.decoder_hidden_states[0][targets], expected[targets], atol=1e-5, rtol=1e-5)
    probs = out.logits.exp()
    torch.testing.assert_close(probs.sum(-1), torch.ones(probs.shape[:2]), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ["paper", "code-copy_token"])
def test_gradients_reach_both_streams_the_decoder_and_the_gate(toy_tokenizer, toy_data, name):
    model = syntatt_model(toy_tokenizer, name, train_lexicon=True).train()
    model(**encode_batch(toy_tokenizer, toy_data[-6:])).loss.backward()  # 4 tokens: the code's start/end annotations replace 2
    encoder, decoder, head = model.model.encoder, model.model.decoder, model.lexical_head
    params = {"semantic embedding": encoder.embed_tokens.weight, "syntactic forward LSTM": encoder.syntax_forward.weight_hh_l0,
              "syntactic backward LSTM": encoder.syntax_backward.weight_ih_l0,
              "s_0": encoder.initial_query.weight, "decoder input": decoder.lstm.weight_ih_l0,
              "decoder recurrence": decoder.lstm.weight_hh_l0, "lexicon": head.lexicon_logits,
              "gate": head.gate_projection.weight if model.config.gate == "sigmoid" else head.write_projection.weight}
    if model.config.syntax_encoder == "code":
        params.update({"syntax embedding": encoder.syntax_embed_tokens.weight,
                       "start/end annotations": encoder.boundary_annotations.weight,
                       "second biLSTM": encoder.second_syntax_lstm.weight_ih_l0})
    for label, param in params.items():
        assert param.grad is not None and param.grad.abs().sum() > 0, f"no gradient reaches the {label}"


# ---------------------------------------------------------------------------------------------------- batching
@pytest.mark.parametrize("name", CONFIGS)
def test_a_padded_batch_gives_each_row_what_the_row_gives_alone(toy_tokenizer, toy_data, name):
    """Sources and targets of different lengths: packed recurrences, each row's own end annotation, masked
    attention and the decoder's per-row step count leave every row as it is alone (logits and attention)."""
    model = syntatt_model(toy_tokenizer, name)
    pairs = [toy_data[0], toy_data[30], toy_data[7], toy_data[-1]]
    batch = encode_batch(toy_tokenizer, pairs)
    assert len(set(batch["attention_mask"].sum(-1).tolist())) > 1 and len(set((batch["labels"] != -100).sum(-1).tolist())) > 1
    with torch.no_grad():
        together = model(**batch)
        for row, pair in enumerate(pairs):
            alone = model(**encode_batch(toy_tokenizer, [pair]))
            source, target = alone.cross_attentions[0].shape[2], alone.logits.shape[1]
            torch.testing.assert_close(together.logits[row, :target], alone.logits[0], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(together.cross_attentions[0][row, :target, :source], alone.cross_attentions[0][0],
                                       atol=1e-6, rtol=1e-5)
            torch.testing.assert_close(together.encoder_last_hidden_state[row, :source], alone.encoder_last_hidden_state[0],
                                       atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", ["paper", "code-none"])
def test_the_annotation_of_word_j_holds_nothing_of_word_j(toy_tokenizer, name):
    """Another word at position j leaves the neighbours' annotation at j unchanged, bit for bit, and changes those at
    j − 1 and j + 1. In v1 these are the attention's annotations h_j; the code's second biLSTM then mixes them."""
    model = syntatt_model(toy_tokenizer, name, num_layers=2)
    encoder = model.get_encoder()
    ids = toy_tokenizer(["dax lug wif twice", "zup dax"], padding=True, return_tensors="pt")
    j = 1
    changed = ids["input_ids"].clone()
    changed[:, j] = changed[:, j].roll(1)  # the two rows swap their word j (lug, dax)
    assert not torch.equal(changed[:, j], ids["input_ids"][:, j])

    def neighbour_context(input_ids):
        lengths = ids["attention_mask"].sum(-1)
        embedding = encoder.syntax_embed_tokens if encoder.code_variant else encoder.embed_tokens
        return encoder.neighbour_context(embedding(input_ids), lengths)[0]

    with torch.no_grad():
        before, after = neighbour_context(ids["input_ids"]), neighbour_context(changed)
        assert torch.equal(before[:, j], after[:, j])
        assert not torch.allclose(before[:, j - 1], after[:, j - 1]) and not torch.allclose(before[:, j + 1], after[:, j + 1])
        states_before = encoder(ids["input_ids"], ids["attention_mask"]).last_hidden_state
        states_after = encoder(changed, ids["attention_mask"]).last_hidden_state
    if not encoder.code_variant:
        assert torch.equal(states_before[:, j], states_after[:, j])


def test_the_code_variants_end_annotation_sits_at_each_rows_own_last_token(toy_tokenizer):
    model = syntatt_model(toy_tokenizer, "code-none", num_layers=1)
    encoder = model.get_encoder()
    seen = {}
    encoder.second_syntax_lstm.register_forward_hook(lambda module, inputs, output: seen.update(packed=inputs[0]))
    batch = toy_tokenizer(["dax lug wif twice", "zup", "lug dax"], padding=True, return_tensors="pt")
    with torch.no_grad():
        encoder(batch["input_ids"], batch["attention_mask"])
    annotations, lengths = nn.utils.rnn.pad_packed_sequence(seen["packed"], batch_first=True)
    start, end = encoder.boundary_annotations.weight
    for row, length in enumerate(lengths.tolist()):
        assert torch.equal(annotations[row, length - 1], end) and torch.equal(annotations[row, 0], start if length > 1 else end)
        assert not any(torch.equal(annotations[row, k], end) for k in range(length - 1))


# ---------------------------------------------------------------------------------------------------- decoding
@pytest.mark.parametrize("name", CONFIGS)
def test_teacher_forced_logits_equal_greedy_decodings_logits(toy_tokenizer, toy_data, name):
    """The decoder never reads its outputs: scoring any target (here random tokens) runs the computation greedy
    decoding runs, step for step."""
    model = peaky(syntatt_model(toy_tokenizer, name))
    batch = encode_batch(toy_tokenizer, toy_data[:6])
    out = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=7, do_sample=False,
                         output_logits=True, return_dict_in_generate=True)
    greedy_logits = torch.stack(out.logits, 1)  # (B, steps, V)
    random_inputs = torch.randint(4, toy_tokenizer.target_vocab_size, (6, greedy_logits.shape[1]))
    with torch.no_grad():
        forced = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       decoder_input_ids=random_inputs).logits
    torch.testing.assert_close(forced, greedy_logits, atol=1e-5, rtol=1e-5)
    assert torch.equal(out.sequences[:, 1:], forced.argmax(-1)[:, : out.sequences.shape[1] - 1].masked_fill(
        out.sequences[:, 1:] == model.config.pad_token_id, model.config.pad_token_id))


@pytest.mark.parametrize("name", ["paper", "code-copy_token"])
def test_stepwise_decoding_through_the_cache_equals_one_call_and_leaves_the_given_cache_untouched(toy_tokenizer, toy_data, name):
    model = syntatt_model(toy_tokenizer, name)
    batch = encode_batch(toy_tokenizer, toy_data[5:9])
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    with torch.no_grad():
        full = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                     decoder_input_ids=decoder_input_ids).logits
        encoder_outputs = model.get_encoder()(batch["input_ids"], batch["attention_mask"])
        cache, steps = None, []
        for i in range(decoder_input_ids.shape[1]):
            kept = None if cache is None else [t.clone() for t in (cache.hidden, cache.cell, cache.query)]
            out = model(encoder_outputs=encoder_outputs, attention_mask=batch["attention_mask"],
                        decoder_input_ids=decoder_input_ids[:, i : i + 1], cache=cache, use_cache=True)
            if kept is not None:
                assert all(torch.equal(a, b) for a, b in zip(kept, (cache.hidden, cache.cell, cache.query)))
            cache = out[CACHE_NAME]
            steps.append(out.logits)
    assert isinstance(cache, SyntacticAttentionCache) and cache.get_seq_length() == decoder_input_ids.shape[1]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["paper", "code-copy_token", "code-none"])
@pytest.mark.parametrize("num_beams", [1, 4])
def test_generate_with_and_without_cache_agree(toy_tokenizer, toy_data, name, num_beams):
    model = peaky(syntatt_model(toy_tokenizer, name))
    batch = encode_batch(toy_tokenizer, toy_data[:7])
    kwargs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=8,
                  num_beams=num_beams, do_sample=False, output_scores=True, return_dict_in_generate=True)
    cached = model.generate(**kwargs, use_cache=True)
    uncached = model.generate(**kwargs, use_cache=False)
    assert torch.equal(cached.sequences, uncached.sequences)
    torch.testing.assert_close(torch.stack(cached.scores), torch.stack(uncached.scores), atol=1e-4, rtol=1e-4)


def test_beam_scores_are_the_models_own_log_probabilities_and_the_cache_follows_the_beams(toy_tokenizer, toy_data):
    """Beams of one source share one decoder state (it does not depend on the tokens), so a reorder within a source
    changes nothing; across sources it would, and `reorder_cache` is checked directly."""
    from test_model import sequence_log_probs

    model = peaky(syntatt_model(toy_tokenizer, "paper"))
    batch = encode_batch(toy_tokenizer, toy_data[:6])
    out = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=4,
                         length_penalty=0.0, output_scores=True, return_dict_in_generate=True)
    rescored = sequence_log_probs(model, batch["input_ids"], batch["attention_mask"], out.sequences)
    torch.testing.assert_close(out.sequences_scores, rescored, atol=1e-4, rtol=1e-4)
    cache = SyntacticAttentionCache(*(torch.arange(3.0)[:, None].repeat(1, 2) + k for k in range(3)), seq_length=2)
    cache.reorder_cache(torch.tensor([2, 2, 0]))
    assert cache.hidden[:, 0].tolist() == [2, 2, 0] and cache.query[:, 0].tolist() == [4, 4, 2]


# ---------------------------------------------------------------------------------------------------- save / load / config
def test_save_and_load_through_auto_class_is_bit_exact(toy_tokenizer, toy_data, tmp_path):
    model = syntatt_model(toy_tokenizer, "code-copy_token", syntax_action=True)
    model.save_pretrained(tmp_path)
    toy_tokenizer.save_pretrained(tmp_path)
    batch = encode_batch(toy_tokenizer, toy_data[:4])
    expected = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=2)

    loaded, info = AutoModelForSeq2SeqLM.from_pretrained(tmp_path, output_loading_info=True)
    assert type(loaded) is LexicalSeq2SeqForConditionalGeneration and loaded.config.backbone == "syntactic_attention"
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    assert (loaded.config.syntax_encoder, loaded.config.syntax_action) == ("code", True)
    state, reference = loaded.state_dict(), model.state_dict()
    assert state.keys() == reference.keys() and all(torch.equal(state[key], reference[key]) for key in reference)
    out = loaded.eval().generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=6, num_beams=2)
    assert torch.equal(out, expected)


def test_a_model_built_on_the_meta_device_and_initialised_is_the_model_init_builds(toy_tokenizer):
    config = small_config(toy_tokenizer, **CONFIGS["code-copy_token"], sequential_semantics=True)
    with torch.device("meta"):
        model = LexicalSeq2SeqForConditionalGeneration(config)
    model.to_empty(device="cpu")
    model.init_weights()
    reference = LexicalSeq2SeqForConditionalGeneration(config)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    for (name, value), (_, expected) in zip(model.named_parameters(), reference.named_parameters()):
        assert value.shape == expected.shape and abs(value.std() - expected.std()) < 0.5 * expected.std() + 1e-6, name


@pytest.mark.parametrize("overrides,message", [
    (dict(feed_dropout=True), "feed_dropout: LSTM options, but backbone='syntactic_attention'"),
    (dict(bidirectional_encoder=True), "bidirectional_encoder: LSTM options"),
    (dict(position_encoding="relative", num_attention_heads=8), "num_attention_heads, position_encoding: Transformer"),
    (dict(attention_dropout=0.1), "attention_dropout: Transformer options"),
    (dict(syntax_encoder="v2"), "syntax_encoder must be one of"),
    (dict(syntax_encoder="code", hidden_size=7), "even hidden_size"),
    (dict(sequential_semantics=True, embedding_size=9), "even embedding_size"),
])
def test_config_refuses_what_syntactic_attention_does_not_take(overrides, message):
    with pytest.raises((ValueError, StrictDataclassClassValidationError), match=message):
        LexicalSeq2SeqConfig(backbone="syntactic_attention", **overrides)


@pytest.mark.parametrize("backbone", ["lstm", "transformer"])
@pytest.mark.parametrize("overrides", [dict(syntax_encoder="code"), dict(syntax_action=True),
                                       dict(sequential_semantics=True)])
def test_syntactic_attention_options_on_other_backbones_are_an_error(backbone, overrides):
    (name,) = overrides
    with pytest.raises(StrictDataclassClassValidationError,
                       match=f"{name}: Syntactic Attention options, but backbone='{backbone}'"):
        LexicalSeq2SeqConfig(backbone=backbone, **overrides)
    LexicalSeq2SeqConfig(backbone="syntactic_attention", **overrides)  # where they belong


# ---------------------------------------------------------------------------------------------------- training
def test_seq2seq_trainer_reaches_full_exact_match_on_a_toy_task(toy_tokenizer, toy_data, tmp_path):
    tok = toy_tokenizer
    model = small_model(tok, **{**SYNTATT, "embedding_size": 16, "hidden_size": 16, "num_layers": 1})
    model.set_lexicon(model.lexical_head.uniform_lexicon())  # no lexical prior: the model must learn it all
    before, after = train_on_toy_task(model, tok, toy_data, tmp_path, max_steps=150, learning_rate=1e-2)
    assert before < 0.2
    assert after == 1.0, f"exact match after training: {after}"


def test_lexical_hf_train_runs_syntactic_attention_on_colors(tmp_path):
    """`lexical-hf train --backbone syntactic_attention` end to end (in-process): its own preset, a tiny model given
    by flags, the option flags reaching the config, a folder that loads through the Auto classes."""
    from lexical_hf.training import main

    results = main(["--backbone", "syntactic_attention", "--benchmark", "colors", "--lexicon", "simple",
                    "--embedding_size", "8", "--hidden_size", "6", "--num_layers", "1", "--syntax_encoder", "code",
                    "--syntax_action", "true", "--max_steps", "8", "--seeds", "0", "--disable_tqdm", "true",
                    "--output_dir", str(tmp_path)])
    assert results["preset"] == "cpu" and results["per_seed"]["0"]["train_seconds"]["updates"] == 8
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["backbone"] == "syntactic_attention" and config["hidden_size"] == 6
    assert config["syntax_encoder"] == "code" and config["syntax_action"] is True
    assert config["dropout"] == 0.5  # from the preset
    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    assert type(model.model).__name__ == "SyntacticAttentionEncoderDecoder"
