#!/usr/bin/env python
"""Train and evaluate a lexical seq2seq model with `Seq2SeqTrainer`, over one or more seeds.

    python examples/run_lexical.py --benchmark colors --lexicon simple --seeds 0-15 --output_dir out/colors-simple
    accelerate launch examples/run_lexical.py --benchmark scan --benchmark_config addprim_jump --preset cpu ...
    lexical-hf train --benchmark colors ...              # the same pipeline, from the installed package

Every `Seq2SeqTrainingArguments` flag works as usual; `--help` lists the others, and docs/guide.md explains them
(presets, your own data, lexicons, seeds, resume, the wall-clock limit, publishing).

The pipeline lives in the package (`lexical_hf/training/pipeline.py`, readable top to bottom), so that this script,
`lexical-hf train` and the seed workers of `--parallel_seeds` run the same code. Its steps, as you would write them
for a script of your own:

    from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer
    from lexical_hf.training import build_lexicon, build_model, load_data, parse_arguments, tokenize_pairs

    data_args, lexicon_args, model_args, experiment_args, training_args = args = parse_arguments(argv)
    raw = load_data(data_args)                                       # DatasetDict: source, target
    tokenizer = LexicalTokenizer.from_dataset(raw["train"], source_bos=data_args.source_bos)
    lexicon = build_lexicon(lexicon_args, data_args, raw, tokenizer)  # learned on train, or --lexicon_path
    tokenized = tokenize_pairs(raw, tokenizer)
    model = build_model(model_args, lexicon_args, tokenizer, lexicon)  # L stored in the weights
    trainer = Seq2SeqTrainer(model=model, args=training_args, train_dataset=tokenized["train"],
                             data_collator=DataCollatorForSeq2Seq(tokenizer, model=model), processing_class=tokenizer)
    trainer.train()

`main` adds what a reproducible experiment needs around these steps: one run per seed (side by side with
`--parallel_seeds`), checkpoint selection on validation exact match, resume, test decoding and metrics, and a
Hub-ready output folder (weights, tokenizer, lexicon.json, results.json with mean ± std over seeds, a model card).
"""

from lexical_hf.training import main

if __name__ == "__main__":
    main(program="python examples/run_lexical.py")
