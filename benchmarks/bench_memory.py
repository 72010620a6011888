"""Speed of the neural Stack, Queue and DeQue: steps per second, vectorised (lexical_hf.memory) vs a looped reference.

A run feeds T steps of random controls (push, pop, value) for a batch of B sequences, then backpropagates a random
linear function of all T reads; "steps/s" is T divided by the time of the whole forward + backward pass, measured
in CPU time of the (single-threaded) process, so that time spent waiting for a shared CPU does not count, from the
fastest of the repeats (wall times are recorded too). Forward-only steps/s (under ``torch.no_grad``, as in
generation) are measured as well. The two implementations alternate run by run so that both meet the same load.

The looped reference is the pattern of the existing implementations: at each step, a Python loop over the
memory's rows, each operation batched over the B sequences ((B,) strengths, (B, m) values, rows kept in a Python
list), with a running sum for the strength above/below each row: O(n) Python-level tensor operations per step.
It is checked against lexical_hf.memory (float64) before anything is timed.

    python benchmarks/bench_memory.py                      # t = 64 and 256, B = 10, m = 256, 1 thread
    python benchmarks/bench_memory.py --lengths 16 --repeats 1 --output_prefix /tmp/speed   # a quick check

Writes <output_prefix>.json and .md (default results/neural_memory_speed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import torch

from lexical_hf.memory import max0, min_left, neural_memory
from lexical_hf.training.provenance import code_revision

KINDS = ("stack", "queue", "deque")


# ----- the looped reference -------------------------------------------------------------------------------------------

def looped_pop(strengths: list[torch.Tensor], pop: torch.Tensor, from_top: bool) -> list[torch.Tensor]:
    """``s[i] <- max(0, s[i] - max(0, u - strength in front of i))``, one row at a time; rows (B,), pop (B,)."""
    order = range(len(strengths) - 1, -1, -1) if from_top else range(len(strengths))
    popped, in_front = [None] * len(strengths), torch.zeros_like(pop)
    for i in order:
        popped[i] = max0(strengths[i] - max0(pop - in_front))
        in_front = in_front + strengths[i]
    return popped


def looped_read(strengths: list[torch.Tensor], values: list[torch.Tensor], from_top: bool) -> torch.Tensor:
    """``sum_i min(s[i], max(0, 1 - strength in front of i)) V[i]``, one row at a time; returns (B, m)."""
    order = range(len(strengths) - 1, -1, -1) if from_top else range(len(strengths))
    read, in_front = torch.zeros_like(values[0]), torch.zeros_like(strengths[0])
    for i in order:
        read = read + min_left(strengths[i], max0(1 - in_front))[:, None] * values[i]
        in_front = in_front + strengths[i]
    return read


class LoopedMemory:
    """One batch's memory as Python lists of rows; ``step`` has the signature of the vectorised module's."""

    def __init__(self, kind: str):
        self.kind, self.strengths, self.values = kind, [], []

    def step(self, push: torch.Tensor, pop: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        # push, pop: (B, E); value: (B, E, m); returns (B, E * m)
        if self.kind == "deque":
            popped = looped_pop(looped_pop(self.strengths, pop[:, 0], True), pop[:, 1], False)
            self.strengths = [push[:, 1]] + popped + [push[:, 0]]
            self.values = [value[:, 1]] + self.values + [value[:, 0]]
            return torch.cat([looped_read(self.strengths, self.values, True),
                              looped_read(self.strengths, self.values, False)], dim=1)
        from_top = self.kind == "stack"
        self.strengths = looped_pop(self.strengths, pop[:, 0], from_top) + [push[:, 0]]
        self.values = self.values + [value[:, 0]]
        return looped_read(self.strengths, self.values, from_top)


# ----- timing ---------------------------------------------------------------------------------------------------------

def random_controls(kind: str, batch: int, steps: int, width: int, dtype=torch.float32, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    ends = 2 if kind == "deque" else 1
    push = torch.rand(batch, steps, ends, generator=generator, dtype=dtype)
    pop = torch.rand(batch, steps, ends, generator=generator, dtype=dtype)
    value = torch.tanh(torch.randn(batch, steps, ends, width, generator=generator, dtype=dtype))
    return push, pop, value


def run_memory(kind: str, implementation: str, push, pop, value) -> torch.Tensor:
    """All reads (B, T, E * m) of one implementation."""
    batch, steps = push.shape[:2]
    if implementation == "vectorised":
        memory = neural_memory(kind, value.shape[-1])
        state = memory.initial_state(batch, capacity=steps, dtype=value.dtype)
        step = lambda t: memory(state, push[:, t], pop[:, t], value[:, t])  # noqa: E731
    else:
        looped = LoopedMemory(kind)
        step = lambda t: looped.step(push[:, t], pop[:, t], value[:, t])  # noqa: E731
    return torch.stack([step(t) for t in range(steps)], dim=1)


def check_reference(width: int = 8, steps: int = 16) -> None:
    """The looped reference computes what lexical_hf.memory computes, values and gradients (float64)."""
    for kind in KINDS:
        controls = [t.requires_grad_() for t in random_controls(kind, 3, steps, width, torch.float64, seed=1)]
        results = []
        for implementation in ("vectorised", "looped"):
            reads = run_memory(kind, implementation, *controls)
            results.append((reads, torch.autograd.grad(reads.square().sum(), controls)))
        torch.testing.assert_close(results[0][0], results[1][0])
        for vectorised_grad, looped_grad in zip(results[0][1], results[1][1]):
            torch.testing.assert_close(vectorised_grad, looped_grad)


def timed_run(kind: str, implementation: str, controls, loss_weights, backward: bool) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run: T steps, and the backward pass through them if ``backward``."""
    controls = [t.clone().requires_grad_(backward) for t in controls]
    cpu, wall = time.process_time(), time.perf_counter()
    with torch.set_grad_enabled(backward):
        reads = run_memory(kind, implementation, *controls)
        if backward:
            (reads * loss_weights).sum().backward()
    return time.process_time() - cpu, time.perf_counter() - wall


