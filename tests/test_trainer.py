"""The model trains inside a real Seq2SeqTrainer with DataCollatorForSeq2Seq and predict_with_generate."""

import pytest
import torch
from datasets import Dataset
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments

from conftest import small_model, train_on_toy_task


def test_seq2seq_trainer_reaches_full_exact_match_on_a_toy_task(toy_tokenizer, toy_data, tmp_path):
    tok = toy_tokenizer
    model = small_model(tok, lexical_mode="lexical", embedding_size=32, hidden_size=64)
    model.set_lexicon(model.lexical_head.uniform_lexicon())  # no lexical prior: the model must learn it all
    before, after = train_on_toy_task(model, tok, toy_data, tmp_path, max_steps=300, learning_rate=1e-2, eval_batch_size=16)
    assert before < 0.2
    assert after == 1.0, f"exact match after training: {after}"


def _one_sgd_update(tok, data, tmp_path, batch_size, accumulation, **config):
    """The parameter change of one optimizer step (SGD, lr 1, no clipping) over all of `data`."""
    model = small_model(tok, lexical_mode="lexical", **config)
    model.set_lexicon(model.lexical_head.uniform_lexicon())
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path / f"b{batch_size}-a{accumulation}"), per_device_train_batch_size=batch_size,
        gradient_accumulation_steps=accumulation, max_steps=1, optim="sgd", learning_rate=1.0,
        lr_scheduler_type="constant", max_grad_norm=0.0, report_to="none", save_strategy="no", logging_steps=1,
        seed=0, use_cpu=True, dataloader_num_workers=0, disable_tqdm=True,
    )
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=data,
                             data_collator=DataCollatorForSeq2Seq(tok, model=model), processing_class=tok)
    logged = trainer.train().training_loss
    update = torch.cat([(p.detach() - before[name]).flatten() for name, p in model.named_parameters()])
    return update, logged


def _toy_dataset(tok, toy_data, size):
    sources, targets = map(list, zip(*toy_data[:size]))
    data = Dataset.from_dict({"source": sources, "target": targets})
    return data.map(lambda b: tok(b["source"], text_target=b["target"]), batched=True,
                    remove_columns=["source", "target"])


def test_gradient_accumulation_gives_the_update_and_loss_of_one_large_batch(toy_tokenizer, toy_data, tmp_path):
    # The Trainer passes `num_items_in_batch` (the label count of all accumulated micro-batches) and then does not
    # divide by the accumulation steps itself: a model that ignored it took k× the step at k accumulation steps.
    # Targets of different lengths make per-micro-batch means differ from the token mean over the large batch.
    data = _toy_dataset(toy_tokenizer, toy_data, 8)
    assert len(set(map(len, data["labels"]))) > 1
    large, large_loss = _one_sgd_update(toy_tokenizer, data, tmp_path, batch_size=8, accumulation=1)
    accumulated, accumulated_loss = _one_sgd_update(toy_tokenizer, data, tmp_path, batch_size=2, accumulation=4)
    torch.testing.assert_close(accumulated, large, rtol=1e-4, atol=1e-6)
    assert abs(accumulated_loss - large_loss) < 1e-5 * large_loss


def test_sequence_normalised_loss_is_the_paper_codes_and_accumulates_like_one_batch(toy_tokenizer, toy_data, tmp_path):
    # loss_normalization="sequences": sum over target tokens / number of sequences (the paper's code, EncDec.forward)
    tok = toy_tokenizer
    model = small_model(tok, lexical_mode="lexical", loss_normalization="sequences")
    model.set_lexicon(model.lexical_head.uniform_lexicon())
    sources, targets = map(list, zip(*toy_data[:6]))
    batch = tok(sources, text_target=targets, padding=True, return_tensors="pt")
    batch["labels"] = batch["labels"].masked_fill(batch["labels"] == tok.pad_token_id, -100)
    output = model(**batch)
    labels = batch["labels"]
    token_log_probs = output.logits.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    expected = -token_log_probs[labels.ne(-100)].sum() / labels.shape[0]
    torch.testing.assert_close(output.loss, expected)
    token_mean = small_model(tok, lexical_mode="lexical")
    token_mean.set_lexicon(token_mean.lexical_head.uniform_lexicon())
    assert not torch.allclose(token_mean(**batch).loss, output.loss)

    data = _toy_dataset(tok, toy_data, 8)
    large, large_loss = _one_sgd_update(tok, data, tmp_path, batch_size=8, accumulation=1, loss_normalization="sequences")
    accumulated, accumulated_loss = _one_sgd_update(tok, data, tmp_path, batch_size=2, accumulation=4,
                                                    loss_normalization="sequences")
    tokens, _ = _one_sgd_update(tok, data, tmp_path, batch_size=8, accumulation=1)
    torch.testing.assert_close(accumulated, large, rtol=1e-4, atol=1e-6)
    assert abs(accumulated_loss - large_loss) < 1e-5 * large_loss
    # per sequence rather than per token: the step is (mean target length) times the token-mean step
    mean_length = sum(len(labels) for labels in data["labels"]) / len(data)
    torch.testing.assert_close(large, tokens * mean_length, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("loss_normalization", ["tokens", "sequences"])
def test_trainer_label_smoothing_is_warned_about(toy_tokenizer, toy_data, tmp_path, caplog, loss_normalization):
    # Trainer's LabelSmoother sums -log p over every id, -inf ones included: infinite, and logged as 0. With
    # "sequences" Trainer passes no label count (accepts_loss_kwargs is false), so that cannot be the model's cue.
    from transformers.utils import logging as hf_logging

    hf_logging.warning_once.cache_clear()  # the warning is logged once per process, whichever test ran first
    tok = toy_tokenizer
    data = _toy_dataset(tok, toy_data, 8)
    model = small_model(tok, lexical_mode="lexical", loss_normalization=loss_normalization)
    model.set_lexicon(model.lexical_head.uniform_lexicon())
    args = Seq2SeqTrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=8, max_steps=1,
                                    label_smoothing_factor=0.1, report_to="none", save_strategy="no", use_cpu=True,
                                    disable_tqdm=True)
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=data,
                             data_collator=DataCollatorForSeq2Seq(tok, model=model), processing_class=tok)
    hf_logging.enable_propagation()
    try:
        with caplog.at_level("WARNING"):
            trainer.train()
    finally:
        hf_logging.disable_propagation()
    assert "label_smoothing_factor" in caplog.text


