"""The Stack-, Queue- and DeQue-LSTM and deep-LSTM backbones (`lexical_hf/backbones/memory_lstm.py`): the decoder
continues the encoder over the joint sequence, cached generation equals uncached (greedy and beam), a padded batch
equals each row alone, teacher forcing equals step-by-step decoding, a cache is never modified by stepping from it,
save/load, initialisation, config errors, and a Seq2SeqTrainer run that learns to copy."""

import numpy as np
import pytest
import torch
from datasets import Dataset
from huggingface_hub.errors import StrictDataclassClassValidationError, StrictDataclassFieldValidationError
from transformers import AutoModelForSeq2SeqLM, DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments

from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer
from lexical_hf.backbones.memory_lstm import JointSequenceCache
from lexical_hf.modeling_lexical import CACHE_NAME
from conftest import encode_batch, small_config

MEMORY = ("stack_lstm", "queue_lstm", "deque_lstm")
CONFIGS = {
    "stack_lstm": dict(backbone="stack_lstm", num_layers=1, memory_width=6),
    "queue_lstm": dict(backbone="queue_lstm", num_layers=1, memory_width=6),
    "deque_lstm": dict(backbone="deque_lstm", num_layers=1, memory_width=6),
    "deque_lstm-2_layers": dict(backbone="deque_lstm", num_layers=2, memory_width=5),
    "deep_lstm": dict(backbone="deep_lstm", num_layers=3),
    "stack_lstm-separate_target": dict(backbone="stack_lstm", num_layers=1, memory_width=6, separate_target_lstm=True),
    "deque_lstm-separate_target": dict(backbone="deque_lstm", num_layers=2, memory_width=5, separate_target_lstm=True),
    "deep_lstm-separate_target": dict(backbone="deep_lstm", num_layers=2, separate_target_lstm=True),
}


def memory_model(tokenizer, name, seed=0, scale=3.0):
    """A model with sharper random weights (and a learned h_0 away from zero): varied, long outputs."""
    torch.manual_seed(seed)
    config = small_config(tokenizer, **CONFIGS[name], lexical_mode="none", hidden_size=12, max_decode_length=12)
    model = LexicalSeq2SeqForConditionalGeneration(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.3).mul_(scale)
        model.lexical_head.write_projection.bias[config.eos_token_id] -= 4.0
    return model


PAIRS = [("dax lug wif twice", "RED BLUE GREEN GREEN"), ("zup", "YELLOW"), ("lug dax", "BLUE RED")]


@pytest.mark.parametrize("name", CONFIGS)
def test_the_decoder_continues_the_encoder_over_the_joint_sequence(toy_tokenizer, name):
    """Encoder then decoder = one run of the recurrence over [source embeddings; target embeddings] with one memory
    (with `separate_target_lstm`: the target recurrence continues the source one's state and memory)."""
    model = memory_model(toy_tokenizer, name)
    batch = encode_batch(toy_tokenizer, PAIRS[:1])
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    with torch.no_grad():
        out = model(**batch, output_hidden_states=True)
        backbone = model.model
        source = backbone.encoder.embed_tokens(batch["input_ids"])
        target = backbone.decoder.embed_tokens(decoder_input_ids)
        joint = torch.cat([source, target], 1)
        hidden, cell = backbone.recurrence.initial_state(1)
        memory = backbone.recurrence.new_memory(1, capacity=joint.shape[1])
        if model.config.separate_target_lstm:
            _, hidden, cell = backbone.recurrence(source, torch.ones(source.shape[:2]), hidden, cell, memory)
            states, _, _ = backbone.target_recurrence(target, torch.ones(target.shape[:2]), hidden, cell, memory)
            features = backbone.target_recurrence.output_features(states)
            # the target side's LSTM is its own; its memory interface is the source side's
            assert backbone.target_recurrence.lstm is not backbone.recurrence.lstm
            assert backbone.target_recurrence.interface is backbone.recurrence.interface
        else:
            states, _, _ = backbone.recurrence(joint, torch.ones(joint.shape[:2]), hidden, cell, memory)
            features = backbone.recurrence.output_features(states)[:, batch["input_ids"].shape[1]:]
    torch.testing.assert_close(out.decoder_hidden_states[0], features)


