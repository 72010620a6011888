"""English–Chinese translation on Tatoeba sentence pairs (ManyThings.org ``cmn.txt``), Section 5.4 of the paper.

Configs
    ``paper`` (default): the paper's fixed, pre-tokenized split from ekinakyurek/lexical@3956fa2
    (``TRANSLATE/cmn.txt_{train,dev,test}_tokenized.tsv``): 19,222 / 2,402 / 2,402 pairs.
    ``raw``: builds the split from the raw pairs ``TRANSLATE/cmn.txt`` with the paper's recipe
    (``translate_tokenize.py``): English contractions expanded (``can't`` -> ``can not``, ``'s`` -> `` is``, …, the
    paper's own rules, kept as they are), Moses tokenization (``sacremoses``, escaping on, aggressive dash splits),
    Chinese ``，``/``。`` turned into ``, ``/``. `` and segmented with ``jieba.posseg``; then the pairs are shuffled
    twice with ``random.Random(10)`` and cut 80/10/10 (test and validation get ``len // 10`` pairs each). Since a
    shuffle depends only on the number of items, the full ``cmn.txt`` gives the paper's split membership exactly.
    Segmenting 24k sentences with ``jieba.posseg`` takes about a minute (once; the result is cached).

Columns: ``source`` (English tokens), ``target`` (Chinese tokens), both single-space separated (runs of spaces in
the paper's files, left by its ``", "`` replacement, are collapsed); ``one_shot``: the English side has a token that
occurs exactly once in the training inputs (token count, as in the paper's ``resultdiff.py``). The paper reports
BLEU on the 223 one-shot test sentences separately. ``raw`` adds ``attribution`` (the Tatoeba sentence ids and
authors, required by CC-BY).

Licence: Tatoeba sentences via ManyThings.org, CC-BY 2.0 France; the ManyThings-edited file is stated to be
copyrighted by ManyThings.org. Keep the attribution.
"""

from __future__ import annotations

import logging
import random
import re
from collections import Counter
from collections.abc import Sequence

import datasets

from ._common import LexicalBenchmarkBuilder, LexicalBenchmarkConfig, RemoteFile, normalize_whitespace, read_tsv

_CITATION = """\
@inproceedings{akyurek2021lexicon,
  title     = {Lexicon Learning for Few Shot Sequence Modeling},
  author    = {Aky{\\"u}rek, Ekin and Andreas, Jacob},
  booktitle = {Proceedings of the 59th Annual Meeting of the Association for Computational Linguistics and the
               11th International Joint Conference on Natural Language Processing (ACL-IJCNLP)},
  pages     = {4934--4946},
  year      = {2021}
}
@misc{tatoeba,
  title        = {Tatoeba: a collection of sentences and translations},
  howpublished = {\\url{https://tatoeba.org}, English--Mandarin pairs via \\url{https://www.manythings.org/anki/}}
}
"""

_DESCRIPTION = """\
English-to-Chinese translation of short Tatoeba sentences (ManyThings.org eng-cmn pairs), as used in Section 5.4
of Akyürek & Andreas (2021). `paper`: the paper's fixed, pre-tokenized split (Moses English, jieba Chinese);
`raw`: the same split rebuilt from the raw pairs. `one_shot` flags sentences with an English token that occurs
exactly once in the training inputs (223 test sentences on the paper split; the paper reports BLEU on them).
Sentences from tatoeba.org, CC-BY 2.0 France; attribution: tatoeba.org and the sentence authors named in the
`attribution` column of the `raw` config (and in the upstream cmn.txt).
"""

_HOMEPAGE = "https://www.manythings.org/anki/"
_LICENSE = "CC-BY 2.0 France (tatoeba.org sentences via ManyThings.org; attribution required)"

LEXICAL_COMMIT = "3956fa2a2dd976d99a94e8ad9ed8d3a6f65a5c78"
_RAW = "https://raw.githubusercontent.com/ekinakyurek/lexical/{commit}/TRANSLATE/{name}"

