#!/usr/bin/env python
"""Which half of a memory algorithm a Stack-, Queue- or DeQue-LSTM fails to learn: train it on fresh transduction
pairs with the push and pop signals of the source phase, the target phase, both or neither forced to an algorithm's
values, and print the training loss and the controller's own mean signals per phase as it learns.

    python benchmarks/memory_controls.py --task copy --backbone deque_lstm --force none
    python benchmarks/memory_controls.py --task copy --backbone deque_lstm --force source --schedule 8,16:2000
    python benchmarks/memory_controls.py --task copy --backbone deque_lstm --push_bias -1 --schedule 8,64:4000
    python benchmarks/memory_controls.py --force source --force_target_end bottom   # the DeQue's top end alone free
    python benchmarks/memory_controls.py --bottom_push_bias -3    # the DeQue starts out as a queue: few bottom pushes

`--force` uses the algorithm of `ALGORITHMS` for the backbone and task (the DeQue's copy: push at the bottom while
reading the source, pop the top while writing the target); forced signals hold in training and in decoding. The
model is the `cpu` preset's (1 × `--hidden` controller, embeddings 64, memory width `--width`, no dropout, a
target-side LSTM of its own unless `--joint`), trained with Adam, batch `--batch`, clipping at 1, on a fresh stream
of pairs per `--schedule` stage (`lengths:updates;…`). At the end, greedy exact match on 100 fresh pairs per
`--eval_lengths` band. One run, one seed; minutes, not a row (rows: `benchmarks/reproduce.py`).
"""

import argparse
import itertools
import time

import torch

from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer
from lexical_hf.data.transduction import stream_pairs

# (backbone, task) -> per phase, (push, pop) of each end (DeQue ends: top, bottom)
ALGORITHMS = {
    ("deque_lstm", "copy"): {"source": ([0.0, 1.0], [0.0, 0.0]), "target": ([0.0, 0.0], [1.0, 0.0])},
    ("deque_lstm", "reversal"): {"source": ([1.0, 0.0], [0.0, 0.0]), "target": ([0.0, 0.0], [1.0, 0.0])},
    ("queue_lstm", "copy"): {"source": ([1.0], [0.0]), "target": ([0.0], [1.0])},
    ("stack_lstm", "reversal"): {"source": ([1.0], [0.0]), "target": ([0.0], [1.0])},
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="copy", choices=["copy", "reversal", "bigram_flip"])
    parser.add_argument("--backbone", default="deque_lstm", choices=["stack_lstm", "queue_lstm", "deque_lstm"])
    parser.add_argument("--force", default="none", choices=["none", "source", "target", "both"])
    parser.add_argument("--force_target_end", choices=["top", "bottom"],
                        help="DeQue: also force this one end's signals in the target phase, the other end free")
    parser.add_argument("--schedule", default="8,16:3000", help="training stages, lengths:updates;…")
    parser.add_argument("--push_bias", type=float, default=None, help="memory_push_bias (default: nn.Linear's)")
    parser.add_argument("--pop_bias", type=float, default=-1.0, help="the initial pop bias (the paper's: -1)")
    parser.add_argument("--bottom_push_bias", type=float, default=None,
                        help="memory_bottom_push_bias: the DeQue's bottom end alone (default: as the top's)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--joint", action="store_true", help="the paper's one LSTM over source ||| target")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log_every", type=int, default=100)
    parser.add_argument("--eval_lengths", default="8,16;65,128")
    return parser.parse_args(argv)


def lengths(text: str) -> tuple[int, int]:
    low, high = (int(x) for x in text.split(","))
    return low, high


def build(args):
    vocabulary = list(itertools.islice(stream_pairs(args.task, (8, 64), seed=10_000), 3000))  # every symbol
    tokenizer = LexicalTokenizer.from_texts([e["source"] for e in vocabulary], [e["target"] for e in vocabulary])
    torch.manual_seed(args.seed)
    config = LexicalSeq2SeqConfig(
        source_vocab_size=tokenizer.source_vocab_size, target_vocab_size=tokenizer.target_vocab_size,
        backbone=args.backbone, num_layers=1, embedding_size=64, hidden_size=args.hidden, memory_width=args.width,
        dropout=0.0, lexical_mode="none", max_decode_length=140, separate_target_lstm=not args.joint,
        memory_push_bias=args.push_bias, memory_bottom_push_bias=args.bottom_push_bias)
    model = LexicalSeq2SeqForConditionalGeneration(config)
    with torch.no_grad():
        model.model.recurrence.interface.pop.bias.fill_(args.pop_bias)
    return tokenizer, model