@pytest.mark.parametrize("name", ["stack_lstm", "deep_lstm"])
def test_a_separate_target_lstm_adds_exactly_one_set_of_lstm_weights(toy_tokenizer, name):
    """The option adds the target side's LSTM weights (no h_0: it continues the source's state) and nothing else:
    the memory interface is not duplicated, in the parameters or in the saved state dict."""
    def build(**options):
        torch.manual_seed(0)
        return LexicalSeq2SeqForConditionalGeneration(small_config(toy_tokenizer, **{**CONFIGS[name], **options},
                                                                   lexical_mode="none"))
    shared, separate = build(), build(separate_target_lstm=True)
    added = set(separate.state_dict()) - set(shared.state_dict())
    assert set(shared.state_dict()) <= set(separate.state_dict())
    lstm = separate.model.recurrence.lstm
    expected = {f"model.target_recurrence.lstm.{n}" for n, _ in lstm.named_parameters() if n != "initial_hidden"}
    assert added == expected
    extra = sum(p.numel() for p in separate.parameters()) - sum(p.numel() for p in shared.parameters())
    assert extra == sum(p.numel() for n, p in lstm.named_parameters() if n != "initial_hidden")


@pytest.mark.parametrize("name", CONFIGS)
def test_teacher_forcing_equals_step_by_step_decoding(toy_tokenizer, name):
    model = memory_model(toy_tokenizer, name)
    batch = encode_batch(toy_tokenizer, PAIRS)
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    with torch.no_grad():
        full = model(**batch).logits
        encoder_outputs = model.get_encoder()(batch["input_ids"], batch["attention_mask"])
        cache, steps = None, []
        for position in range(decoder_input_ids.shape[1]):
            out = model(encoder_outputs=encoder_outputs, attention_mask=batch["attention_mask"],
                        decoder_input_ids=decoder_input_ids[:, position:position + 1], cache=cache, use_cache=True)
            cache = getattr(out, CACHE_NAME)
            steps.append(out.logits)
    real = batch["labels"] != -100
    torch.testing.assert_close(torch.cat(steps, 1)[real], full[real])
    assert isinstance(cache, JointSequenceCache) and cache.get_seq_length() == decoder_input_ids.shape[1]


@pytest.mark.parametrize("name", CONFIGS)
def test_a_padded_batch_equals_each_row_alone(toy_tokenizer, name):
    model = memory_model(toy_tokenizer, name)
    batch = encode_batch(toy_tokenizer, PAIRS)
    with torch.no_grad():
        together = model(**batch).logits
        generated = model.generate(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    for row, pair in enumerate(PAIRS):
        alone = encode_batch(toy_tokenizer, [pair])
        length = alone["labels"].shape[1]
        with torch.no_grad():
            torch.testing.assert_close(together[row, :length], model(**alone).logits[0])
            own = model.generate(input_ids=alone["input_ids"])[0]
        padded = generated[row]
        assert torch.equal(padded[:len(own)], own) and (padded[len(own):] == toy_tokenizer.pad_token_id).all()


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("num_beams", [1, 3])
def test_cached_generation_equals_uncached(toy_tokenizer, name, num_beams):
    model = memory_model(toy_tokenizer, name)
    batch = encode_batch(toy_tokenizer, PAIRS)
    settings = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], num_beams=num_beams,
                    output_scores=True, return_dict_in_generate=True)
    with torch.no_grad():
        cached = model.generate(**settings, use_cache=True)
        uncached = model.generate(**settings, use_cache=False)
    assert torch.equal(cached.sequences, uncached.sequences)
    assert cached.sequences.shape[1] > 4  # long outputs: the memory is stepped many times
    if num_beams > 1:
        torch.testing.assert_close(cached.sequences_scores, uncached.sequences_scores)