ENG_CMN_FILES: dict[str, RemoteFile] = {
    "train": RemoteFile(
        "TRANSLATE/cmn.txt_train_tokenized.tsv", _RAW.format(commit=LEXICAL_COMMIT, name="cmn.txt_train_tokenized.tsv"),
        sha256="2fe353961739cab75bc34b8c987e64fa776eb83792adb0d94d868085b4cd4720",
        git_blob="12dcd30d9af48c466bd0b3bc1b44bd1fe9c7e5d0", num_bytes=1_308_827,
    ),
    "dev": RemoteFile(
        "TRANSLATE/cmn.txt_dev_tokenized.tsv", _RAW.format(commit=LEXICAL_COMMIT, name="cmn.txt_dev_tokenized.tsv"),
        sha256="1246a1a9b26636b35bd7b997f871c5d0a486d7709f6e66c8dbd8b4621ea87b15",
        git_blob="3f642dbbce08c6afe4af5cfa646b636de4255453", num_bytes=162_813,
    ),
    "test": RemoteFile(
        "TRANSLATE/cmn.txt_test_tokenized.tsv", _RAW.format(commit=LEXICAL_COMMIT, name="cmn.txt_test_tokenized.tsv"),
        sha256="4ef83fb2586c0a88de9182144c9cbdf03a4ffc4dd0810a69609f7484e89bf8c5",
        git_blob="ff375177a956f64e8fc39f62da5a1ee7f5f142b8", num_bytes=162_574,
    ),
    "raw": RemoteFile(
        "TRANSLATE/cmn.txt", _RAW.format(commit=LEXICAL_COMMIT, name="cmn.txt"),
        sha256="6d9734ce952db2b694ac8a6abae52b445f8dbc6a599959b0971a2bc74eec1918",
        git_blob="f9399e06081edcfad85fb21143d249baa34b6715", num_bytes=3_424_599,
    ),
}
"""Pinned raw files by key (sha256 and blob ids from the mirror's SOURCES.md)."""

PAPER_SPLIT_SEED = 10  # translate_tokenize.py: random.seed(10), then two shuffles

# The paper's English rewrites (translate_tokenize.py), applied in this order before Moses tokenization.
ENGLISH_REWRITES = (
    (r"won\'t", "will not"),
    (r"can\'t", "can not"),
    (r"(\w+)\'m", r"\g<1> am"),
    (r"(\w+)\'ll", r"\g<1> will"),
    (r"(\w+)\'d like to", r"\g<1> would like to"),
    (r"(\w+)n\'t", r"\g<1> not"),
    (r"(\w+)\'ve", r"\g<1> have"),
    (r"(\w+)\'s", r"\g<1> is"),
    (r"(\w+)\'re", r"\g<1> are"),
)
_COMPILED_REWRITES = tuple((re.compile(pattern), replacement) for pattern, replacement in ENGLISH_REWRITES)


def one_shot_flags(train_sources: Sequence[str], sources: Sequence[str]) -> list[bool]:
    """For each of ``sources``: does it contain a token that occurs exactly once in all of ``train_sources``?"""
    counts = Counter(token for source in train_sources for token in source.split())
    return [any(counts[token] == 1 for token in source.split()) for source in sources]


_moses = None


def tokenize_english(text: str) -> str:
    """The paper's English preprocessing: contraction rewrites, then Moses tokenization (``sacremoses``)."""
    global _moses
    if _moses is None:
        try:
            from sacremoses import MosesTokenizer
        except ImportError as error:
            raise ImportError("the eng_cmn `raw` config needs sacremoses: pip install 'lexical_hf[mt]'") from error
        _moses = MosesTokenizer(lang="en")
    for pattern, replacement in _COMPILED_REWRITES:
        text = pattern.sub(replacement, text)
    return " ".join(_moses.tokenize(text.strip(), escape=True, aggressive_dash_splits=True))


def segment_chinese(text: str) -> str:
    """The paper's Chinese preprocessing: ``，``/``。`` -> ``, ``/``. ``, then ``jieba.posseg`` words."""
    try:
        import jieba
        import jieba.posseg
    except ImportError as error:
        raise ImportError("the eng_cmn `raw` config needs jieba: pip install 'lexical_hf[mt]'") from error
    jieba.setLogLevel(logging.WARNING)  # jieba logs its dictionary loading at INFO
    text = text.replace("，", ", ").replace("。", ". ")
    return normalize_whitespace(" ".join(pair.word for pair in jieba.posseg.cut(text.strip())))


