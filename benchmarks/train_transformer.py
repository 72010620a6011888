#!/usr/bin/env python
"""Train the Transformer-backbone lexical model on a benchmark over several seeds and report test exact match.

    OMP_NUM_THREADS=1 python benchmarks/train_transformer.py --benchmark scan --benchmark-config addprim_jump \
        --lexicon simple --seeds 0,1,2 --out results/transformer_scan_jump_simple.json

The script behind `results/transformer_*.json` (see results/transformer.md), kept so those commands still run.
It is the same pipeline as `examples/run_lexical.py --backbone transformer --preset cpu` (load_benchmark →
LexicalTokenizer → learn_lexicon → Seq2SeqTrainer with the inverse-sqrt schedule → greedy generate() on every test
split, final weights, no checkpoint selection) with fewer features; new runs should use run_lexical.py, whose
Transformer preset has the same settings. Writes one JSON with the command, the machine, the settings and per-seed
metrics.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments, set_seed
from transformers.utils import logging as hf_logging

import lexical_hf
from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer, evaluation
from lexical_hf.decoding import generate_texts
from lexical_hf.lexicon import learn_lexicon

# The Transformer CPU preset (measured on SCAN addprim_jump with OMP_NUM_THREADS=1; see results/transformer.md)
CPU_PRESET = dict(embedding_size=64, hidden_size=64, num_layers=3, num_attention_heads=4, ffn_size=256,
                  dropout=0.1, attention_dropout=0.0, norm_first=True, position_encoding="relative",
                  attention_source="cross_attention_mean", batch_size=64, max_steps=4000, learning_rate=2e-3,
                  warmup_steps=300, weight_decay=0.0, max_grad_norm=1.0)
MODEL_KEYS = ("embedding_size", "hidden_size", "num_layers", "num_attention_heads", "ffn_size", "dropout",
              "attention_dropout", "norm_first", "position_encoding", "attention_source", "output_dropout", "gate")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmark", default="scan")
    parser.add_argument("--benchmark-config", default=None, help="e.g. addprim_jump for scan")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--lexicon", default="simple", help="none | simple | ... (any learn_lexicon method)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--output-dropout", type=float, default=0.0)
    parser.add_argument("--gate", default="sigmoid")
    parser.add_argument("--generation-num-beams", type=int, default=1)
    parser.add_argument("--eval-batch-size", type=int, default=256)
    parser.add_argument("--max-eval-samples", type=int, default=None)
    parser.add_argument("--eval-train-samples", type=int, default=0, help="also report exact match on this many training pairs")
    parser.add_argument("--save-dir", default=None, help="save the first seed's model and tokenizer here")
    parser.add_argument("--out", required=True)
    for key, value in CPU_PRESET.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=value)
        else:
            parser.add_argument(flag, type=type(value), default=value)
    return parser.parse_args(argv)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    hf_logging.set_verbosity_error()
    seeds = [int(s) for s in args.seeds.split(",")]
    raw = lexical_hf.load_benchmark(args.benchmark, args.benchmark_config, data_dir=args.data_dir)
    tokenizer = LexicalTokenizer.from_dataset(raw["train"])
    lexicon = None if args.lexicon == "none" else learn_lexicon(raw["train"], method=args.lexicon)
    tokenized = raw["train"].map(lambda b: tokenizer(b["source"], text_target=b["target"]), batched=True,
                                 remove_columns=raw["train"].column_names)
    test_splits = [s for s in raw if s not in ("train", "validation")]
    settings = {k: getattr(args, k) for k in MODEL_KEYS}
    report = {
        "command": "OMP_NUM_THREADS=" + os.environ.get("OMP_NUM_THREADS", "?") + " python benchmarks/train_transformer.py " + " ".join(argv),
        "machine": f"CPU ({os.cpu_count()} cores, {torch.get_num_threads()} torch threads); {platform.platform()}; torch {torch.__version__}",
        "benchmark": args.benchmark, "benchmark_config": args.benchmark_config, "lexicon": args.lexicon,
        "lexicon_entries": None if lexicon is None else lexicon.num_entries,
        "model": {"backbone": "transformer", **settings},
        "training": {k: getattr(args, k) for k in ("batch_size", "max_steps", "learning_rate", "warmup_steps",
                                                   "weight_decay", "max_grad_norm")}
                    | {"optimizer": "adamw_torch (0.9, 0.998)", "schedule": "inverse_sqrt", "selection": "final"},
        "generation_num_beams": args.generation_num_beams,
        "per_seed": {},
    }
    for seed in seeds:
        set_seed(seed)
        config = LexicalSeq2SeqConfig(source_vocab_size=tokenizer.source_vocab_size,
                                      target_vocab_size=tokenizer.target_vocab_size, backbone="transformer",
                                      lexical_mode="none" if lexicon is None else "lexical", **settings)
        model = LexicalSeq2SeqForConditionalGeneration(config)
        if lexicon is not None:
            model.set_lexicon(lexicon, tokenizer)
        training_args = Seq2SeqTrainingArguments(
            output_dir=f"/tmp/train_transformer_{os.getpid()}", per_device_train_batch_size=args.batch_size,
            max_steps=args.max_steps, learning_rate=args.learning_rate, lr_scheduler_type="inverse_sqrt",
            warmup_steps=args.warmup_steps, weight_decay=args.weight_decay, adam_beta1=0.9, adam_beta2=0.998,
            max_grad_norm=args.max_grad_norm, report_to="none", save_strategy="no", logging_steps=max(1, args.max_steps // 10),
            seed=seed, use_cpu=True, dataloader_num_workers=0, disable_tqdm=True,
        )
        trainer = Seq2SeqTrainer(model=model, args=training_args, train_dataset=tokenized,
                                 data_collator=DataCollatorForSeq2Seq(tokenizer, model=model), processing_class=tokenizer)
        start = time.perf_counter()
        trainer.train()
        train_seconds = time.perf_counter() - start
        metrics = {"train_seconds": train_seconds, "final_train_loss": trainer.state.log_history[-2].get("loss")}
        for split in test_splits:
            data = raw[split]
            if args.max_eval_samples:
                data = data.select(range(min(args.max_eval_samples, len(data))))
            start = time.perf_counter()
            predictions = generate_texts(model, tokenizer, list(data["source"]), args.eval_batch_size, args.generation_num_beams)
            metrics[split] = {"exact_match": evaluation.exact_match(predictions, list(data["target"])),
                              "num_examples": len(data), "eval_seconds": time.perf_counter() - start}
        if args.eval_train_samples:
            data = raw["train"].shuffle(seed=0).select(range(min(args.eval_train_samples, len(raw["train"]))))
            predictions = generate_texts(model, tokenizer, list(data["source"]), args.eval_batch_size, args.generation_num_beams)
            metrics["train_sample"] = {"exact_match": evaluation.exact_match(predictions, list(data["target"])),
                                       "num_examples": len(data)}
        if args.save_dir and seed == seeds[0]:
            model.save_pretrained(args.save_dir)
            tokenizer.save_pretrained(args.save_dir)
        report["per_seed"][str(seed)] = metrics
        print(f"[seed {seed}] " + "  ".join(f"{s}: EM {metrics[s]['exact_match']:.4f}" for s in [*test_splits, "train_sample"] if s in metrics)
              + f"  train {train_seconds:.0f}s", flush=True)
    report["summary"] = {}
    for split in test_splits:
        values = [report["per_seed"][str(s)][split]["exact_match"] for s in seeds]
        # population std, as every other row of the project (lexical_hf.results.summarize_row)
        report["summary"][split] = {"mean": statistics.fmean(values), "std": statistics.pstdev(values),
                                    "min": min(values), "max": max(values), "n": len(values)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["summary"]))


if __name__ == "__main__":
    main()
