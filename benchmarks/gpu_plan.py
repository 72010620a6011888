"""Which seeds of which rows a device call trains: as many as can finish their updates in the minutes left, judged by
the captured update's time in `benchmarks/bench_gpu.py`'s JSON. Seeds sharing one GPU take turns on it, so n seeds
take about n × updates × (ms per captured update) × `overhead` (evaluations, saves); the rows take turns, seeds in
order. Without a GPU every seed of every row trains (the CPU dry run).

    python benchmarks/gpu_plan.py BENCH_JSON SEEDS MINUTES ON_GPU TASK:ROW [TASK:ROW ...]

prints one line per row that trains, "TASK:ROW SEED,SEED,...", and nothing when none can finish.
"""

import json
import os
import sys

from lexical_hf.results import parse_seeds


def plan(bench: dict, seeds: list[int], minutes: float, on_gpu: bool, pairs: list[str], updates: int = 8000,
         overhead: float = 1.25) -> dict[str, list[int]]:
    count = len(seeds) * len(pairs)
    if on_gpu:
        ms = next(iter(bench.values()), {}).get("modes", {}).get("graphed", {}).get("ms_per_update")
        count = min(count, int(minutes * 60 * 1000 / (overhead * updates * ms))) if ms else 0
    turns = [(pair, seed) for seed in seeds for pair in pairs][:count]
    rows = {pair: [seed for row, seed in turns if row == pair] for pair in pairs}
    return {pair: row_seeds for pair, row_seeds in rows.items() if row_seeds}


def main(argv: list[str]) -> None:
    bench_path, seeds, minutes, on_gpu, pairs = argv[0], parse_seeds(argv[1]), float(argv[2]), argv[3] != "0", argv[4:]
    bench = json.load(open(bench_path)) if os.path.exists(bench_path) else {}
    rows = plan(bench, seeds, minutes, on_gpu, pairs)
    print(f"{sum(map(len, rows.values()))} seed(s) can finish in {minutes} minutes", file=sys.stderr)
    for pair, row_seeds in rows.items():
        print(pair, ",".join(map(str, row_seeds)))


if __name__ == "__main__":
    main(sys.argv[1:])
