"""Add each seed's last logged training loss to a row file written before run_lexical recorded it (`train_loss` in
a seed's metrics.json), from the log_history.json of the seed folders that trained it:

    python benchmarks/add_train_loss.py results/transduction/copy/ROW.json outputs/reproduce/lexical-copy-ROW/seeds

Several seed folders may be given (a row extended from another checkout); a seed is looked up in each in turn. A
seed whose log history does not end at the row's recorded updates, or whose metrics.json differs from the row's
test metrics, is refused: it is not the run that the row reports."""

import json
import sys
from pathlib import Path

from lexical_hf.files import replace_atomically


def main(argv: list[str]) -> None:
    row_path, seed_folders = Path(argv[0]), [Path(folder) for folder in argv[1:]]
    row = json.loads(row_path.read_text())
    window = row["settings"]["training"]["logging_steps"]
    for seed, metrics in row["per_seed"].items():
        folder = next((f / f"seed-{seed}" for f in seed_folders if (f / f"seed-{seed}" / "log_history.json").exists()),
                      None)
        if folder is None:
            raise SystemExit(f"seed {seed}: no log_history.json in {', '.join(map(str, seed_folders))}")
        if json.loads((folder / "metrics.json").read_text())["test"] != metrics["test"]:
            raise SystemExit(f"seed {seed}: {folder} holds another run than {row_path}")
        last = [entry for entry in json.loads((folder / "log_history.json").read_text()) if "loss" in entry][-1]
        if last["step"] != metrics["train_seconds"]["updates"]:
            raise SystemExit(f"seed {seed}: its log ends at update {last['step']}, the row records "
                             f"{metrics['train_seconds']['updates']}")
        metrics["train_loss"] = {"last_logged": last["loss"], "update": last["step"], "window": window}
        print(f"seed {seed}: last logged training loss {last['loss']:.3g} at update {last['step']}")
    replace_atomically(row_path, json.dumps(row, indent=1) + "\n")  # a row file is a result: never half written


if __name__ == "__main__":
    main(sys.argv[1:])
