"""Peak memory and time of IBM Model 2's EM (`viterbi_alignments`, one direction) for several `max_cells`.

Usage:

    python benchmarks/ibm2_memory.py --data-dir ../shared/data

The EM works on *alignment cells*, one per (emitted token, given position): their number is the sum of m·n over
the examples. Built all at once they cost memory in proportion to the corpus; `max_cells` builds runs of about that
many at a time. Peak memory is numpy's allocations as `tracemalloc` sees them (numpy reports its buffers to it), on
top of the corpus arrays. Every `max_cells` must give the same alignments as the largest one (checked here).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import tracemalloc
from pathlib import Path

import numpy as np

from lexical_hf.lexicon.corpus import ParallelCorpus
from lexical_hf.lexicon.ibm2 import MAX_CELLS_PER_CHUNK, viterbi_alignments


def synthetic(pairs: int, length: int, seed: int = 0):
    """`pairs` examples of `length` tokens a side, ids drawn from 2,000 types: m·n = length² cells per example."""
    rng = np.random.default_rng(seed)
    side = lambda prefix: [" ".join(f"{prefix}{t}" for t in rng.integers(0, 2000, length)) for _ in range(pairs)]  # noqa: E731
    return side("s"), side("t")


def cogs(data_dir: Path):
    sources, targets = [], []
    for line in (data_dir / "COGS" / "train.tsv").read_text(encoding="utf-8").splitlines():
        columns = line.split("\t")
        sources.append(columns[0])
        targets.append(columns[1])
    return sources, targets


def measure(corpus: ParallelCorpus, max_cells: int):
    corpus.target.example_of_token, corpus.target.position_in_example  # cached per corpus: not part of the EM's peak
    tracemalloc.start()
    start = time.perf_counter()
    alignment = viterbi_alignments(corpus.source, corpus.target, 5, 1.0, 0.0, max_cells=max_cells)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return alignment, seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=os.environ.get("LEXICAL_HF_DATA_DIR"))
    parser.add_argument("--max-cells", type=int, nargs="*", default=[1 << 40, MAX_CELLS_PER_CHUNK, 1 << 16])
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus; numpy {np.__version__}; "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}; default max_cells {MAX_CELLS_PER_CHUNK}")
    corpora = {"synthetic 200 pairs × 300 tokens": synthetic(200, 300),
               "synthetic 2,000 pairs × 100 tokens": synthetic(2000, 100)}
    if args.data_dir and (args.data_dir / "COGS" / "train.tsv").is_file():
        corpora["COGS train"] = cogs(args.data_dir)
    for name, (sources, targets) in corpora.items():
        corpus = ParallelCorpus.from_pairs(sources, targets)
        cells = int((corpus.source.lengths * corpus.target.lengths).sum())
        print(f"\n{name}: {cells:,} cells (target given source)")
        reference = None
        for max_cells in args.max_cells:
            alignment, seconds, peak = measure(corpus, max_cells)
            same = "reference" if reference is None else ("identical" if np.array_equal(alignment, reference) else "DIFFERENT")
            reference = alignment if reference is None else reference
            print(f"  max_cells {max_cells:>15,}: peak {peak / 2**20:8.1f} MiB, {seconds:6.2f} s, alignments {same}")


if __name__ == "__main__":
    main()
