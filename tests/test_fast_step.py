"""The static-shape path of the recurrent backbones (what torch.compile and CUDA graphs run) against the default
eager path: the same loss, gradients and decoded outputs; one graph with no breaks; no recompilation within a
bucket of padded shapes."""

import pytest
import torch
import torch._dynamo

from lexical_hf import LexicalSeq2SeqForConditionalGeneration
from lexical_hf.backbones.recurrence import LSTMWeights
from conftest import encode_batch, random_lexicon, small_config

CONFIGS = {
    "sigmoid": {},
    "copy_token": dict(gate="copy_token"),
    "paper_code_details": dict(feed_dropout=True, combine_decoder_input=True, attention_query_bias=True,
                               gate="copy_token"),
    "lexical_mode_none": dict(lexical_mode="none"),
    "lexical_mode_copy": dict(lexical_mode="copy"),
    "train_lexicon": dict(train_lexicon=True),
    "bidirectional_one_layer": dict(bidirectional_encoder=True, num_layers=1),
}


def model_for(tokenizer, name, **overrides):
    torch.manual_seed(0)
    model = LexicalSeq2SeqForConditionalGeneration(small_config(tokenizer, **{**CONFIGS[name], **overrides}))
    if model.config.lexical_mode != "none":
        model.set_lexicon(random_lexicon(tokenizer.source_vocab_size, tokenizer.target_vocab_size, seed=1))
    return model.train()  # dropout is 0 in small_config: training mode with nothing random


def random_padded_batch(tokenizer, pairs, seed):
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(pairs), generator=generator)[:9].tolist()
    return encode_batch(tokenizer, [pairs[i] for i in order])


def loss_and_gradients(model, batch):
    model.zero_grad()
    loss = model(**batch).loss
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name", CONFIGS)
def test_the_static_path_gives_the_eager_loss_and_gradients(toy_tokenizer, toy_data, name):
    model = model_for(toy_tokenizer, name)
    for seed in range(3):
        batch = random_padded_batch(toy_tokenizer, toy_data, seed)
        model.config.static_shapes = False
        eager_loss, eager_grads = loss_and_gradients(model, batch)
        model.config.static_shapes = True
        static_loss, static_grads = loss_and_gradients(model, batch)
        torch.testing.assert_close(static_loss, eager_loss, atol=1e-6, rtol=1e-5)
        assert static_grads.keys() == eager_grads.keys()
        for key in eager_grads:
            torch.testing.assert_close(static_grads[key], eager_grads[key], atol=1e-6, rtol=1e-5, msg=key)


@pytest.mark.parametrize("name", ["sigmoid", "paper_code_details", "bidirectional_one_layer"])
def test_the_static_path_decodes_what_the_eager_path_decodes(toy_tokenizer, toy_data, name):
    model = model_for(toy_tokenizer, name).eval()
    batch = random_padded_batch(toy_tokenizer, toy_data, 0)
    outputs = {}
    for static in (False, True):
        model.config.static_shapes = static
        outputs[static] = [model.generate(batch["input_ids"], attention_mask=batch["attention_mask"], num_beams=beams,
                                          max_new_tokens=8) for beams in (1, 3)]
    assert all(torch.equal(a, b) for a, b in zip(outputs[False], outputs[True]))


