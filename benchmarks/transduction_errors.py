#!/usr/bin/env python
"""Where a transducer's misses fall: decode a transduction split with a saved model folder and locate each miss.

    python benchmarks/transduction_errors.py outputs/reproduce/lexical-reversal-stack-lstm

The folder's results.json names the task and the data settings it was trained with (the same seeded split is
rebuilt). Prints coarse / fine accuracy, the misses per band of target length, and for each miss where its first
wrong symbol is counted from the end of the target (0: every symbol right but the end of the sequence missing) and
what it is: `end not emitted` (the whole target, then more symbols), `repeat` (a symbol emitted twice, the rest
right), `skip` (a symbol left out, the rest right), `substitution` (one wrong symbol, the rest right), `other`.
"""

import argparse
import collections
import json
from pathlib import Path

import torch

from lexical_hf import LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer
from lexical_hf.data import load_benchmark
from lexical_hf.decoding import generate_texts
from lexical_hf.lexicon.registry import parse_params_text
from lexical_hf.transduction_metrics import correct_prefix_length, transduction_metrics


def miss_kind(predicted: list[str], reference: list[str], k: int) -> str:
    """What the first error at position `k` is, judged by whether the rest of the prediction lines up."""
    if predicted[:len(reference)] == reference:
        return "end not emitted"
    if predicted[k + 1:] == reference[k:]:
        return "repeat" if k > 0 and predicted[k] == predicted[k - 1] else "insertion"
    if predicted[k:] == reference[k + 1:]:
        return "skip"
    if predicted[k + 1:] == reference[k + 1:]:
        return "substitution"
    return "other"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", help="a model folder written by lexical-hf train (with its results.json)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--band", type=int, default=16, help="width of the target-length bands")
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = json.loads((Path(args.folder) / "results.json").read_text())
    data_settings = results["settings"]["data"]
    params = data_settings.get("benchmark_params")
    data = load_benchmark("transduction", data_settings["benchmark_config"], splits=[args.split],
                          config_overrides=parse_params_text(params) if params else None)[args.split]
    model = LexicalSeq2SeqForConditionalGeneration.from_pretrained(args.folder).eval()
    tokenizer = LexicalTokenizer.from_pretrained(args.folder)
    predictions = generate_texts(model, tokenizer, data["source"], batch_size=100)
    print(f"{args.folder}: {data_settings['benchmark_config']} {args.split}, {transduction_metrics(predictions, data['target'])}")

    misses, lengths = [], collections.Counter()
    for prediction, target in zip(predictions, data["target"]):
        reference = target.split()
        band = (len(reference) - 1) // args.band
        lengths[band] += 1
        if prediction.split() != reference:
            k = correct_prefix_length(prediction, target)
            misses.append((band, len(reference) - k, miss_kind(prediction.split(), reference, k)))
    print("| target length | sequences | misses | first error counted from the end (median) |")
    print("|---|---|---|---|")
    for band in sorted(lengths):
        from_end = sorted(m[1] for m in misses if m[0] == band)
        median = from_end[len(from_end) // 2] if from_end else "—"
        print(f"| {band * args.band + 1}–{(band + 1) * args.band} | {lengths[band]} | {len(from_end)} | {median} |")
    print("misses by kind:", dict(collections.Counter(m[2] for m in misses).most_common()))
    print("first error counted from the end:", dict(sorted(collections.Counter(m[1] for m in misses).items())))


if __name__ == "__main__":
    main()
