"""Speed of every lexicon learner on SCAN addprim_jump, COGS train and English–Chinese train.

Usage (writes results/bench_lexicon.json):

    python benchmarks/bench_lexicon.py --data-dir ../shared/data

What is measured
* ``learn_lexicon(train_split, method)`` end to end on a ``datasets.Dataset`` loaded with ``load_benchmark``: column
  extraction, whitespace splitting and id encoding (pyarrow), the corpus statistics, the learner, and building the
  ``{input: {output: score}}`` entries. Best of ``--repeats`` runs (one run for the Bayesian sampler).
* The baseline: a straightforward pure-Python implementation of the Simple rule (sets of tokens per example,
  ``collections.Counter`` over all co-occurring pairs, then the rule), on the same strings, checked to produce the same
  entries; the ratio ``baseline / vectorised`` is reported.
* The issue's targets on 2 CPU cores: Simple and PMI < 1 s on COGS; IBM Model 2 (both directions, 5 EM iterations)
  < 10 s on COGS and English–Chinese; Bayesian (burn-in 1000, a sample every 10 steps, 2000 samples) < 60 s on SCAN
  and COGS.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

import lexical_hf
from lexical_hf.lexicon import available_methods, learn_lexicon

DATASETS = {
    "scan_addprim_jump": ("scan", "addprim_jump"),
    "cogs_train": ("cogs", "paper"),
    "eng_cmn_train": ("eng_cmn", "paper"),
}
TARGETS_SECONDS = {
    ("simple", "cogs_train"): 1.0,
    ("pmi", "cogs_train"): 1.0,
    ("ibm2", "cogs_train"): 10.0,
    ("ibm2", "eng_cmn_train"): 10.0,
    ("bayesian", "scan_addprim_jump"): 60.0,
    ("bayesian", "cogs_train"): 60.0,
}


def simple_pure_python(sources, targets, epsilon=3):
    """The Simple rule written the obvious way (no numpy): the baseline."""
    inputs = [set(s.split()) for s in sources]
    outputs = [set(t.split()) for t in targets]
    count_in, count_out, joint = Counter(), Counter(), Counter()
    for x, y in zip(inputs, outputs):
        count_in.update(x)
        count_out.update(y)
        joint.update(itertools.product(x, y))
    sufficient = {pair for pair, c in joint.items() if c == count_in[pair[0]]}
    necessary = {pair for pair, c in joint.items() if c == count_out[pair[1]]}
    winners = {w for _, w in sufficient & necessary}
    implied_by = Counter(w for _, w in sufficient)
    entries = defaultdict(dict)
    for v, w in sufficient:
        if ((v, w) in necessary or w not in winners) and implied_by[w] <= epsilon:
            entries[v][w] = joint[(v, w)]
    return dict(entries)


def load(name: str, data_dir: str):
    import datasets

    datasets.disable_progress_bars()
    benchmark, config = DATASETS[name]
    return lexical_hf.load_benchmark(benchmark, config, data_dir=data_dir, splits=["train"])["train"]


def best_time(function, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), times, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_data = os.environ.get("LEXICAL_HF_DATA_DIR") or str(Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--data-dir", default=default_data)
    default_output = Path(__file__).resolve().parents[1] / "results" / "bench_lexicon.json"
    parser.add_argument("--output", type=Path, default=default_output)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--methods", nargs="*", default=available_methods())
    args = parser.parse_args(argv)

    results = {
        "command": "python benchmarks/bench_lexicon.py " + " ".join(sys.argv[1:]),
        "environment": {
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "lexical_hf": lexical_hf.__version__,
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],  # the 2 cores may be shared
        },
        "notes": (
            "seconds = best of `repeats` runs of learn_lexicon(train_split, method) on a datasets.Dataset from "
            "load_benchmark (encoding included); the Bayesian sampler runs once with the paper's settings "
            "(burn-in 1000, thin 10, 2000 samples = 21,000 Metropolis-Hastings steps)."
        ),
        "datasets": {},
        "targets": [],
    }
    for name in args.datasets:
        data = load(name, args.data_dir)
        sources, targets = list(data["source"]), list(data["target"])
        entry = {"examples": len(data), "source_tokens": sum(len(s.split()) for s in sources), "learners": {}}
        print(f"{name}: {len(data)} examples", flush=True)
        for method in args.methods:
            repeats = 1 if method == "bayesian" else args.repeats
            seconds, all_times, lexicon = best_time(lambda: learn_lexicon(data, method), repeats)
            entry["learners"][method] = {
                "seconds": round(seconds, 4),
                "runs": [round(t, 4) for t in all_times],
                "entries": lexicon.num_entries,
                "inputs_with_entries": len(lexicon.entries),
                "hyperparameters": lexicon.hyperparameters,
                **({"statistics": lexicon.statistics} if lexicon.statistics else {}),
            }
            print(f"  {method:9s} {seconds:8.3f} s  {lexicon.num_entries} entries", flush=True)
        baseline_seconds, _, baseline = best_time(lambda: simple_pure_python(sources, targets), args.repeats)
        vectorised = learn_lexicon(data, "simple").entries if "simple" in args.methods else None
        entry["baseline_pure_python_simple"] = {
            "seconds": round(baseline_seconds, 4),
            "same_entries_as_vectorised": None if vectorised is None else baseline == vectorised,
        }
        if "simple" in entry["learners"]:
            ratio = baseline_seconds / entry["learners"]["simple"]["seconds"]
            entry["baseline_pure_python_simple"]["ratio_to_vectorised_simple"] = round(ratio, 2)
        print(f"  baseline  {baseline_seconds:8.3f} s  (pure-Python Simple)", flush=True)
        results["datasets"][name] = entry
    for (method, name), limit in TARGETS_SECONDS.items():
        measured = results["datasets"].get(name, {}).get("learners", {}).get(method)
        if measured is not None:
            results["targets"].append(
                {
                    "method": method,
                    "dataset": name,
                    "target_seconds": limit,
                    "seconds": measured["seconds"],
                    "met": measured["seconds"] < limit,
                }
            )
    results["environment"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
