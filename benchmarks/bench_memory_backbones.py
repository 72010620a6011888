"""Training update and greedy decoding of the memory backbones (Stack-, Queue-, DeQue-LSTM, deep LSTM) on CPU, in
CPU seconds, optionally side by side with another checkout of the package.

    python benchmarks/bench_memory_backbones.py                                  # this checkout
    python benchmarks/bench_memory_backbones.py --baseline /path/to/other/checkout --rounds 3

The workload is the `cpu` preset's on the transduction tasks: batches of 50 random source sequences of lengths
8–64 (targets as long), 128 symbols, a 1 × 64 controller with a target-side LSTM of its own, embeddings and memory
width 64 (the deep LSTM: 2 × 128), Adam. An update is forward + backward + optimiser step on one batch; the time of
`--updates` updates (after one warm-up) is divided by their number. Greedy decoding: `generate()` of the first
batch's 50 sources, up to 64 new tokens. Times are CPU time of a single-threaded process, so waiting for a shared
CPU does not count. With `--baseline`, each round runs this checkout and the baseline in turn, each in a fresh
process with the other package on `PYTHONPATH`, the same seeds and batches, and the table gives the fastest round
of each and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BACKBONES = ("stack_lstm", "queue_lstm", "deque_lstm", "deep_lstm")


def measure(backbone: str, updates: int) -> dict:
    """CPU seconds per training update and per greedy batch, in this process (one torch thread)."""
    import torch

    from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration

    torch.set_num_threads(1)
    torch.manual_seed(0)
    memory = backbone != "deep_lstm"
    config = LexicalSeq2SeqConfig(
        backbone=backbone, lexical_mode="none", source_vocab_size=132, target_vocab_size=132, embedding_size=64,
        hidden_size=64 if memory else 128, num_layers=1 if memory else 2, dropout=0.0, output_dropout=0.0,
        **({"memory_width": 64, "separate_target_lstm": True} if memory else {}),
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    model = LexicalSeq2SeqForConditionalGeneration(config)
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    generator = torch.Generator().manual_seed(1)
    batches = []
    for _ in range(updates + 1):
        lengths = torch.randint(8, 65, (50,), generator=generator)  # (B,) source lengths before </s>
        width = int(lengths.max()) + 1
        real = torch.arange(width)[None] <= lengths[:, None]  # (B, S)
        source = torch.randint(4, 132, (50, width), generator=generator).masked_fill(~real, 0)
        source[torch.arange(50), lengths] = 2
        labels = torch.randint(4, 132, (50, width), generator=generator).masked_fill(~real, -100)
        batches.append((source, real.long(), labels))

    def update(batch):
        loss = model(input_ids=batch[0], attention_mask=batch[1], labels=batch[2]).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    update(batches[0])  # warm-up
    start = time.process_time()
    for batch in batches[1:]:
        update(batch)
    per_update = (time.process_time() - start) / updates
    model.eval()
    start = time.process_time()
    with torch.no_grad():
        model.generate(input_ids=batches[1][0], attention_mask=batches[1][1], max_new_tokens=64, num_beams=1,
                       do_sample=False)
    return {"update_cpu_s": per_update, "greedy_cpu_s": time.process_time() - start}


def run_in(checkout: Path, backbone: str, updates: int) -> dict:
    """`measure` in a fresh process with `checkout`'s package first on the path."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    output = subprocess.run([sys.executable, __file__, "--measure", backbone, "--updates", str(updates)],
                            env=env, check=True, capture_output=True, text=True, cwd=checkout).stdout
    return json.loads(output.strip().splitlines()[-1])


def revision(checkout: Path) -> str:
    found = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=checkout, capture_output=True, text=True)
    return found.stdout.strip() or "unknown"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backbones", nargs="+", default=list(BACKBONES), choices=BACKBONES)
    parser.add_argument("--updates", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout of the package to time beside this one")
    parser.add_argument("--output_prefix", default=None, help="also write <prefix>.json and <prefix>.md")
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # one measurement, printed as JSON
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.updates)))
        return
    checkouts = {"this": REPO} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    results = {name: {backbone: [] for backbone in args.backbones} for name in checkouts}
    for _ in range(args.rounds):
        for backbone in args.backbones:
            for name, checkout in checkouts.items():
                results[name][backbone].append(run_in(checkout, backbone, args.updates))
    best = {name: {backbone: {key: min(run[key] for run in runs) for key in runs[0]}
                   for backbone, runs in per_backbone.items()} for name, per_backbone in results.items()}
    revisions = {name: revision(checkout) for name, checkout in checkouts.items()}
    lines = [f"Command: `python benchmarks/bench_memory_backbones.py {' '.join(argv if argv is not None else sys.argv[1:])}`; "
             f"{platform.node()}, {os.cpu_count()} CPUs, load average before the table {os.getloadavg()[0]:.2f}; "
             f"fastest of {args.rounds} rounds, {args.updates} timed updates each; code: "
             + ", ".join(f"{name} `{rev}`" for name, rev in revisions.items()), "",
             "| backbone | update, CPU s | greedy batch, CPU s |" + (" baseline update | baseline greedy | update speed-up |" if args.baseline else ""),
             "|---|---|---|" + ("---|---|---|" if args.baseline else "")]
    for backbone in args.backbones:
        ours = best["this"][backbone]
        line = f"| {backbone} | {ours['update_cpu_s']:.3f} | {ours['greedy_cpu_s']:.3f} |"
        if args.baseline:
            theirs = best["baseline"][backbone]
            line += (f" {theirs['update_cpu_s']:.3f} | {theirs['greedy_cpu_s']:.3f} | "
                     f"{theirs['update_cpu_s'] / ours['update_cpu_s']:.2f}× |")
        lines.append(line)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output_prefix:
        Path(f"{args.output_prefix}.json").write_text(json.dumps({"revisions": revisions, "runs": results, "best": best},
                                                                 indent=1) + "\n")
        Path(f"{args.output_prefix}.md").write_text(text)


if __name__ == "__main__":
    main()
