"""Smoke tests of the training pipeline (`lexical_hf.training`) end to end on Colors with a tiny model, run as a user
runs it: `python examples/run_lexical.py …` (and `lexical-hf train …`, the same pipeline)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from lexical_hf import LexicalSeq2SeqConfig, LexicalSeq2SeqForConditionalGeneration, LexicalTokenizer

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "examples" / "run_lexical.py"
TINY = ["--benchmark", "colors", "--lexicon", "simple", "--embedding_size", "16", "--hidden_size", "16",
        "--num_layers", "1", "--max_steps", "30", "--disable_tqdm", "true", "--generation_num_beams", "2"]
HUB_FILES = {"config.json", "model.safetensors", "generation_config.json", "source_tokenizer.json",
             "target_tokenizer.json", "tokenizer_config.json", "lexicon.json", "results.json", "results.md", "README.md"}


def preset_values(argv: list[str]) -> dict:
    """The flag values the preset gives for a command line's preset, backbone and data."""
    from lexical_hf.training.arguments import HfArgumentParser, preset_defaults, resolve_benchmark
    from lexical_hf.training.arguments import ARGUMENT_CLASSES

    first, _ = HfArgumentParser(ARGUMENT_CLASSES).parse_known_args(argv)
    benchmark = resolve_benchmark(first.benchmark, first.train_file)
    return preset_defaults(first.backbone, first.preset, benchmark, first.benchmark_config)[1]


def preset_entry(preset: str, key: str) -> dict:
    from lexical_hf.training.arguments import load_presets, preset_entry as entry

    return entry(load_presets("lstm"), preset, key)