def test_generating_in_training_mode_does_not_warn_about_label_smoothing(toy_tokenizer, toy_data, caplog):
    """A freshly built model is in training mode; generate() (no labels, no gradients) is not a training forward."""
    from transformers.utils import logging as hf_logging

    hf_logging.warning_once.cache_clear()
    model = small_model(toy_tokenizer, lexical_mode="lexical").train()  # as LexicalSeq2Seq…(config) builds it
    batch = toy_tokenizer([source for source, _ in toy_data[:2]], padding=True, return_tensors="pt")
    hf_logging.enable_propagation()
    try:
        with caplog.at_level("WARNING"):
            model.generate(**batch, max_new_tokens=3)
    finally:
        hf_logging.disable_propagation()
    assert "label_smoothing_factor" not in caplog.text


def test_what_the_package_calls_is_not_deprecated(toy_tokenizer, toy_data, tmp_path, caplog):
    """transformers deprecates mostly through `logger.warning_once`, which pytest does not show: 5.24 renamed
    `past_key_values` to `cache` with a warning before the old name broke training. One pass over what the package
    uses (Trainer training and generate-based evaluation, greedy and beam generate with per-step outputs, save and
    Auto loading of model, tokenizer and lexicon) must log no deprecation and raise no Deprecation/FutureWarning from
    the Hugging Face libraries or our code."""
    import logging
    import warnings

    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from lexical_hf import Lexicon, learn_lexicon

    tok = toy_tokenizer
    data = _toy_dataset(tok, toy_data, 8)
    model = small_model(tok, lexical_mode="lexical")
    lexicon = learn_lexicon(tuple(map(list, zip(*toy_data))), method="simple")
    model.set_lexicon(lexicon, tok)
    args = Seq2SeqTrainingArguments(output_dir=str(tmp_path / "run"), per_device_train_batch_size=4, max_steps=2,
                                    eval_strategy="steps", eval_steps=2, save_strategy="no", report_to="none",
                                    use_cpu=True, disable_tqdm=True, predict_with_generate=True,
                                    train_sampling_strategy="group_by_length")
    logging.Logger.warning_once.cache_clear()  # messages logged once by earlier tests would not be logged again
    hf_logging.enable_propagation()
    try:
        with caplog.at_level("WARNING"), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=data, eval_dataset=data,
                                     data_collator=DataCollatorForSeq2Seq(tok, model=model), processing_class=tok)
            trainer.train()
            trainer.predict(data, max_new_tokens=5)
            batch = tok(["dax lug", "lug"], padding=True, return_tensors="pt")
            for beams in (1, 2):
                model.generate(**batch, num_beams=beams, max_new_tokens=4, return_dict_in_generate=True,
                               output_attentions=True, output_hidden_states=True, output_scores=True)
            model.save_pretrained(tmp_path / "saved")
            tok.save_pretrained(tmp_path / "saved")
            AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "saved")
            AutoTokenizer.from_pretrained(tmp_path / "saved")
            Lexicon.from_pretrained(tmp_path / "saved")
    finally:
        hf_logging.disable_propagation()
    logged = [r.getMessage() for r in caplog.records if "deprecat" in r.getMessage().lower()]
    ours = ("transformers", "huggingface_hub", "datasets", "accelerate", "lexical_hf", "tests")
    raised = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught
              if issubclass(w.category, (DeprecationWarning, FutureWarning)) and any(f"/{p}/" in w.filename for p in ours)]
    assert not logged and not raised, logged + raised


