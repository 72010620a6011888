"""Export benchmark configs to Parquet with a dataset card, so stock ``datasets.load_dataset`` reads them; push them.

Layout written to ``--out``::

    README.md                           dataset card: YAML `configs:` + `dataset_info:`, description, licence, citation
    <config>/<split>-00000-of-00001.parquet

``datasets.load_dataset(<folder or repo id>, "<config>")`` then works with no code from this package. Exporting
another config of the same benchmark into the same folder adds it to the card.

Command line::

    python dataset_scripts/publish.py --benchmark scan --config addprim_jump --out DIR [--push_to_hub USER/REPO]

The push happens only when a Hugging Face token is available (``HF_TOKEN`` or ``hf auth login``); otherwise the
folder is still written and the command exits with status 2 and says why.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

_CARD_METADATA = {
    "colors": {
        "pretty_name": "Colors (Lake, Linzen & Baroni 2019) — lexical_hf",
        "license": "mit",
        "language": ["en"],
        "task_categories": ["text2text-generation"],
        "tags": ["compositional-generalization", "few-shot", "lexical_hf"],
    },
    "scan": {
        "pretty_name": "SCAN (Lake & Baroni 2018) — lexical_hf",
        "license": "bsd-3-clause",
        "language": ["en"],
        "task_categories": ["text2text-generation"],
        "tags": ["compositional-generalization", "semantic-parsing", "lexical_hf"],
    },
    "cogs": {
        "pretty_name": "COGS (Kim & Linzen 2020) — lexical_hf",
        "license": "mit",
        "language": ["en"],
        "task_categories": ["text2text-generation"],
        "tags": ["compositional-generalization", "semantic-parsing", "lexical_hf"],
    },
    "eng_cmn": {
        "pretty_name": "English–Chinese Tatoeba (Akyürek & Andreas 2021 split) — lexical_hf",
        "license": "cc-by-2.0",
        "language": ["en", "zh"],
        "task_categories": ["translation"],
        "tags": ["tatoeba", "few-shot", "lexical_hf"],
    },
}

_FRONT_MATTER_END = "\n---\n"
# front-matter key recording, per config, a validation split held out of train by this tool (so that the card can
# say so again when later exports add configs)
HELD_OUT_KEY = "lexical_hf_held_out"


def _read_front_matter(readme: Path) -> dict:
    text = readme.read_text(encoding="utf-8")
    if not text.startswith("---\n") or _FRONT_MATTER_END not in text[3:]:
        raise ValueError(f"{readme} has no YAML front matter; refusing to overwrite a card this tool did not write")
    return yaml.safe_load(text[4 : text.index(_FRONT_MATTER_END, 3)]) or {}


def _card_text(benchmark: str, metadata: dict, info, configs: dict[str, dict], sources: list[str]) -> str:
    """The dataset card: YAML metadata, then a human-readable description."""
    front = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True, width=120)
    table = "\n".join(
        f"| `{config}` | " + ", ".join(f"{split}: {rows:,}" for split, rows in entry["splits"].items())
        + (f" ({entry['held_out']})" if "held_out" in entry else "") + " |"
        for config, entry in configs.items()
    )
    first_config = next(iter(configs))
    source_lines = "\n".join(f"- {source}" for source in sources) or "- generated or embedded by `lexical_hf`"
    return f"""---
{front}---

# {metadata["pretty_name"]}

{info.description.strip()}

Exported by `lexical_hf` (`python dataset_scripts/publish.py --benchmark {benchmark} ...`) from the builders in
`lexical_hf.data`, in the splits used by Akyürek & Andreas (ACL 2021), *Lexicon Learning for Few Shot Sequence
Modeling*. Columns `source` and `target` are whitespace-tokenized strings.

## Configs

| config | rows per split |
|---|---|
{table}

```python
from datasets import load_dataset
dataset = load_dataset("<this repository or folder>", "{first_config}")
```

## Sources

{source_lines}

Homepage: {info.homepage}

## Licence

{info.license}

## Citation