def run(command, output_dir, extra=(), timeout=600):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    result = subprocess.run([*command, str(SCRIPT), *TINY, "--output_dir", str(output_dir), *extra],
                            capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result


def check_output_folder(output_dir: Path, seeds):
    assert HUB_FILES <= {p.name for p in output_dir.iterdir()}
    results = json.loads((output_dir / "results.json").read_text())
    assert results["seeds"] == seeds and set(results["per_seed"]) == {str(s) for s in seeds}
    assert "source_revision" in results  # the checkout's `git describe`, None outside one
    test = results["summary"]["test"]["exact_match"]
    per_seed = [results["per_seed"][str(s)]["test"]["exact_match"] for s in seeds]
    assert test["n"] == len(seeds) and abs(test["mean"] - sum(per_seed) / len(seeds)) < 1e-9
    card = (output_dir / "README.md").read_text()
    metadata = yaml.safe_load(card.split("---")[1])
    assert metadata["library_name"] == "transformers" and metadata["license"] == "mit"
    assert "lexical_hf" in metadata["tags"]
    # hyperparameters as values, not enum reprs; no "config `None`" for a benchmark without configs
    assert "SchedulerType." not in card and "Strategy." not in card and "`None`" not in card
    reported = metadata["model-index"][0]["results"][0]["metrics"][0]
    assert reported["type"] == "exact_match" and abs(reported["value"] - round(test["mean"], 4)) < 1e-9
    assert json.loads((output_dir / "lexicon.json").read_text())  # the learned lexicon travels with the weights
    return results


def test_python_run_writes_a_hub_ready_folder_that_reproduces_its_metrics(tmp_path):
    run([sys.executable], tmp_path, ["--seeds", "0-1"])
    results = check_output_folder(tmp_path, [0, 1])
    for seed in ("0", "1"):  # every seed records the updates it did: all of max_steps, no time limit
        assert results["per_seed"][seed]["train_seconds"]["updates"] == 30
        assert results["per_seed"][seed]["train_seconds"]["stopped_by_time_limit"] is False
    assert results["train_updates"] == {"min": 30, "max": 30}

    # the published weights are seed 0's: reloading them reproduces seed 0's test exact match
    import lexical_hf
    from lexical_hf import evaluation
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    test = lexical_hf.load_benchmark("colors")["test"]
    batch = tokenizer(test["source"], padding=True, return_tensors="pt")
    with torch.no_grad():
        generated = model.generate(**batch, num_beams=2)
    predictions = tokenizer.batch_decode(generated, skip_special_tokens=True)
    assert evaluation.exact_match(predictions, test["target"]) == results["per_seed"]["0"]["test"]["exact_match"]
    assert model.lexicon is not None and model.lexicon.method == "simple"

    # `lexical-hf evaluate` checks the same thing from the folder alone, and notices a metric it cannot reproduce
    from lexical_hf import cli

    assert cli.main(["evaluate", str(tmp_path)]) == 0
    tampered = json.loads((tmp_path / "results.json").read_text())
    tampered["per_seed"]["0"]["test"]["token_accuracy"] += 0.01
    (tmp_path / "results.json").write_text(json.dumps(tampered))
    assert cli.main(["evaluate", str(tmp_path)]) == 1
    tampered["per_seed"]["0"]["test"]["token_accuracy"] = float("nan")  # max(0, nan) is 0: NaN must not pass
    (tmp_path / "results.json").write_text(json.dumps(tampered))
    assert cli.main(["evaluate", str(tmp_path)]) == 1
    assert cli.main(["evaluate", str(tmp_path), "--tolerance", "inf"]) == 1  # no tolerance accepts a NaN
    # bad input is status 2 with one line, never 1 (which means "NOT reproduced")
    assert cli.main(["evaluate", str(tmp_path), "--device", "tpu"]) == 2
    del tampered["per_seed"]
    (tmp_path / "results.json").write_text(json.dumps(tampered))
    assert cli.main(["evaluate", str(tmp_path)]) == 2
    (tmp_path / "results.json").write_text("{")
    assert cli.main(["evaluate", str(tmp_path)]) == 2


def test_evaluate_scores_the_examples_a_truncated_run_scored(tmp_path, capsys):
    """--max_eval_samples N scores the first N test examples; `lexical-hf evaluate` must score the same N."""
    train_in_process(tmp_path, ["--max_steps", "5", "--max_eval_samples", "4"], capsys)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["per_seed"]["0"]["test"]["num_examples"] == 4
    from lexical_hf import cli

    assert cli.main(["evaluate", str(tmp_path)]) == 0


def test_paper_code_source_and_lexicon_options_travel_with_the_published_folder(tmp_path, capsys):
    train_in_process(tmp_path, ["--seeds", "0", "--source_bos", "true", "--lexicon_fallback",
                                "mutual_exclusivity_or_abstain", "--loss_normalization", "sequences"], capsys)
    results = check_output_folder(tmp_path, [0])
    assert results["source_bos"] is True and results["lexicon_fallback"] == "mutual_exclusivity_or_abstain"
    assert json.loads((tmp_path / "config.json").read_text())["loss_normalization"] == "sequences"
    assert json.loads((tmp_path / "lexicon.json").read_text())["fallback"] == "mutual_exclusivity_or_abstain"
    assert json.loads((tmp_path / "generation_config.json").read_text())["suppress_tokens"] == [3]  # <unk>

    import lexical_hf
    from lexical_hf import evaluation
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    assert tokenizer.source_bos and tokenizer(["dax"])["input_ids"][0][0] == tokenizer.bos_token_id
    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    test = lexical_hf.load_benchmark("colors")["test"]
    with torch.no_grad():
        generated = model.generate(**tokenizer(test["source"], padding=True, return_tensors="pt"), num_beams=2)
    predictions = tokenizer.batch_decode(generated, skip_special_tokens=True)
    assert evaluation.exact_match(predictions, test["target"]) == results["per_seed"]["0"]["test"]["exact_match"]


def test_same_seeds_give_the_same_metrics_sequentially_and_in_parallel_processes(tmp_path, capsys):
    train_in_process(tmp_path / "a", ["--seeds", "3-4"], capsys)  # one process, seed after seed
    run([sys.executable], tmp_path / "b", ["--seeds", "3-4", "--parallel_seeds", "2"])
    a = json.loads((tmp_path / "a" / "results.json").read_text())
    b = json.loads((tmp_path / "b" / "results.json").read_text())
    for seed in ("3", "4"):
        assert a["per_seed"][seed]["test"] == b["per_seed"][seed]["test"]
    assert a["summary"] == b["summary"]
    assert (tmp_path / "b" / "model.safetensors").exists()


@pytest.mark.parametrize("backbone", ["lstm", "transformer"])
def test_accelerate_launch_single_process(tmp_path, backbone):
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--cpu", "--num_processes", "1",
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    run(launcher, tmp_path, ["--seeds", "0", "--backbone", backbone])
    check_output_folder(tmp_path, [0])
    assert json.loads((tmp_path / "config.json").read_text())["backbone"] == backbone


def test_accelerate_launch_two_cpu_processes(tmp_path):
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29571"]
    result = run(launcher, tmp_path, ["--seeds", "0", "--use_cpu", "true"])
    check_output_folder(tmp_path, [0])
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["world_size"] == 2, result.stdout[-1000:]
    assert "the effective batch is 2 × 5 × 1" in result.stderr  # the Colors recipe's batch of 5 is per process


@pytest.mark.parametrize("sampling", [["random"], ["group_by_length"],
                                      ["random", "--curriculum_max_source_length", "2", "--curriculum_steps", "25"]])
def test_resume_after_an_interrupted_seed_gives_the_same_result(tmp_path, sampling):
    """A seed stopped after update 20 (mid-epoch: 14 Colors pairs in batches of 5) and resumed ends with the same
    weights and scores as the uninterrupted run, with shuffled and with length-grouped batches, and inside a length
    curriculum."""
    from safetensors.torch import load_file

    common = ["--seeds", "0", "--save_strategy", "steps", "--save_steps", "10", "--train_sampling_strategy", *sampling]
    run([sys.executable], tmp_path / "straight", common)
    interrupted = tmp_path / "resumed"
    run([sys.executable], interrupted, [*common, "--max_steps", "30", "--keep_seed_checkpoints", "true"])
    # simulate a crash while step 30 was being saved: no finished state, and checkpoint-30 without the
    # trainer_state.json that the Trainer writes last (resuming from it used to fail on every later attempt)
    seed_dir = interrupted / "seeds" / "seed-0"
    (seed_dir / "metrics.json").unlink()
    (seed_dir / "checkpoint-30" / "trainer_state.json").unlink()
    resumed = run([sys.executable], interrupted, [*common, "--resume_from_checkpoint", "true"])
    assert "checkpoint-30: no readable trainer_state.json" in resumed.stderr
    assert "resuming from " + str(seed_dir / "checkpoint-20") in resumed.stderr
    a = json.loads((tmp_path / "straight" / "results.json").read_text())["per_seed"]["0"]["test"]
    b = json.loads((interrupted / "results.json").read_text())["per_seed"]["0"]["test"]
    assert a == b
    straight_weights = load_file(tmp_path / "straight" / "model.safetensors")
    resumed_weights = load_file(interrupted / "model.safetensors")
    assert all(torch.equal(straight_weights[name], resumed_weights[name]) for name in straight_weights)


def test_length_grouped_batches_depend_on_the_seed_and_epoch_only():
    """The length-grouped sampler draws each epoch from its own (seed, epoch) generator, never from torch's global
    one (which a resumed run restores only after building the epoch's iterator)."""
    from lexical_hf.training import EpochSeededLengthGroupedSampler as sampler_class
    lengths = [1 + i % 7 for i in range(200)]

    def order(seed, epoch, global_seed):
        torch.manual_seed(global_seed)
        sampler = sampler_class(8, lengths, seed=seed)
        sampler.set_epoch(epoch)
        return list(sampler)

    assert sorted(order(0, 0, 0)) == list(range(200))
    assert order(0, 1, 0) == order(0, 1, 123)  # the global generator does not matter
    assert order(0, 0, 0) != order(0, 1, 0) != order(1, 0, 0)
    assert order(0, 1, 0) != order(1, 0, 0)  # seed 0's second epoch is not seed 1's first


def test_seeds_trained_in_separate_runs_publish_the_first_seeds_weights(tmp_path, capsys):
    """Seeds trained one run at a time into one folder, then aggregated with --resume_from_checkpoint: the folder's
    weights are the first seed's, whichever run finished last."""
    from safetensors.torch import load_file

    train_in_process(tmp_path, ["--seeds", "0"], capsys)
    train_in_process(tmp_path, ["--seeds", "1"], capsys)  # publishes seed 1 at the top level for now
    train_in_process(tmp_path, ["--seeds", "0-1", "--resume_from_checkpoint", "true"], capsys)
    check_output_folder(tmp_path, [0, 1])
    published = load_file(tmp_path / "model.safetensors")
    for seed, same in ((0, True), (1, False)):
        own = load_file(tmp_path / "seeds" / f"seed-{seed}" / "final" / "model.safetensors")
        assert all(torch.equal(published[name], own[name]) for name in own) == same

    # a seed whose weights are gone (a folder from before weights were copied) is an error, not a mismatched folder
    (tmp_path / "seeds" / "seed-1" / "final" / "model.safetensors").unlink()
    status, said = main_in_process([*TINY, "--output_dir", str(tmp_path), "--seeds", "1,0", "--resume_from_checkpoint",
                                    "true"], capsys)
    assert status != 0 and "seed 1's final weights are not in" in said, said[-2000:]
    assert json.loads((tmp_path / "results.json").read_text())["seeds"] == [0, 1]  # the folder was left as it was


def test_a_saved_lexicon_replaces_the_learner_and_travels_with_the_folder(tmp_path, capsys):
    import lexical_hf
    from lexical_hf.lexicon import Lexicon

    learned = lexical_hf.learn_lexicon(lexical_hf.load_benchmark("colors")["train"], method="pmi")
    entries = {**learned.entries, "dax": {"BLUE": 1.0}}  # a dictionary no learner gives: dax → BLUE
    own = Lexicon.from_dict({**learned.to_dict(), "entries": entries, "temperature": 0.5})
    assert own.method == "pmi" and own.fallback == "mutual_exclusivity"
    own.save_pretrained(tmp_path / "own-lexicon")
    tiny = [a for a in TINY if a not in ("--lexicon", "simple")]
    train_in_process(tmp_path / "run", ["--seeds", "0", "--lexicon_path", str(tmp_path / "own-lexicon")], capsys, tiny)
    results = check_output_folder(tmp_path / "run", [0])
    # the saved lexicon stays what it is: its learner's name, its temperature and its fallback (the Colors preset's
    # abstaining fallback and the default temperature 0 used to replace them silently)
    assert results["lexicon_path"] == str(tmp_path / "own-lexicon") and results["lexicon"] == "pmi"
    assert results["lexicon_temperature"] == 0.5 and results["lexicon_fallback"] == "mutual_exclusivity"
    published = Lexicon.from_pretrained(tmp_path / "run")
    assert published.entries == own.entries and published.entries["dax"] == {"BLUE": 1.0}
    assert published.temperature == 0.5 and published.fallback == "mutual_exclusivity"
    assert "lexicon-pmi" in (tmp_path / "run" / "README.md").read_text()
    # --lexicon naming another learner than the saved one is an error, not a mislabelled card
    status, said = main_in_process([*TINY, "--output_dir", str(tmp_path / "mislabelled"), "--lexicon_path",
                                    str(tmp_path / "own-lexicon")], capsys)
    assert status != 0 and "was made by 'pmi'" in said, said[-2000:]


def test_the_row_records_the_ties_its_lexicon_breaks_otherwise_than_by_string():
    from lexical_hf.training.pipeline import tie_break_summary

    from lexical_hf.lexicon import Lexicon

    entries = {"dax": {"RED": 1, "BLUE": 1}, "lug": {"BLUE": 1, "GREEN": 1}, "wif": {"GREEN": 2}}
    summary = tie_break_summary(Lexicon(entries, tie_breaks={"dax": "RED", "lug": "BLUE"}))
    assert summary.startswith("1 inputs: dax→RED (sha256 ")  # lug→BLUE is the string rule's choice as well
    assert tie_break_summary(Lexicon(entries, tie_breaks={"lug": "BLUE"})) is None
    assert tie_break_summary(Lexicon(entries)) is None
    assert tie_break_summary(None) is None


def main_in_process(argv: list[str], capsys, caplog=None) -> tuple[int, str]:
    """`lexical_hf.training.main(argv)` in this process (no interpreter start-up): its exit status and what it said
    on stderr and in its log (with `caplog`), with the message of an exception it raised."""
    import logging

    from lexical_hf.training import main

    if caplog is not None:
        caplog.clear()
        caplog.set_level(logging.INFO)
    status, error_text = 0, ""
    try:
        main(argv)
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else 1
    except Exception as error:  # noqa: BLE001 - what the user would read in the traceback
        status, error_text = 1, f"{type(error).__name__}: {error}"
    said = capsys.readouterr().err + (caplog.text if caplog is not None else "") + error_text
    return status, said


def train_in_process(output_dir: Path, extra, capsys, base=TINY) -> str:
    """A tiny run (`base` + `extra`) by `main` in this process; asserts that it succeeded and returns what it said."""
    status, said = main_in_process([*base, "--output_dir", str(output_dir), *extra], capsys)
    assert status == 0, said[-4000:]
    return said


def test_bad_arguments_fail_clearly(tmp_path, capsys):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    # as a user runs it, once: the script in a fresh interpreter (offline: --push_to_hub is refused before training)
    result = subprocess.run([sys.executable, str(SCRIPT), "--push_to_hub", "true", "--output_dir", str(tmp_path)],
                            capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert result.returncode != 0 and "--push_to_hub with HF_HUB_OFFLINE=1" in result.stderr, result.stderr[-2000:]
    for extra, message in ((["--lexicon", "magic"], "--lexicon must be one of"),
                           (["--lexicon_fallback", "uniform"], "--lexicon_fallback must be"),
                           (["--lexicon", "uniform", "--lexicon_fallback", "mutual_exclusivity_or_abstain"],
                            "fallback is part of its definition"),
                           (["--label_smoothing_factor", "0.1"], "--label_smoothing_factor is not supported"),
                           (["--lexicon", "none", "--learn_lexicon", "true"], "does not go with --lexicon none"),
                           (["--lexicon", "copy", "--lexicon_path", str(tmp_path)], "--lexicon_path replaces the learner"),
                           (["--lexicon_path", str(tmp_path), "--lexicon_tie_break", "string"], "carries its own tie-breaks"),
                           (["--benchmark", "scan", "--train_file", str(tmp_path / "pairs.tsv")], "leave out --benchmark"),
                           (["--model_card_template", str(tmp_path / "missing.md")], "--model_card_template"),
                           (["--max_train_minutes", "0"], "--max_train_minutes must be a positive"),
                           (["--stop_at_train_loss", "nan"], "--stop_at_train_loss must be a positive"),
                           (["--cuda_graphs", "true", "--torch_compile", "true"], "give one"),
                           (["--cuda_graphs", "true", "--backbone", "transformer", "--preset", "cpu"],
                            "--backbone transformer has none"),
                           (["--cuda_graphs", "true", "--gradient_accumulation_steps", "4"],
                            "--cuda_graphs needs --gradient_accumulation_steps 1"),
                           (["--cuda_graphs", "true", "--gradient_accumulation_steps", "1"], "--cuda_graphs needs a CUDA device"),
                           (["--validation_fraction", "1.5"], "--validation_fraction must be in (0, 1)"),
                           (["--train_file", str(tmp_path / "pairs.tsv"), "--validation_file", str(tmp_path / "dev.tsv"),
                             "--validation_fraction", "0.2"], "does not go with --validation_file"),
                           (["--backbone", "transformer", "--preset", "paper"],
                            "--preset for --backbone transformer must be one of ['cpu', 'none']")):
        status, said = main_in_process([*extra, "--output_dir", str(tmp_path)], capsys)
        assert status != 0 and message in said, (extra, said[-2000:])


@pytest.mark.parametrize("preset", ["paper", "cpu"])
def test_colors_with_geca_trains_with_the_recipe_of_the_geca_rows(tmp_path, preset):
    """With --augment geca, Colors takes the GECA reference's recipe (its `+geca` preset entry): the settings the
    Colors GECA rows passed as flags. The lexicon model's Colors recipe diverges on GECA's data."""
    from lexical_hf.training.arguments import parse_arguments

    row = json.loads((REPO / "results" / "colors" / "geca.json").read_text())
    common = ["--benchmark", "colors", "--preset", preset, "--output_dir", str(tmp_path)]
    _, _, model, _, training = parse_arguments([*common, "--augment", "geca"])
    for name in ("learning_rate", "warmup_steps", "max_steps", "per_device_train_batch_size", "max_grad_norm"):
        assert getattr(training, name) == row["training"][name], name
    assert str(getattr(training.lr_scheduler_type, "value", training.lr_scheduler_type)) == row["training"]["lr_scheduler_type"]
    for name in ("embedding_size", "hidden_size", "num_layers", "dropout", "output_dropout", "gate"):
        assert getattr(model, name) == row["model"][name], name
    _, _, model, _, training = parse_arguments(common)  # without GECA: the lexicon model's Colors recipe
    assert (training.per_device_train_batch_size, model.hidden_size) == (5, 512)
    _, _, _, _, training = parse_arguments([*common, "--augment", "geca", "--max_steps", "7"])  # flags still win
    assert training.max_steps == 7


def test_the_paper_recipe_on_scan_divides_the_loss_by_sequences_and_colors_by_tokens(tmp_path):
    """The paper's code sums the NLL over a target and divides by the number of sequences; on SCAN, where its clip of 5
    then cuts gradients about 14 times larger than a per-token mean's, the `paper` preset does the same. Colors keeps
    the per-token mean its 16-seed rows were trained with."""
    from lexical_hf.training.arguments import parse_arguments

    for benchmark, normalization in (("scan", "sequences"), ("colors", None)):
        model = parse_arguments(["--benchmark", benchmark, "--preset", "paper", "--output_dir", str(tmp_path)])[2]
        assert model.loss_normalization == normalization, benchmark
    row = json.loads((REPO / "results" / "colors" / "simple.json").read_text())
    assert row["model"].get("loss_normalization") in (None, "tokens")
    model = parse_arguments(["--benchmark", "scan", "--preset", "paper", "--loss_normalization", "tokens",
                             "--output_dir", str(tmp_path)])[2]
    assert model.loss_normalization == "tokens"  # flags still win


def test_the_paper_recipe_on_scan_normalises_the_output_as_the_papers_code_and_colors_as_the_equations(tmp_path):
    """`--mixture_normalization code --probability_floor 1e-7` give the paper code's output distribution (the one
    difference a weight-mapped check found, results/diagnostics/paper_code_equivalence.md). The `paper` preset uses
    them on SCAN, where they made the recipe's around_right seeds reach the paper's accuracy; Colors keeps the
    equations, with which its 16-seed rows fit. Without a lexicon the preset's floor is left out (there is no
    mixture), a floor given as a flag is refused, and flags still win."""
    from lexical_hf import LexicalTokenizer
    from lexical_hf.training.arguments import parse_arguments
    from lexical_hf.training.pipeline import build_model

    flags = ["--benchmark", "scan", "--preset", "paper", "--output_dir", str(tmp_path)]
    tokenizer = LexicalTokenizer.from_texts(["jump twice", "walk left"], ["I_JUMP I_JUMP", "I_TURN_LEFT I_WALK"])
    data, lexicon, model, *_ = parse_arguments(flags)
    config = build_model(model, lexicon, tokenizer, None).config
    assert (config.mixture_normalization, config.probability_floor) == ("code", 1e-7)
    data, lexicon, model, *_ = parse_arguments(flags + ["--lexicon", "none"])
    config = build_model(model, lexicon, tokenizer, None).config
    assert (config.mixture_normalization, config.probability_floor) == ("code", 0.0)
    for other in (["--benchmark", "colors", "--preset", "paper"], ["--benchmark", "scan", "--preset", "cpu"]):
        model = parse_arguments(other + ["--output_dir", str(tmp_path)])[2]
        assert (model.mixture_normalization, model.probability_floor) == (None, None), other  # the model's defaults
    model = parse_arguments(flags + ["--mixture_normalization", "paper", "--probability_floor", "0"])[2]
    assert (model.mixture_normalization, model.probability_floor) == ("paper", 0.0)
    with pytest.raises(ValueError, match="--probability_floor floors the lexical mixture"):
        parse_arguments(flags + ["--lexicon", "none", "--probability_floor", "1e-7"])


def test_validation_fraction_holds_out_part_of_your_own_train_file(tmp_path):
    """--validation_fraction with --train_file used to be ignored without a word (no validation split at all)."""
    from lexical_hf.training.arguments import parse_arguments
    from lexical_hf.training.pipeline import load_data

    pairs = [(f"w{i} dax", f"W{i} RED") for i in range(20)]
    (tmp_path / "train.tsv").write_text("".join(f"{source}\t{target}\n" for source, target in pairs))
    data_args = parse_arguments(["--train_file", str(tmp_path / "train.tsv"), "--validation_fraction", "0.25",
                                 "--output_dir", str(tmp_path / "out")])[0]
    data = load_data(data_args)
    assert (len(data["train"]), len(data["validation"])) == (15, 5)
    held = list(zip(data["validation"]["source"], data["validation"]["target"]))
    kept = list(zip(data["train"]["source"], data["train"]["target"]))
    assert sorted(held + kept) == sorted(pairs) and not set(held) & set(kept)
    assert kept == [pair for pair in pairs if pair not in held]  # file order kept
    assert load_data(data_args)["validation"]["source"] == data["validation"]["source"]  # seeded


def test_your_own_data_is_not_labelled_or_configured_as_colors(tmp_path):
    """--train_file without --benchmark used to run with Colors' preset (batch 5, 560 updates) and publish a card and
    results.json naming Colors; now it takes the preset's default entry and says the data is the user's."""
    colors = preset_values(["--benchmark", "colors"])
    own = preset_values(["--train_file", "pairs.tsv"])
    assert own == preset_values(["--train_file", "pairs.tsv", "--benchmark", "none"])
    assert own["per_device_train_batch_size"] == preset_entry("paper", "default")["per_device_train_batch_size"]
    assert own["per_device_train_batch_size"] != colors["per_device_train_batch_size"]
    assert preset_values([]) == colors  # no data flags at all: Colors, as documented
    (tmp_path / "train.tsv").write_text("dax lug\tRED BLUE\nlug\tBLUE\ndax\tRED\nlug dax\tBLUE RED\n")
    (tmp_path / "test.tsv").write_text("dax dax\tRED RED\n")
    out = tmp_path / "out"
    tiny_own = [a for a in TINY if a not in ("--benchmark", "colors")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, str(SCRIPT), *tiny_own, "--train_file", str(tmp_path / "train.tsv"),
                             "--test_file", str(tmp_path / "test.tsv"), "--max_steps", "3", "--output_dir", str(out)],
                            capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["benchmark"] is None and results["training"]["per_device_train_batch_size"] == own["per_device_train_batch_size"]
    assert results["data_files"] == {"train": str(tmp_path / "train.tsv"), "test": str(tmp_path / "test.tsv")}
    card = (out / "README.md").read_text()
    assert "User-provided parallel data" in card and "Colors" not in card.split("---")[1]  # metadata names no Colors dataset
    assert json.loads((out / "lexicon.json").read_text())["provenance"]["dataset"] == str(tmp_path / "train.tsv")
    from lexical_hf import cli

    assert cli.main(["evaluate", str(out)]) == 2  # a clear error: evaluate knows only the benchmarks
    assert cli.main(["evaluate", str(tmp_path)]) == 2  # no results.json


def test_transformer_backbone_uses_its_cpu_preset_and_round_trips(tmp_path, capsys):
    train_in_process(tmp_path, ["--seeds", "0", "--backbone", "transformer", "--num_attention_heads", "2",
                                "--position_encoding", "relative", "--relative_attention_max_distance", "3"], capsys)
    results = check_output_folder(tmp_path, [0])
    assert results["preset"] == "cpu"  # the Transformer's default preset (it has no paper recipe)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["backbone"] == "transformer" and config["hidden_size"] == 16  # flags override the preset
    assert config["num_attention_heads"] == 2 and config["relative_attention_max_distance"] == 3
    assert config["num_layers"] == 1 and config["ffn_size"] == 256  # ffn_size comes from the preset

    from transformers import AutoModelForSeq2SeqLM

    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    assert type(model.model.encoder).__name__.startswith("Transformer")


def test_a_config_entry_of_a_preset_overrides_its_benchmark_entry():
    from lexical_hf.training import parse_arguments

    scan = ["--preset", "cpu", "--benchmark", "scan", "--benchmark_config"]
    jump = preset_values([*scan, "addprim_jump"])
    around_right = preset_values([*scan, "template_around_right"])
    assert jump["max_steps"] == preset_entry("cpu", "scan/addprim_jump")["max_steps"] != around_right["max_steps"]
    assert {k: v for k, v in jump.items() if k != "max_steps"} == {k: v for k, v in around_right.items() if k != "max_steps"}
    assert preset_values([*scan[:-1], "--benchmark_config=addprim_jump"])["max_steps"] == jump["max_steps"]
    # a flag on the command line still wins over the preset
    args = parse_arguments([*scan, "addprim_jump", "--max_steps", "7", "--output_dir", "unused"])
    assert args[-1].max_steps == 7


def test_group_by_target_length_groups_batches_by_source_plus_target_length(tmp_path):
    """`--group_by_target_length` groups batches by source + target length, not only by the source as the stock
    Trainer does (on SCAN grouping by the source nearly doubles the padded target positions)."""
    import datasets
    from transformers import Seq2SeqTrainingArguments

    from lexical_hf import training as module

    # every source has 3 tokens, targets have 1 to 8: grouping by the source alone cannot separate them
    targets = [[5] * (1 + i % 8) for i in range(64)]
    train = datasets.Dataset.from_dict({"input_ids": [[4, 4, 4]] * 64, "labels": targets})
    config = LexicalSeq2SeqConfig(source_vocab_size=8, target_vocab_size=8, embedding_size=4, hidden_size=4, num_layers=1)
    args = Seq2SeqTrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=8,
                                    train_sampling_strategy="group_by_length", report_to=[])
    model = LexicalSeq2SeqForConditionalGeneration(config)
    trainer = module.LexicalSeq2SeqTrainer(model=model, args=args, train_dataset=train, group_by_target_length=True)
    stock = module.LexicalSeq2SeqTrainer(model=model, args=args, train_dataset=train)

    def index_sampler(trainer):
        """The sampler inside the Trainer's real train DataLoader (accelerate may wrap it): overriding the private
        `_get_train_sampler` must still be what feeds training, or resumed runs and this flag silently stop working."""
        loader = trainer.get_train_dataloader()
        for candidate in (loader, getattr(loader, "base_dataloader", None)):
            for sampler in (getattr(candidate, "sampler", None), getattr(getattr(candidate, "batch_sampler", None), "sampler", None)):
                if isinstance(sampler, module.EpochSeededLengthGroupedSampler):
                    return sampler
        raise AssertionError(f"no EpochSeededLengthGroupedSampler in {loader!r}")

    def padded_decoder_steps(trainer):
        order = list(index_sampler(trainer))
        assert sorted(order) == list(range(64))
        return sum(max(len(targets[i]) for i in order[k:k + 8]) for k in range(0, 64, 8))

    # sorted mega-batches of 16 put lengths 8..5 and 4..1 in separate batches (≈ 6 steps a batch); grouping by the
    # (constant) source length, as the stock sampler does, sorts nothing, and nearly every batch runs 7–8 steps
    assert padded_decoder_steps(trainer) < padded_decoder_steps(stock) - 8


def test_a_row_records_the_revision_it_was_trained_with_not_the_one_at_its_end(tmp_path, monkeypatch):
    from lexical_hf.training import pipeline, provenance

    trained = []
    run_seed = pipeline.run_seed
    monkeypatch.setattr(pipeline, "run_seed", lambda *args, **kwargs: trained.append(1) or run_seed(*args, **kwargs))
    monkeypatch.setattr(provenance, "source_revision",
                        lambda checkout=None: "commit-after-training" if trained else "commit-before-training")
    pipeline.main([*TINY, "--max_steps", "2", "--output_dir", str(tmp_path / "run")])
    assert trained
    assert json.loads((tmp_path / "run" / "results.json").read_text())["source_revision"] == "commit-before-training"


def test_source_revision_is_dirty_only_when_code_has_uncommitted_changes(tmp_path):
    """Rows trained side by side write results/ while the others run: that must not mark their code dirty."""
    from lexical_hf.training.provenance import source_revision

    git = lambda *args: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                                       check=True, capture_output=True)
    (tmp_path / "results").mkdir()
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "notes.md").write_text("notes\n")
    (tmp_path / "results" / "row.json").write_text("{}\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "start")
    clean = source_revision(tmp_path)
    assert clean and not clean.endswith("-dirty")
    (tmp_path / "results" / "row.json").write_text('{"seeds": [0]}\n')
    (tmp_path / "notes.md").write_text("more notes\n")
    (tmp_path / "untracked.py").write_text("y = 2\n")
    assert source_revision(tmp_path) == clean
    (tmp_path / "code.py").write_text("x = 2\n")
    assert source_revision(tmp_path) == f"{clean}-dirty"
    assert source_revision(tmp_path / "results") == f"{clean}-dirty"  # from a subfolder too


def test_the_recorded_revision_is_of_the_lexical_hf_that_runs(tmp_path, monkeypatch):
    """A lexical_hf installed from a wheel is described by its version, not by a git repository around its
    site-packages."""
    import lexical_hf
    from lexical_hf.training.provenance import code_revision, source_revision

    site = tmp_path / "venv" / "site-packages"
    (site / "lexical_hf").mkdir(parents=True)
    (site / "lexical_hf" / "__init__.py").write_text("")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)  # a project repository around its venv
    checkout = source_revision(REPO)
    assert code_revision() == (checkout or f"lexical_hf {lexical_hf.__version__}")  # this checkout's revision
    monkeypatch.setattr(lexical_hf, "__file__", str(site / "lexical_hf" / "__init__.py"))
    assert code_revision() == f"lexical_hf {lexical_hf.__version__}"
    monkeypatch.setenv("LEXICAL_HF_SOURCE_REVISION", "abc1234")  # a device's copy of the checkout: git is stale there
    assert code_revision() == "abc1234 (stated)"