def attach_controls(model, args) -> dict:
    """Hooks that record (and, per `--force`, replace) each memory step's push and pop, by phase."""
    backbone, phase, seen = model.model, {"now": "source"}, {"source": [], "target": []}
    backbone.encoder.register_forward_pre_hook(lambda *_: phase.update(now="source"))
    backbone.decoder.register_forward_pre_hook(lambda *_: phase.update(now="target"))
    forced = {p for p in ("source", "target") if args.force in (p, "both")}
    algorithm = ALGORITHMS.get((args.backbone, args.task)) if forced else None
    if forced and algorithm is None:
        raise SystemExit(f"no algorithm to force for {args.backbone} on {args.task}: {sorted(ALGORITHMS)}")

    one_end = None if args.force_target_end is None else {"top": 0, "bottom": 1}[args.force_target_end]
    if one_end is not None and (args.backbone != "deque_lstm" or "target" in forced):
        raise SystemExit("--force_target_end: a DeQue-LSTM whose target phase is not forced whole")
    algorithm = algorithm or ALGORITHMS.get((args.backbone, args.task))

    def hook(memory, inputs, kwargs):
        state, push, pop, value = inputs
        if phase["now"] in forced:
            push_value, pop_value = algorithm[phase["now"]]
            batch = push.shape[0]
            push = torch.tensor(push_value).expand(batch, -1).reshape(push.shape)  # (B, E) or (B,)
            pop = torch.tensor(pop_value).expand(batch, -1).reshape(pop.shape)
            return (state, push, pop, value), kwargs
        if one_end is not None and phase["now"] == "target":  # (B, 2): one end forced, the other the controller's
            push_value, pop_value = algorithm["target"]
            push, pop = push.clone(), pop.clone()
            push[:, one_end], pop[:, one_end] = push_value[one_end], pop_value[one_end]
        seen[phase["now"]].append(torch.cat([push.reshape(len(push), -1), pop.reshape(len(pop), -1)], 1).mean(0))
        return None if one_end is None or phase["now"] != "target" else ((state, push, pop, value), kwargs)

    backbone.recurrence.interface.memory.register_forward_pre_hook(hook, with_kwargs=True)
    return seen


def mean_controls(seen: dict, ends: int) -> str:
    names = ["push", "pop"] if ends == 1 else ["push top", "push bottom", "pop top", "pop bottom"]
    parts = []
    for phase, steps in seen.items():
        if steps:
            means = torch.stack(steps).mean(0).tolist()
            parts.append(f"{phase}: " + ", ".join(f"{n} {m:.2f}" for n, m in zip(names, means)))
        steps.clear()
    return " | ".join(parts) or "(all forced)"


def train(model, tokenizer, args, seen):
    stages = [(lengths(stage.split(":")[0]), int(stage.split(":")[1])) for stage in args.schedule.split(";")]
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    ends, update, started = model.model.recurrence.interface.memory.num_ends, 0, time.time()
    model.train()
    for stage_lengths, updates in stages:
        stream = stream_pairs(args.task, stage_lengths, seed=args.seed)
        for _ in range(updates):
            pairs = [next(stream) for _ in range(args.batch)]
            batch = tokenizer([p["source"] for p in pairs], text_target=[p["target"] for p in pairs], padding=True,
                              return_tensors="pt")
            batch["labels"][batch["labels"] == tokenizer.pad_token_id] = -100
            loss = model(**batch).loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            update += 1
            if update % args.log_every == 0:
                print(f"update {update} lengths {stage_lengths[0]}-{stage_lengths[1]} loss {loss.item():.3f} "
                      f"({time.time() - started:.0f} s) {mean_controls(seen, ends)}", flush=True)


def exact_match(model, tokenizer, args):
    model.eval()
    for band in args.eval_lengths.split(";"):
        low, high = lengths(band)
        pairs = list(itertools.islice(stream_pairs(args.task, (low, high), seed=20_000), 100))
        batch = tokenizer([p["source"] for p in pairs], padding=True, return_tensors="pt")
        with torch.no_grad():
            output = model.generate(**batch, max_new_tokens=high + 5, do_sample=False, num_beams=1)
        predicted = tokenizer.batch_decode(output, skip_special_tokens=True)
        correct = sum(p.split() == q["target"].split() for p, q in zip(predicted, pairs))
        print(f"greedy exact match, lengths {low}-{high}: {correct / len(pairs):.2f}", flush=True)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    tokenizer, model = build(args)
    seen = attach_controls(model, args)
    train(model, tokenizer, args, seen)
    exact_match(model, tokenizer, args)


if __name__ == "__main__":
    main()
