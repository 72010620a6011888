"""Invariants of the lexical translation head, tested directly (no backbone) and through the model."""

import pytest
import torch
from torch.nn import functional as F

from lexical_hf import LexicalTranslationHead
from conftest import encode_batch, random_lexicon, small_model

B, T, S, F_SIZE, VX, VY = 3, 5, 4, 8, 9, 7
NON_GENERATABLE = [0, 1]


def head_inputs(seed=0, padded=True):
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(B, T, F_SIZE, generator=generator)
    gate_features = torch.randn(B, T, F_SIZE, generator=generator)
    source_ids = torch.randint(2, VX, (B, S), generator=generator)
    mask = torch.ones(B, S, dtype=torch.bool)
    if padded:
        mask[0, -2:] = False
        source_ids[0, -2:] = 0
    scores = torch.randn(B, T, S, generator=generator).masked_fill(~mask.unsqueeze(1), float("-inf"))
    return features, gate_features, scores.softmax(-1), source_ids


def make_head(mode="lexical", gate="sigmoid", train_lexicon=False, vx=VX, vy=VY, seed=0):
    torch.manual_seed(seed)
    head = LexicalTranslationHead(F_SIZE, F_SIZE, vx, vy, NON_GENERATABLE, mode, gate, train_lexicon)
    if mode != "none":
        head.set_lexicon(random_lexicon(vx, vy, NON_GENERATABLE, seed))
    return head


@pytest.mark.parametrize("mode,gate", [("none", "sigmoid"), ("lexical", "sigmoid"), ("lexical", "copy_token"),
                                       ("copy", "sigmoid"), ("copy", "copy_token")])
@pytest.mark.parametrize("train_lexicon", [False, True])
def test_rows_sum_to_one_and_no_mass_on_non_generatable(mode, gate, train_lexicon):
    head = make_head(mode, gate, train_lexicon)
    out = head(*head_inputs())
    probs = out.log_probs.exp()
    torch.testing.assert_close(probs.sum(-1), torch.ones(B, T), atol=1e-5, rtol=0)
    assert torch.all(probs[..., NON_GENERATABLE] == 0)
    assert torch.all((out.gate >= 0) & (out.gate <= 1))