def test_own_files_are_read_as_pairs_whatever_else_they_hold(tmp_path):
    """COGS-style TSVs carry a third column (the category): pandas' CSV reader made the first column the index and
    trained on (target, category) without a word. Numbers are text, and a line without a tab is a clear error."""
    from lexical_hf.data import load_pairs_file

    (tmp_path / "three.tsv").write_text("a b\tA B\tin_distribution\nb\tB\tprimitive\n\nIN: a OUT: A\n")
    data = load_pairs_file(tmp_path / "three.tsv")
    assert data["source"] == ["a b", "b", "a"] and data["target"] == ["A B", "B", "A"]
    (tmp_path / "numbers.jsonl").write_text('{"source": "one", "target": 1}\n{"source": "two", "target": 2}\n')
    assert load_pairs_file(tmp_path / "numbers.jsonl")["target"] == ["1", "2"]
    (tmp_path / "gap.jsonl").write_text('{"source": "one", "target": "1"}\n{"source": "two"}\n')
    with pytest.raises(ValueError, match="row 2 has no target"):
        load_pairs_file(tmp_path / "gap.jsonl")
    (tmp_path / "bad.tsv").write_text("a\tA\nno tab here\n")
    with pytest.raises(ValueError, match=r"bad.tsv:2: expected 'source<TAB>target'"):
        load_pairs_file(tmp_path / "bad.tsv")
    # a byte-order mark (Windows editors) is not part of the first word
    (tmp_path / "bom.tsv").write_bytes("jump\tI_JUMP\nwalk\tI_WALK\n".encode("utf-8-sig"))
    assert load_pairs_file(tmp_path / "bom.tsv")["source"] == ["jump", "walk"]
    # an empty side, or no pairs at all, is a mistake in the file, not a pair to train on
    for name, text, message in (("nosource.tsv", "a\tA\n\tI_WALK\n", r"nosource.tsv:2: empty source"),
                                ("notarget.tsv", "run\t\na\tA\n", r"notarget.tsv:1: empty target"),
                                ("blank.tsv", "\n\n", r"blank.tsv: no pairs"),
                                ("blank.jsonl", '{"source": "a", "target": " "}\n', r"row 1 has an empty target")):
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=message):
            load_pairs_file(tmp_path / name)


