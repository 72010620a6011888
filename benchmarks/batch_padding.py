#!/usr/bin/env python
"""How far training batches are padded under each length grouping of `examples/run_lexical.py`.

    python benchmarks/batch_padding.py --benchmark scan --benchmark_config addprim_jump --data_dir ../shared/data

Builds the training data exactly as run_lexical.py does (its preset, tokenizer and batch size), then draws batches
from the real Trainer dataloaders of `LexicalSeq2SeqTrainer`: grouped by source length (the preset's
`group_by_length`, as the stock Trainer groups) and by source + target length (`--group_by_target_length true`).
Prints the mean padded target length per batch against the mean target length. The padded length is what the
target-side embedding projection and the head compute over; the LSTM decoder's recurrent steps run to each row's own
target length since 2026-11-24 (before that, to the padded length). Any extra run_lexical.py flags pass through (e.g.
`--preset paper`, `--per_device_train_batch_size 128`).
"""

import statistics
import sys
from pathlib import Path

from transformers import DataCollatorForSeq2Seq

from lexical_hf import LexicalTokenizer, training

def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    data_args, lexicon_args, model_args, _, training_args = training.parse_arguments(
        ["--preset", "cpu", "--output_dir", "unused", "--report_to", "none", *argv])
    raw = training.load_data(data_args)
    tokenizer = LexicalTokenizer.from_dataset(raw["train"], source_bos=data_args.source_bos)
    train = training.tokenize_pairs(raw, tokenizer)["train"]
    model = training.build_model(model_args, lexicon_args, tokenizer, None)
    mean_target = statistics.fmean(len(labels) for labels in train["labels"])
    name = "/".join(filter(None, [data_args.benchmark or data_args.train_file, data_args.benchmark_config]))
    print(f"{name}: {len(train)} training pairs, batch "
          f"{training_args.per_device_train_batch_size}, sampling {training_args.train_sampling_strategy}; "
          f"mean target length {mean_target:.1f} (with </s>)")
    for by_target in (False, True):
        trainer = training.LexicalSeq2SeqTrainer(
            model=model, args=training_args, train_dataset=train, processing_class=tokenizer,
            data_collator=DataCollatorForSeq2Seq(tokenizer, model=model), group_by_target_length=by_target)
        steps = [batch["labels"].shape[1] for batch in trainer.get_train_dataloader()]  # one epoch
        print(f"  grouped by {'source + target' if by_target else 'source'} length: {statistics.fmean(steps):.1f} "
              f"padded target positions per batch ({len(steps)} batches, one epoch)")


if __name__ == "__main__":
    main()