def measure(kind: str, batch: int, steps: int, width: int, repeats: int) -> dict:
    """Steps/s of both implementations, forward + backward and forward only, from the fastest of ``repeats`` runs.

    Runs alternate between the implementations so that both meet the same load; each is warmed up on 8 steps.
    """
    controls = random_controls(kind, batch, steps, width)
    loss_weights = torch.randn(batch, steps, (2 if kind == "deque" else 1) * width)
    times = {}
    for implementation in ("vectorised", "looped"):
        timed_run(kind, implementation, [t[:, :8] for t in controls], loss_weights[:, :8], backward=True)
    for _ in range(repeats):
        for backward, name in ((True, "fwd_bwd"), (False, "fwd")):
            for implementation in ("vectorised", "looped"):
                cpu, wall = timed_run(kind, implementation, controls, loss_weights, backward)
                times.setdefault((implementation, name), []).append((cpu, wall))
    row = {"memory": kind, "steps": steps}
    for (implementation, name), runs in times.items():
        row[f"{implementation}_{name}_steps_per_cpu_s"] = steps / min(cpu for cpu, _ in runs)
        row[f"{implementation}_{name}_steps_per_wall_s"] = steps / min(wall for _, wall in runs)
        row[f"{implementation}_{name}_steps_per_wall_s_median"] = steps / statistics.median(w for _, w in runs)
    for name in ("fwd_bwd", "fwd"):
        row[f"{name}_ratio"] = row[f"vectorised_{name}_steps_per_cpu_s"] / row[f"looped_{name}_steps_per_cpu_s"]
    return row


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict:
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return {"cpu_count": os.cpu_count(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "python": platform.python_version(), "processor": platform.processor() or platform.machine(),
            "uptime_before": uptime, "code": code_revision()}


def markdown(report: dict) -> str:
    settings, machine_info = report["settings"], report["machine"]
    lines = [
        "# Neural memory speed: vectorised vs looped",
        "",
        f"`{report['command']}`",
        "",
        f"Batch B = {settings['batch']}, value width m = {settings['width']}, float32, CPU, "
        f"{machine_info['torch_threads']} torch thread; {machine_info['cpu_count']} CPUs ({machine_info['processor']}), "
        f"torch {machine_info['torch']}, Python {machine_info['python']}, code {machine_info.get('code', 'unrecorded')}. A step is one pop/push/read of the whole "
        "batch. Steps/s = T / (time of T steps + the backward pass through them), or of T steps alone (forward, "
        "under no_grad), measured in CPU time of the process (one thread, so time spent waiting for a CPU does not "
        f"count), fastest of {settings['repeats']} runs at T <= 64 and {settings['long_repeats']} at T > 64, the two "
        "implementations alternating so that both meet the same load; each warmed up on 8 steps first.",
        "",
        "| memory | T | vectorised fwd+bwd steps/s | looped fwd+bwd steps/s | ratio | vectorised fwd steps/s "
        "| looped fwd steps/s | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        lines.append(
            f"| {row['memory']} | {row['steps']} | {row['vectorised_fwd_bwd_steps_per_cpu_s']:,.0f} | "
            f"{row['looped_fwd_bwd_steps_per_cpu_s']:,.1f} | {row['fwd_bwd_ratio']:.0f}x | "
            f"{row['vectorised_fwd_steps_per_cpu_s']:,.0f} | {row['looped_fwd_steps_per_cpu_s']:,.1f} | "
            f"{row['fwd_ratio']:.0f}x |"
        )
    lines += [
        "",
        f"Load: the {machine_info['cpu_count']} CPUs are shared with other processes. `uptime` before: "
        f"`{machine_info['uptime_before']}`; load averages after: {report['load_average_after']}. With the load "
        "above the CPU count, wall times mostly measure the waiting (the JSON has them: steps per wall second, "
        "fastest and median); CPU time still moves with cache and memory-bandwidth contention.",
        "",
        "The looped reference is the pattern of existing implementations (a Python loop over the memory's rows at "
        "every step, each operation batched over B); it is checked against lexical_hf.memory in values and "
        "gradients before timing. The vectorised memory's forward step is O(n m) tensor work with no Python loop "
        "over rows; its backward step is O(n m) too: the rows' gradients are accumulated beside the buffer "
        "(`RowGradients`), not passed through autograd as gradients of the whole preallocated buffer.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5, help="runs per implementation at T <= 64")
    parser.add_argument("--long_repeats", type=int, default=2, help="runs per implementation at T > 64")
    parser.add_argument("--output_prefix", default="results/neural_memory_speed")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    check_reference()
    report = {"command": "python " + " ".join([sys.argv[0], *(argv if argv is not None else sys.argv[1:])]),
              "machine": machine(), "settings": vars(args), "rows": []}
    for steps in args.lengths:
        for kind in KINDS:
            repeats = args.repeats if steps <= 64 else args.long_repeats
            row = measure(kind, args.batch, steps, args.width, repeats)
            report["rows"].append(row)
            print(json.dumps(row), flush=True)
    report["load_average_after"] = load_average()
    with open(args.output_prefix + ".json", "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=2)
    with open(args.output_prefix + ".md", "w", encoding="utf-8") as handle:
        handle.write(markdown(report))


if __name__ == "__main__":
    main()