def paper_split_order(num_pairs: int, seed: int = PAPER_SPLIT_SEED) -> dict[str, list[int]]:
    """Indices of the raw pairs in each split, as ``translate_tokenize.py`` makes them (two seeded shuffles)."""
    order = list(range(num_pairs))
    rng = random.Random(seed)  # same stream as random.seed(seed) followed by random.shuffle
    rng.shuffle(order)
    rng.shuffle(order)
    held_out = num_pairs // 10
    train_size = num_pairs - 2 * held_out
    return {
        "train": order[:train_size],
        "validation": order[train_size : train_size + held_out],
        "test": order[train_size + held_out :],
    }


class EngCmn(LexicalBenchmarkBuilder):
    """English–Chinese Tatoeba builder; configs ``paper`` (default) and ``raw``, splits train/validation/test."""

    DATASET_NAME = "lexical_hf_eng_cmn"
    BUILDER_CONFIGS = [
        LexicalBenchmarkConfig(
            name="paper", version=datasets.Version("1.0.0"), description="the paper's fixed tokenized split"
        ),
        LexicalBenchmarkConfig(
            name="raw", version=datasets.Version("1.0.0"),
            description="split rebuilt from the raw pairs (sacremoses + jieba, seed 10)",
        ),
    ]
    DEFAULT_CONFIG_NAME = "paper"

    def _info(self):
        features = {
            "source": datasets.Value("string"),
            "target": datasets.Value("string"),
            "one_shot": datasets.Value("bool"),
        }
        if self.config.name == "raw":
            features["attribution"] = datasets.Value("string")
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=datasets.Features(features),
            homepage=_HOMEPAGE,
            license=_LICENSE,
            citation=_CITATION,
        )

    @classmethod
    def splits_of(cls, config_name):
        return ("train", "validation", "test"), ("train", "validation", "test")

    @classmethod
    def cache_key_extras(cls, config_name):
        """The raw recipe's output depends on the tokenizers' versions (and jieba's dictionary, which ships with
        it): a new version builds again instead of serving sentences tokenized by the old one."""
        if config_name != "raw":
            return {}
        from importlib.metadata import PackageNotFoundError, version

        versions = {}
        for package in ("sacremoses", "jieba"):
            try:
                versions[package] = version(package)
            except PackageNotFoundError:
                versions[package] = "not installed"  # the build itself then says how to install it
        return versions

    @classmethod
    def raw_files_for(cls, config_name, splits):
        if config_name == "raw":
            return {"raw": ENG_CMN_FILES["raw"]}
        # one_shot needs the training inputs, so train is read whichever splits are asked for
        keys = {"train"} | {"dev" if split == "validation" else split for split in splits}
        return {key: ENG_CMN_FILES[key] for key in sorted(keys)}

    def build_splits(self, paths, splits):
        if self.config.name == "raw":
            examples = self._build_raw(paths["raw"])
        else:
            examples = {
                split: [
                    {"source": normalize_whitespace(english), "target": normalize_whitespace(chinese)}
                    for english, chinese in read_tsv(paths[key], 2, ENG_CMN_FILES[key].mirror_path)
                ]
                for split, key in (("train", "train"), ("validation", "dev"), ("test", "test"))
                if split in splits or split == "train"
            }
        train_sources = [example["source"] for example in examples["train"]]
        for split_examples in examples.values():
            flags = one_shot_flags(train_sources, [example["source"] for example in split_examples])
            for example, flag in zip(split_examples, flags):
                example["one_shot"] = flag
        return {split: examples[split] for split in splits}

    def _build_raw(self, path):
        rows = read_tsv(path, 3, ENG_CMN_FILES["raw"].mirror_path)
        pairs = [
            {"source": tokenize_english(english), "target": segment_chinese(chinese), "attribution": attribution}
            for english, chinese, attribution in rows
        ]
        return {split: [pairs[i] for i in indices] for split, indices in paper_split_order(len(pairs)).items()}
