#!/usr/bin/env python
"""How many decoder steps a training batch runs under each length grouping of `examples/run_lexical.py`.

    python benchmarks/batch_padding.py --benchmark scan --benchmark_config addprim_jump --data_dir ../shared/data

Builds the training data exactly as run_lexical.py does (its preset, tokenizer and batch size), then draws batches
from the real Trainer dataloaders: the stock `Seq2SeqTrainer` (the preset's sampler; `group_by_length` sorts by the
source length) and `TargetLengthGroupedTrainer` (`--group_by_target_length true`: source + target length). Prints the
mean padded target length per batch, i.e. the LSTM decoder's steps, against the mean target length. Any extra
run_lexical.py flags pass through (e.g. `--preset paper`, `--per_device_train_batch_size 128`).
"""

import importlib.util
import statistics
import sys
from pathlib import Path

import torch
from transformers import DataCollatorForSeq2Seq

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "run_lexical.py"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    spec = importlib.util.spec_from_file_location("run_lexical", SCRIPT)
    run_lexical = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_lexical)
    data_args, lexicon_args, model_args, _, training_args = run_lexical.parse_arguments(
        ["--preset", "cpu", "--output_dir", "unused", "--report_to", "none", *argv])
    raw = run_lexical.load_pairs(data_args)
    tokenizer = run_lexical.LexicalTokenizer.from_dataset(raw["train"], source_bos=data_args.source_bos)
    train = run_lexical.tokenize_pairs(raw, tokenizer)["train"]
    model = run_lexical.build_model(model_args, lexicon_args, tokenizer, None)
    mean_target = statistics.fmean(len(labels) for labels in train["labels"])
    name = "/".join(filter(None, [data_args.benchmark or data_args.train_file, data_args.benchmark_config]))
    print(f"{name}: {len(train)} training pairs, batch "
          f"{training_args.per_device_train_batch_size}, sampling {training_args.train_sampling_strategy}; "
          f"mean target length {mean_target:.1f} (with </s>)")
    for trainer_class in (run_lexical.Seq2SeqTrainer, run_lexical.TargetLengthGroupedTrainer):
        torch.manual_seed(training_args.seed)
        trainer = trainer_class(model=model, args=training_args, train_dataset=train, processing_class=tokenizer,
                                data_collator=DataCollatorForSeq2Seq(tokenizer, model=model))
        steps = [batch["labels"].shape[1] for batch in trainer.get_train_dataloader()]  # one epoch
        print(f"  {trainer_class.__name__}: {statistics.fmean(steps):.1f} decoder steps per batch "
              f"({len(steps)} batches, one epoch)")


if __name__ == "__main__":
    main()
