"""Multi-seed results: mean ± std per split and metric, and their Markdown table (used by the run script and cards)."""

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


def summarize_row(per_seed: dict) -> dict:
    """A row's aggregates from `{seed: {split: metrics, "train_seconds": {"value": s}}}`: `summary` (see `summarize`,
    training time left out) and `train_seconds` (mean and total over seeds)."""
    seconds = [m["train_seconds"]["value"] for m in per_seed.values()]
    return {
        "summary": summarize({s: {k: v for k, v in m.items() if k != "train_seconds"} for s, m in per_seed.items()}),
        "train_seconds": {"mean": statistics.fmean(seconds), "total": sum(seconds)},
    }


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