@pytest.mark.parametrize("name", MEMORY)
def test_stepping_from_a_cache_leaves_it_unchanged(toy_tokenizer, name):
    """Two continuations from one cache give the same result (the second steps a copy of the shared buffer), and
    the first continuation's own cache still holds what it held."""
    model = memory_model(toy_tokenizer, name)
    batch = encode_batch(toy_tokenizer, PAIRS)
    start = torch.full((3, 1), toy_tokenizer.bos_token_id)
    step = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], use_cache=True)
    with torch.no_grad():
        first = getattr(model(**step, decoder_input_ids=start), CACHE_NAME)
        tokens_a, tokens_b = torch.full((3, 1), 5), torch.full((3, 1), 6)
        after_a = model(**step, decoder_input_ids=tokens_a, cache=first)
        again_a_cache = getattr(after_a, CACHE_NAME)
        reads_a = again_a_cache.memory.read.clone()
        model(**step, decoder_input_ids=tokens_b, cache=first)  # a second branch from the same point
        repeated = model(**step, decoder_input_ids=tokens_a, cache=first)
        after_next = model(**step, decoder_input_ids=tokens_b, cache=again_a_cache)
        reference = model(**step, decoder_input_ids=torch.cat([start, tokens_a, tokens_b], 1)).logits[:, -1:]
    torch.testing.assert_close(repeated.logits, after_a.logits)
    torch.testing.assert_close(again_a_cache.memory.read, reads_a)
    torch.testing.assert_close(after_next.logits, reference)


@pytest.mark.parametrize("name", ["queue_lstm", "deque_lstm", "deep_lstm"])
def test_save_and_load_through_the_auto_classes(toy_tokenizer, name, tmp_path):
    model = memory_model(toy_tokenizer, name)
    batch = encode_batch(toy_tokenizer, PAIRS)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert type(loaded) is LexicalSeq2SeqForConditionalGeneration and loaded.config.backbone == name
    for key, value in model.state_dict().items():  # the pop bias and h_0 are loaded, not re-initialised
        assert torch.equal(loaded.state_dict()[key], value), key
    with torch.no_grad():
        torch.testing.assert_close(loaded(**batch).logits, model(**batch).logits)
        assert torch.equal(loaded.generate(**{k: batch[k] for k in ("input_ids", "attention_mask")}),
                           model.generate(**{k: batch[k] for k in ("input_ids", "attention_mask")}))


@pytest.mark.parametrize("name", MEMORY)
def test_a_memory_push_bias_is_the_initial_push_bias_also_on_the_meta_device_and_after_loading(toy_tokenizer, name,
                                                                                             tmp_path):
    config = small_config(toy_tokenizer, **CONFIGS[name], lexical_mode="none", memory_push_bias=-1.5)
    with torch.device("meta"):
        model = LexicalSeq2SeqForConditionalGeneration(config)
    model.to_empty(device="cpu")
    model.init_weights()
    ends = 2 if name == "deque_lstm" else 1
    for built in (model, LexicalSeq2SeqForConditionalGeneration(config)):
        assert torch.equal(built.model.recurrence.interface.push.bias, torch.full((ends,), -1.5))
        assert torch.equal(built.model.recurrence.interface.pop.bias, torch.full((ends,), -1.0))
    with torch.no_grad():
        model.model.recurrence.interface.push.bias.fill_(0.25)  # trained weights are loaded, not re-initialised
    model.save_pretrained(tmp_path)
    loaded = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)
    assert loaded.config.memory_push_bias == -1.5
    assert torch.equal(loaded.model.recurrence.interface.push.bias, torch.full((ends,), 0.25))
    default = LexicalSeq2SeqForConditionalGeneration(small_config(toy_tokenizer, **CONFIGS[name], lexical_mode="none"))
    assert len(set(default.model.recurrence.interface.push.bias.tolist())) == ends  # nn.Linear's random bias