def test_mixture_equals_hand_computed_sigmoid_gate():
    head = make_head("lexical", "sigmoid")
    features, gate_features, attention, source_ids = head_inputs()
    out = head(features, gate_features, attention, source_ids)

    logits = head.write_projection(features)
    logits[..., NON_GENERATABLE] = float("-inf")
    p_write = logits.softmax(-1)
    p_lex = torch.einsum("bts,bsv->btv", attention, head.lexicon[source_ids])
    gate = torch.sigmoid(head.gate_projection(gate_features))
    expected = gate * p_write + (1 - gate) * p_lex
    expected[..., NON_GENERATABLE] = 0
    torch.testing.assert_close(out.log_probs.exp(), expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(out.gate, gate.squeeze(-1))


def test_copy_token_gate_moves_the_reserved_class_mass_onto_the_lexicon():
    head = make_head("lexical", "copy_token")
    features, gate_features, attention, source_ids = head_inputs()
    out = head(features, gate_features, attention, source_ids)

    logits = head.write_projection(features)
    assert logits.shape[-1] == VY + 1  # one reserved class
    logits[..., NON_GENERATABLE] = float("-inf")
    s = logits.softmax(-1)
    p_lex = torch.einsum("bts,bsv->btv", attention, head.lexicon[source_ids])
    expected = s[..., :VY] + s[..., VY:] * p_lex
    expected[..., NON_GENERATABLE] = 0
    torch.testing.assert_close(out.log_probs.exp(), expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(out.gate, 1 - s[..., VY], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("gate", ["sigmoid", "copy_token"])
def test_probability_floor_adds_epsilon_to_every_generatable_token_and_renormalises(gate):
    floor = 1e-3
    plain, floored = make_head("lexical", gate), make_head("lexical", gate)
    floored.probability_floor = floor
    features, gate_features, attention, source_ids = head_inputs()
    p = plain(features, gate_features, attention, source_ids).log_probs.exp()
    q = floored(features, gate_features, attention, source_ids).log_probs.exp()
    generatable = VY - len(NON_GENERATABLE)
    expected = (p + floor) / (1 + generatable * floor)
    expected[..., NON_GENERATABLE] = 0
    torch.testing.assert_close(q, expected, atol=1e-6, rtol=1e-5)


def test_probability_floor_bounds_a_hopeless_tokens_loss_and_takes_away_its_gradient():
    """A target the mixture gives ~e^-60: without the floor its loss is ~60 and its gradient full-sized; with
    ε = 1e-7 the loss is at most -log ε ≈ 16.1 and the gradient almost 0."""
    losses, norms = {}, {}
    for floor in (0.0, 1e-7):
        head = make_head("lexical", "copy_token")
        head.probability_floor = floor
        features, gate_features, attention, source_ids = head_inputs()
        lexicon = torch.zeros(VX, VY)
        lexicon[:, 2] = 1.0  # every source token translates to id 2: p_lex puts nothing on the target below
        head.set_lexicon(lexicon)
        with torch.no_grad():
            head.write_projection.weight.zero_()
            head.write_projection.bias.fill_(0.0)
            head.write_projection.bias[3] = -60.0  # the target id 3: far below every other class
        out = head(features, gate_features, attention, source_ids)
        loss = -out.log_probs[0, 0, 3]
        head.zero_grad()
        loss.backward()
        losses[floor] = loss.item()
        norms[floor] = head.write_projection.bias.grad.norm().item()
    assert losses[0.0] > 55 and losses[1e-7] <= -torch.log(torch.tensor(1e-7)).item() + 1e-3
    assert norms[0.0] > 0.5 and norms[1e-7] < 1e-12


def test_probability_floor_outside_its_range_is_an_error():
    from huggingface_hub.errors import StrictDataclassClassValidationError

    from lexical_hf import LexicalSeq2SeqConfig
    with pytest.raises(StrictDataclassClassValidationError, match="probability_floor must be in"):
        LexicalSeq2SeqConfig(target_vocab_size=10, probability_floor=0.2)
    with pytest.raises(StrictDataclassClassValidationError, match="probability_floor must be in"):
        LexicalSeq2SeqConfig(probability_floor=-1e-7)
    with pytest.raises(StrictDataclassClassValidationError, match="lexical_mode='none' does not have"):
        LexicalSeq2SeqConfig(lexical_mode="none", probability_floor=1e-7)


UNK = 3


def code_head(mode="lexical", gate="copy_token", floor=0.0):
    head = make_head(mode, gate)
    return LexicalTranslationHead(F_SIZE, F_SIZE, VX, VY, NON_GENERATABLE, mode, gate, probability_floor=floor,
                                  mixture_normalization="code", unknown_id=UNK).requires_grad_(False), head


@pytest.mark.parametrize("gate", ["copy_token", "sigmoid"])
@pytest.mark.parametrize("floor", [0.0, 1e-3])
def test_the_codes_normalisation_mixes_over_every_class_then_renormalises_without_unk(gate, floor):
    """The paper's code: softmax over all classes, p_mix = s_w + s_copy·p_lex (+ ε), then the classes <pad>, <s>,
    <unk> are dropped and the rest rescaled; computed here by hand from the same weights."""
    head, paper = code_head("lexical", gate, floor)
    head.load_state_dict(paper.state_dict())
    features, gate_features, attention, source_ids = head_inputs()
    out = head(features, gate_features, attention, source_ids)

    s = head.write_projection(features).softmax(-1)  # no class blocked before the softmax
    p_lex = torch.einsum("bts,bsv->btv", attention, head.lexicon[source_ids])
    if gate == "copy_token":
        mixture = s[..., :VY] + s[..., VY:] * p_lex
    else:
        g = torch.sigmoid(head.gate_projection(gate_features))
        mixture = g * s + (1 - g) * p_lex
    mixture = mixture + floor
    mixture[..., NON_GENERATABLE + [UNK]] = 0
    expected = mixture / mixture.sum(-1, keepdim=True)
    torch.testing.assert_close(out.log_probs.exp(), expected, atol=1e-6, rtol=1e-5)
    assert torch.all(out.log_probs[..., UNK] == float("-inf"))


def test_the_codes_normalisation_drops_the_mass_abstaining_tokens_send_to_unk():
    """A source token whose lexicon row goes to <unk> (abstains): under "paper" its lexical mass stays on <unk> and
    the target tokens lose it; under "code" it is dropped and the rest rescaled, so the attended-to abstaining token
    costs the target nothing."""
    head, paper = code_head("lexical", "copy_token")
    lexicon = random_lexicon(VX, VY, NON_GENERATABLE, 0)
    lexicon[:, :] = 0.0
    lexicon[:, UNK] = 1.0  # every source token abstains
    paper.set_lexicon(lexicon)
    head.load_state_dict(paper.state_dict())
    features, gate_features, attention, source_ids = head_inputs()
    p_paper = paper(features, gate_features, attention, source_ids).log_probs.exp()
    p_code = head(features, gate_features, attention, source_ids).log_probs.exp()
    s = head.write_projection(features).softmax(-1)
    copy = s[..., VY]
    assert torch.all(p_paper[..., UNK] >= copy - 1e-6)  # the copy mass sits on <unk>
    kept = [i for i in range(VY) if i not in NON_GENERATABLE + [UNK]]
    torch.testing.assert_close(p_code[..., kept], s[..., kept] / s[..., kept].sum(-1, keepdim=True))


def test_the_codes_normalisation_without_a_lexicon_is_a_softmax_without_unk():
    torch.manual_seed(0)
    head = LexicalTranslationHead(F_SIZE, F_SIZE, VX, VY, NON_GENERATABLE, "none", mixture_normalization="code",
                                  unknown_id=UNK)
    features, gate_features, attention, source_ids = head_inputs()
    logits = head.write_projection(features)
    logits[..., NON_GENERATABLE + [UNK]] = float("-inf")
    torch.testing.assert_close(head(features, gate_features, attention, source_ids).log_probs,
                               logits.log_softmax(-1))


def test_a_label_unk_under_the_codes_normalisation_is_an_error(toy_tokenizer, toy_data):
    model = small_model(toy_tokenizer, mixture_normalization="code")
    batch = encode_batch(toy_tokenizer, toy_data[:2])
    batch["labels"][0, 0] = toy_tokenizer.unk_token_id
    with pytest.raises(ValueError, match="mixture_normalization='code' gives no probability"):
        model(**batch)


def test_none_mode_is_a_plain_softmax_with_gate_one():
    head = make_head("none")
    features, gate_features, attention, source_ids = head_inputs()
    out = head(features, gate_features, attention, source_ids)
    logits = head.write_projection(features)
    logits[..., NON_GENERATABLE] = float("-inf")
    torch.testing.assert_close(out.log_probs, F.log_softmax(logits, -1))
    assert torch.all(out.gate == 1)
    assert head.gate_projection is None and not hasattr(head, "lexicon")


def test_identity_lexicon_is_the_copy_mechanism():
    """Shared vocabulary, L = I on generatable tokens: p_lex(w) = Σ_j α_j [x_j = w] (See et al. 2017)."""
    vocab = 8
    head = LexicalTranslationHead(F_SIZE, F_SIZE, vocab, vocab, NON_GENERATABLE, "copy", "sigmoid")
    identity = torch.eye(vocab)
    identity[NON_GENERATABLE] = 0
    identity[NON_GENERATABLE, 3] = 1  # padding / start rows point at <unk>; never attended
    head.set_lexicon(identity)
    features, gate_features, attention, _ = head_inputs()
    source_ids = torch.tensor([[4, 5, 0, 0], [6, 6, 7, 2], [2, 3, 4, 5]])
    attention = attention.clone()
    attention[0, :, 2:] = 0
    attention = attention / attention.sum(-1, keepdim=True)
    out = head(features, gate_features, attention, source_ids)

    copy = torch.zeros(B, T, vocab)
    for b in range(B):
        for j in range(S):
            copy[b, :, source_ids[b, j]] += attention[b, :, j]
    gate = torch.sigmoid(head.gate_projection(gate_features))
    logits = head.write_projection(features)
    logits[..., NON_GENERATABLE] = float("-inf")
    expected = gate * logits.softmax(-1) + (1 - gate) * copy
    torch.testing.assert_close(out.log_probs.exp(), expected, atol=1e-6, rtol=1e-5)


def test_zero_attention_mass_on_padding_reaches_no_lexicon_row():
    """A padded source position (α = 0) contributes nothing, whatever its lexicon row says."""
    head = make_head("lexical")
    features, gate_features, attention, source_ids = head_inputs(padded=True)
    base = head(features, gate_features, attention, source_ids).log_probs
    other = source_ids.clone()
    other[0, -2:] = 5  # change what sits under the padding
    torch.testing.assert_close(head(features, gate_features, attention, other).log_probs, base)


@pytest.mark.parametrize("gate", ["sigmoid", "copy_token"])
def test_gradients_reach_gate_encoder_decoder_and_trainable_lexicon(toy_tokenizer, toy_data, gate):
    model = small_model(toy_tokenizer, lexical_mode="lexical", gate=gate, train_lexicon=True).train()
    model.set_lexicon(random_lexicon(toy_tokenizer.source_vocab_size, toy_tokenizer.target_vocab_size))
    model(**encode_batch(toy_tokenizer, toy_data[:6])).loss.backward()
    gate_param = model.lexical_head.gate_projection.weight if gate == "sigmoid" else model.lexical_head.write_projection.weight
    for name, param in [
        ("gate", gate_param),
        ("encoder", model.model.encoder.lstm.weight_ih_l0),
        ("encoder embeddings", model.model.encoder.embed_tokens.weight),
        ("decoder", model.model.decoder.lstm.weight_hh_l0),
        ("attention", model.model.decoder.attention_query.weight),
        ("lexicon", model.lexical_head.lexicon_logits),
    ]:
        assert param.grad is not None and param.grad.abs().sum() > 0, f"no gradient reaches the {name}"
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_frozen_lexicon_does_not_change_in_a_training_step(toy_tokenizer, toy_data):
    model = small_model(toy_tokenizer, lexical_mode="lexical").train()
    model.set_lexicon(random_lexicon(toy_tokenizer.source_vocab_size, toy_tokenizer.target_vocab_size))
    before = model.lexical_head.lexicon.clone()
    assert "lexical_head.lexicon" not in dict(model.named_parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.1)
    model(**encode_batch(toy_tokenizer, toy_data[:6])).loss.backward()
    optimizer.step()
    assert torch.equal(model.lexical_head.lexicon, before)


def test_trainable_lexicon_changes_and_stays_row_stochastic(toy_tokenizer, toy_data):
    model = small_model(toy_tokenizer, lexical_mode="lexical", train_lexicon=True).train()
    model.set_lexicon(random_lexicon(toy_tokenizer.source_vocab_size, toy_tokenizer.target_vocab_size))
    before = model.lexical_head.lexicon_matrix().detach().clone()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.1)
    model(**encode_batch(toy_tokenizer, toy_data[:6])).loss.backward()
    optimizer.step()
    after = model.lexical_head.lexicon_matrix().detach()
    assert not torch.allclose(after, before)
    torch.testing.assert_close(after.sum(-1), torch.ones(after.shape[0]))
    assert torch.all(after[:, NON_GENERATABLE] == 0)


@pytest.mark.parametrize(
    "matrix_fn,message",
    [
        (lambda: torch.full((VX + 1, VY), 1.0 / VY), "shape"),
        (lambda: torch.full((VX, VY), 0.5), "sum to 1"),
        (lambda: torch.eye(VX, VY)[:, :] * 0 + torch.nn.functional.one_hot(torch.zeros(VX, dtype=torch.long), VY).float(), "non-generatable"),
        (lambda: torch.full((VX, VY), float("nan")), "finite"),
    ],
)
def test_set_lexicon_rejects_bad_matrices(matrix_fn, message):
    head = make_head("lexical")
    with pytest.raises(ValueError, match=message):
        head.set_lexicon(matrix_fn())


def test_none_mode_has_no_lexicon_to_set():
    with pytest.raises(ValueError, match="none"):
        make_head("none").set_lexicon(torch.ones(VX, VY) / VY)


@pytest.mark.parametrize("gate", ["sigmoid", "copy_token"])
def test_a_float64_head_computes_in_float64(gate):
    """The mixture runs in float32 at least, never below: a float64 head used to return float32 log-probabilities."""
    head = make_head(gate=gate).double()
    features, gate_features, attention, source_ids = (x.double() if x.is_floating_point() else x for x in head_inputs())
    out = head(features, gate_features, attention, source_ids)
    assert out.log_probs.dtype == torch.float64 and out.gate.dtype == torch.float64
    generatable = [i for i in range(VY) if i not in NON_GENERATABLE]  # the others are -inf
    inputs = (features.requires_grad_(), gate_features.requires_grad_())
    assert torch.autograd.gradcheck(lambda f, g: head(f, g, attention, source_ids).log_probs[..., generatable], inputs)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_half_precision_cast_keeps_the_frozen_lexicon_exact(toy_tokenizer, tmp_path, dtype):
    from transformers import AutoModelForSeq2SeqLM

    model = small_model(toy_tokenizer)
    lexicon = random_lexicon(toy_tokenizer.source_vocab_size, toy_tokenizer.target_vocab_size)
    model.set_lexicon(lexicon)
    model.to(dtype)
    assert model.lexical_head.write_projection.weight.dtype == dtype
    assert model.lexical_head.lexicon.dtype == torch.float32 and torch.equal(model.lexical_head.lexicon, lexicon)
    model.save_pretrained(tmp_path / "half")  # the saved lexicon is the exact one
    assert torch.equal(AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "half").lexical_head.lexicon, lexicon)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "half", dtype=dtype)
    assert loaded.lexical_head.lexicon.dtype == torch.float32 and torch.equal(loaded.lexical_head.lexicon, lexicon)
    assert model.double().lexical_head.lexicon.dtype == torch.float64  # wider casts apply as usual
