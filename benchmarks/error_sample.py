#!/usr/bin/env python
"""Decode the first N test sentences with saved checkpoints and count how the misses differ from the reference.

    python benchmarks/error_sample.py --benchmark cogs --data_dir ../shared/data \
        outputs/reproduce/lexical-cogs-simple outputs/reproduce/lexical-cogs-lstm

Prints, per checkpoint: exact match on the sample, misses shorter / longer / as long as the reference (in tokens),
and the first two misses. Used for the error look in results/cogs_mt_cpu_tier.md.
"""

import argparse

from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

import lexical_hf  # noqa: F401  (registers the Auto classes)
from lexical_hf.data import load_benchmark
from lexical_hf.decoding import generate_texts


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--benchmark", default="cogs")
    parser.add_argument("--benchmark_config", default=None, help="e.g. template_around_right for scan")
    parser.add_argument("--split", default="test")
    parser.add_argument("--num_examples", type=int, default=200)
    parser.add_argument("--data_dir", default=None)
    args = parser.parse_args()
    data = load_benchmark(args.benchmark, args.benchmark_config, data_dir=args.data_dir, splits=[args.split])[args.split]
    data = data.select(range(min(args.num_examples, len(data))))
    sources, references = data["source"], data["target"]
    for folder in args.checkpoints:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
        predictions = generate_texts(model, tokenizer, sources)
        misses = [(s, p, r) for s, p, r in zip(sources, predictions, references) if p != r]
        lengths = [len(p.split()) - len(r.split()) for _, p, r in misses]
        print(f"{folder}: exact match {1 - len(misses) / len(sources):.3f} on {len(sources)} {args.split} examples; "
              f"misses shorter {sum(d < 0 for d in lengths)}, longer {sum(d > 0 for d in lengths)}, "
              f"same length {sum(d == 0 for d in lengths)}")
        for source, prediction, reference in misses[:2]:
            print(f"  SRC {source}\n  REF {reference}\n  PRD {prediction}")


if __name__ == "__main__":
    main()