def test_own_data_without_evaluation_files_trains_and_publishes(tmp_path):
    """--validation_file and --test_file are optional: a run with neither used to crash after training."""
    (tmp_path / "train.tsv").write_text("dax lug\tRED BLUE\tx\nlug\tBLUE\tx\ndax\tRED\tx\nlug dax\tBLUE RED\tx\n")
    tiny_own = [a for a in TINY if a not in ("--benchmark", "colors")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, str(SCRIPT), *tiny_own, "--train_file", str(tmp_path / "train.tsv"),
                             "--max_steps", "2", "--output_dir", str(tmp_path / "out")],
                            capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["summary"] == {} and results["example_source"] == "dax lug"
    assert "No split was evaluated" in (tmp_path / "out" / "results.md").read_text()
    tokenizer = LexicalTokenizer.from_pretrained(tmp_path / "out")
    assert "RED" in tokenizer.target_vocab and "x" not in tokenizer.target_vocab  # the third column is not a target


def test_resume_refuses_a_seed_trained_with_other_settings(tmp_path, capsys, caplog):
    """--resume_from_checkpoint used to reuse any finished seed in the folder: seeds of two different runs were
    averaged, and the folder's card and lexicon.json described weights it did not hold."""
    tiny = [*TINY, "--max_steps", "3", "--seeds", "0", "--output_dir", str(tmp_path)]

    def run_with(*extra):
        return main_in_process([*tiny, *extra], capsys, caplog)

    run([sys.executable], tmp_path, ["--max_steps", "3", "--seeds", "0"])  # the first run as a user runs it
    assert json.loads((tmp_path / "seeds" / "seed-0" / "settings.json").read_text())["model"]["hidden_size"] == 16
    for extra, message in ((["--hidden_size", "32"], "model.hidden_size: 16 → 32"),
                           (["--max_eval_samples", "3"], "data.max_eval_samples: None → 3"),
                           (["--learn_lexicon", "true"], "lexicon_use.learn_lexicon: False → True")):
        status, said = run_with(*extra, "--resume_from_checkpoint", "true")
        assert status != 0 and message in said, said[-2000:]
    # a settings.json written before some settings were recorded is checked on those it records
    recorded = json.loads((tmp_path / "seeds" / "seed-0" / "settings.json").read_text())
    del recorded["lexicon_use"], recorded["data"]["max_eval_samples"]
    (tmp_path / "seeds" / "seed-0" / "settings.json").write_text(json.dumps(recorded))
    status, said = run_with("--max_eval_samples", "3", "--resume_from_checkpoint", "true")
    assert status == 0 and "seed 0: already finished" in said, said[-2000:]
    status, said = run_with("--resume_from_checkpoint", "true")
    assert status == 0 and "seed 0: already finished" in said, said[-2000:]
    status, said = run_with("--resume_from_checkpoint", str(tmp_path / "seeds" / "seed-0"))
    assert status != 0 and "takes true or false" in said, said[-2000:]
    status, said = run_with("--resume_from_checkpoint", "false")  # "false" is a string to HfArgumentParser: was truthy
    assert status != 0 and "holds an earlier run of seed 0" in said, said[-2000:]
    status, said = run_with("--resume_from_checkpoint", "false", "--overwrite_output_dir", "true")
    assert status == 0 and "already finished" not in said, said[-2000:]


