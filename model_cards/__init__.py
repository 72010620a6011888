"""Model card templates. Installed inside the package as `lexical_hf.model_cards` (package data, see setup.py): read
them with `importlib.resources.files("lexical_hf.model_cards")`, not as a top-level `model_cards` package."""
