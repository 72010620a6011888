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


def test_row_files_keep_cpu_and_paper_tiers_apart(reproduce, tmp_path):
    assert reproduce.row_file("scan-jump", "simple", "cpu") == tmp_path / "scan-jump" / "simple.json"
    assert reproduce.row_file("scan-jump", "simple", "paper") == tmp_path / "scan-jump" / "simple.paper.json"
    assert reproduce.row_file("colors", "simple", "paper") == tmp_path / "colors" / "simple.json"  # one recipe