def test_the_eager_encoder_runs_nn_lstms_own_kernel_on_the_same_weights(toy_tokenizer, toy_data):
    """LSTMWeights keeps nn.LSTM's names, order and initialisation (so checkpoints and seeded runs are unchanged) and
    its packed forward is nn.LSTM's, bit for bit."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    torch.manual_seed(3)
    weights = LSTMWeights(6, 5, 2, dropout=0.0, bidirectional=True)
    torch.manual_seed(3)
    reference = torch.nn.LSTM(6, 5, 2, batch_first=True, bidirectional=True)
    assert list(weights.state_dict()) == list(reference.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(weights.state_dict().values(), reference.state_dict().values()))
    inputs, lengths = torch.randn(4, 7, 6), torch.tensor([7, 3, 5, 1])
    packed = pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
    ours, (hidden, cell) = weights.packed_forward(packed)
    theirs, (hidden_ref, cell_ref) = reference(packed)
    assert torch.equal(ours.data, theirs.data) and torch.equal(hidden, hidden_ref) and torch.equal(cell, cell_ref)
    assert torch.equal(pad_packed_sequence(ours, batch_first=True)[0], pad_packed_sequence(theirs, batch_first=True)[0])


@pytest.mark.parametrize("name", ["paper_code_details", "bidirectional_one_layer", "lexical_mode_none"])
def test_the_training_step_compiles_into_one_graph_with_the_eager_results(toy_tokenizer, toy_data, name):
    model = model_for(toy_tokenizer, name)
    batch = random_padded_batch(toy_tokenizer, toy_data, 0)
    eager_loss, eager_grads = loss_and_gradients(model, batch)
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")  # fullgraph: a graph break is an error
    model.zero_grad()
    loss = compiled(**batch).loss
    loss.backward()
    torch.testing.assert_close(loss.detach(), eager_loss, atol=1e-6, rtol=1e-5)
    for key, grad in eager_grads.items():
        torch.testing.assert_close(dict(model.named_parameters())[key].grad, grad, atol=1e-6, rtol=1e-5, msg=key)


def test_batches_of_one_padded_shape_compile_once(toy_tokenizer, toy_data):
    """Bucketed padding (the collator's pad_to_multiple_of) gives one shape; other contents and row lengths within
    it must not recompile the step."""
    from lexical_hf.training.collator import CheckedDataCollator

    model = model_for(toy_tokenizer, "sigmoid")
    collator = CheckedDataCollator(toy_tokenizer, model=model, pad_to_multiple_of=8)
    features = [toy_tokenizer(source, text_target=target) for source, target in toy_data]
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager", dynamic=False)
    first = collator(features[:6])
    compiled(**first).loss.backward()
    with torch._dynamo.config.patch(error_on_recompile=True):
        for start in (6, 20, 33):
            batch = collator(features[start:start + 6])
            assert batch["input_ids"].shape == first["input_ids"].shape and batch["labels"].shape == first["labels"].shape
            compiled(**batch).loss.backward()


def test_the_collator_checks_batches_on_the_host(toy_tokenizer, toy_data):
    from lexical_hf.training.collator import CheckedDataCollator

    model = model_for(toy_tokenizer, "sigmoid")
    collator = CheckedDataCollator(toy_tokenizer, model=model)
    features = [toy_tokenizer(source, text_target=target) for source, target in toy_data[:3]]
    features[1]["labels"] = [model.config.decoder_start_token_id, *features[1]["labels"]]  # a never-generated id
    with pytest.raises(ValueError, match="never generates"):
        collator(features)


def test_the_collator_checks_without_touching_cuda_in_a_process_where_it_is_not_initialised(toy_tokenizer, toy_data,
                                                                                           monkeypatch):
    """A data-loading worker forked from a training process on a GPU cannot make any CUDA call (it fails with
    "initialization error"); the collator's checks there must not ask whether a CUDA graph is being captured."""
    from lexical_hf.training.collator import CheckedDataCollator

    def no_cuda_here():
        raise RuntimeError("CUDA error: initialization error")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", no_cuda_here)
    model = model_for(toy_tokenizer, "sigmoid")
    collator = CheckedDataCollator(toy_tokenizer, model=model)
    batch = collator([toy_tokenizer(source, text_target=target) for source, target in toy_data[:3]])
    assert batch["input_ids"].shape[0] == 3


class HostDataRecorder(torch.utils._python_dispatch.TorchDispatchMode):
    """Records the ops that take data from the host (`torch.tensor(list)`) or read a value back to it (`.item()`,
    `.tolist()`, `if tensor:`): what a CUDA graph capture cannot hold."""

    HOST_OPS = ("aten.lift_fresh.default", "aten._local_scalar_dense.default")

    def __init__(self):
        super().__init__()
        self.found = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if str(func) in self.HOST_OPS:
            self.found.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("name", ["paper_code_details", "train_lexicon", "lexical_mode_none"])
def test_inside_a_graph_the_static_training_step_neither_takes_nor_reads_host_data(toy_tokenizer, toy_data, name,
                                                                                  monkeypatch):
    """A CUDA graph capture fails at the first host-to-device copy or host read; this finds both on the CPU, with the
    model told it is inside a graph (as `torch.cuda.is_current_stream_capturing()` tells it on a GPU)."""
    import lexical_hf.backbones.common as common
    import lexical_hf.backbones.recurrence as recurrence
    import lexical_hf.modeling_lexical as modeling

    model = model_for(toy_tokenizer, name, static_shapes=True)
    batch = random_padded_batch(toy_tokenizer, toy_data, 0)
    model(**batch).loss.backward()  # the warm-up a capture is preceded by
    for module in (common, recurrence, modeling):
        monkeypatch.setattr(module, "in_graph", lambda: True)
    with HostDataRecorder() as recorder:
        model(**batch).loss.backward()
    assert recorder.found == []
    model.config.static_shapes = False  # the eager path reads lengths on the host: the recorder sees it
    monkeypatch.setattr(recurrence, "in_graph", lambda: False)
    with HostDataRecorder() as recorder:
        model(**batch).loss.backward()
    assert recorder.found


def test_several_seeds_as_one_vmapped_model_give_each_seeds_own_loss_and_gradients(toy_tokenizer, toy_data):
    """K models' weights stacked and the loss vmapped over them (`torch.func`: several seeds in one set of kernels,
    each on its own batch) equal K separate models: the model runs under a functorch transform without host reads."""
    import copy

    from torch.func import functional_call, stack_module_state, vmap

    models = [model_for(toy_tokenizer, "paper_code_details", static_shapes=True) for _ in range(3)]
    for seed, model in enumerate(models):  # three different models
        torch.manual_seed(seed)
        for parameter in model.parameters():
            parameter.data.normal_(0, 0.1)
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    batches = [random_padded_batch(toy_tokenizer, toy_data, seed) for seed in range(3)]
    width = {key: max(batch[key].shape[1] for batch in batches) for key in ("input_ids", "labels")}
    fill = {"input_ids": toy_tokenizer.pad_token_id, "attention_mask": 0, "labels": -100}
    stacked = {key: torch.stack([torch.nn.functional.pad(batch[key], (0, width["labels" if key == "labels" else "input_ids"]
                                                                      - batch[key].shape[1]), value=fill[key])
                                 for batch in batches]) for key in fill}

    def loss(p, b, input_ids, attention_mask, labels):
        return functional_call(base, (p, b), (), dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels)).loss

    losses = vmap(loss)(params, buffers, stacked["input_ids"], stacked["attention_mask"], stacked["labels"])
    losses.sum().backward()
    for k, (model, batch) in enumerate(zip(models, batches)):
        model_loss, grads = loss_and_gradients(model, batch)
        torch.testing.assert_close(losses[k].detach(), model_loss, atol=1e-6, rtol=1e-5)
        for name, grad in grads.items():
            torch.testing.assert_close(params[name].grad[k], grad, atol=1e-6, rtol=1e-5)