@pytest.mark.parametrize("loss_normalization", ["tokens", "sequences"])
def test_the_cuda_graph_step_trains_like_the_default_step_with_one_capture_per_batch_shape(toy_tokenizer, toy_data,
                                                                                            tmp_path, loss_normalization):
    """`LexicalSeq2SeqTrainer(cuda_graphs=True)` with a CPU stand-in for `torch.cuda.make_graphed_callables` that runs
    the captured module as a capture would (inside a graph: static path, no host checks): the same weights as the
    default step after a few SGD updates with clipping (Adam would turn rounding-level gradients of an unused weight into
    whole steps), and one capture per padded (source, target) shape. With the loss per sequence the Trainer's token
    count must not reach the model (the stock step leaves it out too), or the captured loss would be per token."""
    import contextlib

    import lexical_hf.backbones.common as common
    import lexical_hf.backbones.recurrence as recurrence
    import lexical_hf.modeling_lexical as modeling
    from lexical_hf.training.collator import CheckedDataCollator
    from lexical_hf.training.trainer import LexicalSeq2SeqTrainer

    @contextlib.contextmanager
    def inside_a_graph():
        saved = [(module, module.in_graph) for module in (common, recurrence, modeling)]
        for module, _ in saved:
            module.in_graph = lambda: True
        try:
            yield
        finally:
            for module, function in saved:
                module.in_graph = function

    captured = []

    def capture(module, args, allow_unused_input):
        assert allow_unused_input and all(isinstance(arg, torch.Tensor) for arg in args)
        captured.append(tuple(tuple(arg.shape) for arg in args[:3]))

        def replay(*replayed):
            with inside_a_graph():
                return module(*replayed)
        return replay

    data = _toy_dataset(toy_tokenizer, toy_data, 24)
    weights, losses = {}, {}
    for graphs in (False, True):
        model = small_model(toy_tokenizer, lexical_mode="lexical", loss_normalization=loss_normalization)
        model.set_lexicon(model.lexical_head.uniform_lexicon())
        args = Seq2SeqTrainingArguments(
            output_dir=str(tmp_path / str(graphs)), per_device_train_batch_size=2, max_steps=8, optim="sgd", learning_rate=0.5,
            max_grad_norm=0.5, report_to="none", save_strategy="no", logging_steps=1, seed=0, use_cpu=True,
            disable_tqdm=True)
        trainer = LexicalSeq2SeqTrainer(model=model, args=args, train_dataset=data, cuda_graphs=graphs,
                                        data_collator=CheckedDataCollator(toy_tokenizer, model=model),
                                        processing_class=toy_tokenizer)
        if graphs:
            trainer.graphed_loss.capture = capture
        batch = trainer.data_collator([data[i] for i in range(4)])
        tokens = batch["labels"].ne(-100).sum()  # a count the stock step passes on only to a model that takes it
        losses[graphs] = float(trainer.compute_loss(model.train(), batch, num_items_in_batch=tokens).detach())
        trainer.train()
        weights[graphs] = {name: p.detach().clone() for name, p in model.named_parameters()}
        assert not model.config.static_shapes  # the capture's static path is not left switched on
    for name, value in weights[False].items():
        torch.testing.assert_close(weights[True][name], value, rtol=1e-4, atol=1e-6)
    assert losses[True] == pytest.approx(losses[False], rel=1e-5)
    assert len(captured) == len(set(captured)) >= 2  # the toy batches come in more than one padded shape


def test_evaluation_with_generate_leaves_the_model_generation_config_as_it_was(toy_tokenizer, toy_data, tmp_path):
    """Seq2SeqTrainer fills the model's generation config with transformers' defaults after each generate() (max_length
    20 beside the model's max_new_tokens cap); every later generate() then warns that both were set, and checkpoints
    save the filled config. `LexicalSeq2SeqTrainer` evaluates twice without either."""
    from transformers.testing_utils import CaptureLogger
    from transformers.utils import logging as transformers_logging

    from lexical_hf.training.collator import CheckedDataCollator
    from lexical_hf.training.trainer import LexicalSeq2SeqTrainer

    data = _toy_dataset(toy_tokenizer, toy_data, 12)
    model = small_model(toy_tokenizer, lexical_mode="none")
    expected = model.generation_config.to_dict()
    assert expected["max_length"] is None and expected["max_new_tokens"] == model.config.max_decode_length
    args = Seq2SeqTrainingArguments(output_dir=str(tmp_path), per_device_eval_batch_size=4, predict_with_generate=True,
                                    report_to="none", use_cpu=True, disable_tqdm=True)
    trainer = LexicalSeq2SeqTrainer(model=model, args=args, eval_dataset=data, processing_class=toy_tokenizer,
                                    data_collator=CheckedDataCollator(toy_tokenizer, model=model),
                                    compute_metrics=lambda prediction: {"decoded": float(prediction.predictions.shape[0])})
    with CaptureLogger(transformers_logging.get_logger("transformers")) as captured:
        decoded = [trainer.evaluate()["eval_decoded"] for _ in range(2)]
    assert decoded == [len(data), len(data)]  # generate() ran on every example, both times
    assert "seem to have been set" not in captured.out
    assert model.generation_config.to_dict() == expected