def run_on_own_files(tmp_path, *flags, with_test=False):
    """`run_lexical.py` on a four-pair train file and a one-pair validation file (and test file) of Colors words,
    at TINY's sizes; `flags` give the steps and the rest. Returns the finished subprocess (exit status checked)."""
    (tmp_path / "train.tsv").write_text("dax lug\tRED BLUE\nlug\tBLUE\ndax\tRED\nlug dax\tBLUE RED\n")
    (tmp_path / "dev.tsv").write_text("dax dax\tRED RED\n")
    files = ["--train_file", str(tmp_path / "train.tsv"), "--validation_file", str(tmp_path / "dev.tsv")]
    if with_test:
        (tmp_path / "test.tsv").write_text("lug lug\tBLUE BLUE\n")
        files += ["--test_file", str(tmp_path / "test.tsv")]
    tiny_own = [a for a in TINY if a not in ("--benchmark", "colors", "--max_steps", "30")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, str(SCRIPT), *tiny_own, *files, *flags], capture_output=True, text=True,
                            env=env, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_validation_selection_keeps_the_users_evaluation_interval(tmp_path):
    """--eval_steps was overwritten by max_steps // 10 whenever a validation split selected the checkpoint."""
    result = run_on_own_files(tmp_path, "--max_steps", "20", "--eval_steps", "5", "--output_dir", str(tmp_path / "out"))
    evaluated = [float(v) for v in re.findall(r"'eval_exact_match': '([0-9.e-]+)'", result.stdout + result.stderr)]
    assert len(evaluated) == 4  # updates 5, 10, 15, 20 (not every 2)
    # the metrics say which checkpoint was evaluated on test: the first with the best validation exact match
    selected = json.loads((tmp_path / "out" / "seeds" / "seed-0" / "metrics.json").read_text())["selected_checkpoint"]
    assert selected["update"] == 5 * (evaluated.index(max(evaluated)) + 1)
    assert selected["validation_exact_match"] == pytest.approx(max(evaluated), abs=1e-4)  # the log rounds it


