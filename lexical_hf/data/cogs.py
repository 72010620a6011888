"""COGS (Kim & Linzen 2020): English sentences to logical forms, with a structured generalization set.

Configs
    ``paper`` (default): the data the lexical paper used — ``gen.tsv`` before upstream's 2022-09-13 fix
    (git blob ``dd70680b…``, najoungkim/COGS@6f66383).
    ``current``: najoungkim/COGS@165a7b6, whose ``gen.tsv`` (blob ``a54a3c9b…``) has the roles of 50
    ``obj_pp_to_subj_pp`` examples fixed. train/dev/test are byte-identical in both.

Splits (rows): ``train`` 24,155; ``validation`` (upstream ``dev.tsv``) 3,000; ``test`` 3,000; ``gen`` 21,000;
``train_100`` 39,500 (train with 100 exposures per primitive; not used by the paper, built only when asked for with
``splits=``). Default splits: train, validation, test, gen.

Columns: ``source`` (the sentence), ``target`` (the logical form), ``category`` (``in_distribution`` outside gen,
the generalization case in gen; ``primitive`` / ``exposure_example_*`` for some train rows).

Mirror layout (``data_dir``): ``COGS/train.tsv``, ``COGS/dev.tsv``, ``COGS/test.tsv``, ``COGS/gen.tsv`` (the paper's
version), ``COGS/gen_current.tsv`` (the fixed version), ``COGS/train_100.tsv``. Files with a known sha256 are
verified by it; ``gen`` and ``train_100`` by their git blob id.
"""

from __future__ import annotations

import datasets

from ._common import LexicalBenchmarkBuilder, LexicalBenchmarkConfig, RemoteFile, normalize_whitespace, read_tsv

_CITATION = """\
@inproceedings{kim2020cogs,
  title     = {{COGS}: A Compositional Generalization Challenge Based on Semantic Interpretation},
  author    = {Kim, Najoung and Linzen, Tal},
  booktitle = {Proceedings of the 2020 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  pages     = {9087--9105},
  year      = {2020}
}
"""

_DESCRIPTION = """\
COGS: semantic parsing of English sentences into logical forms. The generalization set (gen) tests lexical
generalization (a word seen in one syntactic role used in another) and structural generalization
(obj_pp_to_subj_pp, cp_recursion, pp_recursion); its `category` column names the case.
"""

_HOMEPAGE = "https://github.com/najoungkim/COGS"
_LICENSE = "MIT ((c) 2020 najoungkim)"

COGS_COMMIT = "165a7b669eade971fa47bf568a2e51925360fed8"  # 2022-09-13, current upstream
COGS_PAPER_GEN_COMMIT = "6f663835897945e94fd330c8cbebbdc494fbb690"  # holds the pre-fix gen.tsv the paper used
_RAW = "https://raw.githubusercontent.com/najoungkim/COGS/{commit}/data/{name}"

COGS_FILES: dict[str, RemoteFile] = {
    "train": RemoteFile(
        "COGS/train.tsv", _RAW.format(commit=COGS_COMMIT, name="train.tsv"),
        sha256="220b3804b562c0156ee986eff1bdd15c27e52142549362a64f57baf86e304c78",
        git_blob="eb101d5755415c4eea7071fb37d32ed56e610ef8", num_bytes=4_146_574,
    ),
    "dev": RemoteFile(
        "COGS/dev.tsv", _RAW.format(commit=COGS_COMMIT, name="dev.tsv"),
        sha256="ab66388a309c7ac1ad210c781a6a0ce12281a9ef24619a12422a752cef61bc21",
        git_blob="a1b43fa194defad85fe8e3bbcfbae2f6d10e56ee", num_bytes=522_121,
    ),
    "test": RemoteFile(
        "COGS/test.tsv", _RAW.format(commit=COGS_COMMIT, name="test.tsv"),
        sha256="68f8e51e9f6d9cd22d64efe68dd21d7ea5ba327e9a2359481030161aea757035",
        git_blob="0a954e9bde5089a186241f5cbf627bb7b2faef7b", num_bytes=521_111,
    ),
    "gen_paper": RemoteFile(
        "COGS/gen.tsv", _RAW.format(commit=COGS_PAPER_GEN_COMMIT, name="gen.tsv"),
        git_blob="dd70680b94252c4ae52ba54de85245a9c6cc1bc9",
    ),
    "gen_current": RemoteFile(
        "COGS/gen_current.tsv", _RAW.format(commit=COGS_COMMIT, name="gen.tsv"),
        git_blob="a54a3c9b5f46464daf9b10fc6df7133796f1f293",
    ),
    "train_100": RemoteFile(
        "COGS/train_100.tsv", _RAW.format(commit=COGS_COMMIT, name="train_100.tsv"),
        git_blob="aada7b25ed6157e8a1f517d95059ba2dec88d3f4",
    ),
}
"""Pinned raw files by key (sha256 and blob ids from the mirror's SOURCES.md)."""

STRUCTURAL_CATEGORIES = ("obj_pp_to_subj_pp", "cp_recursion", "pp_recursion")
"""gen categories that test structural generalization; all other gen categories are lexical."""

_SPLIT_FILE = {"train": "train", "validation": "dev", "test": "test", "gen": None, "train_100": "train_100"}


class Cogs(LexicalBenchmarkBuilder):
    """COGS builder; configs ``paper`` (default) and ``current`` differ only in ``gen``."""

    DATASET_NAME = "lexical_hf_cogs"
    BUILDER_CONFIGS = [
        LexicalBenchmarkConfig(
            name="paper", version=datasets.Version("1.0.0"),
            description="gen.tsv as used by the lexical paper (before upstream's 2022-09-13 fix)",
        ),
        LexicalBenchmarkConfig(
            name="current", version=datasets.Version("1.0.0"),
            description="najoungkim/COGS@165a7b6 (gen.tsv with 50 obj_pp_to_subj_pp rows fixed)",
        ),
    ]
    DEFAULT_CONFIG_NAME = "paper"

    def _info(self):
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=datasets.Features(
                {
                    "source": datasets.Value("string"),
                    "target": datasets.Value("string"),
                    "category": datasets.Value("string"),
                }
            ),
            homepage=_HOMEPAGE,
            license=_LICENSE,
            citation=_CITATION,
        )

    @classmethod
    def splits_of(cls, config_name):
        return ("train", "validation", "test", "gen", "train_100"), ("train", "validation", "test", "gen")

    @staticmethod
    def _file_key(split: str, config_name: str) -> str:
        if split == "gen":
            return "gen_paper" if config_name == "paper" else "gen_current"
        return _SPLIT_FILE[split]

    @classmethod
    def raw_files_for(cls, config_name, splits):
        return {key: COGS_FILES[key] for key in (cls._file_key(split, config_name) for split in splits)}

    def build_splits(self, paths, splits):
        result = {}
        for split in splits:
            key = self._file_key(split, self.config.name)
            rows = read_tsv(paths[key], 3, COGS_FILES[key].mirror_path)
            result[split] = [
                {"source": normalize_whitespace(s), "target": normalize_whitespace(t), "category": c}
                for s, t, c in rows
            ]
        return result