@pytest.mark.parametrize("top", [None, -1.0])
def test_the_deques_bottom_push_bias_starts_the_bottom_end_alone_also_on_the_meta_device(toy_tokenizer, top, tmp_path):
    config = small_config(toy_tokenizer, **CONFIGS["deque_lstm"], lexical_mode="none", memory_push_bias=top,
                          memory_bottom_push_bias=-3.0)
    with torch.device("meta"):
        model = LexicalSeq2SeqForConditionalGeneration(config)
    model.to_empty(device="cpu")
    model.init_weights()
    for seed, built in enumerate((model, LexicalSeq2SeqForConditionalGeneration(config))):
        bias = built.model.recurrence.interface.push.bias  # ends: top, bottom
        assert bias[1].item() == -3.0
        if top is None:  # the top end keeps nn.Linear's random start, within ±1/sqrt(H)
            assert abs(bias[0].item()) <= config.hidden_size ** -0.5
        else:
            assert bias[0].item() == top
    model.save_pretrained(tmp_path)
    loaded = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)
    assert loaded.config.memory_bottom_push_bias == -3.0
    assert torch.equal(loaded.model.recurrence.interface.push.bias, model.model.recurrence.interface.push.bias)
    for backbone in ("stack_lstm", "queue_lstm"):  # one end: no bottom to start apart
        with pytest.raises(StrictDataclassClassValidationError, match="memory_bottom_push_bias: .*DeQue-LSTM options"):
            small_config(toy_tokenizer, backbone=backbone, memory_bottom_push_bias=-3.0, lexical_mode="none")
    with pytest.raises(StrictDataclassClassValidationError, match="memory_bottom_push_bias must be a finite number"):
        small_config(toy_tokenizer, backbone="deque_lstm", memory_bottom_push_bias=float("inf"), lexical_mode="none")


@pytest.mark.parametrize("name", MEMORY)
def test_initialisation_gives_the_papers_pop_bias_and_a_zero_h0_also_on_the_meta_device(toy_tokenizer, name):
    config = small_config(toy_tokenizer, **CONFIGS[name], lexical_mode="none")
    with torch.device("meta"):
        model = LexicalSeq2SeqForConditionalGeneration(config)
    model.to_empty(device="cpu")
    model.init_weights()
    for built in (model, LexicalSeq2SeqForConditionalGeneration(config)):
        recurrence = built.model.recurrence
        ends = 2 if name == "deque_lstm" else 1
        assert torch.equal(recurrence.interface.pop.bias, torch.full((ends,), -1.0))
        assert torch.equal(recurrence.lstm.initial_hidden, torch.zeros(config.hidden_size))
        assert all(torch.isfinite(p).all() for p in built.parameters())


@pytest.mark.parametrize("name", [*MEMORY, "deep_lstm"])
@pytest.mark.parametrize("mode", ["lexical", "copy"])
def test_lexical_modes_other_than_none_are_refused_with_a_reason(toy_tokenizer, name, mode):
    with pytest.raises(StrictDataclassClassValidationError, match=f"backbone='{name}' has no attention over the "
                                                                  "source.*use lexical_mode='none'"):
        small_config(toy_tokenizer, **CONFIGS[name], lexical_mode=mode)


def test_memory_options_are_refused_for_other_backbones_and_other_options_for_these(toy_tokenizer):
    for backbone in ("lstm", "transformer", "deep_lstm"):
        with pytest.raises(StrictDataclassClassValidationError, match="memory_width: .*-LSTM options"):
            small_config(toy_tokenizer, backbone=backbone, memory_width=32, lexical_mode="none")
    with pytest.raises(StrictDataclassClassValidationError, match="bidirectional_encoder: LSTM options"):
        small_config(toy_tokenizer, backbone="queue_lstm", bidirectional_encoder=True, lexical_mode="none")
    for backbone in ("lstm", "transformer", "syntactic_attention"):
        with pytest.raises(StrictDataclassClassValidationError, match="separate_target_lstm: .*LSTM options"):
            small_config(toy_tokenizer, backbone=backbone, separate_target_lstm=True, lexical_mode="none")
    for backbone in ("lstm", "deep_lstm"):
        with pytest.raises(StrictDataclassClassValidationError, match="memory_push_bias: .*-LSTM options"):
            small_config(toy_tokenizer, backbone=backbone, memory_push_bias=-1.0, lexical_mode="none")
    with pytest.raises(StrictDataclassClassValidationError, match="memory_push_bias must be a finite number"):
        small_config(toy_tokenizer, backbone="deque_lstm", memory_push_bias=float("nan"), lexical_mode="none")
    with pytest.raises(StrictDataclassFieldValidationError, match="separate_target_lstm.*expected bool"):
        small_config(toy_tokenizer, backbone="stack_lstm", separate_target_lstm="yes", lexical_mode="none")
    with pytest.raises(StrictDataclassClassValidationError, match="memory_width must be >= 1"):
        small_config(toy_tokenizer, backbone="stack_lstm", memory_width=0, lexical_mode="none")
    assert small_config(toy_tokenizer, backbone="deque_lstm", memory_width=32, lexical_mode="none").memory_width == 32


