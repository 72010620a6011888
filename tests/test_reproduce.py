"""benchmarks/reproduce.py: the row table beside the paper's numbers (the training itself is run_lexical, tested
in test_run_lexical.py)."""

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def reproduce(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("reproduce", REPO / "benchmarks" / "reproduce.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    return module


def fake_results(values, preset="paper", metric="exact_match"):
    return {
        "seeds": list(range(len(values))), "preset": preset, "machine": "test machine; details",
        "per_seed": {str(k): {"test": {metric: v}, "train_seconds": {"value": 60.0}} for k, v in enumerate(values)},
        "summary": {"test": {}},
    }


def test_summary_puts_ours_beside_the_paper_and_marks_rows_not_run(reproduce, tmp_path):
    (tmp_path / "colors").mkdir()
    (tmp_path / "colors" / "simple.json").write_text(json.dumps(fake_results([0.8, 0.6, 0.7, 0.9])))
    text = reproduce.summarize()
    assert (tmp_path / "README.md").read_text() == text
    row = next(line for line in text.splitlines() if line.startswith("| + Lex: Simple |"))
    # mean 0.75, population std 0.1118 → "0.75 ± 0.11"; the paper's 0.79 ± 0.02; 4 seeds; 4 minutes of training
    assert "[0.75 ± 0.11](colors/simple.json)" in row and "| 0.79 ± 0.02 |" in row
    assert "| 4 (0–3) |" in row and "| 4 min |" in row and "`paper`" in row
    assert "| LSTM | not run | 0.00 ± 0.00 |" in text
    assert (tmp_path / "colors" / "seeds.png").stat().st_size > 0
    assert row.endswith("| before d8e876d |")  # a row file without source_revision predates the field

    (tmp_path / "colors" / "simple.json").write_text(json.dumps({**fake_results([0.8]), "source_revision": "abc1234-dirty"}))
    row = next(line for line in reproduce.summarize().splitlines() if line.startswith("| + Lex: Simple |"))
    assert row.endswith("| `abc1234-dirty` |")


def test_geca_rows_say_how_they_mixed_and_stand_beside_both_reference_protocols(reproduce, tmp_path):
    geca = {"method": "geca", "preset": "scan", "params": {}, "mixing": "ratio", "aug_ratio": 0.3}
    (tmp_path / "scan-jump").mkdir()
    (tmp_path / "scan-jump" / "geca.json").write_text(json.dumps({**fake_results([1.0, 0.8]), "augmentation": geca}))
    (tmp_path / "scan-jump" / "simple.json").write_text(json.dumps(fake_results([0.5])))
    (tmp_path / "cogs").mkdir()
    concatenated = {**geca, "preset": "cogs", "mixing": "concatenate"}
    (tmp_path / "cogs" / "geca-simple.json").write_text(json.dumps({**fake_results([0.4]), "augmentation": concatenated}))
    text = reproduce.summarize()
    jump = text[text.index("## SCAN addprim_jump"):text.index("## SCAN template_around_right")]
    assert "| LSTM + GECA | [0.90 ± 0.10](scan-jump/geca.json) | 1.00 ± 0.00 |" in jump  # the lexicon paper's number
    note = next(line for line in jump.splitlines() if line.startswith("GECA rows (composed"))
    assert "LSTM + GECA: each training example drawn from the composed pairs with probability 0.3." in note
    assert "GECA's own paper reports 0.87 ± 0.06" in note and "Lex: Simple:" not in note  # only GECA rows
    around_right = text[text.index("## SCAN template_around_right"):text.index("## COGS")]
    assert "GECA rows (composed" not in around_right  # no GECA row there
    cogs = text[text.index("## COGS"):text.index("## English")]
    assert "+ Lex: Simple + GECA: the composed pairs added to the training data." in cogs
    assert "GECA's own paper" not in cogs  # it has no COGS number


def test_rows_appear_in_the_papers_order_not_the_file_names_order(reproduce, tmp_path):
    (tmp_path / "colors").mkdir()
    for row in ("bayesian", "ibm2", "lstm", "pmi", "simple"):
        (tmp_path / "colors" / f"{row}.json").write_text(json.dumps(fake_results([0.5])))
    (tmp_path / "colors" / "simple.paper.json").write_text(json.dumps(fake_results([0.5])))
    labels = [line.split(" | ")[0][2:] for line in reproduce.summarize().splitlines()
              if line.startswith("| ") and "](colors/" in line]
    assert labels == ["LSTM", "+ Lex: Simple", "+ Lex: Simple (paper tier)", "+ Lex: PMI", "+ Lex: IBM Model 2",
                      "+ Lex: Bayesian"]


def test_the_diagonal_prior_ibm2_row_stands_beside_the_papers_ibm2_number(reproduce, tmp_path):
    assert "--lexicon_params" not in reproduce.ROWS["ibm2-prior"][1]  # the learner's default: the paper's prior
    (tmp_path / "scan-around-right").mkdir()
    (tmp_path / "scan-around-right" / "ibm2-prior.json").write_text(json.dumps(fake_results([0.0, 0.1])))
    text = reproduce.summarize()
    row = next(line for line in text.splitlines() if "(scan-around-right/ibm2-prior.json)" in line)
    assert row.startswith("| + Lex: IBM Model 2, diagonal prior | [0.05 ± 0.05]") and "| 0.00 ± 0.00 |" in row
    assert "| + Lex: IBM Model 2 | not run | 0.00 ± 0.00 |" in text  # the code-variant row is still its own row


def test_row_files_keep_cpu_and_paper_tiers_apart(reproduce, tmp_path):
    assert reproduce.row_file("scan-jump", "simple", "cpu") == tmp_path / "scan-jump" / "simple.json"
    assert reproduce.row_file("scan-jump", "simple", "paper") == tmp_path / "scan-jump" / "simple.paper.json"
    assert reproduce.row_file("colors", "simple", "paper") == tmp_path / "colors" / "simple.json"  # one recipe


def cpu_row(per_seed_metrics, max_steps=800):
    return {
        "seeds": list(range(len(per_seed_metrics))), "preset": "cpu", "machine": "test machine", "selection": "final",
        "model": {"backbone": "lstm", "num_layers": 2, "hidden_size": 256, "embedding_size": 128, "dropout": 0.25},
        "training": {"per_device_train_batch_size": 64, "gradient_accumulation_steps": 1, "max_steps": max_steps,
                     "learning_rate": 2e-3, "train_sampling_strategy": "group_by_length"},
        "per_seed": {str(k): {**m, "train_seconds": {"value": 60.0}} for k, m in enumerate(per_seed_metrics)},
        "summary": {split: {} for split in per_seed_metrics[0]},
    }


def test_extend_ignores_a_time_limit_that_stopped_no_seed(reproduce):
    def row(seed, minutes, stopped):
        result = cpu_row([{"test": {"exact_match": 0.5}}])
        result["per_seed"] = {str(seed): {**result["per_seed"]["0"],
                                          "train_seconds": {"value": 60.0, "stopped_by_time_limit": stopped}}}
        result.update(seeds=[seed], settings={"training": {"max_steps": 800}, "max_train_minutes": minutes})
        return result

    assert reproduce.extend_row(row(0, 10.65, False), row(1, 5.55, False))["seeds"] == [0, 1]
    with pytest.raises(ValueError, match="other settings.*max_train_minutes"):
        reproduce.extend_row(row(0, 10.65, False), row(1, 5.55, True))
    with pytest.raises(ValueError, match="other settings.*max_train_minutes"):
        reproduce.extend_row(row(0, 10.65, True), row(1, 5.55, False))
    assert reproduce.extend_row(row(0, 5.0, True), row(1, 5.0, True))["seeds"] == [0, 1]


def test_translation_rows_report_both_bleu_protocols_and_the_sacrebleu_signature(reproduce, tmp_path):
    def seed(full, one_shot, sacre):
        return {"test": {"bleu_paper": {"score": full, "bp": 1.0}, "bleu_paper_one_shot": {"score": one_shot},
                         "sacrebleu": {"score": sacre, "signature": "nrefs:1|tok:zh|v:2"}}}

    (tmp_path / "mt").mkdir()
    (tmp_path / "mt" / "ibm2.json").write_text(json.dumps(cpu_row([seed(20.0, 14.0, 18.0), seed(22.0, 16.0, 20.0)])))
    text = reproduce.summarize()
    row = next(line for line in text.splitlines() if "(mt/ibm2.json)" in line)
    assert "| + Lex: IBM Model 2 | [21.00 ± 1.00](mt/ibm2.json) | 25.49 | 15.00 ± 1.00 | 19.62 | 19.00 ± 1.00 | 2 (0–1) |" in row
    assert "nrefs:1|tok:zh|v:2" in text
    assert "800 updates" in text and "final weights" in text and "(grouped by source length)" in text

    # a row that runs another recipe for one of the paper's rows stands beside that row's numbers in both columns
    (tmp_path / "mt" / "ibm2-prior.json").write_text(json.dumps(cpu_row([seed(20.0, 14.0, 18.0)])))
    row = next(line for line in reproduce.summarize().splitlines() if "(mt/ibm2-prior.json)" in line)
    assert "| [20.00 ± 0.00](mt/ibm2-prior.json) | 25.49 | 14.00 ± 0.00 | 19.62 |" in row


def test_cogs_test_numbers_are_never_presented_as_the_papers_gen_numbers(reproduce, tmp_path):
    (tmp_path / "cogs").mkdir()
    (tmp_path / "cogs" / "simple.json").write_text(json.dumps(cpu_row([{"test": {"exact_match": 0.9}}])))
    text = reproduce.summarize()
    assert "Not comparable with the paper's column" in text and "*test*" in text
    # with gen evaluated, gen is the reported split and the warning goes away
    (tmp_path / "cogs" / "simple.json").write_text(json.dumps(
        cpu_row([{"test": {"exact_match": 0.9}, "gen": {"exact_match": 0.7}}])))
    text = reproduce.summarize()
    assert "[0.70 ± 0.00](cogs/simple.json)" in text and "Not comparable" not in text


def test_extend_adds_new_seeds_to_a_row_and_refuses_other_settings_or_repeated_seeds(reproduce):
    earlier = cpu_row([{"test": {"exact_match": 0.2}}, {"test": {"exact_match": 0.4}}])
    earlier["command"] = "run seeds 0-1"
    later = cpu_row([{"test": {"exact_match": 0.6}}, {"test": {"exact_match": 0.8}}])
    later["per_seed"] = {"2": later["per_seed"]["0"], "3": later["per_seed"]["1"]}
    later.update(seeds=[2, 3], command="run seeds 2-3", machine="another machine")
    merged = reproduce.extend_row(earlier, later)
    assert merged["seeds"] == [0, 1, 2, 3] and list(merged["per_seed"]) == ["0", "1", "2", "3"]
    assert merged["summary"]["test"]["exact_match"]["mean"] == pytest.approx(0.5)
    assert merged["summary"]["test"]["exact_match"]["n"] == 4
    assert merged["train_seconds"]["total"] == pytest.approx(240.0)
    assert [run["command"] for run in merged["runs"]] == ["run seeds 0-1", "run seeds 2-3"]
    assert merged["machine"] == "test machine | another machine"
    with pytest.raises(ValueError, match="already in the row file"):
        reproduce.extend_row(earlier, earlier)
    with pytest.raises(ValueError, match="other settings.*training"):
        reproduce.extend_row(earlier, {**later, "training": {**later["training"], "max_steps": 1600}})
    # rows written before the lexicon fallback and the source <s> were recorded used the defaults
    simple_earlier, simple_later = {**earlier, "lexicon": "simple"}, {**later, "lexicon": "simple"}
    recorded = {**simple_later, "lexicon_fallback": "mutual_exclusivity", "source_bos": False}
    assert reproduce.extend_row(simple_earlier, recorded)["seeds"] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="other settings.*lexicon_fallback"):
        reproduce.extend_row(simple_earlier, {**recorded, "lexicon_fallback": "mutual_exclusivity_or_abstain"})
    with pytest.raises(ValueError, match="other settings.*source_bos"):
        reproduce.extend_row(simple_earlier, {**recorded, "source_bos": True})
    # seeds trained on differently grouped batches are another row
    assert reproduce.extend_row(simple_earlier, {**recorded, "group_by_target_length": False})["seeds"] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="other settings.*group_by_target_length"):
        reproduce.extend_row(simple_earlier, {**recorded, "group_by_target_length": True})
    # rows written before tie-breaks were recorded broke ties by string, which a recorded None says too
    assert reproduce.extend_row(simple_earlier, {**recorded, "lexicon_tie_breaks": None})["seeds"] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="other settings.*lexicon_tie_breaks"):
        reproduce.extend_row(simple_earlier, {**recorded, "lexicon_tie_breaks": "1 inputs: left→I_TURN_LEFT (sha256 0)"})
    # a model argument added later (None: the preset's or the config's default) is the same row; set, it is not
    newer = {**recorded, "model": {**recorded["model"], "loss_normalization": None}}
    assert reproduce.extend_row(simple_earlier, newer)["seeds"] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="other settings.*model"):
        reproduce.extend_row(simple_earlier, {**recorded, "model": {**recorded["model"], "loss_normalization": "sequences"}})


