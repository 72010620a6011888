"""The Colors task (Lake, Linzen & Baroni 2019): 14 training and 10 test pairs, embedded — no files needed.

The pairs are the ones of the lexical paper (``data.py:get_fig2_exp`` in ekinakyurek/lexical, identical to its
``COLOR/train.tsv`` and ``COLOR/test.tsv`` up to whitespace). It is the package's default demo task.
"""

from __future__ import annotations

import datasets

from ._common import LexicalBenchmarkBuilder, LexicalBenchmarkConfig

_CITATION = """\
@inproceedings{lake2019human,
  title     = {Human few-shot learning of compositional instructions},
  author    = {Lake, Brenden M. and Linzen, Tal and Baroni, Marco},
  booktitle = {Proceedings of the 41st Annual Conference of the Cognitive Science Society},
  year      = {2019}
}
@inproceedings{akyurek2021lexicon,
  title     = {Lexicon Learning for Few Shot Sequence Modeling},
  author    = {Aky{\\"u}rek, Ekin and Andreas, Jacob},
  booktitle = {Proceedings of ACL-IJCNLP 2021},
  year      = {2021}
}
"""

_DESCRIPTION = """\
Colors: a few-shot instruction-following task of Lake, Linzen & Baroni (2019). Pseudowords name colours
(dax, lug, wif, zup) or act as functions (fep: repeat three times; blicket: x blicket y -> x y x; kiki: x kiki y ->
y x). 14 study (train) pairs, 10 test pairs. Test pairs use `zup`, seen only as a bare primitive in training.
"""

_HOMEPAGE = "https://github.com/ekinakyurek/lexical"
_LICENSE = (
    "No dataset-specific licence; the items are from Lake, Linzen & Baroni (2019) as shipped in "
    "ekinakyurek/lexical (MIT)."
)

COLORS_TRAIN: tuple[tuple[str, str], ...] = (
    ("dax", "RED"),
    ("lug", "BLUE"),
    ("wif", "GREEN"),
    ("zup", "YELLOW"),
    ("lug fep", "BLUE BLUE BLUE"),
    ("dax fep", "RED RED RED"),
    ("lug blicket wif", "BLUE GREEN BLUE"),
    ("wif blicket dax", "GREEN RED GREEN"),
    ("lug kiki wif", "GREEN BLUE"),
    ("dax kiki lug", "BLUE RED"),
    ("lug fep kiki wif", "GREEN BLUE BLUE BLUE"),
    ("wif kiki dax blicket lug", "RED BLUE RED GREEN"),
    ("lug kiki wif fep", "GREEN GREEN GREEN BLUE"),
    ("wif blicket dax kiki lug", "BLUE GREEN RED GREEN"),
)
"""The 14 training (study) pairs as (source, target)."""

COLORS_TEST: tuple[tuple[str, str], ...] = (
    ("zup fep", "YELLOW YELLOW YELLOW"),
    ("zup blicket lug", "YELLOW BLUE YELLOW"),
    ("dax blicket zup", "RED YELLOW RED"),
    ("zup kiki dax", "RED YELLOW"),
    ("wif kiki zup", "YELLOW GREEN"),
    ("zup fep kiki lug", "BLUE YELLOW YELLOW YELLOW"),
    ("wif kiki zup fep", "YELLOW YELLOW YELLOW GREEN"),
    ("lug kiki wif blicket zup", "GREEN YELLOW GREEN BLUE"),
    ("zup blicket wif kiki dax fep", "RED RED RED YELLOW GREEN YELLOW"),
    ("zup blicket zup kiki zup fep", "YELLOW YELLOW YELLOW YELLOW YELLOW YELLOW"),
)
"""The 10 test pairs as (source, target)."""


class Colors(LexicalBenchmarkBuilder):
    """Colors benchmark: one config, ``default``, with splits ``train`` (14) and ``test`` (10)."""

    DATASET_NAME = "lexical_hf_colors"
    BUILDER_CONFIGS = [
        LexicalBenchmarkConfig(
            name="default", version=datasets.Version("1.0.0"), description="14 study / 10 test pairs"
        )
    ]
    DEFAULT_CONFIG_NAME = "default"

    def _info(self):
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=datasets.Features({"source": datasets.Value("string"), "target": datasets.Value("string")}),
            homepage=_HOMEPAGE,
            license=_LICENSE,
            citation=_CITATION,
        )

    @classmethod
    def splits_of(cls, config_name):
        return ("train", "test"), ("train", "test")

    def build_splits(self, paths, splits):
        pairs = {"train": COLORS_TRAIN, "test": COLORS_TEST}
        return {split: [{"source": s, "target": t} for s, t in pairs[split]] for split in splits}