def test_seq2seq_trainer_learns_to_copy_short_sequences(tmp_path):
    """A Queue-LSTM learns to copy sequences of 1-3 symbols out of 5 and copies held-out ones."""
    rng = np.random.default_rng(0)
    symbols = [f"s{i}" for i in range(5)]
    sequences = sorted({" ".join(rng.choice(symbols, size=rng.integers(1, 4))) for _ in range(400)})
    held_out = sequences[::10]
    train = [s for s in sequences if s not in held_out]
    tokenizer = LexicalTokenizer.from_texts(train, train)
    data = Dataset.from_dict({"source": train, "target": train}).map(
        lambda b: tokenizer(b["source"], text_target=b["target"]), batched=True, remove_columns=["source", "target"])
    torch.manual_seed(0)
    model = LexicalSeq2SeqForConditionalGeneration(LexicalSeq2SeqConfig(
        source_vocab_size=tokenizer.source_vocab_size, target_vocab_size=tokenizer.target_vocab_size,
        backbone="queue_lstm", num_layers=1, embedding_size=16, hidden_size=32, memory_width=16, dropout=0.0,
        lexical_mode="none", max_decode_length=8))
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=16, max_steps=150, learning_rate=2e-2,
        max_grad_norm=1.0, lr_scheduler_type="constant", report_to="none", save_strategy="no", logging_strategy="no",
        seed=0, use_cpu=True, dataloader_num_workers=0, disable_tqdm=True)
    Seq2SeqTrainer(model=model, args=args, train_dataset=data, data_collator=DataCollatorForSeq2Seq(tokenizer, model=model),
                   processing_class=tokenizer).train()
    model.eval()
    batch = tokenizer(held_out, padding=True, return_tensors="pt")
    with torch.no_grad():
        predictions = tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True)
    accuracy = np.mean([p == s for p, s in zip(predictions, held_out)])
    assert accuracy >= 0.9, list(zip(predictions, held_out))


def test_the_controls_probe_forces_the_deque_copy_algorithm_and_reports_the_free_phase():
    """benchmarks/memory_controls.py: with the source phase forced, the memory after the source holds every symbol
    at the bottom with strength 1 (the DeQue's copy algorithm), and the target phase's own signals are recorded."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "memory_controls.py"
    spec = importlib.util.spec_from_file_location("memory_controls", path)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    args = probe.parse_args(["--force", "source", "--hidden", "8", "--width", "4"])
    tokenizer, model = probe.build(args)
    seen = probe.attach_controls(model, args)
    pair = next(probe.stream_pairs("copy", (5, 5)))
    batch = tokenizer([pair["source"]], text_target=[pair["target"]], return_tensors="pt")
    with torch.no_grad():
        encoded = model.get_encoder()(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        model(**batch)
    steps = batch["input_ids"].shape[1]  # the source tokens and </s>, each pushed at the bottom only: bottom first,
    expected = torch.cat([torch.ones(steps), torch.zeros(steps)])  # their rows, then the top's zero-strength ones
    torch.testing.assert_close(encoded.memory_strengths[0], expected)
    assert seen["source"] == [] and len(seen["target"]) == batch["labels"].shape[1]  # <s> y_1 … y_m: m + 1 steps
    assert "target: push top" in probe.mean_controls(seen, ends=2) and seen["target"] == []
    # one end held in the target phase too: the bottom's signals are the algorithm's (0), the top's the controller's
    args = probe.parse_args(["--force", "source", "--force_target_end", "bottom", "--hidden", "8", "--width", "4"])
    tokenizer, model = probe.build(args)
    seen = probe.attach_controls(model, args)
    with torch.no_grad():
        model(**batch)
    push_top, push_bottom, pop_top, pop_bottom = torch.stack(seen["target"]).mean(0).tolist()
    assert push_bottom == pop_bottom == 0.0 and 0.0 < push_top < 1.0 and 0.0 < pop_top < 1.0
