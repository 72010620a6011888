#!/usr/bin/env python
"""Test exact match of saved SCAN checkpoints, broken down by what surrounds a held-out word.

    python benchmarks/scan_categories.py --benchmark_config addprim_jump --word jump --data_dir ../shared/data \
        outputs/reproduce/lexical-scan-jump-simple

A SCAN command is one or two phrases joined by `and` / `after`. For the phrase that holds `--word`, each test
command is counted under: the conjunction (single / and / after), the phrase's modifier (bare, a direction,
`opposite`, `around`) and its repetition (once / twice / thrice). Prints the accuracy per category and the first
misses. Used for the error look in results/scan_cpu_tier_analysis.md.
"""

import argparse
import collections

from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

import lexical_hf  # noqa: F401  (registers the Auto classes)
from lexical_hf.data import load_benchmark
from lexical_hf.decoding import generate_texts


def categories(source: str, word: str) -> list[str]:
    conjunction = "and" if " and " in source else "after" if " after " in source else "single"
    phrases = source.replace(" after ", " | ").replace(" and ", " | ").split(" | ")
    phrase = next((p for p in phrases if word in p.split()), phrases[0]).split()
    modifier = ("around" if "around" in phrase else "opposite" if "opposite" in phrase
                else "direction" if {"left", "right"} & set(phrase) else "bare")
    repetition = "twice" if "twice" in phrase else "thrice" if "thrice" in phrase else "once"
    return ["all", f"conjunction={conjunction}", f"modifier={modifier}", f"repetition={repetition}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--benchmark_config", default="addprim_jump")
    parser.add_argument("--word", default="jump", help="the held-out word whose phrase is categorised")
    parser.add_argument("--data_dir", default=None)
    parser.add_argument("--batch_size", type=int, default=256)
    parser.add_argument("--show_misses", type=int, default=3)
    args = parser.parse_args()
    data = load_benchmark("scan", args.benchmark_config, data_dir=args.data_dir, splits=["test"])["test"]
    for checkpoint in args.checkpoints:
        model = AutoModelForSeq2SeqLM.from_pretrained(checkpoint).eval()
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        predictions = generate_texts(model, tokenizer, data["source"], batch_size=args.batch_size)
        counts = collections.defaultdict(lambda: [0, 0])
        misses = []
        for source, reference, prediction in zip(data["source"], data["target"], predictions):
            correct = prediction.split() == reference.split()
            for category in categories(source, args.word):
                counts[category][0] += correct
                counts[category][1] += 1
            if not correct:
                misses.append((source, reference, prediction))
        print(f"{checkpoint}: {len(data)} test commands")
        for category in sorted(counts):
            right, total = counts[category]
            print(f"  {category:22s} {right / total:.3f} ({right}/{total})")
        for source, reference, prediction in misses[: args.show_misses]:
            print(f"  miss: {source}\n    reference ({len(reference.split())}): {reference}\n"
                  f"    predicted ({len(prediction.split())}): {prediction}")


if __name__ == "__main__":
    main()