def test_rerun_replaces_a_seeds_entry_and_keeps_the_replaced_one_with_its_reason_and_run(reproduce):
    earlier = cpu_row([{"test": {"exact_match": 0.2}}, {"test": {"exact_match": 0.4}}, {"test": {"exact_match": 0.0}}])
    earlier.update(command="run seeds 0-2", source_revision="aaaaaaa")
    again = cpu_row([{"test": {"exact_match": 0.9}}])
    again["per_seed"] = {"2": again["per_seed"]["0"]}
    again.update(seeds=[2], command="run seed 2", machine="another machine", source_revision="bbbbbbb")
    merged = reproduce.rerun_row(earlier, again, "stopped by hand at 1,000 updates")
    assert merged["seeds"] == [0, 1, 2] and merged["per_seed"]["2"]["test"]["exact_match"] == 0.9
    assert merged["summary"]["test"]["exact_match"]["mean"] == pytest.approx(0.5)
    assert merged["superseded_seeds"]["2"] == {**earlier["per_seed"]["2"], "why": "stopped by hand at 1,000 updates",
                                               "command": "run seeds 0-2", "machine": "test machine",
                                               "source_revision": "aaaaaaa"}
    assert [(run["command"], run["seeds"]) for run in merged["runs"]] == [("run seeds 0-2", [0, 1]), ("run seed 2", [2])]
    assert merged["source_revision"] == "aaaaaaa | bbbbbbb"
    # a later --extend keeps the replaced entries (it used to drop every key the new run did not have)
    later = cpu_row([{"test": {"exact_match": 1.0}}])
    later["per_seed"] = {"3": later["per_seed"]["0"]}
    later.update(seeds=[3], command="run seed 3")
    extended = reproduce.extend_row(merged, later)
    assert extended["seeds"] == [0, 1, 2, 3] and extended["superseded_seeds"] == merged["superseded_seeds"]
    with pytest.raises(ValueError, match=r"seeds \[2\] were run again before"):
        reproduce.rerun_row(extended, again, "once more")
    with pytest.raises(ValueError, match=r"seeds \[5\] are not in the row file"):
        reproduce.rerun_row(earlier, {**again, "per_seed": {"5": again["per_seed"]["2"]}}, "why")
    with pytest.raises(ValueError, match="say why"):
        reproduce.rerun_row(earlier, again, " ")
    with pytest.raises(ValueError, match="--rerun: the existing row file was run with other settings.*training"):
        reproduce.rerun_row(earlier, {**again, "training": {**again["training"], "max_steps": 1600}}, "why")
    # every seed run again: the new run is the whole row, the earlier entries all kept
    whole = cpu_row([{"test": {"exact_match": 0.7}}])
    whole.update(command="run seed 0 again", source_revision="ccccccc")
    alone = reproduce.rerun_row({**earlier, "per_seed": {"0": earlier["per_seed"]["0"]}, "seeds": [0]}, whole, "why")
    assert alone["seeds"] == [0] and [run["command"] for run in alone["runs"]] == ["run seed 0 again"]
    assert alone["source_revision"] == "ccccccc" and alone["superseded_seeds"]["0"]["command"] == "run seeds 0-2"


