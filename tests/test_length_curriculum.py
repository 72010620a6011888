"""The length curriculum of `lexical-hf train` (--curriculum_max_source_length, --curriculum_steps): short sources
first, then the whole training set."""

import datasets
import pytest
from transformers import Seq2SeqTrainingArguments

from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer
from lexical_hf.training.collator import CheckedDataCollator
from lexical_hf.training.trainer import LexicalSeq2SeqTrainer, LengthCurriculumSampler


def epoch_order(sampler, epoch):
    sampler.set_epoch(epoch)
    return list(sampler)


def test_the_first_samples_cycle_through_the_short_examples_then_the_whole_set_follows():
    short = [3, 7, 11, 15, 19]
    sampler = LengthCurriculumSampler(20, short, short_samples=12, seed=0)
    order = epoch_order(sampler, 0)
    assert len(order) == len(sampler) == 20
    # the curriculum: whole permutations of the short examples, one after another
    assert sorted(order[:5]) == short and sorted(order[5:10]) == short and set(order[10:12]) <= set(short)
    assert len(set(order[12:])) == 8  # then the whole set in random order, no example twice
    later = epoch_order(sampler, 1)
    assert sorted(later) == list(range(20))  # the curriculum is over: an epoch of the whole set
    assert epoch_order(sampler, 0) == order and epoch_order(sampler, 1) == later  # (seed, epoch) fix the order
    assert epoch_order(LengthCurriculumSampler(20, short, short_samples=12, seed=1), 0) != order


def test_a_curriculum_longer_than_an_epoch_goes_on_into_the_next_with_unbroken_cycles():
    short = [0, 1, 2]
    sampler = LengthCurriculumSampler(4, short, short_samples=7, seed=5)
    first, second = epoch_order(sampler, 0), epoch_order(sampler, 1)
    stream = first + second
    assert sorted(stream[0:3]) == short and sorted(stream[3:6]) == short and stream[6] in short
    assert stream[7] in range(4) and len(set(second[3:])) == 1
    third = epoch_order(sampler, 2)
    assert sorted(third) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="no training example short enough"):
        LengthCurriculumSampler(4, [], short_samples=2, seed=0)


def tiny_trainer(tmp_path, length_curriculum, accumulation=1):
    sources = [" ".join(f"s{i}" for i in range(n)) for n in (1, 2, 3, 4, 5, 6) * 6]
    raw = datasets.Dataset.from_dict({"source": sources, "target": sources})
    tokenizer = LexicalTokenizer.from_texts(sources, sources)
    train = raw.map(lambda b: tokenizer(b["source"], text_target=b["target"]), batched=True,
                    remove_columns=["source", "target"])
    config = LexicalSeq2SeqConfig(source_vocab_size=tokenizer.source_vocab_size,
                                  target_vocab_size=tokenizer.target_vocab_size, embedding_size=8, hidden_size=8,
                                  num_layers=1, lexical_mode="none")
    model = LexicalSeq2SeqForConditionalGeneration(config)
    args = Seq2SeqTrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=3, max_steps=8,
                                    gradient_accumulation_steps=accumulation, report_to="none", seed=4,
                                    use_cpu=True, dataloader_pin_memory=False)
    return LexicalSeq2SeqTrainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                                 data_collator=CheckedDataCollator(tokenizer, model=model), length_curriculum=length_curriculum)


@pytest.mark.parametrize("accumulation", [1, 2])
def test_the_trainer_draws_the_first_updates_from_short_sources_counted_in_symbols(tmp_path, accumulation):
    trainer = tiny_trainer(tmp_path, length_curriculum=(3, 2), accumulation=accumulation)
    batches = list(trainer.get_train_dataloader())
    special = set(trainer.processing_class.all_special_ids)
    symbols = [[sum(token not in special for token in row) for row in batch["input_ids"].tolist()]
               for batch in batches]
    curriculum = 2 * accumulation  # batches of the first two updates
    # padding counts as a special token: each row's symbols are its source's words
    assert all(max(lengths) <= 3 for lengths in symbols[:curriculum])
    assert max(max(lengths) for lengths in symbols[curriculum:]) > 3  # the whole set afterwards
    with pytest.raises(ValueError, match="training set has none"):
        list(tiny_trainer(tmp_path, length_curriculum=(0, 2)).get_train_dataloader())


def run(tmp_path, *flags):
    from lexical_hf.training import main

    return main(["--benchmark", "transduction", "--benchmark_config", "copy", "--backbone", "queue_lstm",
                 "--lexicon", "none", "--benchmark_params",
                 "train_lengths=[2,6],test_lengths=[7,8],train_size=40,eval_size=4", "--embedding_size", "8",
                 "--hidden_size", "8", "--memory_width", "8", "--max_steps", "4", "--seeds", "0",
                 "--disable_tqdm", "true", "--output_dir", str(tmp_path / "run"), *flags])


def test_the_curriculum_flags_reach_the_run_and_its_recorded_settings(tmp_path):
    results = run(tmp_path, "--curriculum_max_source_length", "3", "--curriculum_steps", "2")
    assert results["settings"]["curriculum"] == {"max_source_length": 3, "updates": 2}
    assert results["per_seed"]["0"]["train_seconds"]["updates"] == 4


@pytest.mark.parametrize("flags, message", [
    (["--curriculum_steps", "2"], "needs both"),
    (["--curriculum_max_source_length", "3"], "needs both"),
    (["--curriculum_max_source_length", "0", "--curriculum_steps", "2"], "must be positive"),
    (["--curriculum_max_source_length", "3", "--curriculum_steps", "4"], "covers the whole run"),
    (["--curriculum_max_source_length", "3", "--curriculum_steps", "2", "--train_sampling_strategy",
      "group_by_length"], "group_by_length"),
])
def test_a_curriculum_that_cannot_work_as_given_is_refused_before_training(tmp_path, flags, message):
    with pytest.raises(ValueError, match=message):
        run(tmp_path, *flags)


def test_a_low_loss_on_the_short_sequences_does_not_end_training_to_convergence(tmp_path):
    import json
    from types import SimpleNamespace

    from transformers import TrainerControl, TrainerState

    from lexical_hf.training.seeds import finished_training, first_loss_read
    from lexical_hf.training.trainer import TrainingLossStop

    experiment = SimpleNamespace(curriculum_max_source_length=16, curriculum_steps=300)
    training = SimpleNamespace(logging_steps=100, max_steps=1000)
    assert first_loss_read(experiment, training) == 400  # the first window of 100 updates wholly after the curriculum
    assert first_loss_read(SimpleNamespace(curriculum_max_source_length=None, curriculum_steps=None), training) == 0
    stop = TrainingLossStop(0.001, not_before=400)
    args = SimpleNamespace(eval_strategy="no", save_strategy="no")
    for step, ends in ((300, False), (400, True)):
        state, control = TrainerState(global_step=step, max_steps=1000), TrainerControl()
        stop.on_log(args, state, control, logs={"loss": 0.0005})
        assert control.should_training_stop is ends
    checkpoint = tmp_path / "checkpoint-300"
    checkpoint.mkdir()
    (checkpoint / "trainer_state.json").write_text(json.dumps(
        {"global_step": 300, "log_history": [{"step": 300, "loss": 0.0005}]}))
    assert finished_training(str(checkpoint), training, 0.001) is True
    assert finished_training(str(checkpoint), training, 0.001, not_before=400) is False