def test_a_wall_clock_limit_ends_training_in_an_evaluated_and_recorded_seed(tmp_path):
    """--max_train_minutes stops each seed after the update in flight; the weights reached are evaluated on
    validation and saved (a selection candidate even between periodic evaluations), the test split is scored, and
    metrics.json and results.json say how many updates were done."""
    out = tmp_path / "out"
    result = run_on_own_files(tmp_path, "--max_steps", "1000000", "--eval_steps", "1000000", "--max_train_minutes",
                              "0.02", "--keep_seed_checkpoints", "true", "--output_dir", str(out), with_test=True)
    metrics = json.loads((out / "seeds" / "seed-0" / "metrics.json").read_text())
    training = metrics["train_seconds"]
    assert training["stopped_by_time_limit"] is True and 0 < training["updates"] < 1000000
    assert training["stopped_by_request"] is False  # no STOP file
    # never before the 1.2-s limit; well before the 10^6 updates (and the subprocess timeout) it replaced
    assert 1.2 <= training["value"] < 30
    assert "exact_match" in metrics["test"]
    # the one evaluation is the stop's own (the periodic interval was never reached), saved as a checkpoint
    assert (result.stdout + result.stderr).count("'eval_exact_match'") == 1
    assert (out / "seeds" / "seed-0" / f"checkpoint-{training['updates']}").is_dir()
    results = json.loads((out / "results.json").read_text())
    assert results["train_updates"] == {"min": training["updates"], "max": training["updates"]}
    assert results["settings"]["max_train_minutes"] == 0.02