def test_the_reduced_note_says_how_batches_were_grouped(reproduce):
    row = cpu_row([{"test": {"exact_match": 0.5}}])
    assert "batch 64 (grouped by source length)" in reproduce.reduced_note(row)
    assert "batch 64 (grouped by source + target length)" in reproduce.reduced_note({**row, "group_by_target_length": True})
    random_batches = {**row, "training": {**row["training"], "train_sampling_strategy": "random"}}
    assert "batch 64," in reproduce.reduced_note(random_batches)


def test_the_reduced_note_names_the_output_layer_only_where_the_paper_preset_uses_the_codes(reproduce):
    row = cpu_row([{"test": {"exact_match": 0.5}}])
    scan = reproduce.reduced_note({**row, "benchmark": "scan", "benchmark_config": "addprim_jump"})
    assert "the equations' output layer where `paper` uses the code's (`mixture_normalization`" in scan
    for benchmark in ("cogs", None):  # the paper preset of COGS keeps the equations; a row without its benchmark
        assert "output layer" not in reproduce.reduced_note({**row, "benchmark": benchmark}), benchmark


def test_a_syntactic_attention_rows_reduced_note_compares_it_with_its_own_paper_preset(reproduce):
    row = cpu_row([{"test": {"exact_match": 0.5}}])
    row = {**row, "model": {**row["model"], "backbone": "syntactic_attention", "hidden_size": 100, "num_layers": 1},
           "training": {**row["training"], "lr_scheduler_type": "constant", "learning_rate": 0.003}}
    note = reproduce.reduced_note(row)
    assert "biLSTM 1 × 100 per direction" in note and "a constant learning rate of 0.003" in note
    assert "6,250 updates" in note and reproduce.PAPER_RECIPE not in note and "decoder details" not in note