```bibtex
{info.citation.strip()}
```
"""


def export_benchmark(
    benchmark: str,
    out_dir: str | Path,
    configs: Iterable[str] | None = None,
    *,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    splits: Iterable[str] | None = None,
    validation_fraction: float | None = None,
    seed: int = 0,
    checksum_overrides: Mapping[str, str] | None = None,
    allow_download: bool = True,
) -> Path:
    """Write configs of a benchmark as Parquet plus a dataset card ``README.md`` into ``out_dir``.

    Args:
        benchmark: benchmark name (as for :func:`lexical_hf.data.load_benchmark`).
        out_dir: the folder to write (created if needed). Configs already exported there by this tool are kept.
        configs: configs to export (default: every config of the benchmark).
        data_dir, cache_dir, splits, validation_fraction, seed, checksum_overrides, allow_download: passed to
            :func:`lexical_hf.data.load_benchmark`.

    Returns:
        ``out_dir`` as a Path.
    """
    from lexical_hf.data import builder_class, canonical_benchmark_name, load_benchmark

    benchmark = canonical_benchmark_name(benchmark)
    builder_cls = builder_class(benchmark)
    configs = list(configs or [config.name for config in builder_cls.BUILDER_CONFIGS])
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metadata = dict(_CARD_METADATA[benchmark])

    readme = out_dir / "README.md"
    card_configs: dict[str, dict] = {}
    card_infos: dict[str, dict] = {}
    if readme.exists():
        previous = _read_front_matter(readme)
        if previous.get("pretty_name") != metadata["pretty_name"]:
            raise ValueError(f"{out_dir} holds another dataset ({previous.get('pretty_name')!r}); use another folder")
        card_configs = {entry["config_name"]: entry for entry in previous.get("configs", [])}
        card_infos = {entry["config_name"]: entry for entry in previous.get("dataset_info", [])}
        held_out = dict(previous.get(HELD_OUT_KEY) or {})
    else:
        held_out = {}

    info = None
    sources: set[str] = set()
    for config in configs:
        dataset_dict = load_benchmark(
            benchmark, config, data_dir=data_dir, cache_dir=cache_dir, splits=splits,
            validation_fraction=validation_fraction, seed=seed, checksum_overrides=checksum_overrides,
            allow_download=allow_download,
        )
        config_dir = out_dir / config
        for stale in config_dir.glob("*.parquet"):  # a re-export may have fewer splits
            stale.unlink()
        config_dir.mkdir(exist_ok=True)
        for split, dataset in dataset_dict.items():
            dataset.to_parquet(str(config_dir / f"{split}-00000-of-00001.parquet"))
        first = next(iter(dataset_dict.values()))
        info = first.info
        card_configs[config] = {
            "config_name": config,
            "data_files": [{"split": split, "path": f"{config}/{split}-*.parquet"} for split in dataset_dict],
        }
        card_infos[config] = {
            "config_name": config,
            "features": first.features._to_yaml_list(),
            "splits": [
                {"name": split, "num_bytes": dataset.data.nbytes, "num_examples": len(dataset)}
                for split, dataset in dataset_dict.items()
            ],
        }
        held_out.pop(config, None)
        if validation_fraction is not None and "validation" in dataset_dict:
            total = len(dataset_dict["validation"]) + len(dataset_dict["train"])
            held_out[config] = (f"validation: {len(dataset_dict['validation']):,} of the {total:,} original train "
                                f"examples (fraction {validation_fraction:g}, seed {seed}), held out by lexical_hf; "
                                "train is the rest")
        available_splits = builder_cls.splits_of(config)[0]
        read_splits = tuple(split for split in dataset_dict if split in available_splits)
        sources.update(
            f"{remote.url} ({remote.pinned_digest})"
            for remote in builder_cls.raw_files_for(config, read_splits).values()
        )

    default_config = builder_cls.DEFAULT_CONFIG_NAME
    for name, entry in card_configs.items():
        entry.pop("default", None)
        if name == default_config:
            entry["default"] = True
    metadata["configs"] = list(card_configs.values())
    metadata["dataset_info"] = list(card_infos.values())
    if held_out:
        metadata[HELD_OUT_KEY] = {name: held_out[name] for name in card_configs if name in held_out}
    summary = {
        name: {"splits": {split["name"]: split["num_examples"] for split in entry["splits"]}}
        for name, entry in card_infos.items()
    }
    for name, note in held_out.items():
        summary[name]["held_out"] = note
    readme.write_text(_card_text(benchmark, metadata, info, summary, sorted(sources)), encoding="utf-8")
    return out_dir


def push_folder_to_hub(folder: str | Path, repo_id: str, *, token: str | None = None, private: bool = False) -> str:
    """Upload an exported folder as a Hub dataset repository (created if missing); returns the commit URL.

    Raises:
        PermissionError: no token was given or found (``HF_TOKEN`` / ``hf auth login``).
    """
    import huggingface_hub

    token = token or huggingface_hub.get_token()
    if not token:
        raise PermissionError("no Hugging Face token found: set HF_TOKEN or run `hf auth login` to push")
    api = huggingface_hub.HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(
        folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
        commit_message="Upload benchmark exported by lexical_hf (dataset_scripts/publish.py)",
    )
    return commit.commit_url


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status (0 ok, 2 push requested but no token)."""
    parser = argparse.ArgumentParser(
        prog="python dataset_scripts/publish.py",
        description="Export a lexical_hf benchmark to Parquet + dataset card, optionally push it to the Hub.",
    )
    parser.add_argument("--benchmark", required=True, help="colors | scan | cogs | eng_cmn")
    parser.add_argument("--config", action="append", help="config to export (repeatable; default: all)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--data_dir", help="local mirror of the raw files (default: $LEXICAL_HF_DATA_DIR)")
    parser.add_argument("--cache_dir", help="datasets cache folder")
    parser.add_argument("--splits", nargs="+", help="splits to export (default: the config's default splits)")
    parser.add_argument("--validation_fraction", type=float, help="hold out this fraction of train as validation")
    parser.add_argument("--seed", type=int, default=0, help="seed of the validation hold-out")
    parser.add_argument("--checksum_override", action="append", default=[], metavar="MIRROR_PATH=SHA256",
                        help="accept a raw file with this sha256 instead of the pinned one (repeatable)")
    parser.add_argument("--no_download", action="store_true", help="fail instead of downloading missing files")
    parser.add_argument("--push_to_hub", metavar="REPO_ID", help="also upload the folder to this dataset repo")
    parser.add_argument("--private", action="store_true", help="create the Hub repository as private")
    args = parser.parse_args(argv)

    overrides = {}
    for item in args.checksum_override:
        path, sep, sha = item.partition("=")
        if not sep:
            parser.error(f"--checksum_override wants MIRROR_PATH=SHA256, got {item!r}")
        overrides[path] = sha

    out = export_benchmark(
        args.benchmark, args.out, args.config, data_dir=args.data_dir, cache_dir=args.cache_dir,
        splits=args.splits, validation_fraction=args.validation_fraction, seed=args.seed,
        checksum_overrides=overrides or None, allow_download=not args.no_download,
    )
    print(json.dumps({"exported": str(out)}))
    if args.push_to_hub:
        try:
            url = push_folder_to_hub(out, args.push_to_hub, private=args.private)
        except PermissionError as error:
            print(f"not pushed to {args.push_to_hub}: {error}", file=sys.stderr)
            return 2
        print(json.dumps({"pushed": url}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
