"""GECA in the training pipeline (`--augment geca`, composed anew per seed) and on the command line."""

import json
import os

import pytest

from lexical_hf.cli import main as cli
from lexical_hf.training import main, parse_arguments

TINY = ["--benchmark", "colors", "--embedding_size", "8", "--hidden_size", "8", "--num_layers", "1", "--max_steps", "2",
        "--disable_tqdm", "true", "--logging_strategy", "no"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_each_seed_trains_on_its_own_augmentation_and_the_row_records_it(tmp_path):
    out = tmp_path / "run"
    results = main([*TINY, "--seeds", "0,1", "--augment", "geca", "--output_dir", str(out)])
    assert results["augmentation"] == {"method": "geca", "preset": "colors", "params": {}, "mixing": "ratio",
                                       "aug_ratio": 0.3}
    stats = {seed: results["per_seed"][seed]["augmentation"] for seed in ("0", "1")}
    assert all(s["new_pairs"] > 0 and s["training_examples"] > 14 for s in stats.values())
    # about aug_ratio / (1 - aug_ratio) augmented examples per original one
    assert all(0 < s["augmented_examples"] <= s["training_examples"] - 14 for s in stats.values())
    assert stats["0"]["seed"] != stats["1"]["seed"] and set(results["summary"]) == {"test"}
    assert results["augmented_pairs"]["mean"] == (stats["0"]["new_pairs"] + stats["1"]["new_pairs"]) / 2
    card = (out / "README.md").read_text(encoding="utf-8")  # the card says what the published seed trained on
    assert (f"Augmented with GECA (Andreas 2020), composed anew for each seed with the `colors` settings: "
            f"{stats['0']['new_pairs']} new pairs for the published seed 0; each training example was drawn from them "
            "with probability 0.3.") in card
    assert "- Backbone: LSTM (lstm), 1 layer(s) × 8 units" in card
    with pytest.raises(ValueError, match="augmentation"):  # a resume with other augmentation settings is refused
        main([*TINY, "--seeds", "0", "--augment", "geca", "--aug_ratio", "0.5", "--resume_from_checkpoint", "true",
              "--output_dir", str(out)])


@pytest.mark.parametrize("flags,message", [
    (["--augment", "mixup"], "--augment must be one of"),
    (["--augment", "geca", "--aug_ratio", "1"], r"--aug_ratio must be in \[0, 1\)"),
    (["--augment", "geca", "--augment_mixing", "interleave"], "--augment_mixing must be ratio or concatenate"),
    (["--augment_params", "wug_size=1"], "add --augment geca"),
])
def test_bad_augmentation_flags_are_refused_before_training(flags, message):
    with pytest.raises(ValueError, match=message):
        parse_arguments([*TINY, *flags, "--output_dir", "unused"])


def test_the_augment_command_writes_the_new_pairs_of_a_file(tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("dax\tRED\nlug\tBLUE\ndax fep\tRED RED RED\nlug fep\tBLUE BLUE BLUE\nwif\tGREEN\n")
    out = tmp_path / "new.jsonl"
    assert cli(["augment", "--data-file", str(pairs), "--param", "wug_size=1", "--out", str(out)]) == 0
    assert [json.loads(line) for line in out.read_text().splitlines()] == [{"source": "wif fep",
                                                                            "target": "GREEN GREEN GREEN"}]
    assert "1 kept" in capsys.readouterr().out
    assert cli(["augment", "--data-file", str(pairs), "--param", "wug_size=0", "--out", str(out)]) == 2
