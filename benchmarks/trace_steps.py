#!/usr/bin/env python
"""Show, step by step, how a saved model produces an output: greedy output, gate and attention per target step.

    python benchmarks/trace_steps.py outputs/reproduce/lexical-scan-around-right-simple \
        "jump around left" "jump around right"

For each source sentence: the greedy output, then, under teacher forcing on that output (or on `--target`, one per
source, separated by `|`), each step's token, p_gate (the write path's weight; 0 = all lexical) and the source token
attended most with its weight. Used for the template_around_right look in results/scan_cpu_tier_analysis.md.
"""

import argparse

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

import lexical_hf  # noqa: F401  (registers the Auto classes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("sources", nargs="+")
    parser.add_argument("--target", default=None, help="reference outputs, one per source, separated by |")
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
    model = AutoModelForSeq2SeqLM.from_pretrained(args.checkpoint).eval()
    targets = args.target.split("|") if args.target else [None] * len(args.sources)
    if len(targets) != len(args.sources):
        parser.error(f"--target has {len(targets)} outputs for {len(args.sources)} sources")
    for source, target in zip(args.sources, targets):
        batch = tokenizer([source], return_tensors="pt")
        with torch.no_grad():
            generated = model.generate(**batch, num_beams=1, do_sample=False)
        output = tokenizer.batch_decode(generated, skip_special_tokens=True)[0]
        print(f"{source} -> {output}")
        forced = tokenizer([source], text_target=[target or output], return_tensors="pt")
        with torch.no_grad():
            out = model(**forced)
        source_tokens = [tokenizer.decode_source([i], skip_special_tokens=False) for i in forced["input_ids"][0].tolist()]
        target_tokens = (target or output).split() + ["</s>"]
        attention, gate = out.cross_attentions[0][0], out.gate[0]
        for step, token in enumerate(target_tokens):
            weight, position = attention[step].max(-1)
            print(f"  {step:2d} {token:14s} p_gate {gate[step]:.3f}  attends {source_tokens[position]!r} ({weight:.2f})")


if __name__ == "__main__":
    main()
