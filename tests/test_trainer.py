"""The model trains inside a real Seq2SeqTrainer with DataCollatorForSeq2Seq and predict_with_generate."""

import numpy as np
import torch
from datasets import Dataset
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments

from conftest import small_model


def test_seq2seq_trainer_reaches_full_exact_match_on_a_toy_task(toy_tokenizer, toy_data, tmp_path):
    tok = toy_tokenizer
    sources, targets = map(list, zip(*toy_data))
    data = Dataset.from_dict({"source": sources, "target": targets})
    data = data.map(lambda b: tok(b["source"], text_target=b["target"]), batched=True, remove_columns=["source", "target"])
    model = small_model(tok, lexical_mode="lexical", embedding_size=32, hidden_size=64)
    model.set_lexicon(model.lexical_head.uniform_lexicon())  # no lexical prior: the model must learn it all

    def exact_match(prediction):
        predictions = tok.batch_decode(np.where(prediction.predictions < 0, 0, prediction.predictions), skip_special_tokens=True)
        references = tok.batch_decode(np.where(prediction.label_ids < 0, 0, prediction.label_ids), skip_special_tokens=True)
        return {"exact_match": float(np.mean([p == r for p, r in zip(predictions, references)]))}

    args = Seq2SeqTrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=8, per_device_eval_batch_size=16, max_steps=300,
        learning_rate=1e-2, lr_scheduler_type="constant", predict_with_generate=True, generation_max_length=8,
        generation_num_beams=1, report_to="none", save_strategy="no", logging_strategy="no", seed=0,
        use_cpu=True, dataloader_num_workers=0, disable_tqdm=True,
    )
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=data, eval_dataset=data,
                             data_collator=DataCollatorForSeq2Seq(tok, model=model), processing_class=tok,
                             compute_metrics=exact_match)
    before = trainer.evaluate()["eval_exact_match"]
    trainer.train()
    after = trainer.evaluate()["eval_exact_match"]
    assert before < 0.2
    assert after == 1.0, f"exact match after training: {after}"
