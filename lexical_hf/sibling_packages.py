"""The two top-level packages installed beside `lexical_hf`: `dataset_scripts` (the benchmark builders) and
`model_cards` (the model card template)."""

import importlib
from pathlib import Path
from types import ModuleType


def import_sibling_package(name: str) -> ModuleType:
    """Import `dataset_scripts` or `model_cards` and check that it is the one installed beside `lexical_hf`.

    Their names are generic: a package of the same name earlier on `sys.path` (the current directory, for
    `python -c`, `python -m` and notebooks) would otherwise be imported instead, and fail far from the cause or load
    someone else's files. Raises `ImportError` naming both places.
    """
    module = importlib.import_module(name)
    expected = Path(__file__).resolve().parents[1] / name
    found = Path(module.__file__).resolve().parent if getattr(module, "__file__", None) else None
    if found != expected:
        where = found or ", ".join(getattr(module, "__path__", [])) or "?"
        raise ImportError(
            f"`{name}` was imported from {where}, not from {expected}, where lexical_hf installed it: a package of "
            "that name earlier on sys.path (the current directory?) shadows it. Rename that package or run from "
            "another directory."
        )
    return module
