"""Multi-seed results: seed lists, mean ± std per split and metric, their Markdown table, and the comparison of two
runs' settings (used by the run script, `benchmarks/reproduce.py` and the model cards)."""

import statistics

TABLE_METRICS = ("exact_match", "token_accuracy", "bleu_paper/score", "bleu_paper_one_shot/score", "sacrebleu/score")


def flatten(metrics: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} → {"a/b": 1}."""
    flat = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def summarize(per_seed: dict) -> dict:
    """`{seed: {split: metrics}}` → `{split: {metric: {mean, std, n}}}` for every numeric metric.

    std is the population standard deviation over seeds (numpy's default, which the paper's tables use)."""
    summary = {}
    for split in next(iter(per_seed.values())):
        values: dict[str, list[float]] = {}
        for seed_metrics in per_seed.values():
            for key, value in flatten(seed_metrics[split]).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    values.setdefault(key, []).append(float(value))
        summary[split] = {k: {"mean": statistics.fmean(v), "std": statistics.pstdev(v), "n": len(v)} for k, v in values.items()}
    return summary


# what a seed's metrics.json holds besides its evaluated splits
SEED_RECORDS = ("train_seconds", "train_loss", "augmentation", "selected_checkpoint")


def summarize_row(per_seed: dict) -> dict:
    """A row's aggregates from `{seed: {split: metrics, "train_seconds": {"value": s, "updates": n}}}`: `summary`
    (see `summarize`; training records left out), `train_seconds` (mean and total over seeds) and, where the seeds
    record them, `train_updates` (min and max over seeds: below the recipe's max_steps when a time limit ended
    training) and `augmented_pairs` (the new pairs each seed's augmentation made: mean and std)."""
    seconds = [m["train_seconds"]["value"] for m in per_seed.values()]
    splits = {s: {k: v for k, v in m.items() if k not in SEED_RECORDS} for s, m in per_seed.items()}
    row = {
        "summary": summarize(splits),
        "train_seconds": {"mean": statistics.fmean(seconds), "total": sum(seconds)},
    }
    augmented = [m["augmentation"]["new_pairs"] for m in per_seed.values() if "augmentation" in m]
    if augmented:
        row["augmented_pairs"] = {"mean": statistics.fmean(augmented), "std": statistics.pstdev(augmented)}
    updates = [m["train_seconds"]["updates"] for m in per_seed.values() if "updates" in m["train_seconds"]]
    if updates:
        row["train_updates"] = {"min": min(updates), "max": max(updates)}
    return row


def results_markdown(results: dict) -> str:
    """The table of a results dict: one row per split and metric, mean ± std and the per-seed values."""
    if not results["summary"]:
        return "No split was evaluated (the run had no validation or test data).\n"
    lines = ["| split | metric | mean ± std | per seed |", "|---|---|---|---|"]
    for split, metrics in results["summary"].items():
        for key in TABLE_METRICS:
            if key in metrics:
                per_seed = ", ".join(f"{flatten(m[split])[key]:.3f}" for m in results["per_seed"].values())
                lines.append(f"| {split} | {key} | {metrics[key]['mean']:.3f} ± {metrics[key]['std']:.3f} | {per_seed} |")
    return "\n".join(lines) + "\n"


def run_markdown(results: dict) -> str:
    """A run's results.md: its name, seeds, preset and machine, then `results_markdown`."""
    header = f"# {results['run_name']}\n\nSeeds: {results['seeds']} · preset `{results['preset']}` · machine: {results['machine']}\n\n"
    return header + results_markdown(results)


MAX_SEED = 2**32 - 1  # numpy.random.seed, which transformers.set_seed calls, takes no larger seed


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` → [0, 1, 2, 3, 4]; ``"0,3,7"`` → [0, 3, 7]; ranges and single seeds mix. Raises `ValueError`, naming
    ``--seeds``, for anything but whole numbers >= 0 and ranges of them, a backwards range, a repeated seed or none
    at all."""
    seeds = []
    for part in text.split(","):
        if not part.strip():
            continue
        bounds = [bound.strip() for bound in part.split("-", 1)]
        if not all(bound.isascii() and bound.isdigit() for bound in bounds):
            raise ValueError(f"--seeds {text!r}: {part.strip()!r} is not a seed or a range of seeds: seeds are whole "
                             "numbers >= 0, e.g. --seeds 0-9 or --seeds 0,3,7")
        low, high = int(bounds[0]), int(bounds[-1])
        if high > MAX_SEED:
            raise ValueError(f"--seeds {text!r}: {high} is above {MAX_SEED}, the largest seed numpy accepts")
        if high < low:
            raise ValueError(f"--seeds {text!r}: the range {part.strip()!r} runs backwards; write {high}-{low}")
        seeds.extend(range(low, high + 1))
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds {text!r} must name distinct seeds, e.g. 0-9 or 0,3,7")
    return seeds


def settings_differences(recorded: dict, current: dict, ignore: tuple[str, ...] = ()) -> list[str]:
    """What differs between two runs' settings (`run_lexical.seed_settings`: groups of named values), as
    ``"group.name: old → new"`` lines; names in `ignore` (``"group.name"``) are not compared.

    A group or name that `recorded` lacks was not recorded by the version that wrote it: it is not compared, so older
    seed folders and row files stay usable (checked on what they do record)."""
    differing = []
    for key in sorted(recorded):
        old, new = recorded[key], current.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            differing += [f"{key}.{name}: {old[name]!r} → {new.get(name)!r}" for name in sorted(old)
                          if old[name] != new.get(name) and f"{key}.{name}" not in ignore]
        elif old != new and key not in ignore:
            differing.append(f"{key}: other entries or settings" if key == "lexicon" else f"{key}: {old!r} → {new!r}")
    return differing
