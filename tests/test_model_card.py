"""The model card of a run's results."""

import json
import sys
from pathlib import Path

from lexical_hf.model_card import build_model_card

REPO = Path(__file__).resolve().parents[1]


def test_the_card_renders_from_a_checkout_that_is_not_installed(monkeypatch):
    """Run from a clone with PYTHONPATH (as on a machine without the package installed), the templates are not the
    package data `lexical_hf.model_cards`: the card comes from the checkout's model_cards/ folder instead of failing
    after training, when the results are written."""
    results = json.loads((REPO / "results" / "colors" / "simple.json").read_text())
    installed = str(build_model_card(results))
    monkeypatch.setitem(sys.modules, "lexical_hf.model_cards", None)  # import of it fails: ModuleNotFoundError
    assert str(build_model_card(results)) == installed and "lexical-colors-simple" in installed
