"""Every seed's metrics and Trainer log history of paper-tier rows, as one JSON file (a device call brings back at
most 8 files): `python benchmarks/collect_seeds.py OUT.json TASK:ROW [TASK:ROW ...]`."""

import glob
import json
import os
import sys


def main(argv: list[str]) -> None:
    out, pairs = argv[0], argv[1:]
    seeds = {}
    for pair in pairs:
        task, row = pair.split(":")
        for seed_dir in sorted(glob.glob(f"outputs/reproduce/lexical-{task}-{row}-paper/seeds/seed-*")):
            entry = {}
            if os.path.exists(f"{seed_dir}/metrics.json"):
                entry["metrics"] = json.load(open(f"{seed_dir}/metrics.json"))
            states = sorted(glob.glob(f"{seed_dir}/**/trainer_state.json", recursive=True), key=os.path.getmtime)
            if os.path.exists(f"{seed_dir}/log_history.json"):  # a finished seed's whole history
                entry["log_history"] = json.load(open(f"{seed_dir}/log_history.json"))
            elif states:  # a seed still training: its last checkpoint's
                entry["log_history"] = json.load(open(states[-1]))["log_history"]
            seeds[f"{task}:{row}:{os.path.basename(seed_dir)}"] = entry
    with open(out, "w") as file:
        json.dump(seeds, file, indent=1)
    for name, entry in seeds.items():
        metrics = entry.get("metrics", {})
        print(name, "test exact match", metrics.get("test", {}).get("exact_match"), "training", metrics.get("train_seconds"))


if __name__ == "__main__":
    main(sys.argv[1:])
