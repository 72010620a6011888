"""Add each seed's last logged training loss to a row file written before run_lexical recorded it (`train_loss` in
a seed's metrics.json), from the log_history.json of the seed folders that trained it:

    python benchmarks/add_train_loss.py results/transduction/copy/ROW.json outputs/reproduce/lexical-copy-ROW/seeds

Several seed folders may be given (a row extended from another checkout); a seed is looked up in each in turn. A
seed whose log history does not end at the row's recorded updates, or whose metrics.json differs from the row's
test metrics, is refused: it is not the run that the row reports.

Where the seed folders are gone, the losses can come from a file of losses recovered from the runs' logs, each entry
naming its task, row, seed, last logged update and the file it was read from:

    python benchmarks/add_train_loss.py --recovered results/diagnostics/recovered_train_losses.json \\
        results/transduction/*/*.json

A row file's task and row are its folder's and file's names. Seeds that have a loss keep it; an entry whose update is
not the row's recorded updates is refused; seeds with no entry stay without, and are listed."""

import json
import sys
from pathlib import Path

from lexical_hf.files import replace_atomically


def from_seed_folders(row_path: Path, seed_folders: list[Path]) -> None:
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


def from_recovered(recovered_path: Path, row_paths: list[Path]) -> None:
    recovered = {(entry["task"], entry["row"], entry["seed"]): entry
                 for entry in json.loads(recovered_path.read_text())["recovered"]}
    for row_path in row_paths:
        row = json.loads(row_path.read_text())
        window = row["settings"]["training"]["logging_steps"]
        added, absent = [], []
        for seed, metrics in row["per_seed"].items():
            if "train_loss" in metrics:
                continue
            entry = recovered.get((row_path.parent.name, row_path.stem, seed))
            if entry is None:
                absent.append(seed)
                continue
            if entry["update"] != metrics["train_seconds"]["updates"]:
                raise SystemExit(f"{row_path} seed {seed}: the recovered loss is at update {entry['update']}, the row "
                                 f"records {metrics['train_seconds']['updates']}")
            metrics["train_loss"] = {"last_logged": entry["last_logged"], "update": entry["update"], "window": window,
                                     "recovered_from": entry["source"]}
            added.append(seed)
        if added:
            replace_atomically(row_path, json.dumps(row, indent=1) + "\n")
        print(f"{row_path}: added seeds {added or 'none'}" + (f"; no recovered loss for seeds {absent}" if absent else ""))


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--recovered":
        if len(argv) < 3:
            raise SystemExit("usage: add_train_loss.py --recovered LOSSES.json ROW.json [ROW.json …]")
        from_recovered(Path(argv[1]), [Path(path) for path in argv[2:]])
    else:
        if len(argv) < 2:
            raise SystemExit("usage: add_train_loss.py ROW.json SEED_FOLDER [SEED_FOLDER …]")
        from_seed_folders(Path(argv[0]), [Path(folder) for folder in argv[1:]])


if __name__ == "__main__":
    main(sys.argv[1:])