def test_a_stop_file_ends_a_seed_at_the_next_logging_step_evaluated_and_recorded(tmp_path):
    """`touch seeds/seed-K/STOP` stops that seed at the next logged update as if its cap were there: evaluated, saved
    and tested, `stopped_by_request` in its metrics, the file removed so that a resume is not stopped again."""
    out = tmp_path / "out"
    stop = out / "seeds" / "seed-0" / "STOP"
    stop.parent.mkdir(parents=True)
    stop.touch()  # asked before the first update: honoured at the first logging step
    result = run_on_own_files(tmp_path, "--max_steps", "12", "--eval_steps", "1000", "--logging_steps", "4",
                              "--keep_seed_checkpoints", "true", "--output_dir", str(out), with_test=True)
    metrics = json.loads((out / "seeds" / "seed-0" / "metrics.json").read_text())
    training = metrics["train_seconds"]
    assert training["stopped_by_request"] is True and training["updates"] == 4
    assert training["stopped_by_time_limit"] is False
    assert "exact_match" in metrics["test"]
    assert (result.stdout + result.stderr).count("'eval_exact_match'") == 1  # the stop's own evaluation
    assert (out / "seeds" / "seed-0" / "checkpoint-4").is_dir()
    assert not stop.exists()
    assert json.loads((out / "results.json").read_text())["train_updates"] == {"min": 4, "max": 4}


def test_a_training_loss_target_ends_training_at_the_first_logged_loss_below_it(tmp_path):
    """--stop_at_train_loss ends a seed at the first logged training loss at or below the target (max_steps is only
    the cap); that update is evaluated and saved, and metrics.json, results.json and the settings say what happened.
    A target the loss never reaches leaves the run to max_steps."""
    for target, out in (("1000", tmp_path / "reached"), ("1e-9", tmp_path / "never")):
        result = run_on_own_files(tmp_path, "--max_steps", "12", "--eval_steps", "1000", "--logging_steps", "4",
                                  "--stop_at_train_loss", target, "--keep_seed_checkpoints", "true",
                                  "--output_dir", str(out))
        metrics = json.loads((out / "seeds" / "seed-0" / "metrics.json").read_text())
        training = metrics["train_seconds"]
        results = json.loads((out / "results.json").read_text())
        assert results["settings"]["stop_at_train_loss"] == float(target)
        # the loss a pick by training perplexity compares: the last one logged, at the last update
        last = [entry for entry in json.loads((out / "seeds" / "seed-0" / "log_history.json").read_text())
                if "loss" in entry][-1]
        assert metrics["train_loss"] == {"last_logged": last["loss"], "update": training["updates"], "window": 4}
        assert "train_loss" not in results["summary"]
        if target == "1000":  # the first log (update 4) is below it: stopped there, evaluated once and saved
            assert training["stopped_by_train_loss"] is True and training["updates"] == 4
            assert (result.stdout + result.stderr).count("'eval_exact_match'") == 1
            assert (out / "seeds" / "seed-0" / "checkpoint-4").is_dir()
        else:
            assert training["stopped_by_train_loss"] is False and training["updates"] == 12
        assert results["train_updates"] == {"min": training["updates"], "max": training["updates"]}


