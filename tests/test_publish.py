"""Tests of dataset_scripts/publish.py: exported Parquet folders load through stock `datasets.load_dataset`."""

from __future__ import annotations

import os
from pathlib import Path

import datasets
import pytest
import yaml

from lexical_hf.data import load_benchmark
from lexical_hf.data.eng_cmn import ENG_CMN_FILES


def _publish_script():
    """dataset_scripts/publish.py, a script of the checkout (not an installed package), loaded from its path."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "dataset_scripts" / "publish.py"
    spec = importlib.util.spec_from_file_location("publish", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PUBLISH = _publish_script()
export_benchmark, main = _PUBLISH.export_benchmark, _PUBLISH.main

MIRROR = Path(os.environ.get("LEXICAL_HF_DATA_DIR") or Path(__file__).resolve().parents[1].parent / "shared" / "data")


@pytest.fixture(autouse=True)
def no_mirror_from_environment(monkeypatch):
    """Tests pass data_dir explicitly; an inherited LEXICAL_HF_DATA_DIR must not leak into other loads."""
    monkeypatch.delenv("LEXICAL_HF_DATA_DIR", raising=False)


def front_matter(readme: Path) -> dict:
    text = readme.read_text(encoding="utf-8")
    return yaml.safe_load(text.split("\n---\n", 1)[0].removeprefix("---\n"))


def test_exported_scan_configs_load_with_stock_datasets(tmp_path):
    out = tmp_path / "scan"
    export_benchmark("scan", out, ["addprim_jump"], cache_dir=tmp_path / "cache", validation_fraction=0.01)
    export_benchmark("scan", out, ["template_around_right"], cache_dir=tmp_path / "cache")  # added to the card
    card = front_matter(out / "README.md")
    assert [entry["config_name"] for entry in card["configs"]] == ["addprim_jump", "template_around_right"]
    assert card["license"] == "bsd-3-clause"
    # the card says that validation was carved out of train, and how (it is not an upstream split)
    note = "validation: 146 of the 14,670 original train examples (fraction 0.01, seed 0), held out by lexical_hf"
    assert card["lexical_hf_held_out"] == {"addprim_jump": note + "; train is the rest"}
    assert note in (out / "README.md").read_text(encoding="utf-8")

    loaded = datasets.load_dataset(str(out), "addprim_jump", cache_dir=str(tmp_path / "hf"))
    expected = load_benchmark("scan", "addprim_jump", cache_dir=tmp_path / "cache", validation_fraction=0.01)
    assert {split: len(ds) for split, ds in loaded.items()} == {"train": 14_524, "validation": 146, "test": 7_706}
    assert loaded["validation"].to_list() == expected["validation"].to_list()
    assert loaded["test"]["source"] == expected["test"]["source"]
    around = datasets.load_dataset(str(out), "template_around_right", cache_dir=str(tmp_path / "hf"))
    assert {split: len(ds) for split, ds in around.items()} == {"train": 15_225, "test": 4_476}


def test_exported_colors_card_and_default_config(tmp_path):
    out = export_benchmark("colors", tmp_path / "colors", cache_dir=tmp_path / "cache")
    card_text = (out / "README.md").read_text(encoding="utf-8")
    assert "Lake, Linzen & Baroni" in card_text and "@inproceedings{lake2019human" in card_text
    assert front_matter(out / "README.md")["configs"][0]["default"] is True
    loaded = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "hf"))  # the default config
    assert loaded["train"][0] == {"source": "dax", "target": "RED"}
    assert len(loaded["test"]) == 10


def test_exported_eng_cmn_keeps_types_licence_and_attribution(tmp_path):
    files = [MIRROR / f"TRANSLATE/cmn.txt_{split}_tokenized.tsv" for split in ("train", "dev", "test")]
    if not all(path.is_file() for path in files):
        pytest.skip(f"raw-data mirror not found at {MIRROR} (set LEXICAL_HF_DATA_DIR)")
    out = export_benchmark("eng_cmn", tmp_path / "eng_cmn", ["paper"], data_dir=MIRROR, cache_dir=tmp_path / "cache")
    card = front_matter(out / "README.md")
    assert card["license"] == "cc-by-2.0" and card["language"] == ["en", "zh"]
    card_text = (out / "README.md").read_text(encoding="utf-8")
    assert "tatoeba.org" in card_text and "CC-BY 2.0" in card_text
    assert f"{ENG_CMN_FILES['test'].url} (sha256:{ENG_CMN_FILES['test'].sha256})" in card_text
    loaded = datasets.load_dataset(str(out), "paper", cache_dir=str(tmp_path / "hf"))
    assert loaded["test"].features["one_shot"] == datasets.Value("bool")
    assert sum(loaded["test"]["one_shot"]) == 223


def test_cli_exports_then_refuses_to_push_without_a_token(tmp_path, monkeypatch, capsys):
    for variable in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(variable, raising=False)
    # and no stored token: point the token files at an empty folder
    monkeypatch.setattr("huggingface_hub.constants.HF_TOKEN_PATH", str(tmp_path / "hf_home" / "token"))
    monkeypatch.setattr("huggingface_hub.constants.HF_STORED_TOKENS_PATH", str(tmp_path / "hf_home" / "tokens"))
    status = main(["--benchmark", "colors", "--out", str(tmp_path / "out"), "--cache_dir", str(tmp_path / "cache"),
                   "--push_to_hub", "someone/colors"])
    assert status == 2
    assert "no Hugging Face token" in capsys.readouterr().err
    loaded = datasets.load_dataset(str(tmp_path / "out"), "default", cache_dir=str(tmp_path / "hf"))
    assert len(loaded["train"]) == 14


def test_cli_rejects_a_malformed_checksum_override(tmp_path):
    with pytest.raises(SystemExit):
        main(["--benchmark", "colors", "--out", str(tmp_path), "--checksum_override", "no-equals-sign"])
