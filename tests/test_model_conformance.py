"""What transformers' common model and generation test mixins ask of a model, for every backbone: initialisation on
the meta device, input embeddings, extra generation keywords, encoder outputs, assisted decoding, the decoding cap,
and a seeded training run that gives the same metrics every time."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration
from conftest import encode_batch, random_lexicon, small_config

REPO = Path(__file__).resolve().parents[1]
BACKBONES = {
    "lstm": dict(backbone="lstm"),
    "transformer": dict(backbone="transformer", num_attention_heads=2, ffn_size=32),
}


def built(tokenizer, backbone, **overrides):
    torch.manual_seed(0)
    return LexicalSeq2SeqForConditionalGeneration(small_config(tokenizer, **BACKBONES[backbone], **overrides)).eval()


@pytest.mark.parametrize("backbone", BACKBONES)
@pytest.mark.parametrize("train_lexicon", [False, True])
def test_a_model_built_on_the_meta_device_and_initialised_is_the_model_init_builds(toy_tokenizer, backbone, train_lexicon):
    """`to_empty()` + `init_weights()` after building on the meta device (how transformers and accelerate build big
    models): L gets its uniform placeholder (not uninitialised memory with rows summing to ~1e3 or inf) and every
    LayerNorm its ones and zeros."""
    config = small_config(toy_tokenizer, **BACKBONES[backbone], train_lexicon=train_lexicon)
    with torch.device("meta"):
        model = LexicalSeq2SeqForConditionalGeneration(config)
    model.to_empty(device="cpu")
    model.init_weights()
    reference = LexicalSeq2SeqForConditionalGeneration(config)
    torch.testing.assert_close(model.lexical_head.lexicon_matrix(), reference.lexical_head.lexicon_matrix())
    rows = model.lexical_head.lexicon_matrix().sum(-1)
    torch.testing.assert_close(rows, torch.ones_like(rows))
    norms = [m for m in model.modules() if isinstance(m, nn.LayerNorm)]
    assert (backbone == "transformer") == bool(norms)
    for norm in norms:
        assert torch.equal(norm.weight, torch.ones_like(norm.weight)) and torch.equal(norm.bias, torch.zeros_like(norm.bias))
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_loading_keeps_a_learned_lexicon_that_initialisation_would_replace(toy_tokenizer, tmp_path):
    model = built(toy_tokenizer, "lstm")
    lexicon = random_lexicon(toy_tokenizer.source_vocab_size, toy_tokenizer.target_vocab_size, seed=3)
    model.set_lexicon(lexicon)
    model.save_pretrained(tmp_path)
    loaded = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)
    torch.testing.assert_close(loaded.lexical_head.lexicon_matrix(), lexicon)


@pytest.mark.parametrize("backbone", BACKBONES)
def test_input_embeddings_can_be_read_and_replaced(toy_tokenizer, toy_data, backbone):
    model = built(toy_tokenizer, backbone)
    batch = encode_batch(toy_tokenizer, toy_data[:3])
    replacement = nn.Embedding(*model.get_input_embeddings().weight.shape)
    model.set_input_embeddings(replacement)
    assert model.get_input_embeddings() is replacement
    with torch.no_grad():
        replacement.weight.zero_()
        constant = model.get_encoder()(batch["input_ids"]).last_hidden_state  # every source embeds to zeros
        other = model.get_encoder()(batch["input_ids"].flip(1).clamp(min=4)).last_hidden_state
    if backbone == "lstm":  # zero inputs give the same recurrent states whatever the ids
        torch.testing.assert_close(constant[:, :1], other[:, :1])
    with pytest.raises(ValueError, match="nn.Embedding of shape"):
        model.set_input_embeddings(nn.Embedding(3, 2))


@pytest.mark.parametrize("backbone", BACKBONES)
def test_generation_passes_extra_model_keywords_to_forward(toy_tokenizer, toy_data, backbone):
    model = built(toy_tokenizer, backbone)
    batch = encode_batch(toy_tokenizer, toy_data[:2])
    inputs = model.prepare_inputs_for_generation(batch["input_ids"][:, :1], attention_mask=batch["attention_mask"],
                                                 use_cache=True, output_attentions=True, custom_flag="kept",
                                                 labels=batch["labels"])
    assert inputs["output_attentions"] is True and inputs["custom_flag"] == "kept" and inputs["use_cache"] is True
    assert "labels" not in inputs  # generate() never scores against labels (Seq2SeqTrainer passes them in)


def test_forward_returns_the_encoders_states_and_attentions_when_asked(toy_tokenizer, toy_data):
    model = built(toy_tokenizer, "transformer", num_layers=2)
    batch = encode_batch(toy_tokenizer, toy_data[:3])
    out = model(**batch, output_attentions=True, output_hidden_states=True)
    source = batch["input_ids"].shape
    assert len(out.encoder_hidden_states) == 3 and len(out.encoder_attentions) == 2  # embeddings + each layer
    assert out.encoder_hidden_states[-1].shape == (*source, model.config.hidden_size)
    assert out.encoder_attentions[0].shape == (source[0], 2, source[1], source[1])
    plain = model(**batch)
    assert plain.encoder_hidden_states is None and plain.encoder_attentions is None
    lstm = built(toy_tokenizer, "lstm")(**batch, output_hidden_states=True)
    assert lstm.encoder_hidden_states[0].shape == lstm.encoder_last_hidden_state.shape


@pytest.mark.parametrize("backbone", BACKBONES)
def test_assisted_and_prompt_lookup_decoding_are_refused_with_a_reason(toy_tokenizer, toy_data, backbone):
    model = built(toy_tokenizer, backbone)
    batch = encode_batch(toy_tokenizer, toy_data[:2])
    for kwargs in (dict(prompt_lookup_num_tokens=2), dict(assistant_model=built(toy_tokenizer, backbone))):
        with pytest.raises(ValueError, match="cropped back to an earlier token"):
            model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], **kwargs)


def test_the_decoding_cap_is_max_new_tokens_so_a_calls_own_cap_gives_no_warning(toy_tokenizer, toy_data):
    from transformers.testing_utils import CaptureLogger
    from transformers.utils import logging as transformers_logging

    model = built(toy_tokenizer, "lstm", max_decode_length=5)
    batch = encode_batch(toy_tokenizer, toy_data[:2])
    assert model.generation_config.max_new_tokens == 5
    with CaptureLogger(transformers_logging.get_logger("transformers")) as captured:
        short = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_new_tokens=2)
        capped = model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], max_length=3)
    assert "max_new_tokens" not in captured.out and short.shape[1] <= 3 and capped.shape[1] <= 3
    assert model.generate(batch["input_ids"], attention_mask=batch["attention_mask"]).shape[1] <= 6


TINY_RUN = ["--benchmark", "colors", "--embedding_size", "16", "--hidden_size", "16", "--num_layers", "1",
            "--max_steps", "12", "--disable_tqdm", "true", "--seeds", "0"]


def _seed_metrics(output_dir: Path) -> dict:
    metrics = json.loads((output_dir / "seeds" / "seed-0" / "metrics.json").read_text())
    metrics.pop("train_seconds")
    return metrics


def test_a_seeded_run_gives_identical_metrics_in_one_process_and_in_two(tmp_path, monkeypatch):
    """Same seed, same code, same machine: the same metrics, whether the two runs share a process or not."""
    from lexical_hf.training import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    main([*TINY_RUN, "--output_dir", str(tmp_path / "a")])
    main([*TINY_RUN, "--output_dir", str(tmp_path / "b")])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(torch.get_num_threads())}
    result = subprocess.run([sys.executable, str(REPO / "examples" / "run_lexical.py"), *TINY_RUN, "--output_dir",
                             str(tmp_path / "c")], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    a, b, c = (_seed_metrics(tmp_path / name) for name in "abc")
    assert a == b == c and a["test"]["token_accuracy"] > 0