def test_publish_rebuilds_the_rows_folder_and_checks_it_against_the_row(reproduce, tmp_path, capsys, monkeypatch):
    """A fresh clone has the row files but not the Hub-ready folders: `--publish` trains the row's first seed again
    from the recorded command, leaves the row file alone, and fails when the metrics differ from the row's."""
    import os
    import subprocess
    import sys

    (tmp_path / "train.tsv").write_text("dax lug\tRED BLUE\nlug\tBLUE\ndax\tRED\nlug dax\tBLUE RED\n")
    (tmp_path / "test.tsv").write_text("dax dax\tRED RED\nlug lug\tBLUE BLUE\n")
    row_run = tmp_path / "row-run"
    command = [sys.executable, str(REPO / "examples" / "run_lexical.py"), "--lexicon", "simple", "--embedding_size", "8",
               "--hidden_size", "8", "--num_layers", "1", "--max_steps", "3", "--disable_tqdm", "true",
               "--train_file", str(tmp_path / "train.tsv"), "--test_file", str(tmp_path / "test.tsv"),
               "--seeds", "3", "--output_dir", str(row_run)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    subprocess.run(command, check=True, capture_output=True, env=env, cwd=REPO, timeout=600)
    row = json.loads((row_run / "results.json").read_text())
    row["command"] = row["command"] + " --resume_from_checkpoint true --parallel_seeds 2"  # as aggregated rows record
    row_path = tmp_path / "colors" / "simple.json"
    row_path.parent.mkdir()
    row_path.write_text(json.dumps(row))
    published = tmp_path / "published"
    argv = ["--task", "colors", "--row", "simple", "--publish", "--output_root", str(published)]

    assert row["machine"].startswith("CPU (") and "1 torch thread(s) per run" in row["machine"]
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # the caller's threads: the seed trains with the row's one thread
    assert reproduce.main(argv) == 0
    folder = published / "lexical-colors-simple"
    assert (folder / "model.safetensors").is_file() and json.loads((folder / "results.json").read_text())["seeds"] == [3]
    assert "1 torch thread(s) per run" in json.loads((folder / "results.json").read_text())["machine"]
    assert reproduce.recorded_threads("NVIDIA H100 80GB HBM3; Linux; torch 2.11") is None
    assert reproduce.recorded_threads("CPU (16 cores, 8 torch thread(s) per run, 2 seeds at a time); x | CPU (2 cores, "
                                      "1 torch thread(s) per run); y") == 8
    assert "reproduced: largest difference 0.00e+00" in capsys.readouterr().out
    assert json.loads(row_path.read_text()) == row  # the row file is not rewritten

    row["per_seed"]["3"]["test"]["token_accuracy"] += 0.25
    row_path.write_text(json.dumps(row))
    assert reproduce.main(argv) == 1
    assert "NOT reproduced" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        reproduce.main([*argv, "--seeds", "0"])


def test_publish_counts_a_nan_metric_as_a_difference(reproduce, capsys):
    recorded = {"test": {"exact_match": 0.5, "token_accuracy": 0.9}, "train_seconds": {"value": 1.0}}
    assert reproduce.largest_difference(recorded, {"test": {"exact_match": 0.5, "token_accuracy": 0.9}}, 0.0) == 0.0
    for measured in ({"test": {"exact_match": 0.5, "token_accuracy": float("nan")}}, {"test": {"exact_match": 0.5}}, {}):
        assert reproduce.largest_difference(recorded, measured, 0.0) == float("inf")
    assert "<-- differs" in capsys.readouterr().out


def tiny_colors_row(reproduce, tmp_path, monkeypatch):
    """A Colors row of four training pairs and a model of width 8 trained 3 updates: (row arguments, model
    arguments, output root) for `reproduce.main`."""
    (tmp_path / "train.tsv").write_text("dax lug\tRED BLUE\nlug\tBLUE\ndax\tRED\nlug dax\tBLUE RED\n")
    (tmp_path / "test.tsv").write_text("dax dax\tRED RED\nlug lug\tBLUE BLUE\nlug dax\tBLUE RED\n")
    monkeypatch.setitem(reproduce.TASKS, "colors", (
        ["--train_file", str(tmp_path / "train.tsv"), "--test_file", str(tmp_path / "test.tsv")],
        *reproduce.TASKS["colors"][1:]))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    tiny = ["--embedding_size", "8", "--hidden_size", "8", "--num_layers", "1", "--max_steps", "3"]
    root = tmp_path / "outputs"
    row_args = ["--task", "colors", "--row", "simple", "--output_root", str(root), "--parallel_seeds", "1"]
    return row_args, tiny, root


def test_extend_trains_aside_and_merges_only_new_seeds_of_the_same_settings(reproduce, tmp_path, monkeypatch):
    """--extend used to train into the row's folder before checking anything: a refused extension had already
    replaced the folder's weights, and an accepted one left it with the new run's first seed and a card of the new
    seeds only. Settings that results.json did not record (e.g. --max_eval_samples) merged silently."""
    row_args, tiny, root = tiny_colors_row(reproduce, tmp_path, monkeypatch)
    assert reproduce.main([*row_args, "--seeds", "0", *tiny]) == 0
    row_path, folder = tmp_path / "colors" / "simple.json", root / "lexical-colors-simple"
    weights = (folder / "model.safetensors").read_bytes()

    assert reproduce.main([*row_args, "--seeds", "1", "--extend", *tiny]) == 0
    row = json.loads(row_path.read_text())
    assert row["seeds"] == [0, 1] and row["run_name"] == "lexical-colors-simple"
    assert [run["seeds"] for run in row["runs"]] == [[0], [1]] and all("source_revision" in run for run in row["runs"])
    in_folder = json.loads((folder / "results.json").read_text())
    assert in_folder["seeds"] == [0, 1] and in_folder["summary"] == row["summary"]
    assert (folder / "model.safetensors").read_bytes() == weights  # still seed 0's, the row's first seed
    assert "mean over 2 seeds" in (folder / "README.md").read_text()
    assert (folder / "seeds" / "seed-1" / "metrics.json").is_file() and not (root / "lexical-colors-simple.extend").exists()

    with pytest.raises(SystemExit, match=r"seeds \[1\] are already in"):  # before any training
        reproduce.main([*row_args, "--seeds", "1-2", "--extend", *tiny])
    with pytest.raises(ValueError, match="data.max_eval_samples: None → 2"):
        reproduce.main([*row_args, "--seeds", "2", "--extend", *tiny, "--max_eval_samples", "2"])
    assert json.loads(row_path.read_text()) == row and json.loads((folder / "results.json").read_text()) == in_folder
    assert (folder / "model.safetensors").read_bytes() == weights


def test_rerun_trains_aside_and_replaces_only_seeds_of_the_row(reproduce, tmp_path, monkeypatch):
    row_args, tiny, root = tiny_colors_row(reproduce, tmp_path, monkeypatch)
    with pytest.raises(SystemExit, match="no row file"):  # before any training
        reproduce.main([*row_args, "--seeds", "0", "--rerun", "why", *tiny])
    assert reproduce.main([*row_args, "--seeds", "0-1", *tiny]) == 0
    row_path, folder = tmp_path / "colors" / "simple.json", root / "lexical-colors-simple"
    first = json.loads(row_path.read_text())
    for refused in (["--seeds", "1-2", "--rerun", "why"], ["--seeds", "1", "--rerun", ""]):
        with pytest.raises(SystemExit, match="--rerun: (seeds \\[2\\] are not in|say why)"):
            reproduce.main([*row_args, *refused, *tiny])
    with pytest.raises(SystemExit):  # argparse: one of --extend and --rerun
        reproduce.main([*row_args, "--seeds", "1", "--extend", "--rerun", "why", *tiny])

    assert reproduce.main([*row_args, "--seeds", "1", "--rerun", "checking that a seed reruns", *tiny]) == 0
    row = json.loads(row_path.read_text())
    assert row["seeds"] == [0, 1] and row["per_seed"]["1"]["test"] == first["per_seed"]["1"]["test"]  # deterministic
    assert row["superseded_seeds"]["1"]["why"] == "checking that a seed reruns"
    assert [run["seeds"] for run in row["runs"]] == [[0], [1]]
    assert json.loads((folder / "results.json").read_text())["superseded_seeds"] == row["superseded_seeds"]
    assert (folder / "seeds" / "seed-1" / "metrics.json").is_file() and not (root / "lexical-colors-simple.extend").exists()
    with pytest.raises(SystemExit, match=r"seeds \[1\] were run again before"):
        reproduce.main([*row_args, "--seeds", "1", "--rerun", "again", *tiny])


def test_a_row_stopped_by_a_time_limit_says_how_far_its_seeds_got(reproduce, tmp_path):
    (tmp_path / "scan-jump").mkdir()
    stopped = {**fake_results([0.1, 0.2]), "machine": "NVIDIA H200; Linux; torch 2.11",
               "command": "python examples/run_lexical.py --preset paper --tf32 true --max_train_minutes 7",
               "training": {"per_device_train_batch_size": 512, "gradient_accumulation_steps": 1, "max_steps": 8000,
                            "warmup_steps": 4000.0},
               "settings": {"max_train_minutes": 7.0}, "train_updates": {"min": 2194, "max": 2207}}
    (tmp_path / "scan-jump" / "simple.paper.json").write_text(json.dumps(stopped))
    finished = {**stopped, "command": "python examples/run_lexical.py --preset paper",
                "train_updates": {"min": 8000, "max": 8000}}
    (tmp_path / "scan-jump" / "lstm.paper.json").write_text(json.dumps(finished))
    text = reproduce.summarize()
    assert ("The row “+ Lex: Simple (paper tier)” is reduced: its seeds ran preset `paper` on NVIDIA H200 with batch "
            "512 and TF32 matrix products and were stopped by a 7-minute training limit (`--max_train_minutes`) after "
            "2,194–2,207 of the recipe's 8,000 updates, with the learning rate still warming up (4,000 warm-up "
            "updates); the weights reached were evaluated.") in text  # the fake rows' selection: final
    assert reproduce.stopped_note({**stopped, "selection": "validation"}, "row").endswith(
        "the checkpoint was chosen on validation among those reached.")
    assert "“LSTM (paper tier)” is reduced" not in text  # its seeds did every update
    assert ("The row “LSTM (paper tier)” ran preset `paper` on NVIDIA H200 with batch 512 (the recipe's 128 × 4 as one "
            "batch), all 8,000 updates; the final weights were evaluated.") in text
    graphed = {**finished, "command": "run_lexical.py --preset paper --tf32 true --cuda_graphs true"}
    assert "with batch 512 (the recipe's 128 × 4 as one batch), TF32 matrix products and the captured training step " \
        "(`--cuda_graphs true`), all 8,000" in reproduce.device_note(graphed, "row")
    assert reproduce.device_note({**finished, "machine": "CPU (2 cores)"}, "row") is None
    assert reproduce.stopped_note({**stopped, "train_updates": None}, "row") is None  # rows written before the record
    # --publish cannot check such a seed (a retrained one stops wherever the machine's speed takes it): refused
    stopped["per_seed"]["0"]["train_seconds"].update(updates=2194, stopped_by_time_limit=True)
    (tmp_path / "scan-jump" / "simple.paper.json").write_text(json.dumps(stopped))
    with pytest.raises(SystemExit, match="stopped by a wall-clock limit after 2,194 updates"):
        reproduce.main(["--task", "scan-jump", "--row", "simple", "--tier", "paper", "--publish"])


def test_a_seed_stopped_by_hand_stays_in_its_row_and_is_named_under_its_table(reproduce, tmp_path):
    """A seed ended by a STOP file keeps its evaluation in the row; the tables say which seed and after how many
    updates, no time limit is blamed, and --publish refuses to check it (a retrained seed would not stop there)."""
    row = transduction_results([1.0, 1.0, 0.0])
    row["settings"]["stop_at_train_loss"] = 0.001
    row["settings"]["training"].update(max_steps=6000, logging_steps=100)
    for seed, updates in zip(row["per_seed"].values(), (700, 700, 4000)):
        seed["train_seconds"].update(updates=updates, stopped_by_time_limit=False, stopped_by_train_loss=updates < 4000,
                                     stopped_by_request=updates == 4000)
    row.update(train_updates={"min": 700, "max": 4000}, training=row["settings"]["training"],
               command="python examples/run_lexical.py --seeds 0-2")
    (tmp_path / "transduction" / "copy").mkdir(parents=True)
    (tmp_path / "transduction" / "copy" / "queue-lstm.json").write_text(json.dumps(row))
    text = reproduce.summarize()
    line = next(line for line in text.splitlines() if line.startswith("| copy | Queue-LSTM |"))
    assert "| 1.00 1.00 0.00 | not recorded | 3 |" in line and "(700 700 4,000 updates; seed 2 stopped by hand) |" in line
    assert ("In the row “copy, Queue-LSTM”, seed 2 was stopped by hand after 4,000 of the recipe's 6,000 updates: its "
            "numbers are those of the weights reached, not of a finished seed.") in text
    assert reproduce.stopped_note(row, "row") is None  # no time limit to blame
    # the same row's paper tier beside it: its note names the tier, as its label does
    (tmp_path / "transduction" / "copy" / "queue-lstm.paper.json").write_text(json.dumps(row))
    assert "In the row “copy, Queue-LSTM (paper tier)”, seed 2 was stopped by hand" in reproduce.summarize()
    for seed in row["per_seed"].values():
        seed["train_seconds"]["stopped_by_request"] = True
    assert "seeds 0, 1 and 2 were stopped by hand after 700, 700 and 4,000 of" in reproduce.hand_stopped_note(row, "row")
    # a row of another table: its note under that table, and no time-limit note for a row without a loss target
    (tmp_path / "scan-jump").mkdir()
    short = {**fake_results([0.5]), "training": {"per_device_train_batch_size": 128, "max_steps": 8000,
                                                 "warmup_steps": 0}, "train_updates": {"min": 300, "max": 300},
             "settings": {}, "command": "python examples/run_lexical.py --preset paper"}
    short["per_seed"]["0"]["train_seconds"].update(updates=300, stopped_by_request=True, stopped_by_time_limit=False)
    (tmp_path / "scan-jump" / "simple.paper.json").write_text(json.dumps(short))
    text = reproduce.summarize()
    assert "In the row “+ Lex: Simple (paper tier)”, seed 0 was stopped by hand after 300 of the recipe's 8,000" in text
    assert "“+ Lex: Simple (paper tier)” is reduced" not in text
    with pytest.raises(SystemExit, match="seed 0 of .* was stopped by hand after 300 updates"):
        reproduce.main(["--task", "scan-jump", "--row", "simple", "--tier", "paper", "--publish"])


def transduction_results(test_coarse):
    """A Table 3 row file as `run_lexical` writes it (the fields the section reads)."""
    per_seed = {str(seed): {"validation": {"coarse_accuracy": 1.0, "fine_accuracy": 1.0},
                            "test": {"coarse_accuracy": value, "fine_accuracy": 0.9 + value / 10},
                            "train_seconds": {"value": 600.0}} for seed, value in enumerate(test_coarse)}
    return {"seeds": list(range(len(test_coarse))), "preset": "cpu", "machine": "CPU (2 cores); details",
            "source_revision": "abc1234", "per_seed": per_seed, "summary": {"test": {}, "validation": {}},
            "model": {"backbone": "stack_lstm", "num_layers": 1, "hidden_size": 64, "embedding_size": 64,
                      "memory_width": 64, "separate_target_lstm": True},
            "settings": {"data": {"benchmark_params": "train_lengths=[8,64],train_size=100000"},
                         "training": {"optim": "rmsprop", "learning_rate": 0.001, "per_device_train_batch_size": 50,
                                      "max_grad_norm": 1.0, "max_steps": 2000}}}


def test_a_table_3_recipe_names_the_optimisers_arguments_and_warm_up_where_the_run_set_them(reproduce):
    plain = transduction_results([1.0])
    assert "; rmsprop at learning rate 0.001, batch 50" in reproduce.transduction_recipe(plain)
    momentum = transduction_results([1.0])
    momentum["settings"]["training"].update(optim_args="momentum=0.9", learning_rate=1e-4)
    assert "; rmsprop (momentum=0.9) at learning rate 0.0001, batch 50" in reproduce.transduction_recipe(momentum)
    momentum["settings"]["training"].update(warmup_steps=1000)
    assert ("; rmsprop (momentum=0.9) at learning rate 0.0001 after 1,000 warm-up updates, batch 50"
            in reproduce.transduction_recipe(momentum))


def test_table_3_puts_each_cell_beside_the_papers_with_every_seed_and_marks_cells_not_run(reproduce, tmp_path):
    (tmp_path / "transduction" / "reversal").mkdir(parents=True)
    path = tmp_path / "transduction" / "reversal" / "stack-lstm.json"
    path.write_text(json.dumps(transduction_results([0.9, 0.6, 0.6])))
    text = reproduce.summarize()
    section = text[text.index("## Transduction with unbounded memory"):]
    row = next(line for line in section.splitlines() if line.startswith("| reversal | Stack-LSTM |"))
    # train: 1.00 ± 0.00 both; test coarse mean 0.70, std 0.1414; fine 0.97 ± 0.01; the paper's 1.00 / 1.00 both
    assert "[1.00 ± 0.00 / 1.00 ± 0.00](transduction/reversal/stack-lstm.json) | 1.00 / 1.00 |" in row
    assert "| 0.70 ± 0.14 / 0.97 ± 0.01 | 1.00 / 1.00 | 0.90 0.60 0.60 | not recorded | 3 | `cpu` | 30 min |" in row
    assert row.endswith("| `abc1234` |")
    assert "| copy | Queue-LSTM | not run | 1.00 / 1.00 | — | 1.00 / 1.00 |" in section
    assert "| reversal | deep LSTM (8 layers) | not run | 0.95 / 0.98 | — | 0.04 / 0.13 |" in section
    table = section[:section.index("### Table 3 in the paper's layout")]
    assert sum(line.startswith("| ") for line in table.splitlines()) == 1 + 20  # header + 5 tasks × 4 models
    recipe = next(line for line in section.splitlines() if line.startswith("Recipe of the rows run"))
    assert "1 × 64 LSTM" in recipe and "memory width 64" in recipe and "target-side LSTM of its own" in recipe
    assert "push bias" not in recipe  # nn.Linear's initialisation, the paper's: nothing to say
    assert "rmsprop at learning rate 0.001, batch 50" in recipe and "100,000 training sequences of lengths 8–64" in recipe
    assert "## Transduction" not in text[:text.index("## Transduction with unbounded memory")]  # no Table 2 section
    # a row trained to convergence: each seed's updates in the time cell, the stop in the recipe, and no
    # "reduced" note (stopping before the cap is the recipe, not a time limit)
    converged = transduction_results([1.0, 1.0, 0.5])
    converged["settings"]["stop_at_train_loss"] = 0.001
    converged["settings"]["training"].update(max_steps=6000, logging_steps=100)
    for seed, updates in zip(converged["per_seed"].values(), (2600, 3100, 6000)):
        seed["train_seconds"].update(updates=updates, stopped_by_time_limit=False, stopped_by_train_loss=updates < 6000)
    converged.update(train_updates={"min": 2600, "max": 6000}, training=converged["settings"]["training"])
    (tmp_path / "transduction" / "copy").mkdir()
    (tmp_path / "transduction" / "copy" / "queue-lstm.json").write_text(json.dumps(converged))
    section = reproduce.summarize()[text.index("## Transduction with unbounded memory"):]
    row = next(line for line in section.splitlines() if line.startswith("| copy | Queue-LSTM |"))
    assert "| 30 min (2,600 3,100 6,000 updates) |" in row
    assert ("to convergence: until the first logged training loss (the mean over 100 updates) at or below 0.001, at "
            "most 6,000 updates") in section
    assert reproduce.stopped_note(converged, "row") is None
    converged["per_seed"]["1"]["train_seconds"]["stopped_by_time_limit"] = True
    converged["settings"]["max_train_minutes"] = 30.0
    converged["training"]["warmup_steps"] = 0
    assert "were stopped by a 30-minute training limit" in reproduce.stopped_note(converged, "row")
    # a deep-LSTM row says its depth beside the depth of the paper's best cell
    deep = transduction_results([0.0, 0.0, 0.0])
    deep["model"].update(backbone="deep_lstm", num_layers=2, hidden_size=128)
    (tmp_path / "transduction" / "reversal" / "deep-lstm.json").write_text(json.dumps(deep))
    section = reproduce.summarize()[text.index("## Transduction with unbounded memory"):]
    assert "| reversal | deep LSTM (2 layers; the paper's: 8 layers) | [1.00 ± 0.00 / 1.00 ± 0.00]" in section
    # a row of one seed so far has no spread to show
    (tmp_path / "transduction" / "svo-sov").mkdir()
    (tmp_path / "transduction" / "svo-sov" / "queue-lstm.json").write_text(json.dumps(transduction_results([0.88])))
    section = reproduce.summarize()[text.index("## Transduction with unbounded memory"):]
    row = next(line for line in section.splitlines() if line.startswith("| SVO→SOV | Queue-LSTM |"))
    assert "| [1.00 / 1.00](transduction/svo-sov/queue-lstm.json) | 1.00 / 1.00 | 0.88 / 0.99 | 1.00 / 1.00 | 0.88 | not recorded | 1 |" in row
    # a row run with a push bias of its own says so in its recipe
    biased = transduction_results([0.0])
    biased["model"].update(backbone="deque_lstm", memory_push_bias=-1.0)
    (tmp_path / "transduction" / "copy" / "deque-lstm.json").write_text(json.dumps(biased))
    section = reproduce.summarize()[text.index("## Transduction with unbounded memory"):]
    assert "deque_lstm: 1 × 64 LSTM, embeddings 64, memory width 64, a target-side LSTM of its own, push bias starting at -1;" in section
    # a row with a recipe of its own is a line of its own beside the paper's cell it answers, only where it was run
    variant = transduction_results([0.87])
    variant["model"].update(backbone="deque_lstm", memory_bottom_push_bias=-3.0)
    variant["settings"]["curriculum"] = {"max_source_length": 16, "updates": 3000}
    (tmp_path / "transduction" / "copy" / "deque-lstm-queue-start.json").write_text(json.dumps(variant))
    section = reproduce.summarize()[text.index("## Transduction with unbounded memory"):]
    row = next(line for line in section.splitlines()
               if line.startswith("| copy | DeQue-LSTM, bottom pushes started small |"))
    assert "(transduction/copy/deque-lstm-queue-start.json) | 1.00 / 1.00 | 0.87 / 0.99 | 1.00 / 1.00 | 0.87 | not recorded | 1 |" in row
    assert "a target-side LSTM of its own, bottom push bias starting at -3;" in section
    assert ("100,000 training sequences of lengths 8–64, the first 3,000 updates drawn from those of at most 16 "
            "symbols") in section
    assert not any(line.startswith("| reversal | DeQue-LSTM, bottom") for line in section.splitlines())
    # a variant at the paper's width: its line and its recipe say the width it ran at
    wide = transduction_results([1.0])
    wide["model"].update(backbone="stack_lstm", hidden_size=256, memory_width=256)
    (tmp_path / "transduction" / "reversal" / "stack-lstm-paper-width.json").write_text(json.dumps(wide))
    section = reproduce.summarize()[text.index("## Transduction with unbounded memory"):]
    assert any(line.startswith("| reversal | Stack-LSTM, the paper's width (256) | [1.00 / 1.00]")
               for line in section.splitlines())
    assert "stack_lstm: 1 × 256 LSTM, embeddings 64, memory width 256, a target-side LSTM of its own;" in section


def test_table_3_reports_the_seed_the_papers_rule_picks_the_lowest_last_training_loss(reproduce, tmp_path):
    """The paper reports, per cell, its model of lowest average training perplexity: the pick column shows the test
    cells of the seed with the lowest last logged training loss, never chosen on a test number, and says "not
    recorded" unless every seed recorded that loss."""
    row = transduction_results([0.8, 1.0, 0.0])
    for seed, loss in zip(row["per_seed"].values(), (0.0009, 0.0004, 3.89)):
        seed["train_loss"] = {"last_logged": loss, "update": 1000, "window": 100}
    (tmp_path / "transduction" / "reversal").mkdir(parents=True)
    path = tmp_path / "transduction" / "reversal" / "stack-lstm.json"
    path.write_text(json.dumps(row))
    line = lambda: next(line for line in reproduce.summarize().splitlines()
                        if line.startswith("| reversal | Stack-LSTM |"))
    assert "| 0.80 1.00 0.00 | 1.00 / 1.00 (seed 1) | 3 |" in line()
    row["per_seed"]["1"]["train_loss"]["last_logged"] = 0.002  # now seed 0's loss is the lowest: its 0.80 is shown
    path.write_text(json.dumps(row))
    assert "| 0.80 1.00 0.00 | 0.80 / 0.98 (seed 0) | 3 |" in line()
    del row["per_seed"]["2"]["train_loss"]  # a seed without the loss: no pick among the others
    path.write_text(json.dumps(row))
    assert "| 0.80 1.00 0.00 | not recorded | 3 |" in line()
    # a training record, not a split: the row's summary leaves it out
    from lexical_hf.results import summarize_row
    assert set(summarize_row(row["per_seed"])["summary"]) == {"test", "validation"}


def test_a_rows_training_losses_are_added_only_from_the_seed_folders_of_its_own_run(tmp_path):
    """benchmarks/add_train_loss.py: each seed's last logged loss from its log_history.json, looked up across the
    seed folders given; a folder of another run (other test metrics, or a log ending elsewhere) is refused."""
    spec = importlib.util.spec_from_file_location("add_train_loss", REPO / "benchmarks" / "add_train_loss.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    row = transduction_results([1.0, 0.0])
    row["settings"]["training"]["logging_steps"] = 100
    for seed, updates in zip(row["per_seed"].values(), (700, 6000)):
        seed["train_seconds"]["updates"] = updates
    row_path = tmp_path / "row.json"
    row_path.write_text(json.dumps(row))
    for folder, seed, losses in (("a", "0", [(600, 0.01), (700, 0.0009)]), ("b", "1", [(5900, 3.9), (6000, 3.89)])):
        seed_dir = tmp_path / folder / f"seed-{seed}"
        seed_dir.mkdir(parents=True)
        history = [{"step": step, "loss": loss} for step, loss in losses] + [{"step": losses[-1][0], "train_loss": 1.0}]
        (seed_dir / "log_history.json").write_text(json.dumps(history))
        (seed_dir / "metrics.json").write_text(json.dumps({"test": row["per_seed"][seed]["test"]}))
    module.main([str(row_path), str(tmp_path / "a"), str(tmp_path / "b")])
    added = json.loads(row_path.read_text())["per_seed"]
    assert added["0"]["train_loss"] == {"last_logged": 0.0009, "update": 700, "window": 100}
    assert added["1"]["train_loss"] == {"last_logged": 3.89, "update": 6000, "window": 100}
    (tmp_path / "b" / "seed-1" / "metrics.json").write_text(json.dumps({"test": {"coarse_accuracy": 0.5}}))
    with pytest.raises(SystemExit, match="seed 1: .* holds another run"):
        module.main([str(row_path), str(tmp_path / "a"), str(tmp_path / "b")])
    row["per_seed"]["1"]["train_seconds"]["updates"] = 5000
    row_path.write_text(json.dumps(row))
    (tmp_path / "b" / "seed-1" / "metrics.json").write_text(json.dumps({"test": row["per_seed"]["1"]["test"]}))
    with pytest.raises(SystemExit, match="its log ends at update 6000, the row records 5000"):
        module.main([str(row_path), str(tmp_path / "a"), str(tmp_path / "b")])
    with pytest.raises(SystemExit, match="seed 1: no log_history.json"):
        module.main([str(row_path), str(tmp_path / "a")])


def test_recovered_training_losses_fill_only_the_seeds_without_one_and_at_the_rows_own_update(tmp_path):
    """benchmarks/add_train_loss.py --recovered: losses read back from logs go to the seeds of the matching task, row
    and seed that have none, stamped with their source; a seed with a loss keeps it; an entry at another update than
    the row's is refused."""
    spec = importlib.util.spec_from_file_location("add_train_loss", REPO / "benchmarks" / "add_train_loss.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    row = transduction_results([1.0, 0.0, 0.5])
    row["settings"]["training"]["logging_steps"] = 100
    for seed in row["per_seed"].values():
        seed["train_seconds"]["updates"] = 6000
    row["per_seed"]["0"]["train_loss"] = {"last_logged": 0.5, "update": 6000, "window": 100}
    row_path = tmp_path / "reversal" / "deep-lstm.json"
    row_path.parent.mkdir()
    row_path.write_text(json.dumps(row))
    entry = {"task": "reversal", "row": "deep-lstm", "update": 6000, "source": "diagnostics/losses.txt"}
    recovered = tmp_path / "recovered.json"
    recovered.write_text(json.dumps({"recovered": [{**entry, "seed": "0", "last_logged": 9.0},
                                                   {**entry, "seed": "1", "last_logged": 2.25},
                                                   {**entry, "row": "stack-lstm", "seed": "2", "last_logged": 1.0}]}))
    module.main(["--recovered", str(recovered), str(row_path)])
    added = json.loads(row_path.read_text())["per_seed"]
    assert added["0"]["train_loss"] == {"last_logged": 0.5, "update": 6000, "window": 100}
    assert added["1"]["train_loss"] == {"last_logged": 2.25, "update": 6000, "window": 100,
                                        "recovered_from": "diagnostics/losses.txt"}
    assert "train_loss" not in added["2"]
    recovered.write_text(json.dumps({"recovered": [{**entry, "seed": "2", "update": 5900, "last_logged": 1.0}]}))
    with pytest.raises(SystemExit, match="seed 2: the recovered loss is at update 5900, the row records 6000"):
        module.main(["--recovered", str(recovered), str(row_path)])
    assert "train_loss" not in json.loads(row_path.read_text())["per_seed"]["2"]


def test_table_3_tasks_take_only_the_memory_rows(reproduce):
    with pytest.raises(SystemExit):
        reproduce.main(["--task", "reversal", "--row", "simple"])
    with pytest.raises(SystemExit):
        reproduce.main(["--task", "scan-jump", "--row", "stack-lstm"])


def test_syntatt_rows_give_their_median_and_russin_et_al_s_number(reproduce, tmp_path):
    (tmp_path / "scan-simple").mkdir()
    (tmp_path / "scan-simple" / "syntatt.json").write_text(json.dumps(fake_results([1.0, 0.2, 0.9, 0.95])))
    text = reproduce.summarize()
    section = text[text.index("## SCAN simple (test)"):]
    assert "| SyntAtt | [0.76 ± 0.33](scan-simple/syntatt.json) | — |" in section  # no lexicon-paper column
    note = next(line for line in section.splitlines() if line.startswith("Median over seeds"))
    assert "SyntAtt 0.93" in note and "Russin et al. (2019) report 1.00 ± 0.00" in note
    assert "## SCAN addprim_turn_left" not in text  # no row there yet, and no lexicon-paper number to show


def test_a_row_run_before_its_preset_changed_a_model_setting_says_so(reproduce):
    """A row file records the model it ran; when the preset now gives its benchmark another model setting, the
    summary says which and how, so that "preset `paper`" in the table does not claim today's recipe."""
    from lexical_hf.training.arguments import preset_defaults

    _, preset = preset_defaults("lstm", "paper", "scan", "template_around_right")
    model = {"backbone": "lstm", **{name: preset[name] for name in (
        "embedding_size", "gate", "feed_dropout", "combine_decoder_input", "attention_query_bias",
        "mixture_normalization", "probability_floor")}}
    row = {**fake_results([0.7]), "benchmark": "scan", "benchmark_config": "template_around_right", "lexicon": "simple",
           "model": {**model, "loss_normalization": "tokens"},
           "command": "python examples/run_lexical.py --benchmark scan --preset paper"}
    note = reproduce.preset_note(row, "+ Lex: Simple (paper tier)")
    assert note == ("The row “+ Lex: Simple (paper tier)” ran preset `paper` as it was then: `loss_normalization` "
                    f"tokens (now {preset['loss_normalization']}).")
    unrecorded = {**row, "model": model}  # a row written before the setting existed ran the model's default
    assert reproduce.preset_note(unrecorded, "row") == note.replace("+ Lex: Simple (paper tier)", "row")
    # a setting the row gave as its own flag is not the preset's
    assert reproduce.preset_note({**row, "command": row["command"] + " --loss_normalization tokens"}, "row") is None
    current = {**row, "model": {**model, "loss_normalization": preset["loss_normalization"]}}
    assert reproduce.preset_note(current, "row") is None
    assert reproduce.preset_note(fake_results([0.7]), "row") is None  # a row file that did not record its model
    # without a lexicon the preset has no floor to give: a row that ran with none is current
    plain = {**current, "lexicon": "none", "model": {**current["model"], "probability_floor": 0.0}}
    assert reproduce.preset_note(plain, "LSTM (paper tier)") is None
    assert reproduce.preset_note({**plain, "lexicon": "simple"}, "row") == (
        f"The row “row” ran preset `paper` as it was then: `probability_floor` 0.0 (now {preset['probability_floor']}).")


def test_table_3_in_the_papers_layout_applies_its_rule_over_every_model_of_an_architecture(reproduce, tmp_path):
    """One cell per task and architecture: the models that met the loss target tie under the paper's rule, so the
    cell spans them (variants included); where none met it, the model of lowest logged loss; where some loss was not
    logged, the span over all. Never chosen on a test number."""
    def row(test_coarse, met, losses=None):
        results = transduction_results(test_coarse)
        for index, seed in enumerate(results["per_seed"].values()):
            seed["train_seconds"]["stopped_by_train_loss"] = met[index]
            if losses:
                seed["train_loss"] = {"last_logged": losses[index]}
        return results

    folder = tmp_path / "transduction" / "reversal"
    folder.mkdir(parents=True)
    (folder / "deque-lstm.json").write_text(json.dumps(row([0.0, 0.5], [False, True])))
    (folder / "deque-lstm-paper-width-low-bottom-start.json").write_text(json.dumps(row([1.0, 0.9, 0.0], [True, True, False])))
    (folder / "stack-lstm.json").write_text(json.dumps(row([0.9, 0.0], [False, False], losses=[0.5, 0.02])))
    (folder / "queue-lstm.json").write_text(json.dumps(row([0.3, 0.1], [False, False])))
    text = reproduce.summarize()
    layout = text[text.index("### Table 3 in the paper's layout"):]
    line = next(line for line in layout.splitlines() if line.startswith("| reversal |"))
    cells = line.split(" | ")
    # deep LSTM, Stack, Queue, DeQue, each beside the paper's cell
    assert cells[1] == "not run" and cells[2] == "0.95/0.98 \\| 0.04/0.13 (8 layers)"
    # the Stack's seed 1 has the lower loss: its 0.00 is reported, not seed 0's 0.90
    assert cells[3] == "1.00/1.00 \\| 0.00/0.90 (none of 2 met the target; lowest loss: stack-lstm, seed 1)"
    assert cells[5] == "1.00/1.00 \\| 0.10–0.30/0.91–0.93 (none of 2 met the target; not every loss logged: all 2)"
    # the DeQue's three models that met the target, over both of its rows: 0.5, 1.0 and 0.9
    assert cells[7] == "1.00/1.00 \\| 0.50–1.00/0.95–1.00 (3 of 5 met the target)"
    assert cells[8] == "1.00/1.00 \\| 1.00/1.00 |"
    assert "| copy | not run |" in layout


def test_table_3_with_the_papers_optimiser_keeps_only_the_rows_trained_with_rmsprop_at_batch_10(reproduce, tmp_path):
    def row(test_coarse, met, optim, batch):
        results = transduction_results(test_coarse)
        results["settings"]["training"].update(optim=optim, per_device_train_batch_size=batch)
        for index, seed in enumerate(results["per_seed"].values()):
            seed["train_seconds"]["stopped_by_train_loss"] = met[index]
        return results

    folder = tmp_path / "transduction" / "reversal"
    folder.mkdir(parents=True)
    (folder / "stack-lstm.json").write_text(json.dumps(row([0.9, 1.0], [True, True], "adamw_torch", 50)))
    (folder / "stack-lstm-paper-width-push-start-rmsprop.json").write_text(
        json.dumps(row([1.0, 0.0, 0.0], [True, False, False], "rmsprop", 10)))
    (folder / "deque-lstm.json").write_text(json.dumps(row([1.0], [True], "rmsprop", 50)))  # not the paper's batch
    text = reproduce.summarize()
    every = text[text.index("### Table 3 in the paper's layout: the paper's rule over every model run"):]
    only = text[text.index("### Table 3 in the paper's layout, the paper's optimiser only"):]
    every_line, only_line = (next(line for line in part.splitlines() if line.startswith("| reversal |"))
                             for part in (every, only))
    assert every_line.split(" | ")[3] == "1.00/1.00 \\| 0.90–1.00/0.99–1.00 (3 of 5 met the target)"
    assert only_line.split(" | ")[3] == "1.00/1.00 \\| 1.00/1.00 (1 of 3 met the target)"
    assert only_line.split(" | ")[7] == "not run"  # the DeQue's row ran RMSProp at batch 50


def test_a_row_file_gives_back_its_row_and_tier_even_where_the_row_name_holds_a_dot(reproduce):
    for row, tier in [("lstm", "cpu"), ("lstm", "paper"), ("queue-lstm-rmsprop-momentum-alpha-0.999-lr-1e-4", "cpu"),
                      ("queue-lstm-rmsprop-momentum-alpha-0.999-lr-1e-4", "paper")]:
        assert reproduce.row_and_tier(reproduce.row_file("copy", row, tier)) == (row, "" if tier == "cpu" else tier)