def test_a_checkpoint_is_the_end_of_training_at_max_steps_or_at_the_loss_target(tmp_path):
    """--resume_from_checkpoint reads a seed whose last checkpoint ended training instead of training it further: the
    checkpoint of the max_steps-th update, or with --stop_at_train_loss one whose last logged loss reached the target."""
    from types import SimpleNamespace

    from lexical_hf.training.seeds import finished_training

    def checkpoint(step, losses):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        log = [{"loss": loss, "step": 100 * (k + 1)} for k, loss in enumerate(losses)] + [{"eval_loss": 0.5}]
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": log}))
        return str(folder)

    args = SimpleNamespace(max_steps=6000)
    assert finished_training(checkpoint(6000, [2.0, 1.0]), args)
    converged = checkpoint(300, [2.0, 0.1, 0.0009])
    assert finished_training(converged, args, stop_at_train_loss=0.001)
    assert not finished_training(converged, args)  # without the target it is a checkpoint on the way
    assert not finished_training(checkpoint(200, [2.0, 0.1]), args, stop_at_train_loss=0.001)
    assert not finished_training(checkpoint(100, []), args, stop_at_train_loss=0.001)


def test_validation_exact_match_never_counts_a_reference_with_an_unknown_word():
    from lexical_hf.training.trainer import validation_exact_match

    """Checkpoint selection decodes the label ids; a target word outside the vocabulary is <unk> there, and dropping it
    would let a prediction without the word match (the test evaluation, on strings, says it does not)."""
    from lexical_hf import LexicalTokenizer, evaluation

    tokenizer = LexicalTokenizer.from_texts(["walk", "jump"], ["I_WALK", "I_JUMP"])
    targets = ["I_FLY I_WALK", "I_JUMP"]  # I_FLY is not in the target vocabulary
    labels = tokenizer(["fly walk", "jump"], text_target=targets)["labels"]
    width = max(map(len, labels))
    label_ids = np.array([row + [-100] * (width - len(row)) for row in labels])
    t = tokenizer.target_vocab
    predicted = np.array([[1, t["I_WALK"], 2, 0], [1, t["I_JUMP"], 2, 0]])
    predictions = tokenizer.batch_decode(predicted, skip_special_tokens=True)
    assert validation_exact_match(tokenizer, predicted, label_ids) == 0.5
    assert evaluation.exact_match(predictions, targets) == 0.5


def test_cli_arguments_are_checked_before_any_work(tmp_path, capsys, monkeypatch):
    from lexical_hf import cli

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("dax\tRED\nlug\tBLUE\n")
    for argv in (["evaluate", str(tmp_path), "--batch-size", "0"], ["evaluate", str(tmp_path), "--tolerance", "-1"],
                 ["lexicon", "--data-file", str(pairs), "--top-k", "0"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        assert exit_info.value.code == 2
    assert cli.main(["lexicon", "--data-file", str(pairs), "--method", "simple,pmi", "--param", "epsilonn=1"]) == 2
    assert "taken by none of simple, pmi" in capsys.readouterr().err  # with several methods it was dropped silently
    assert cli.main(["lexicon", "--data-file", str(pairs), "--param", "seed=5"]) == 2
    assert "use --seed" in capsys.readouterr().err
    assert cli.main(["lexicon", "--data-file", str(pairs), "--source-column", "src"]) == 2
    assert "apply to --dataset" in capsys.readouterr().err
    assert cli.main(["lexicon", "--data-file", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert cli.main(["lexicon", "--data-file", str(pairs), "--markdown", str(tmp_path)]) == 2  # IsADirectoryError
    import huggingface_hub

    def unreachable(repo_id, **kwargs):  # what the Hub answers here (no network); the test stays off the network
        raise huggingface_hub.errors.LocalEntryNotFoundError(f"cannot reach the Hub for {repo_id}")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", unreachable)
    assert cli.main(["evaluate", "outputs/no-such-folder"]) == 2  # a typo reads like a repo id: both are named
    assert "outputs/no-such-folder: no such local folder, and as a Hub repo id" in capsys.readouterr().err


def test_a_run_without_a_lexicon_leaves_no_earlier_lexicon_in_the_folder(tmp_path, capsys):
    """A folder reused by a run with --lexicon none kept the earlier run's lexicon.json, which push_to_hub uploaded
    and Lexicon.from_pretrained read as this model's."""
    train_in_process(tmp_path, ["--seeds", "0", "--max_steps", "3"], capsys)
    assert (tmp_path / "lexicon.json").is_file()
    train_in_process(tmp_path, ["--seeds", "0", "--max_steps", "3", "--lexicon", "none", "--overwrite_output_dir", "true"],
                     capsys)
    assert json.loads((tmp_path / "results.json").read_text())["lexicon"] == "none"
    assert not (tmp_path / "lexicon.json").exists()
    assert not list(tmp_path.glob(".*.partial"))  # the atomic writes leave nothing behind


def test_monitored_splits_are_decoded_during_training_into_the_log_history(tmp_path):
    """--monitor_splits test decodes the test split every --monitor_steps updates and after the last, into the log
    history; with the final weights selected, the last monitored score is the seed's test score. A split the data
    lacks, or an interval without splits, is refused before training."""
    for name, text in (("train", "dax lug\tRED BLUE\nlug\tBLUE\ndax\tRED\nlug dax\tBLUE RED\n"),
                       ("dev", "dax dax\tRED RED\n"), ("test", "lug lug\tBLUE BLUE\nlug dax dax\tBLUE RED RED\n")):
        (tmp_path / f"{name}.tsv").write_text(text)
    tiny_own = [a for a in TINY if a not in ("--benchmark", "colors", "--max_steps", "30")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}

    def run(*extra, out="out"):
        return subprocess.run([sys.executable, str(SCRIPT), *tiny_own, "--train_file", str(tmp_path / "train.tsv"),
                               "--validation_file", str(tmp_path / "dev.tsv"), "--test_file", str(tmp_path / "test.tsv"),
                               "--max_steps", "12", "--selection", "final", "--save_strategy", "steps", "--save_steps", "12",
                               "--keep_seed_checkpoints", "true", "--output_dir", str(tmp_path / out), *extra],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=600)

    result = run("--monitor_splits", "test", "--monitor_steps", "5")
    assert result.returncode == 0, result.stderr[-3000:]
    seed = tmp_path / "out" / "seeds" / "seed-0"
    history = json.loads((seed / "checkpoint-12" / "trainer_state.json").read_text())["log_history"]
    monitored = [entry for entry in history if "test_exact_match" in entry]
    assert [entry["step"] for entry in monitored] == [5, 10, 12]
    assert all(0.0 <= entry["test_token_accuracy"] <= 1.0 for entry in monitored)
    test = json.loads((seed / "metrics.json").read_text())["test"]
    assert monitored[-1]["test_exact_match"] == test["exact_match"]
    assert monitored[-1]["test_token_accuracy"] == test["token_accuracy"]
    for extra, said in ((["--monitor_splits", "gen"], "has the splits"), (["--monitor_steps", "5"], "--monitor_splits")):
        result = run(*extra, out="refused")
        assert result.returncode != 0 and said in result.stderr, result.stderr[-2000:]
