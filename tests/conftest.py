"""Shared fixtures: a tiny word-level translation task, its tokenizer and small model configs."""

import itertools
import os
from pathlib import Path

import pytest
import torch

from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer

# The test models are tiny: one thread avoids OpenMP synchronisation, which makes small ops many times slower when
# the 2 vCPUs are shared with other processes (subprocess tests, parallel seeds).
torch.set_num_threads(1)

WORDS = {"dax": "RED", "lug": "BLUE", "wif": "GREEN", "zup": "YELLOW"}


def toy_pairs():
    """Word-for-word translation with one structural word: `x twice` repeats x's translation."""
    pairs = []
    for length in (1, 2):
        for words in itertools.product(WORDS, repeat=length):
            pairs.append((" ".join(words), " ".join(WORDS[w] for w in words)))
            pairs.append((" ".join(words) + " twice", " ".join(WORDS[w] for w in words) + " " + WORDS[words[-1]]))
    return pairs


@pytest.fixture(scope="session")
def toy_data():
    return toy_pairs()


@pytest.fixture(scope="session")
def toy_tokenizer(toy_data):
    sources, targets = zip(*toy_data)
    return LexicalTokenizer.from_texts(sources, targets)


def small_config(tokenizer, **overrides):
    settings = dict(
        source_vocab_size=tokenizer.source_vocab_size,
        target_vocab_size=tokenizer.target_vocab_size,
        embedding_size=16,
        hidden_size=24,
        num_layers=2,
        dropout=0.0,
    )
    settings.update(overrides)
    return LexicalSeq2SeqConfig(**settings)


def small_model(tokenizer, seed=0, **overrides):
    torch.manual_seed(seed)
    model = LexicalSeq2SeqForConditionalGeneration(small_config(tokenizer, **overrides))
    return model.eval()


def train_on_toy_task(model, tokenizer, pairs, output_dir, *, max_steps, learning_rate, eval_batch_size=40):
    """Exact match of greedy decoding on the toy pairs before and after training `model` on them with a real
    `Seq2SeqTrainer` (batch 8, constant learning rate, no checkpoints): (before, after)."""
    import numpy as np
    from datasets import Dataset
    from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments

    sources, targets = map(list, zip(*pairs))
    data = Dataset.from_dict({"source": sources, "target": targets})
    data = data.map(lambda b: tokenizer(b["source"], text_target=b["target"]), batched=True,
                    remove_columns=["source", "target"])

    def exact_match(prediction):
        decode = lambda ids: tokenizer.batch_decode(np.where(ids < 0, 0, ids), skip_special_tokens=True)  # noqa: E731
        return {"exact_match": float(np.mean([p == r for p, r in zip(decode(prediction.predictions),
                                                                     decode(prediction.label_ids))]))}

    args = Seq2SeqTrainingArguments(
        output_dir=str(output_dir), per_device_train_batch_size=8, per_device_eval_batch_size=eval_batch_size,
        max_steps=max_steps, learning_rate=learning_rate, lr_scheduler_type="constant", predict_with_generate=True,
        generation_max_length=8, generation_num_beams=1, report_to="none", save_strategy="no", logging_strategy="no",
        seed=0, use_cpu=True, dataloader_num_workers=0, disable_tqdm=True,
    )
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=data, eval_dataset=data,
                             data_collator=DataCollatorForSeq2Seq(tokenizer, model=model), processing_class=tokenizer,
                             compute_metrics=exact_match)
    before = trainer.evaluate()["eval_exact_match"]
    trainer.train()
    return before, trainer.evaluate()["eval_exact_match"]


def random_lexicon(source_size, target_size, non_generatable=(0, 1), seed=0):
    generator = torch.Generator().manual_seed(seed)
    matrix = torch.rand(source_size, target_size, generator=generator)
    matrix[:, list(non_generatable)] = 0
    return matrix / matrix.sum(-1, keepdim=True)


def encode_batch(tokenizer, pairs):
    sources, targets = zip(*pairs)
    batch = tokenizer(list(sources), text_target=list(targets), padding=True, return_tensors="pt")
    batch["labels"] = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, -100)
    return batch


@pytest.fixture(scope="session")
def shared_data_dir():
    """The local mirror of the public benchmark files (../shared/data beside the repo, or LEXICAL_HF_DATA_DIR)."""
    candidates = [os.environ.get("LEXICAL_HF_DATA_DIR"), Path(__file__).resolve().parents[2] / "shared" / "data"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    pytest.skip(f"benchmark mirror not found (looked at {[str(c) for c in candidates if c]})")
