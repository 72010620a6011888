"""The ``lexical-hf`` command line.

Subcommands are registered in `build_parser` (one ``_add_<name>_command(subparsers)`` function each), so new ones can
be added without touching the others.

``lexical-hf train``: the training pipeline (`lexical_hf.training`; the same as ``examples/run_lexical.py``)::

    lexical-hf train --benchmark colors --lexicon simple --seeds 0-3 --output_dir out/colors-simple

``lexical-hf lexicon``: learn a lexicon on a benchmark split (through `lexical_hf.data.load_benchmark`) or on
a local file, and print its entries as a table::

    lexical-hf lexicon --dataset scan --config template_around_right --method simple [--plot out.png]
    lexical-hf lexicon --dataset scan --config template_around_right --method all --markdown report.md
    lexical-hf lexicon --data-file my_pairs.tsv --method ibm2 --param iterations=10 --save out/

``lexical-hf augment``: new training pairs composed with GECA, written as JSON lines::

    lexical-hf augment --dataset scan --config addprim_jump --seed 0 --out augmented.jsonl
    lexical-hf augment --data-file my_pairs.tsv --param wug_size=2 --out augmented.jsonl

``lexical-hf evaluate``: decode a published ``run_lexical.py`` folder (local, or downloaded from the Hub) on the
benchmark split(s) its ``results.json`` names and compare every metric with the one recorded for its seed::

    lexical-hf evaluate outputs/reproduce/lexical-scan-jump-simple --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from .lexicon.registry import parse_learner_params

__all__ = ["build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lexical-hf`` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv[:1] == ["train"]:  # its flags are the training pipeline's own (HfArgumentParser), passed on unparsed
        args = argparse.Namespace(command="train", handler=lambda _: _run_train(argv[1:]))
    else:
        args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (ValueError, TypeError, OSError, ImportError, RuntimeError) as error:
        print(f"lexical-hf {args.command}: error: {error}", file=sys.stderr)
        return 2
    except Exception:  # a bug, not bad input: show where, but keep status 1 for "evaluate: NOT reproduced"
        traceback.print_exc()
        print(f"lexical-hf {args.command}: unexpected error (please report it)", file=sys.stderr)
        return 2


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:  # also NaN
        raise argparse.ArgumentTypeError(f"must be a number ≥ 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lexical-hf", description="Lexical translation (Akyürek & Andreas, ACL 2021) for Hugging Face."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    subparsers.add_parser("train", add_help=False,
                          help="train and evaluate a model over seeds with Seq2SeqTrainer (lexical-hf train --help)")
    _add_lexicon_command(subparsers)
    _add_augment_command(subparsers)
    _add_evaluate_command(subparsers)
    return parser


# ---------------------------------------------------------------------- train
def _run_train(argv: list[str]) -> int:
    from .training import main as train

    train(argv, program="lexical-hf train")
    return 0


# ---------------------------------------------------------------------- lexicon
def _add_lexicon_command(subparsers) -> None:
    from .lexicon import available_methods

    command = subparsers.add_parser(
        "lexicon",
        help="learn a lexicon and print its entries",
        description="Learn a lexicon on the training split of a benchmark (or a local file) and print it as a table.",
    )
    data = command.add_argument_group("data (one of --dataset / --data-file)")
    source = data.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", help="benchmark name for load_benchmark: colors, scan, cogs, eng_cmn")
    source.add_argument(
        "--data-file",
        type=Path,
        help="a local UTF-8 file of pairs: 'source<TAB>target' per line (extra columns ignored), SCAN's "
             "'IN: … OUT: …', or JSON lines with source and target (.jsonl)",
    )
    data.add_argument("--config", default=None, help="benchmark config, e.g. template_around_right, addprim_jump")
    data.add_argument("--split", default="train", help="split to learn from (default: train)")
    data.add_argument("--data-dir", default=None, help="mirror of the raw files (default: $LEXICAL_HF_DATA_DIR)")
    data.add_argument("--source-column", default="source")
    data.add_argument("--target-column", default="target")

    learner = command.add_argument_group("learner")
    learner.add_argument(
        "--method",
        default="simple",
        help=f"one of {', '.join(available_methods())}; a comma-separated list or 'all' compares them side by side",
    )
    learner.add_argument("--temperature", type=float, default=0.0, help="τ of the lexicon (0 = hard, the default)")
    learner.add_argument("--seed", type=int, default=0, help="seed of sampling learners (bayesian)")
    learner.add_argument(
        "--tie-break",
        choices=("cooccurrence", "first_appearance", "string"),
        default="cooccurrence",
        help="how the hard lexicon chooses among outputs tied for an input's highest score (default: cooccurrence)",
    )
    learner.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a learner hyperparameter (JSON value), e.g. --param epsilon=3 --param variant='\"code\"'; repeatable",
    )

    output = command.add_argument_group("output")
    output.add_argument("--top-k", type=_positive_int, default=None, help="print at most K outputs per input")
    output.add_argument("--plot", type=Path, default=None, help="save a heat map of the lexicon(s) (needs matplotlib)")
    output.add_argument("--save", type=Path, default=None, help="save_pretrained the lexicon into this folder")
    output.add_argument("--markdown", type=Path, default=None, help="write a markdown report of the comparison")
    output.add_argument("--json", action="store_true",
                        help="print the lexicon JSON instead of a table (several methods: one object keyed by method)")
    command.set_defaults(handler=_run_lexicon)


# ---------------------------------------------------------------------- evaluate
def _add_evaluate_command(subparsers) -> None:
    command = subparsers.add_parser(
        "evaluate",
        help="check that a published folder reproduces the metrics in its results.json",
        description="Decode a run_lexical.py folder's benchmark split(s) with its weights (greedy or the recorded beam "
                    "width) and compare each metric with the one recorded for its published seed. Exit status 0 when "
                    "every metric is within --tolerance, 1 when one is not.",
    )
    command.add_argument("folder", help="a folder written by examples/run_lexical.py, or its Hub repo id (org/name)")
    command.add_argument("--revision", default=None, help="with a Hub repo id: branch, tag or commit")
    command.add_argument("--data-dir", default=None, help="mirror of the raw files (default: $LEXICAL_HF_DATA_DIR)")
    command.add_argument("--batch-size", type=_positive_int, default=256, help="sources decoded per generate() call")
    command.add_argument("--tolerance", type=_non_negative_float, default=1e-9,
                         help="largest accepted difference per metric (another device or torch build can change float "
                              "rounding, and with it a few argmaxes)")
    command.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    command.set_defaults(handler=_run_evaluate)


def _run_evaluate(args) -> int:
    import torch

    from . import evaluation
    from .data import canonical_benchmark_name, load_benchmark
    from .decoding import generate_texts
    from .results import flatten

    folder = Path(args.folder)
    if not folder.exists() and args.folder.count("/") == 1 and not args.folder.startswith((".", "/")):
        from huggingface_hub import snapshot_download

        try:  # a Hub repo id: the published folder
            folder = Path(snapshot_download(args.folder, revision=args.revision))
        except Exception as error:  # the Hub's own error alone hides that a local path was meant, e.g. a typo
            raise FileNotFoundError(f"{args.folder}: no such local folder, and as a Hub repo id: "
                                    f"{type(error).__name__}: {error}") from error
    results_path = folder / "results.json"
    if not results_path.is_file():
        raise FileNotFoundError(f"{results_path} not found: evaluate reads a folder written by examples/run_lexical.py")
    try:
        results = json.loads(results_path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{results_path} is not valid JSON ({error})") from error
    if not isinstance(results, dict):
        raise ValueError(f"{results_path} is not a results object written by examples/run_lexical.py")
    if not results.get("benchmark"):
        raise ValueError(f"{args.folder} was trained on your own files (--train_file): evaluate knows only benchmarks")
    seeds, per_seed = results.get("seeds"), results.get("per_seed")
    if not seeds or not isinstance(per_seed, dict) or str(seeds[0]) not in per_seed:
        raise ValueError(f"{results_path} records no metrics for its first seed (fields 'seeds' and 'per_seed'): "
                         "it is incomplete or was not written by examples/run_lexical.py")
    seed = seeds[0]  # run_lexical.py publishes the first seed's weights
    recorded = per_seed[str(seed)]
    splits = [split for split, metrics in recorded.items() if isinstance(metrics, dict) and "exact_match" in metrics]
    for split in splits:  # checked before the model is loaded and the split decoded
        _recorded_number(results_path, seed, split, "exact_match", recorded[split]["exact_match"])
        count = recorded[split].get("num_examples", 0)
        if not _is_whole(count) or count < 0:
            raise ValueError(f"{results_path}: seed {seed}, split {split}, num_examples is {count!r}: it must be the "
                             "whole number of examples the run scored")
    num_beams = _recorded_num_beams(results_path, results)
    benchmark = canonical_benchmark_name(results["benchmark"])
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"--device {device}: this torch build sees no CUDA device; use --device cpu")
    model, tokenizer = _load_published(folder)
    model = model.to(device).eval()
    # English–Chinese BLEU pools references over every split, so it needs them all; the others need only their own
    data = load_benchmark(benchmark, results.get("benchmark_config"), data_dir=args.data_dir,
                          splits=None if benchmark == "eng_cmn" else splits)
    config = results.get("benchmark_config")
    print(f"{args.folder}: seed {seed}, {benchmark}{'/' + config if config else ''}, {num_beams} beam(s), {device}")
    print(f"{'split':<8} {'metric':<32} {'recorded':>12} {'measured':>12} {'difference':>11}")
    worst, failures, compared = 0.0, 0, 0
    for split in splits:
        recorded_count = int(recorded[split].get("num_examples", len(data[split])))
        if recorded_count < len(data[split]):  # a run with --max_eval_samples scored the first N examples
            data[split] = data[split].select(range(recorded_count))
        predictions = generate_texts(model, tokenizer, list(data[split]["source"]), batch_size=args.batch_size,
                                     num_beams=num_beams)
        measured = flatten(evaluation.benchmark_metrics(data, split, predictions))
        for name, value in flatten(recorded[split]).items():
            if name not in measured or not _is_number(measured[name]):
                continue  # what is not a number (a BLEU signature, an empty group's None) is not compared
            value = _recorded_number(results_path, seed, split, name, value)
            difference = abs(measured[name] - value)
            # a NaN metric is never a reproduction, whatever the tolerance (max() would drop the NaN, and
            # --tolerance inf would accept the inf it is counted as)
            differs = math.isnan(difference) or difference > args.tolerance
            difference = math.inf if math.isnan(difference) else difference
            worst, failures, compared = max(worst, difference), failures + differs, compared + 1
            mark = "  <-- differs" if differs else ""
            print(f"{split:<8} {name:<32} {value:>12.6f} {measured[name]:>12.6f} {difference:>11.2e}{mark}")
    if not compared:
        raise ValueError(f"{results_path}: seed {seed} records no metric that evaluate measures (exact_match, "
                         "token_accuracy, …): nothing to compare")
    verdict = "NOT reproduced" if failures else "reproduced"
    print(f"{verdict}: largest difference {worst:.2e} (tolerance {args.tolerance:g})")
    return 1 if failures else 0


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_whole(value) -> bool:
    return _is_number(value) and math.isfinite(value) and value == int(value)


def _recorded_number(results_path: Path, seed, split: str, name: str, value) -> float:
    """A metric recorded in results.json, which must be a number: a string such as "0.93" would otherwise be skipped
    and the folder reported as reproduced without that comparison."""
    if not _is_number(value):
        raise ValueError(f"{results_path}: seed {seed}, split {split}, metric {name} is {value!r} "
                         f"({type(value).__name__}), not a number: write the number the run measured (e.g. 0.93, "
                         "not \"0.93\")")
    return value


def _recorded_num_beams(results_path: Path, results: dict) -> int:
    """The beam width the run decoded with (``training.generation_num_beams``; 1 when not recorded)."""
    training = results.get("training") or {}
    if not isinstance(training, dict):
        raise ValueError(f"{results_path}: 'training' is a {type(training).__name__}, not the object of training "
                         "settings the run wrote")
    num_beams = training.get("generation_num_beams")
    if num_beams is None:
        return 1
    if not _is_whole(num_beams) or num_beams < 1:
        raise ValueError(f"{results_path}: training.generation_num_beams is {num_beams!r}: the beam width must be a "
                         "whole number >= 1 (1: greedy)")
    return int(num_beams)


def _load_published(folder: Path):
    """The folder's model and tokenizer. Its config.json must hold a valid `LexicalSeq2SeqConfig` and its
    tokenizer_config.json name `LexicalTokenizer`: each error names the file and what is wrong."""
    from huggingface_hub.errors import StrictDataclassError
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer

    from .configuration_lexical import LexicalSeq2SeqConfig
    from .tokenization_lexical import LexicalTokenizer

    config_path = folder / "config.json"
    try:
        config = AutoConfig.from_pretrained(folder)
    except (ValueError, TypeError, StrictDataclassError) as error:
        reason = " ".join(str(error.__cause__ or error).split())
        raise ValueError(f"{config_path}: not a valid model configuration ({reason}); restore the file the run "
                         "wrote") from error
    if not isinstance(config, LexicalSeq2SeqConfig):
        raise ValueError(f"{config_path}: model_type {config.model_type!r} is not a lexical_hf model "
                         f"({LexicalSeq2SeqConfig.model_type!r})")
    tokenizer_config_path = folder / "tokenizer_config.json"
    if tokenizer_config_path.is_file():
        try:
            tokenizer_class = json.loads(tokenizer_config_path.read_text(encoding="utf-8")).get("tokenizer_class")
        except (ValueError, AttributeError) as error:
            raise ValueError(f"{tokenizer_config_path}: not a JSON object ({error})") from error
        if tokenizer_class not in (None, LexicalTokenizer.__name__):
            raise ValueError(f"{tokenizer_config_path}: tokenizer_class is {tokenizer_class!r}, but a lexical_hf "
                             f"model is read by {LexicalTokenizer.__name__} (source_tokenizer.json, "
                             "target_tokenizer.json): restore the file the run wrote")
    try:
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, config=config)
    except (ValueError, TypeError) as error:  # e.g. a size in config.json that no layer can have
        raise ValueError(f"{folder}: the model cannot be built from its config.json and weights ({error})") from error
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if not isinstance(tokenizer, LexicalTokenizer):
        raise ValueError(f"{folder}: the tokenizer loads as {type(tokenizer).__name__}, not "
                         f"{LexicalTokenizer.__name__}")
    return model, tokenizer


# ---------------------------------------------------------------------- augment
def _add_augment_command(subparsers) -> None:
    command = subparsers.add_parser(
        "augment",
        help="compose new training pairs (GECA) and write them as JSON lines",
        description="Compose new training pairs from a benchmark split or your own file with GECA (Andreas 2020) and "
                    "write them as JSON lines (source, target); print how many candidates each filter dropped.",
    )
    data = command.add_argument_group("data (one of --dataset / --data-file)")
    source = data.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", help="benchmark name for load_benchmark: colors, scan, cogs, eng_cmn")
    source.add_argument("--data-file", type=Path, help="a local file of pairs (TSV, IN: … OUT: …, or JSON lines)")
    data.add_argument("--config", default=None, help="benchmark config, e.g. addprim_jump")
    data.add_argument("--split", default="train", help="split to augment (default: train)")
    data.add_argument("--data-dir", default=None, help="mirror of the raw files (default: $LEXICAL_HF_DATA_DIR)")
    data.add_argument("--source-column", default="source")
    data.add_argument("--target-column", default="target")
    settings = command.add_argument_group("augmentation")
    settings.add_argument("--method", default="geca", help="geca (the default)")
    settings.add_argument("--preset", default=None, help="the reference's settings of a benchmark: scan, cogs, colors, "
                          "eng_cmn (default: the --dataset's own; the reference's defaults for a --data-file)")
    settings.add_argument("--seed", type=int, default=0, help="seed of the composition (one per training seed)")
    settings.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                          help="a GECA setting, e.g. --param wug_size=1 --param n_sample=500; repeatable")
    command.add_argument("--out", type=Path, required=True, help="JSON-lines file to write the new pairs to")
    command.set_defaults(handler=_run_augment)


def _run_augment(args) -> int:
    import datasets

    from .augmentation import augment, canonical_preset

    datasets.disable_progress_bars()
    data, provenance = _load_data(args)
    if isinstance(data, tuple):  # a --data-file: lists of sources and targets
        data = list(zip(*data))
        columns = {}
    else:
        columns = {"source_column": args.source_column, "target_column": args.target_column}
    preset = args.preset
    if preset is None and args.dataset:
        try:
            preset = canonical_preset(provenance["dataset"])
        except ValueError:
            preset = None
    new, stats = augment(data, args.method, seed=args.seed, preset=preset, return_stats=True,
                         **columns, **parse_learner_params(args.param))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    new.to_json(str(args.out), lines=True, force_ascii=False)
    print(stats.summary())
    print(f"wrote {len(new)} new pairs to {args.out}")
    return 0


def _load_data(args):
    """The training data and its provenance."""
    if args.data_file is not None:
        if (args.source_column, args.target_column) != ("source", "target") or args.config or args.split != "train":
            raise ValueError("--config, --split, --source-column and --target-column apply to --dataset; a --data-file "
                             "is read whole, its first two columns as source and target")
        from .data import read_pairs_file

        sources, targets = read_pairs_file(args.data_file)
        provenance = {"dataset": str(args.data_file), "split": None, "num_examples": len(sources)}
        return (sources, targets), provenance
    import datasets

    from .data import canonical_benchmark_name, load_benchmark

    name = canonical_benchmark_name(args.dataset)
    datasets.disable_progress_bars()  # keep the table readable
    dataset = load_benchmark(name, args.config, data_dir=args.data_dir, splits=[args.split])
    if args.split not in dataset:
        raise ValueError(f"split {args.split!r} not found; available: {list(dataset)}")
    split = dataset[args.split]
    provenance = {"dataset": name, "config": split.info.config_name or args.config, "split": args.split}
    return split, provenance


def _run_lexicon(args) -> int:
    from .lexicon import available_methods, learn_lexicon

    if args.method.strip() == "all":
        methods = available_methods()
    else:
        methods = list(dict.fromkeys(m.strip() for m in args.method.split(",") if m.strip()))
    if not methods:
        raise ValueError(f"--method {args.method!r} names no learner: pass one of {', '.join(available_methods())}, "
                         "a comma-separated list of them, or 'all'")
    unknown = [m for m in methods if m not in available_methods()]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; known methods: {', '.join(available_methods())}")
    params = parse_learner_params(args.param)
    as_flags = sorted(set(params) & {"seed", "temperature", "tie_break"})
    if as_flags:
        raise ValueError(f"--param {as_flags[0]}=…: use --{as_flags[0].replace('_', '-')} instead")
    if len(methods) > 1:
        from .lexicon import LEARNERS

        unused = sorted(set(params) - {name for m in methods for name in LEARNERS[m].hyperparameter_defaults})
        if unused:  # with one method the learner itself refuses it; here _params_for would drop it silently
            raise ValueError(f"--param {', '.join(unused)}: taken by none of {', '.join(methods)}")
    data, provenance = _load_data(args)
    lexicons, seconds = {}, {}
    for method in methods:
        start = time.perf_counter()
        lexicons[method] = learn_lexicon(
            data,
            method,
            source_column=args.source_column,
            target_column=args.target_column,
            temperature=args.temperature,
            seed=args.seed,
            tie_break=args.tie_break,
            provenance={k: v for k, v in provenance.items() if v is not None},
            **(params if len(methods) == 1 else _params_for(method, params)),
        )
        seconds[method] = time.perf_counter() - start
    command_line = "lexical-hf " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else None

    if len(methods) == 1:
        lexicon = lexicons[methods[0]]
        if args.json:
            print(lexicon.to_json_string(), end="")
        else:
            print(_describe(lexicon, seconds[methods[0]]))
            print(lexicon.table(top_k=args.top_k) if lexicon.num_entries else "(no entries)")
        if args.plot is not None:
            lexicon.plot(path=args.plot)
            print(f"heat map written to {args.plot}", file=sys.stderr)
    else:
        if args.json:
            print(json.dumps({method: lexicon.to_dict() for method, lexicon in lexicons.items()}, ensure_ascii=False,
                             indent=2, allow_nan=False))
        else:
            print(side_by_side_table(lexicons))
        if args.plot is not None:
            from .lexicon import plot_lexicons

            title = _data_title(next(iter(lexicons.values())))
            plot_lexicons(lexicons, args.plot, suptitle=f"{title}: τ = {args.temperature:g} lexicons")
            print(f"heat map written to {args.plot}", file=sys.stderr)
    if args.markdown is not None:
        args.markdown.write_text(markdown_report(lexicons, seconds, command_line, args.top_k), encoding="utf-8")
        print(f"report written to {args.markdown}", file=sys.stderr)
    if args.save is not None:
        for method, lexicon in lexicons.items():
            folder = args.save if len(lexicons) == 1 else args.save / method
            path = lexicon.save_pretrained(folder)
            print(f"saved {path}", file=sys.stderr)
    return 0


def _params_for(method: str, params: dict) -> dict:
    """With several methods, pass each only the parameters it accepts."""
    from .lexicon import LEARNERS

    accepted = LEARNERS[method].hyperparameter_defaults
    return {k: v for k, v in params.items() if k in accepted}


def _data_title(lexicon) -> str:
    p = lexicon.provenance
    parts = [str(p.get("dataset", "data"))]
    if p.get("config"):
        parts.append(str(p["config"]))
    title = "/".join(parts)
    if p.get("split"):
        title += f" ({p['split']}, {p.get('num_examples', '?')} examples)"
    return title


def _describe(lexicon, seconds: float) -> str:
    hyper = ", ".join(f"{k}={v}" for k, v in lexicon.hyperparameters.items())
    return (
        f"{lexicon.method} lexicon on {_data_title(lexicon)}: {lexicon.num_entries} entries over "
        f"{len(lexicon.entries)} inputs, τ = {lexicon.temperature:g}" + (f" [{hyper}]" if hyper else "")
        + f", learned in {seconds:.2f} s"
    )


def _cell(lexicon, source: str) -> str:
    outputs = lexicon.entries.get(source)
    if not outputs:
        return "—"
    choice = lexicon.hard_mapping()[source]
    score = outputs[choice]
    shown = f"{score:.3g}" if isinstance(score, float) else str(score)
    extra = f" (+{len(outputs) - 1})" if len(outputs) > 1 else ""
    return f"{choice} {shown}{extra}"


def side_by_side_table(lexicons: dict, markdown: bool = False) -> str:
    """One row per input with an entry in any lexicon; each cell is the τ = 0 choice, its score, and (+n) when the
    input has n further entries; '—' means no entry (the input falls back to copying / mutual exclusivity)."""
    inputs = sorted({s for lexicon in lexicons.values() for s in lexicon.entries})
    header = ["input", *lexicons]
    rows = [[source, *(_cell(lexicon, source) for lexicon in lexicons.values())] for source in inputs]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join([f"`{row[0]}`", *row[1:]]) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_report(lexicons: dict, seconds: dict, command_line: str | None, top_k: int | None = None) -> str:
    first = next(iter(lexicons.values()))
    lines = [f"# Lexicons learned on {_data_title(first)}", ""]
    if command_line:
        lines += ["Produced by:", "", "```", command_line, "```", ""]
    lines += [
        "Each cell: the τ = 0 (hard) translation of the input, its score, and `(+n)` when the input has n further "
        "entries. `—`: no entry, so `to_matrix` copies the input if it is also an output token, else spreads it over "
        "the output tokens no input claims (mutual exclusivity). Scores: `simple` co-occurrence count, `pmi` PMI, "
        "`ibm2` intersected alignment links, `bayesian` posterior probability. Tied scores go to the output seen "
        "with the input in the most examples (`--tie-break`).",
        "",
        side_by_side_table(lexicons, markdown=True),
        "",
        "| learner | entries | inputs with entries | hyperparameters | time (s) |",
        "|---|---|---|---|---|",
    ]
    for method, lexicon in lexicons.items():
        hyper = ", ".join(f"{k}={v}" for k, v in lexicon.hyperparameters.items()) or "—"
        statistics = ", ".join(f"{k}={v}" for k, v in lexicon.statistics.items())
        if statistics:
            hyper += f" ({statistics})"
        lines.append(
            f"| {method} | {lexicon.num_entries} | {len(lexicon.entries)} | {hyper} | {seconds.get(method, 0):.2f} |"
        )
    lines += ["", "## All entries", ""]
    for method, lexicon in lexicons.items():
        lines += [f"### {method}", ""]
        if not lexicon.num_entries:
            lines += ["(no entries)", ""]
            continue
        lines += ["```", lexicon.table(top_k=top_k), "```", ""]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
