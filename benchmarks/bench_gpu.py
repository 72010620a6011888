"""Milliseconds per training update of the paper's LSTM: eager, the static path, the static step captured into a CUDA
graph, and the compiled step; for one seed and for several seeds sharing the device; greedy decoding sentences/s; and
the compute floor. Runs on a GPU (the figures the fast steps are for) or on a CPU (eager and static only by default).

    python benchmarks/bench_gpu.py --data-dir ../shared/data                        # SCAN addprim_jump, paper size
    python benchmarks/bench_gpu.py --graphed-seeds 4,8                              # + 4 and 8 seeds trained as one model
    python benchmarks/bench_gpu.py --task cogs --data-dir ../shared/data
    python benchmarks/bench_gpu.py --size tiny --updates 3 --warmup 1 --seeds-at-once 1 --decode-sentences 64  # a dry run

What one update is: forward and backward of a batch of 512 training pairs (the paper's 128 × 4 in one batch), gradient
clipping at 5 and an AdamW step (fused on CUDA), with TF32 matrix products on CUDA. Batches are random (as the paper's
code draws them), padded to multiples of 16 (the buckets of `lexical-hf train --cuda_graphs true` and
`--torch_compile true`).

Modes (`--modes`, default eager,static,graphed):
* ``eager``: the default path (packed encoder, decoder rows dropped as their targets end), no compilation.
* ``static``: `static_shapes=True` without compilation (every row every step; no host synchronisation).
* ``graphed`` (CUDA only): the static step, forward, backward, clipping and the AdamW step, captured whole into one
  CUDA graph and replayed: no compilation and no launches, so its time is the kernels' own. Every batch is padded to
  the largest shape of the run, so that one graph serves all. `--graphed-seeds 4,8` also times 4 and 8 models (seeds)
  trained as one: weights stacked, the loss vmapped over them (`torch.func`), each seed on its own batch.
* ``fast``: `torch.compile` of the model with the static path: inductor with ``mode="reduce-overhead"`` (CUDA graphs)
  on CUDA. On a CPU the backend is ``aot_eager`` (``--compile-backend`` to change it). Compiling the unrolled decoder
  is slow: minutes on a GPU machine (results/gpu_fast_step.md), many more with inductor on 2 CPU cores. The first
  updates of each bucket compile: after ``--warmup`` updates, every padded shape the timed batches have and the
  warm-up had not gets one more untimed update (``warmup_updates``, ``warmup_seconds``), in every mode alike.

Several seeds: ``--seeds-at-once 1,2`` also starts N processes that time ``--concurrent-mode`` (default graphed, on
CUDA) at once on the same device (each its own model), and reports each one's ms per update and the updates per
second of all together.

The floor: FLOPs of one update (forward × 3, counting every position the static path computes; the matmuls only) ÷
the device's matmul rate measured in the same run (TF32 on CUDA), i.e. the time the arithmetic needs at that rate.

Writes ``--out``.json (one entry per device, kept across runs) and ``--out``.md (rebuilt from the json).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

import lexical_hf
from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer
from lexical_hf.decoding import generate_texts

HERE = Path(__file__).resolve().parent
SIZES = {
    # the paper's model with the paper code's decoder details (the `paper` preset)
    "paper": dict(embedding_size=512, hidden_size=512, num_layers=2, dropout=0.4, output_dropout=0.5,
                  feed_dropout=True, combine_decoder_input=True, attention_query_bias=True, gate="copy_token"),
    "tiny": dict(embedding_size=16, hidden_size=16, num_layers=1, dropout=0.1),
}
BUCKET = 16


def bench_model_module():
    spec = importlib.util.spec_from_file_location("bench_model", HERE / "bench_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def synchronize():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def load_task(task: str, data_dir: str | None):
    if task == "scan-jump":
        return lexical_hf.load_benchmark("scan", "addprim_jump", data_dir=data_dir)
    if task == "colors":  # short sequences: dry runs
        return lexical_hf.load_benchmark("colors")
    return lexical_hf.load_benchmark("cogs", "paper", data_dir=data_dir, splits=["train", "test"])


def build(tokenizer, lexicon, size: str, static: bool, seed: int = 0) -> LexicalSeq2SeqForConditionalGeneration:
    torch.manual_seed(seed)
    config = LexicalSeq2SeqConfig(source_vocab_size=tokenizer.source_vocab_size,
                                  target_vocab_size=tokenizer.target_vocab_size, static_shapes=static,
                                  **SIZES[size])
    model = LexicalSeq2SeqForConditionalGeneration(config)
    model.set_lexicon(lexicon, tokenizer)
    return model.to(device()).train()


def batches(tokenizer, data, batch_size: int, count: int, seed: int = 0) -> list[dict]:
    """`count` random batches of `batch_size` training pairs, padded to multiples of BUCKET, on the device."""
    generator = torch.Generator().manual_seed(seed)
    sources, targets = data["source"], data["target"]
    result = []
    for _ in range(count):
        rows = torch.randint(len(sources), (batch_size,), generator=generator).tolist() if batch_size > len(sources) \
            else torch.randperm(len(sources), generator=generator)[:batch_size].tolist()
        batch = tokenizer([sources[i] for i in rows], text_target=[targets[i] for i in rows], padding=True,
                          pad_to_multiple_of=BUCKET, return_tensors="pt")
        batch["labels"] = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, -100)
        result.append({key: value.to(device()) for key, value in batch.items()})
    return result


def padded_shape(batch: dict) -> tuple:
    return tuple(batch["input_ids"].shape), tuple(batch["labels"].shape)


def time_updates(mode: str, tokenizer, lexicon, size: str, work: list[dict], warmup: int, backend: str) -> dict:
    """ms per update of `mode` over `work` after `warmup` updates (compilation happens in the warm-up)."""
    model = build(tokenizer, lexicon, size, static=mode != "eager")
    step_model = model
    if mode == "fast":
        from torch import _dynamo

        _dynamo.config.recompile_limit = max(_dynamo.config.recompile_limit, 64)
        options = {"mode": "reduce-overhead"} if backend == "inductor" and device().type == "cuda" else {}
        step_model = torch.compile(model, backend=backend, **options)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.998), weight_decay=0.0,
                                  fused=device().type == "cuda")

    def update(batch):
        loss = step_model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    timed = work[warmup:]
    start = time.perf_counter()
    for batch in work[:warmup]:
        update(batch)
    seen = {padded_shape(batch) for batch in work[:warmup]}
    for batch in timed:  # each padded shape is its own graph: every one the timing meets compiles before it
        if padded_shape(batch) not in seen:
            update(batch)
            seen.add(padded_shape(batch))
    synchronize()
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for batch in timed:
        update(batch)
    synchronize()
    seconds = time.perf_counter() - start
    return {"ms_per_update": 1000 * seconds / len(timed), "updates": len(timed), "warmup_seconds": compile_seconds,
            "warmup_updates": warmup + len(seen - {padded_shape(batch) for batch in work[:warmup]})}


def graphed_updates(tokenizer, lexicon, size: str, work: list[dict], warmup: int, seeds: int = 1) -> dict:
    """ms per update of the static step captured whole (forward, backward, clipping, AdamW) into one CUDA graph and
    replayed: no compilation and no launches, so the time is the kernels' own. Every batch is padded to the largest
    shape in `work`, so that one graph serves them all; each update copies its batch into the graph's input buffers.

    With `seeds` > 1, that many models (other initial weights) train as one: their weights stacked, the loss vmapped
    over them (`torch.func`), each on its own batch from `work`, clipped each by its own gradient norm; AdamW on the
    stacked weights is each model's own AdamW (it is elementwise). One update then trains every seed once. Under vmap
    the LSTM cell runs as pointwise operations (the fused CUDA kernel has no batching rule), so against `seeds=1` the
    per-seed time is an upper bound."""
    models = [build(tokenizer, lexicon, size, static=True, seed=seed) for seed in range(seeds)]
    if seeds == 1:
        weights = list(models[0].parameters())

        def losses(inputs):
            return models[0](**inputs).loss
    else:
        from torch.func import functional_call, stack_module_state, vmap

        stacked, buffers = stack_module_state(models)
        weights = list(stacked.values())
        base = copy.deepcopy(models[0]).to("meta")

        def one(p, b, input_ids, attention_mask, labels):
            return functional_call(base, (p, b), (), dict(input_ids=input_ids, attention_mask=attention_mask,
                                                          labels=labels)).loss

        vmapped = vmap(one, randomness="different")

        def losses(inputs):
            return vmapped(stacked, buffers, inputs["input_ids"], inputs["attention_mask"], inputs["labels"]).sum()
    optimizer = torch.optim.AdamW(weights, lr=1e-4, betas=(0.9, 0.998), weight_decay=0.0, fused=True, capturable=True)
    source_length = max(batch["input_ids"].shape[1] for batch in work)
    target_length = max(batch["labels"].shape[1] for batch in work)
    fill = {"input_ids": tokenizer.pad_token_id, "attention_mask": 0, "labels": -100}
    length = {"input_ids": source_length, "attention_mask": source_length, "labels": target_length}
    rows = len(work[0]["input_ids"])
    inputs = {key: torch.full(((seeds,) if seeds > 1 else ()) + (rows, length[key]), fill[key],
                              dtype=work[0][key].dtype, device=device()) for key in fill}

    def load(update: int):  # seed k of update u reads batch u·seeds + k
        for key, buffer in inputs.items():
            buffer.fill_(fill[key])
            for seed in range(seeds):
                batch = work[(update * seeds + seed) % len(work)][key]
                (buffer[seed] if seeds > 1 else buffer)[:, : batch.shape[1]].copy_(batch)

    def clip():
        if seeds == 1:
            torch.nn.utils.clip_grad_norm_(weights, 5.0)
            return
        norms = torch.stack([w.grad.flatten(1).pow(2).sum(1) for w in weights]).sum(0).sqrt()  # (seeds,)
        scale = (5.0 / (norms + 1e-6)).clamp(max=1.0)
        for w in weights:
            w.grad.mul_(scale.view(-1, *[1] * (w.dim() - 1)))

    def update():
        losses(inputs).backward()
        clip()
        optimizer.step()

    start = time.perf_counter()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # eager updates first: optimizer state, cuBLAS workspaces
        for number in range(max(warmup, 2)):
            load(number)
            optimizer.zero_grad(set_to_none=True)
            update()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        update()
    synchronize()
    capture_seconds = time.perf_counter() - start
    timed = range(warmup, len(work) // seeds)
    start = time.perf_counter()
    for number in timed:
        load(number)
        graph.replay()
    synchronize()
    seconds = time.perf_counter() - start
    return {"ms_per_update": 1000 * seconds / len(timed), "updates": len(timed), "warmup_seconds": capture_seconds,
            "warmup_updates": max(warmup, 2), "batch_size": rows, "seeds": seeds,
            "padded_shape": [source_length, target_length]}


def graphed_or_error(*args) -> dict:
    """`graphed_updates`, or what went wrong (a capture error is a result too: the other modes are still reported)."""
    try:
        return graphed_updates(*args)
    except Exception as error:  # noqa: BLE001
        print(f"graphed: {type(error).__name__}: {error}", flush=True)
        return {"error": f"{type(error).__name__}: {error}"[:1000]}
    finally:
        torch.cuda.empty_cache()


def device_agreement(tokenizer, lexicon, work: list[dict]) -> dict | None:
    """On CUDA: the largest difference between the CPU's loss and gradients and the device's, eager (the fused LSTM
    cell) and static, for the paper-size model on one batch in float32 without TF32. None on a CPU."""
    if device().type != "cuda":
        return None
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    batch = {key: value[:64] for key, value in work[0].items()}
    reference = None
    differences = {}
    for name, where, static in (("cpu", "cpu", False), ("cuda_eager", "cuda", False), ("cuda_static", "cuda", True)):
        model = build(tokenizer, lexicon, "paper", static=static).to(where).eval()  # eval: no dropout draws
        loss = model(**{key: value.to(where) for key, value in batch.items()}).loss
        loss.backward()
        values = [loss.detach().cpu()] + [p.grad.detach().cpu() for p in model.parameters() if p.grad is not None]
        if reference is None:
            reference = values
        else:
            differences[name] = max(float((a - b).abs().max()) for a, b in zip(values, reference))
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    return differences


def graphed_training_agreement(tokenizer, lexicon, size: str, work: list[dict], updates: int) -> dict | None:
    """On CUDA: `updates` training updates with the trainer's graphed loss (`GraphedTrainingLoss`: one CUDA graph per
    padded batch shape, then `.backward()`, clipping at 5, fused AdamW, `zero_grad()`, as `Seq2SeqTrainer` does them)
    against the same updates with the eager static step, from the same weights on the same batches, in float32 without
    TF32 and without dropout (eval mode, cuDNN off: its RNN has no backward in eval mode). Every other batch keeps only
    its rows with targets of at most 32 tokens, so that batches of a second shape are captured and replayed in turn.
    Per update: the largest gradient difference relative to the largest eager gradient (before clipping), both
    gradient norms, and the largest weight difference after the step. None on a CPU."""
    if device().type != "cuda":
        return None
    from lexical_hf.training.trainer import GraphedTrainingLoss

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    models = [build(tokenizer, lexicon, size, static=True).eval() for _ in range(2)]
    graphed = GraphedTrainingLoss(models[0])
    optimizers = [torch.optim.AdamW(model.parameters(), lr=7e-4, betas=(0.9, 0.998), weight_decay=0.0, fused=True)
                  for model in models]
    result = {"updates": updates, "gradient_difference": [], "gradient_norms": [], "weight_difference": []}
    with torch.backends.cudnn.flags(enabled=False):
        for number, batch in enumerate(work[:updates]):
            if number % 2:
                short = batch["labels"].ne(-100).sum(1) <= 32
                batch = {key: value[short][:, :32] if key == "labels" else value[short] for key, value in batch.items()}
            graphed(batch).backward()
            models[1](**batch).loss.backward()
            grads = [[p.grad for p in model.parameters() if p.grad is not None] for model in models]
            scale = max(float(g.abs().max()) for g in grads[1])
            result["gradient_difference"].append(max(float((a - b).abs().max()) for a, b in zip(*grads)) / scale)
            result["gradient_norms"].append([float(torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0))
                                             for model in models])
            for model, optimizer in zip(models, optimizers):
                optimizer.step()
                model.zero_grad()
            with torch.no_grad():
                result["weight_difference"].append(max(float((a - b).abs().max())
                                                       for a, b in zip(models[0].parameters(), models[1].parameters())))
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    result["shapes_captured"] = len(graphed.graphs)
    return result


def graphed_dropout_draws(tokenizer, lexicon, size: str, batch: dict, replays: int, capture=None) -> dict | None:
    """Whether the captured training loss draws new dropout masks at every replay, as the eager step does: one batch,
    the same weights, dropout on (training mode), `replays` forward and backward passes through the trainer's graphed
    loss (`GraphedTrainingLoss`) and as many through the eager static step. A graph that replayed one frozen mask would
    give one loss value however often it ran. Reports how many distinct losses each gave and their mean and standard
    deviation: the two means should agree within a few standard errors. None on a CPU unless a stand-in `capture` is
    given (tests)."""
    if device().type != "cuda" and capture is None:
        return None
    from lexical_hf.training.trainer import GraphedTrainingLoss

    model = build(tokenizer, lexicon, size, static=True)  # training mode: dropout on
    graphed = GraphedTrainingLoss(model, capture=capture)
    result = {"replays": replays}
    for name, step in (("graphed", graphed), ("eager", lambda inputs: model(**inputs).loss)):
        losses = []
        for _ in range(replays):
            loss = step(batch)
            loss.backward()
            model.zero_grad()
            losses.append(float(loss.detach()))
        values = torch.tensor(losses, dtype=torch.float64)
        result[name] = {"distinct": len(set(losses)), "mean": float(values.mean()), "std": float(values.std())}
    return result


def matmul_rate() -> float:
    """FLOP/s of a large float32 matmul (TF32 on CUDA), measured now."""
    size, repeats = (8192, 20) if device().type == "cuda" else (1024, 10)
    a, b = torch.randn(size, size, device=device()), torch.randn(size, size, device=device())
    a @ b
    synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    synchronize()
    return 2 * size**3 * repeats / (time.perf_counter() - start)


def update_flops(config, work: list[dict]) -> float:
    """Mean FLOPs of one update over `work`: forward × 3 (forward + backward), every position computed."""
    flops = bench_model_module().lstm_forward_flops
    counts = []
    for batch in work:
        b, s = batch["input_ids"].shape
        t = batch["labels"].shape[1]
        counts.append(3 * flops(config, b, s, t, b * t))
    return statistics.fmean(counts)


def decode_rate(tokenizer, lexicon, size: str, sources: list[str], batch_size: int) -> dict:
    model = build(tokenizer, lexicon, size, static=False).eval()
    generate_texts(model, tokenizer, sources[:batch_size], batch_size=batch_size, max_new_tokens=60)  # warm-up
    synchronize()
    start = time.perf_counter()
    generate_texts(model, tokenizer, sources, batch_size=batch_size, max_new_tokens=60)
    synchronize()
    seconds = time.perf_counter() - start
    return {"sentences": len(sources), "seconds": seconds, "sentences_per_second": len(sources) / seconds,
            "batch_size": batch_size}


def concurrent(args, count: int) -> dict:
    """`count` worker processes timing `--concurrent-mode` at once on this device."""
    command = [sys.executable, __file__, "--worker", "--task", args.task, "--size", args.size, "--updates",
               str(args.updates), "--warmup", str(args.warmup), "--batch-size", str(args.batch_size),
               "--compile-backend", args.compile_backend, "--concurrent-mode", args.concurrent_mode]
    if args.data_dir:
        command += ["--data-dir", args.data_dir]
    start = time.perf_counter()
    workers = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(count)]
    results = [json.loads(worker.communicate()[0].strip().splitlines()[-1]) for worker in workers]
    wall = time.perf_counter() - start
    failed = [r["error"] for r in results if "error" in r]
    if failed:
        return {"processes": count, "mode": args.concurrent_mode, "error": failed[0]}
    per_update = [r["ms_per_update"] for r in results]
    return {"processes": count, "mode": args.concurrent_mode, "ms_per_update_each": per_update, "ms_per_update_mean": statistics.fmean(per_update),
            "updates_per_second_all": sum(1000 / ms for ms in per_update), "wall_seconds": wall}


def describe_device() -> str:
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"CPU ({os.cpu_count()} cores, {torch.get_num_threads()} torch threads)"


def entry_key(entry: dict) -> str:
    """An entry's heading: device, task, size, modes and the checks it ran beyond the timings (dropout draws, seeds as
    one model, …), so that a run with other checks does not replace one that measured something else."""
    checks = [name for field, name in (("graphed_training_agreement", "training agreement"),
                                       ("graphed_dropout_draws", "dropout draws"), ("graphed_seeds", "seeds as one model"),
                                       ("concurrent", "seeds at once")) if entry.get(field)]
    return " · ".join([entry["device"], entry["task"], entry["size"], ", ".join(entry["modes"]), *checks])


def write(out: Path, *new_entries: dict) -> None:
    """Add `new_entries` to `out`.json (one per `entry_key`: a newer run replaces an older one of the same device, task,
    size, modes and checks) and rebuild `out`.md from it."""
    json_path, md_path = out.with_suffix(".json"), out.with_suffix(".md")
    out.parent.mkdir(parents=True, exist_ok=True)
    earlier = json.loads(json_path.read_text()) if json_path.exists() else {}
    entries = {entry_key(entry): entry for entry in earlier.values()}
    for entry in new_entries:
        entries[entry_key(entry)] = entry
    json_path.write_text(json.dumps(entries, indent=1) + "\n")
    lines = ["# The training step on a device: ms per update, eager against the fast steps", "",
             f"Written by `python benchmarks/bench_gpu.py` from [`{json_path.name}`]({json_path.name}); each block is one "
             "run, with its command, device and code revision. One update: forward, backward, clipping and an AdamW "
             "step on one batch of training pairs (its size is in each block).", ""]
    for key, e in entries.items():
        lines += [f"## {key}", "", f"`{e['command']}` · {e['machine']} · torch {e['torch']} · code `{e['revision']}` · "
                  f"{e['date']} · batch {e['batch_size']}", "",
                  *([f"Fast mode: torch.compile backend `{e['compile_backend']}`.", ""] if "fast" in e["modes"] else []),
                  "| mode | ms per update | warm-up (compile) s | warm-up updates | updates timed |", "|---|---|---|---|---|"]
        for mode, m in e["modes"].items():
            lines.append(f"| {mode} | failed: {m['error']} | | | |" if "error" in m else
                         f"| {mode} | {m['ms_per_update']:.1f} | {m['warmup_seconds']:.1f} | {m.get('warmup_updates', '')} | "
                         f"{m['updates']} |")
        speedups = e["speedup_over_eager"] if "speedup_over_eager" in e else {  # entries written before the graphed mode
            "fast": e["speedup_fast_over_eager"], "static": e["speedup_static_over_eager"]}
        lines += ["", "- eager ms ÷ mode ms (above 1: faster than eager): "
                  + ", ".join(f"{mode} **{ratio:.2f}×**" for mode, ratio in speedups.items()),
                  f"- compute floor: {e['floor_ms']:.2f} ms per update ({e['flops_per_update'] / 1e12:.3f} TFLOP at a "
                  f"measured {e['matmul_tflops']:.1f} TFLOP/s); "
                  + ", ".join(f"{mode} is {m['ms_per_update'] / e['floor_ms']:.1f}× the floor"
                              for mode, m in e["modes"].items() if "error" not in m)]
        for g in e.get("graphed_seeds", []):
            if "error" in g:
                lines.append(f"- graphed, several seeds as one model: failed: {g['error']}")
                continue
            lines.append(f"- graphed, {g['seeds']} seeds as one model (padded to {g['padded_shape'][0]} × "
                         f"{g['padded_shape'][1]}): {g['ms_per_update']:.1f} ms per update of all, "
                         f"{g['ms_per_update'] / g['seeds']:.1f} ms per seed")
        for g in e.get("graphed_batch_sizes", []):  # entries written before the seeds mode
            if "error" in g:
                lines.append(f"- graphed at another batch size: failed: {g['error']}")
                continue
            lines.append(f"- graphed at batch {g['batch_size']}: {g['ms_per_update']:.1f} ms per update")
        for c in e.get("concurrent", []):
            if "error" in c:
                lines.append(f"- {c['processes']} seeds at once ({c['mode']}): failed: {c['error']}")
                continue
            lines.append(f"- {c['processes']} seeds at once (processes, {c.get('mode', 'fast')}): {c['ms_per_update_mean']:.1f} ms per update "
                         f"each, {c['updates_per_second_all']:.1f} updates/s in all")
        if e.get("largest_difference_from_cpu"):
            lines.append("- largest difference of the device's loss and gradients from the CPU's (float32, one batch): "
                         + ", ".join(f"{k} {v:.1e}" for k, v in e["largest_difference_from_cpu"].items()))
        if e.get("graphed_training_agreement"):
            a = e["graphed_training_agreement"]
            lines.append(f"- the trainer's graphed loss against the eager static step, {a['updates']} updates from the "
                         f"same weights ({a['shapes_captured']} batch shapes captured; float32, no dropout): largest "
                         f"gradient difference {max(a['gradient_difference']):.1e} of the largest gradient, weights "
                         f"{a['weight_difference'][-1]:.1e} apart after the last update")
        if e.get("graphed_dropout_draws"):
            a = e["graphed_dropout_draws"]
            lines.append(f"- dropout in the captured loss: {a['replays']} replays on one batch gave "
                         f"{a['graphed']['distinct']} distinct losses, {a['graphed']['mean']:.4f} ± "
                         f"{a['graphed']['std']:.4f}; the eager step {a['eager']['distinct']} distinct, "
                         f"{a['eager']['mean']:.4f} ± {a['eager']['std']:.4f}")
        d = e["decoding"]
        lines += [f"- greedy decoding (`generate_texts`, batch {d['batch_size']}): {d['sentences']} test sentences in "
                  f"{d['seconds']:.2f} s ({d['sentences_per_second']:.0f} sentences/s)", ""]
    md_path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=("scan-jump", "cogs", "colors"), default="scan-jump")
    parser.add_argument("--size", choices=tuple(SIZES), default="paper")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--updates", type=int, default=30, help="timed updates per mode")
    parser.add_argument("--warmup", type=int, default=10, help="untimed updates first (compilation happens there)")
    parser.add_argument("--seeds-at-once", default="1,2", help="process counts for the concurrent measurement")
    parser.add_argument("--modes", default="eager,static,graphed",
                        help="which to time, of eager, static, fast and graphed (CUDA only: the static step captured "
                             "into one CUDA graph)")
    parser.add_argument("--graphed-seeds", default="",
                        help="also time the graphed step of this many seeds trained as one model (e.g. 4,8; CUDA only)")
    parser.add_argument("--training-agreement", type=int, default=0, metavar="UPDATES",
                        help="also run this many updates with the trainer's graphed loss against the eager static step "
                             "and report how far gradients and weights drift apart (CUDA only)")
    parser.add_argument("--dropout-draws", type=int, default=0, metavar="REPLAYS",
                        help="also replay the trainer's graphed loss this many times on one batch with dropout on, and "
                             "the eager step as often, and report whether each replay drew new masks (CUDA only)")
    parser.add_argument("--concurrent-mode", choices=("eager", "static", "fast", "graphed"), default="graphed",
                        help="the mode that --seeds-at-once times (graphed: CUDA only)")
    parser.add_argument("--decode-sentences", type=int, default=None, help="decode the first N test sentences (default: all)")
    parser.add_argument("--compile-backend", default=None, help="torch.compile backend of the fast mode (default: "
                        "inductor on CUDA, aot_eager on a CPU)")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results" / "bench_gpu")
    parser.add_argument("--render", nargs="*", type=Path, metavar="JSON", default=None,
                        help="measure nothing: add the entries of these JSON files (e.g. what a device call brought "
                             "back) to --out.json and rebuild --out.md")
    parser.add_argument("--revision", default=None,
                        help="with --render: the commit that ran, where the device's copy of the checkout reported a "
                             "stale one (the entry keeps what it reported beside it)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.render is not None:
        entries = [entry for path in args.render for entry in json.loads(path.read_text()).values()]
        if args.revision:
            for entry in entries:
                entry["revision"] = f"{args.revision} (the device reported {entry['revision']})"
        write(args.out, *entries)
        return
    args.compile_backend = args.compile_backend or ("inductor" if device().type == "cuda" else "aot_eager")
    if device().type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True

    data = load_task(args.task, args.data_dir)
    tokenizer = LexicalTokenizer.from_dataset(data["train"])
    lexicon = lexical_hf.learn_lexicon(data["train"], method="simple")
    work = batches(tokenizer, data["train"], args.batch_size, args.warmup + args.updates)
    if args.worker:
        print(json.dumps(graphed_or_error(tokenizer, lexicon, args.size, work, args.warmup)
                         if args.concurrent_mode == "graphed" else
                         time_updates(args.concurrent_mode, tokenizer, lexicon, args.size, work, args.warmup,
                                      args.compile_backend)))
        return
    with torch.backends.cudnn.flags(enabled=False):  # cuDNN's RNN has no backward in eval mode
        agreement = device_agreement(tokenizer, lexicon, work)
    if agreement is not None:
        print(f"largest difference from the CPU (loss and gradients, float32): {agreement}", flush=True)
    wanted = args.modes.split(",")
    if "graphed" in wanted and device().type != "cuda":
        print("graphed: needs CUDA; not timed", flush=True)
        wanted.remove("graphed")
    modes = {mode: graphed_or_error(tokenizer, lexicon, args.size, work, args.warmup) if mode == "graphed" else
             time_updates(mode, tokenizer, lexicon, args.size, work, args.warmup, args.compile_backend)
             for mode in wanted}
    for mode, m in modes.items():
        if "error" not in m:
            print(f"{mode}: {m['ms_per_update']:.1f} ms per update (warm-up {m['warmup_seconds']:.1f} s)", flush=True)
    concurrency = [int(n) for n in args.seeds_at_once.split(",") if int(n) > 1]
    if args.concurrent_mode == "graphed" and device().type != "cuda":
        concurrency = []
    config = build(tokenizer, lexicon, args.size, static=True).config
    rate, flops = matmul_rate(), update_flops(config, work)
    sources = data["test"]["source"][: args.decode_sentences]
    entry = {
        "device": describe_device(), "task": args.task, "size": args.size,
        "command": "python benchmarks/bench_gpu.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": platform.platform(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
        "revision": lexical_hf.training.provenance.code_revision(),
        "batch_size": args.batch_size, "compile_backend": args.compile_backend, "modes": modes,
        "largest_difference_from_cpu": agreement,
        "speedup_over_eager": {mode: modes["eager"]["ms_per_update"] / m["ms_per_update"]
                               for mode, m in modes.items() if mode != "eager" and "eager" in modes and "error" not in m},
        "flops_per_update": flops, "matmul_tflops": rate / 1e12, "floor_ms": 1000 * flops / rate,
        "decoding": decode_rate(tokenizer, lexicon, args.size, sources, 1024 if device().type == "cuda" else 128),
        "graphed_training_agreement": graphed_training_agreement(tokenizer, lexicon, args.size, work,
                                                                 args.training_agreement) if args.training_agreement else None,
        "graphed_dropout_draws": graphed_dropout_draws(tokenizer, lexicon, args.size, work[0],
                                                       args.dropout_draws) if args.dropout_draws else None,
    }
    write(args.out, entry)  # the modes are on file before the slower several-seed measurements (a caller may time out)
    entry["graphed_seeds"] = [
        graphed_or_error(tokenizer, lexicon, args.size,
                         batches(tokenizer, data["train"], args.batch_size, (args.warmup + args.updates) * seeds),
                         args.warmup, seeds)
        for seeds in ([int(n) for n in args.graphed_seeds.split(",") if n] if device().type == "cuda" else [])]
    entry["concurrent"] = [concurrent(args, n) for n in concurrency]
    write(args.out, entry)
    print(json.dumps({k: v for k, v in entry.items() if k != "modes"}, indent=1))


if __name__ == "__main__":
    import lexical_hf.training.provenance  # noqa: F401  (the code revision, for the record)

    main()
