"""Tests of the benchmark loaders (the builders of lexical_hf.data, through load_benchmark).

Tests that need the raw-data mirror (``../shared/data`` beside the repository, or ``$LEXICAL_HF_DATA_DIR``) skip
with a reason when it is absent. Every load uses a fresh ``tmp_path`` cache.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import re
import shutil
import threading
from collections import Counter
from pathlib import Path

import datasets
import pytest

from lexical_hf.data._common import (
    ChecksumMismatchError,
    MissingDataFileError,
    RemoteFile,
    git_blob_id_of_file,
    sha256_of_file,
)
from lexical_hf.data._common import fetch_raw_file
from lexical_hf.data.cogs import COGS_FILES
from lexical_hf.data.colors import COLORS_TEST as COLORS_TEST_EMBEDDED
from lexical_hf.data.colors import COLORS_TRAIN as COLORS_TRAIN_EMBEDDED
from lexical_hf.data.eng_cmn import ENG_CMN_FILES, one_shot_flags, paper_split_order, segment_chinese, tokenize_english
from lexical_hf.data.scan import generate_scan
from lexical_hf.data import list_benchmarks, load_benchmark

MIRROR = Path(os.environ.get("LEXICAL_HF_DATA_DIR") or Path(__file__).resolve().parents[1].parent / "shared" / "data")


def mirror_or_skip(*relative_paths: str) -> Path:
    """The mirror root, or skip the test when the mirror (or one of the named files) is missing."""
    if not MIRROR.is_dir():
        pytest.skip(f"raw-data mirror not found at {MIRROR} (set LEXICAL_HF_DATA_DIR)")
    for relative in relative_paths:
        if not (MIRROR / relative).is_file():
            pytest.skip(f"{relative} not found in the mirror {MIRROR}")
    return MIRROR


@pytest.fixture(autouse=True)
def no_mirror_from_environment(monkeypatch):
    """Tests pass data_dir explicitly; an inherited LEXICAL_HF_DATA_DIR must not leak into 'no mirror' tests."""
    monkeypatch.delenv("LEXICAL_HF_DATA_DIR", raising=False)


def copy_into_mirror(tmp_mirror: Path, relative: str, content: bytes | None = None) -> Path:
    """Put a file into a temporary mirror: a copy of the real mirror's file, or the given bytes."""
    target = tmp_mirror / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        shutil.copyfile(MIRROR / relative, target)
    else:
        target.write_bytes(content)
    return target


def sizes(dataset_dict: datasets.DatasetDict) -> dict[str, int]:
    return {split: len(dataset) for split, dataset in dataset_dict.items()}


# ----------------------------------------------------------------------------------------------------------------
# catalogue and argument errors
# ----------------------------------------------------------------------------------------------------------------


def test_list_benchmarks_names_every_config():
    catalogue = list_benchmarks()
    assert set(catalogue) == {"colors", "scan", "cogs", "eng_cmn", "transduction"}
    assert catalogue["colors"]["configs"] == ["default"]
    assert {"simple", "addprim_jump", "addprim_turn_left", "template_around_right", "length"} <= set(
        catalogue["scan"]["configs"]
    )
    assert catalogue["cogs"]["configs"] == ["paper", "current"]
    assert catalogue["cogs"]["default_splits"]["paper"] == ["train", "validation", "test", "gen"]
    assert catalogue["eng_cmn"]["configs"] == ["paper", "raw"]


def test_bad_names_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown benchmark 'mnist'"):
        load_benchmark("mnist", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="unknown config 'nope'.*addprim_jump"):
        load_benchmark("scan", "nope", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="choose a config"):
        load_benchmark("scan", cache_dir=tmp_path)
    with pytest.raises(ValueError, match=r"unknown or no splits \['dev'\]"):
        load_benchmark("cogs", splits=["dev"], cache_dir=tmp_path)
    with pytest.raises(ValueError, match="already has a 'validation' split"):
        load_benchmark("cogs", splits=["train"], validation_fraction=0.01, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="does not read"):
        load_benchmark("colors", checksum_overrides={"COGS/gen.tsv": "0" * 64}, cache_dir=tmp_path)


# ----------------------------------------------------------------------------------------------------------------
# Colors
# ----------------------------------------------------------------------------------------------------------------

COLORS_TRAIN = """dax→RED; lug→BLUE; wif→GREEN; zup→YELLOW; lug fep→BLUE BLUE BLUE; dax fep→RED RED RED;
lug blicket wif→BLUE GREEN BLUE; wif blicket dax→GREEN RED GREEN; lug kiki wif→GREEN BLUE; dax kiki lug→BLUE RED;
lug fep kiki wif→GREEN BLUE BLUE BLUE; wif kiki dax blicket lug→RED BLUE RED GREEN;
lug kiki wif fep→GREEN GREEN GREEN BLUE; wif blicket dax kiki lug→BLUE GREEN RED GREEN"""
COLORS_TEST = """zup fep→YELLOW YELLOW YELLOW; zup blicket lug→YELLOW BLUE YELLOW; dax blicket zup→RED YELLOW RED;
zup kiki dax→RED YELLOW; wif kiki zup→YELLOW GREEN; zup fep kiki lug→BLUE YELLOW YELLOW YELLOW;
wif kiki zup fep→YELLOW YELLOW YELLOW GREEN; lug kiki wif blicket zup→GREEN YELLOW GREEN BLUE;
zup blicket wif kiki dax fep→RED RED RED YELLOW GREEN YELLOW;
zup blicket zup kiki zup fep→YELLOW YELLOW YELLOW YELLOW YELLOW YELLOW"""


def parse_issue_listing(text: str) -> list[dict]:
    """The issue's 'source→target; …' listing as rows."""
    pairs = [item.strip().split("→") for item in text.replace("\n", " ").split(";")]
    return [{"source": source.strip(), "target": target.strip()} for source, target in pairs]


def test_colors_is_exactly_the_listed_data_and_needs_no_files(tmp_path):
    colors = load_benchmark("colors", cache_dir=tmp_path, allow_download=False)
    assert sizes(colors) == {"train": 14, "test": 10}
    assert colors["train"].to_list() == parse_issue_listing(COLORS_TRAIN)
    assert colors["test"].to_list() == parse_issue_listing(COLORS_TEST)


def test_colors_matches_the_paper_repository_files():
    mirror = mirror_or_skip("COLOR/train.tsv", "COLOR/test.tsv")
    for name, embedded in (("train", COLORS_TRAIN_EMBEDDED), ("test", COLORS_TEST_EMBEDDED)):
        rows = [line.split("\t") for line in (mirror / f"COLOR/{name}.tsv").read_text().splitlines()]
        assert [(" ".join(s.split()), " ".join(t.split())) for s, t in rows] == list(embedded)


# ----------------------------------------------------------------------------------------------------------------
# SCAN
# ----------------------------------------------------------------------------------------------------------------

SCAN_SIZES = {
    "simple": (16_728, 4_182),
    "addprim_jump": (14_670, 7_706),
    "addprim_turn_left": (21_890, 1_208),
    "template_around_right": (15_225, 4_476),
    "template_opposite_right": (15_225, 4_476),
    "template_right": (15_225, 4_476),
    "template_jump_around_right": (18_528, 1_173),
    "length": (16_990, 3_920),
}


def test_scan_grammar_semantics():
    pairs = dict(generate_scan())
    assert len(pairs) == 20_910  # all distinct
    assert pairs["jump"] == "I_JUMP"
    assert pairs["walk left"] == "I_TURN_LEFT I_WALK"
    assert pairs["run opposite right"] == "I_TURN_RIGHT I_TURN_RIGHT I_RUN"
    assert pairs["look around left"] == " ".join(["I_TURN_LEFT I_LOOK"] * 4)
    assert pairs["turn left"] == "I_TURN_LEFT"
    assert pairs["turn opposite left"] == "I_TURN_LEFT I_TURN_LEFT"
    assert pairs["turn around right"] == " ".join(["I_TURN_RIGHT"] * 4)
    assert pairs["jump thrice"] == "I_JUMP I_JUMP I_JUMP"
    assert pairs["walk and jump left"] == "I_WALK I_TURN_LEFT I_JUMP"
    assert pairs["walk twice after jump left"] == "I_TURN_LEFT I_JUMP I_WALK I_WALK"
    assert "walk around left twice and turn opposite right thrice" in pairs


@pytest.mark.parametrize("config", sorted(SCAN_SIZES))
def test_scan_split_sizes(config, tmp_path):
    scan = load_benchmark("scan", config, cache_dir=tmp_path, allow_download=False)
    train_size, test_size = SCAN_SIZES[config]
    assert sizes(scan) == {"train": train_size, "test": test_size}
    assert scan["train"].column_names == ["source", "target"]


def test_scan_split_contents_follow_their_rules(tmp_path):
    jump = load_benchmark("scan", "addprim_jump", cache_dir=tmp_path)
    train_sources = Counter(jump["train"]["source"])
    assert train_sources["jump"] == 1_467
    assert not any("jump" in source.split() for source in train_sources if source != "jump")
    assert all("jump" in source.split() for source in jump["test"]["source"])
    around = load_benchmark("scan", "template_around_right", cache_dir=tmp_path)
    assert not any("around right" in source for source in around["train"]["source"])
    assert not any("turn around right" in source for source in around["test"]["source"])
    length = load_benchmark("scan", "length", cache_dir=tmp_path)
    assert max(len(t.split()) for t in length["train"]["target"]) == 22
    assert min(len(t.split()) for t in length["test"]["target"]) == 24


def read_canonical_scan(path: Path) -> Counter:
    pattern = re.compile(r"^IN: (.*) OUT: (.*)$")
    rows = []
    for line in path.read_text().splitlines():
        match = pattern.match(line)
        assert match, f"{path}: unexpected line {line!r}"
        rows.append(match.groups())
    return Counter(rows)


def test_scan_generated_equals_canonical_files(tmp_path):
    files = {
        ("tasks", None): "SCAN/tasks.txt",
        ("addprim_jump", "train"): "SCAN/add_prim_split/tasks_train_addprim_jump.txt",
        ("addprim_jump", "test"): "SCAN/add_prim_split/tasks_test_addprim_jump.txt",
        ("template_around_right", "train"): "SCAN/template_split/tasks_train_template_around_right.txt",
        ("template_around_right", "test"): "SCAN/template_split/tasks_test_template_around_right.txt",
    }
    mirror = mirror_or_skip(*files.values())
    assert Counter(generate_scan()) == read_canonical_scan(mirror / files[("tasks", None)])
    for (config, split), relative in files.items():
        if split is None:
            continue
        generated = load_benchmark("scan", config, cache_dir=tmp_path)[split]
        assert Counter(zip(generated["source"], generated["target"])) == read_canonical_scan(mirror / relative), (
            f"{config}/{split} differs from {relative}"
        )


def test_scan_validation_is_a_seeded_one_percent_of_train(tmp_path):
    full = load_benchmark("scan", "addprim_jump", cache_dir=tmp_path)
    held = load_benchmark("scan", "addprim_jump", cache_dir=tmp_path, validation_fraction=0.01, seed=3)
    assert sizes(held) == {"train": 14_670 - 146, "validation": 146, "test": 7_706}  # floor(146.7), as the paper
    union = Counter(held["train"]["source"]) + Counter(held["validation"]["source"])
    assert union == Counter(full["train"]["source"])
    again = load_benchmark("scan", "addprim_jump", cache_dir=tmp_path / "other", validation_fraction=0.01, seed=3)
    assert again["validation"]["source"] == held["validation"]["source"]
    other_seed = load_benchmark("scan", "addprim_jump", cache_dir=tmp_path, validation_fraction=0.01, seed=4)
    assert other_seed["validation"]["source"] != held["validation"]["source"]


# ----------------------------------------------------------------------------------------------------------------
# COGS
# ----------------------------------------------------------------------------------------------------------------

COGS_BASE = ("COGS/train.tsv", "COGS/dev.tsv", "COGS/test.tsv")


def test_cogs_from_mirror_sizes_and_columns(tmp_path):
    mirror = mirror_or_skip(*COGS_BASE)
    cogs = load_benchmark("cogs", data_dir=mirror, cache_dir=tmp_path, splits=["train", "validation", "test"])
    assert sizes(cogs) == {"train": 24_155, "validation": 3_000, "test": 3_000}
    assert cogs["train"].column_names == ["source", "target", "category"]
    assert cogs["train"][0] == {
        "source": "A rose was helped by a dog .",
        "target": "rose ( x _ 1 ) AND help . theme ( x _ 3 , x _ 1 ) AND help . agent ( x _ 3 , x _ 6 ) "
        "AND dog ( x _ 6 )",
        "category": "in_distribution",
    }
    assert set(cogs["test"]["category"]) == {"in_distribution"}


def test_cogs_gen_missing_is_a_clear_error(tmp_path):
    mirror = mirror_or_skip(*COGS_BASE)
    if (mirror / "COGS/gen.tsv").exists():
        pytest.skip("this mirror has COGS/gen.tsv")
    with pytest.raises(MissingDataFileError) as error:
        load_benchmark("cogs", data_dir=mirror, cache_dir=tmp_path, allow_download=False)
    message = str(error.value)
    assert "COGS/gen.tsv" in message and COGS_FILES["gen_paper"].url in message
    assert "dd70680b94252c4ae52ba54de85245a9c6cc1bc9" in message


def test_a_missing_file_names_the_splits_that_can_be_built_without_it(tmp_path):
    """Without gen.tsv the default COGS load fails, and says which splits=[...] load without it (no mirror needed:
    stand-in files accepted by checksum overrides)."""
    mirror = tmp_path / "mirror"
    overrides = {}
    for name in ("train", "dev", "test"):
        path = copy_into_mirror(mirror, f"COGS/{name}.tsv", b"A cat smiled .\t* cat ( x _ 1 ) ; smile . agent ( x _ 2 , x _ 1 )\tin_distribution\n")
        overrides[f"COGS/{name}.tsv"] = sha256_of_file(path)
    with pytest.raises(MissingDataFileError, match=re.escape("splits=['train', 'validation', 'test']")):
        load_benchmark("cogs", data_dir=mirror, cache_dir=tmp_path / "cache", allow_download=False,
                       checksum_overrides=overrides)
    cogs = load_benchmark("cogs", data_dir=mirror, cache_dir=tmp_path / "cache", allow_download=False,
                          checksum_overrides=overrides, splits=["train", "validation", "test"])
    assert sizes(cogs) == {"train": 1, "validation": 1, "test": 1}
    # a file every requested split needs gets no such hint
    with pytest.raises(MissingDataFileError) as error:
        load_benchmark("cogs", splits=["gen"], data_dir=mirror, cache_dir=tmp_path / "cache", allow_download=False)
    assert "splits=" not in str(error.value)


def test_missing_file_and_failed_download_name_the_url(tmp_path, monkeypatch):
    # offline mode makes the download attempt fail deterministically, with or without network
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    with pytest.raises(MissingDataFileError, match=re.escape(COGS_FILES["dev"].url)):
        load_benchmark("cogs", splits=["validation"], cache_dir=tmp_path)
    empty_mirror = tmp_path / "mirror"
    empty_mirror.mkdir()
    with pytest.raises(MissingDataFileError, match=r"COGS/dev.tsv is not in the mirror"):
        load_benchmark("cogs", splits=["validation"], data_dir=empty_mirror, cache_dir=tmp_path)
    with pytest.raises(MissingDataFileError, match="does not exist"):
        load_benchmark("cogs", splits=["validation"], data_dir=tmp_path / "no_such_dir", cache_dir=tmp_path)


def synthetic_gen_tsv(rows: int = 12) -> bytes:
    categories = ["subj_to_obj_common", "obj_pp_to_subj_pp", "cp_recursion", "pp_recursion", "prim_to_inf_arg"]
    lines = [
        f"The cat {i} smiled .\t* cat ( x _ 1 ) ; smile . agent ( x _ 2 , x _ 1 ) {i}\t{categories[i % 5]}"
        for i in range(rows)
    ]
    return ("\n".join(lines) + "\n").encode()


def test_cogs_gen_accepts_a_stand_in_only_with_a_checksum_override(tmp_path):
    mirror = tmp_path / "mirror"
    gen = copy_into_mirror(mirror, "COGS/gen.tsv", synthetic_gen_tsv())
    with pytest.raises(ChecksumMismatchError, match="COGS/gen.tsv.*git blob id"):
        load_benchmark("cogs", splits=["gen"], data_dir=mirror, cache_dir=tmp_path / "cache")
    override = {"COGS/gen.tsv": sha256_of_file(gen)}
    cogs = load_benchmark("cogs", splits=["gen"], data_dir=mirror, cache_dir=tmp_path / "cache",
                          checksum_overrides=override)
    assert sizes(cogs) == {"gen": 12}
    assert cogs["gen"][1]["category"] == "obj_pp_to_subj_pp"
    # the dataset built with the override is not served from the cache to a load without it
    with pytest.raises(ChecksumMismatchError, match="COGS/gen.tsv"):
        load_benchmark("cogs", splits=["gen"], data_dir=mirror, cache_dir=tmp_path / "cache")
    # the `current` config reads its own file, which is absent
    with pytest.raises(MissingDataFileError, match="COGS/gen_current.tsv"):
        load_benchmark("cogs", "current", splits=["gen"], data_dir=mirror, cache_dir=tmp_path, allow_download=False)
    # an accepted stand-in without examples is a clear error, not datasets' "corresponds to no data"
    empty = copy_into_mirror(tmp_path / "empty_mirror", "COGS/gen.tsv", b"")
    with pytest.raises(ValueError, match=r"split\(s\) \['gen'\] have no examples"):
        load_benchmark("cogs", splits=["gen"], data_dir=tmp_path / "empty_mirror", cache_dir=tmp_path / "cache",
                       checksum_overrides={"COGS/gen.tsv": sha256_of_file(empty)})


def test_changed_raw_file_never_serves_a_stale_cache(tmp_path):
    mirror, cache = tmp_path / "mirror", tmp_path / "cache"
    gen = copy_into_mirror(mirror, "COGS/gen.tsv", synthetic_gen_tsv(12))
    first = load_benchmark("cogs", splits=["gen"], data_dir=mirror, cache_dir=cache,
                           checksum_overrides={"COGS/gen.tsv": sha256_of_file(gen)})
    assert len(first["gen"]) == 12
    gen.write_bytes(synthetic_gen_tsv(7))
    second = load_benchmark("cogs", splits=["gen"], data_dir=mirror, cache_dir=cache,
                            checksum_overrides={"COGS/gen.tsv": sha256_of_file(gen)})
    assert len(second["gen"]) == 7
    # same cache, file changed again but the override was not updated: rejected, not served from cache
    gen.write_bytes(synthetic_gen_tsv(5))
    with pytest.raises(ChecksumMismatchError):
        load_benchmark("cogs", splits=["gen"], data_dir=mirror, cache_dir=cache,
                       checksum_overrides={"COGS/gen.tsv": hashlib.sha256(synthetic_gen_tsv(7)).hexdigest()})


@pytest.mark.parametrize("damage", ["truncated", "one byte changed"])
def test_bad_mirror_file_is_a_clear_error_naming_the_file(tmp_path, damage):
    mirror_or_skip("COGS/dev.tsv")
    mirror, cache = tmp_path / "mirror", tmp_path / "cache"
    dev = copy_into_mirror(mirror, "COGS/dev.tsv")
    # prepare a good cache first: the damaged file must not be served from it either
    assert len(load_benchmark("cogs", splits=["validation"], data_dir=mirror, cache_dir=cache)["validation"]) == 3000
    data = dev.read_bytes()
    dev.write_bytes(data[: len(data) // 2] if damage == "truncated" else data[:100] + b"X" + data[101:])
    with pytest.raises(ChecksumMismatchError) as error:
        load_benchmark("cogs", splits=["validation"], data_dir=mirror, cache_dir=cache)
    message = str(error.value)
    assert "COGS/dev.tsv" in message and str(dev) in message
    assert ("truncated" in message) == (damage == "truncated")


def test_environment_variable_points_at_the_mirror(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    gen = copy_into_mirror(mirror, "COGS/gen.tsv", synthetic_gen_tsv(4))
    monkeypatch.setenv("LEXICAL_HF_DATA_DIR", str(mirror))
    cogs = load_benchmark("cogs", splits=["gen"], cache_dir=tmp_path / "cache", allow_download=False,
                          checksum_overrides={"COGS/gen.tsv": sha256_of_file(gen)})
    assert len(cogs["gen"]) == 4


@pytest.fixture
def local_http_server(tmp_path):
    """A real HTTP server on 127.0.0.1 serving tmp_path/served (stands in for raw.githubusercontent.com)."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_is_verified_before_it_is_cached(tmp_path, local_http_server, monkeypatch):
    served, base_url = local_http_server
    content = synthetic_gen_tsv(6)
    remote = RemoteFile("COGS/gen.tsv", f"{base_url}/gen.tsv", sha256=hashlib.sha256(content).hexdigest())
    downloads = tmp_path / "downloads"
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)  # whatever the caller's environment says

    (served / "gen.tsv").write_bytes(content[:-10])  # a truncated response
    with pytest.raises(ChecksumMismatchError, match=re.escape(remote.url)):
        fetch_raw_file(remote, mirror_dir=None, download_dir=downloads)
    assert not any(path.is_file() for path in downloads.rglob("*"))  # nothing bad was kept

    (served / "gen.tsv").write_bytes(content)
    path = fetch_raw_file(remote, mirror_dir=None, download_dir=downloads)
    assert path.read_bytes() == content and path.parent.name == remote.sha256
    (served / "gen.tsv").unlink()  # a second fetch uses the verified cached copy
    assert fetch_raw_file(remote, mirror_dir=None, download_dir=downloads) == path
    # reading that copy is not a download: downloads off, or offline, still find it (stock datasets/hub behaviour)
    assert fetch_raw_file(remote, mirror_dir=None, download_dir=downloads, allow_download=False) == path
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    assert fetch_raw_file(remote, mirror_dir=None, download_dir=downloads) == path
    path.write_bytes(content[:-1])  # and it is verified again before it is used
    with pytest.raises(ChecksumMismatchError):
        fetch_raw_file(remote, mirror_dir=None, download_dir=downloads, allow_download=False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    with pytest.raises(MissingDataFileError, match="HTTPError"):
        fetch_raw_file(RemoteFile("x.tsv", f"{base_url}/missing.tsv", sha256="0" * 64),
                       mirror_dir=None, download_dir=downloads)


def test_git_blob_id_matches_git(tmp_path):
    path = tmp_path / "hello.txt"
    path.write_bytes(b"hello\n")
    assert git_blob_id_of_file(path) == "ce013625030ba8dba906f756967f9e9ca394464a"  # `git hash-object hello.txt`


def test_mirror_checksums_match_the_pinned_table():
    mirror = mirror_or_skip(*COGS_BASE)
    for remote in [*COGS_FILES.values(), *ENG_CMN_FILES.values()]:
        local = mirror / remote.mirror_path
        if not local.is_file():
            continue
        if remote.sha256:
            assert sha256_of_file(local) == remote.sha256, remote.mirror_path
        assert git_blob_id_of_file(local) == remote.git_blob, remote.mirror_path


# ----------------------------------------------------------------------------------------------------------------
# English–Chinese
# ----------------------------------------------------------------------------------------------------------------

ENG_CMN_PAPER = tuple(f"TRANSLATE/cmn.txt_{split}_tokenized.tsv" for split in ("train", "dev", "test"))


def test_eng_cmn_paper_split_sizes_and_one_shot(tmp_path):
    mirror = mirror_or_skip(*ENG_CMN_PAPER)
    translate = load_benchmark("translate", data_dir=mirror, cache_dir=tmp_path)
    assert sizes(translate) == {"train": 19_222, "validation": 2_402, "test": 2_402}
    assert translate["test"].column_names == ["source", "target", "one_shot"]
    assert sum(translate["test"]["one_shot"]) == 223
    assert translate["test"][0] == {"source": "Call me when you get settled in .",
                                    "target": "你 安 頓好 就 打 電話 給 我 .", "one_shot": False}
    assert not any("  " in text for text in translate["train"]["target"])  # runs of spaces collapsed


def test_one_shot_flags_count_tokens_not_sentences():
    train = ["a b", "b c c"]  # counts: a 1, b 2, c 2
    assert one_shot_flags(train, ["a x", "b c", "x y", "c a"]) == [True, False, False, True]


RAW_SAMPLE = [
    ("Hi.", "你好。", "CC-BY 2.0 (France) Attribution: tatoeba.org #1 (a) & #2 (b)"),
    ("I can't swim.", "我不会游泳。", "CC-BY 2.0 (France) Attribution: tatoeba.org #3 (a) & #4 (b)"),
    ("He's a self-made man.", "他是个白手起家的人。", "CC-BY 2.0 (France) Attribution: tatoeba.org #5 (a) & #6 (b)"),
    ("Tom won't come.", "汤姆不会来。", "CC-BY 2.0 (France) Attribution: tatoeba.org #7 (a) & #8 (b)"),
    ("I'm tired, so I'll sleep.", "我累了，所以我要睡觉。", "CC-BY 2.0 (France) Attribution: tatoeba.org #9 (a)"),
] + [(f"I have {n} cats.", f"我有{n}只猫。", f"CC-BY 2.0 (France) Attribution: #{n}") for n in range(10, 25)]


def test_eng_cmn_raw_config_on_a_small_sample(tmp_path):
    mirror = tmp_path / "mirror"
    raw = copy_into_mirror(mirror, "TRANSLATE/cmn.txt",
                           "".join("\t".join(row) + "\n" for row in RAW_SAMPLE).encode("utf-8"))
    with pytest.raises(ChecksumMismatchError, match="TRANSLATE/cmn.txt"):
        load_benchmark("eng_cmn", "raw", data_dir=mirror, cache_dir=tmp_path / "cache")
    translate = load_benchmark("eng_cmn", "raw", data_dir=mirror, cache_dir=tmp_path / "cache",
                               checksum_overrides={"TRANSLATE/cmn.txt": sha256_of_file(raw)})
    assert sizes(translate) == {"train": 16, "validation": 2, "test": 2}  # 20 pairs: 80/10/10
    assert translate["train"].column_names == ["source", "target", "one_shot", "attribution"]
    rows = {row["attribution"]: row for split in translate.values() for row in split}
    assert rows[RAW_SAMPLE[1][2]]["source"] == "I can not swim ."
    assert rows[RAW_SAMPLE[2][2]]["source"] == "He is a self @-@ made man ."  # the paper's rewrite rules, verbatim
    assert rows[RAW_SAMPLE[3][2]]["source"] == "Tom will not come ."
    assert rows[RAW_SAMPLE[4][2]]["source"] == "I am tired , so I will sleep ."
    assert rows[RAW_SAMPLE[4][2]]["target"].split()[-1] == "."
    assert "，" not in rows[RAW_SAMPLE[4][2]]["target"] and "," in rows[RAW_SAMPLE[4][2]]["target"].split()
    order = paper_split_order(len(RAW_SAMPLE))
    assert [row["attribution"] for row in translate["test"]] == [RAW_SAMPLE[i][2] for i in order["test"]]


def test_raw_preprocessing_reproduces_the_paper_files():
    """cmn.txt tokenized like the raw config equals the paper's tokenized lines at the same shuffled positions.

    English is checked on every line (Moses is fast); Chinese on 101 lines spread over the file, because
    jieba.posseg needs about a minute for all of them. (The full raw build was checked once to match all 24,026.)
    """
    mirror = mirror_or_skip("TRANSLATE/cmn.txt", "TRANSLATE/cmn.tsv")
    raw_lines = (mirror / "TRANSLATE/cmn.txt").read_text(encoding="utf-8").splitlines()
    paper_lines = (mirror / "TRANSLATE/cmn.tsv").read_text(encoding="utf-8").splitlines()  # train+dev+test
    order = paper_split_order(len(raw_lines))
    shuffled = order["train"] + order["validation"] + order["test"]  # cmn.tsv line j is raw line shuffled[j]
    assert len(paper_lines) == len(raw_lines) == 24_026
    raw_pairs = [raw_lines[i].split("\t") for i in shuffled]
    paper_pairs = [line.split("\t") for line in paper_lines]
    english_mismatches = [
        j for j, ((english, _, _), (paper_english, _)) in enumerate(zip(raw_pairs, paper_pairs))
        if tokenize_english(english) != " ".join(paper_english.split())
    ]
    assert english_mismatches == []
    for j in range(0, len(paper_pairs), 240):
        assert segment_chinese(raw_pairs[j][1]) == " ".join(paper_pairs[j][1].split()), j


def test_the_raw_eng_cmn_cache_is_keyed_on_the_tokenizer_versions(tmp_path, monkeypatch):
    """The raw recipe's sentences are what sacremoses and jieba make of them: an upgrade must build again, not serve
    the old tokenization from the cache."""
    import importlib.metadata

    from lexical_hf.data.eng_cmn import EngCmn

    def cache_key(versions):
        monkeypatch.setattr(importlib.metadata, "version", lambda package: versions[package])
        return EngCmn("raw", cache_dir=tmp_path).hash

    before = cache_key({"sacremoses": "0.1.1", "jieba": "0.42.1"})
    assert cache_key({"sacremoses": "0.1.1", "jieba": "0.42.1"}) == before
    assert cache_key({"sacremoses": "0.1.1", "jieba": "0.42.2"}) != before
    assert cache_key({"sacremoses": "0.1.2", "jieba": "0.42.1"}) != before


def test_a_damaged_cache_says_how_to_rebuild_it(tmp_path):
    load_benchmark("colors", cache_dir=tmp_path)
    (arrow,) = tmp_path.rglob("*test*.arrow")
    arrow.unlink()
    with pytest.raises(OSError, match="force_rebuild=True"):
        load_benchmark("colors", cache_dir=tmp_path)
    assert sizes(load_benchmark("colors", cache_dir=tmp_path, force_rebuild=True)) == {"train": 14, "test": 10}


def test_only_lexical_hf_is_installed_and_same_named_packages_of_the_user_change_nothing(tmp_path):
    """`dataset_scripts/` and `model_cards/` are folders of the checkout, not installed packages: the builders live in
    `lexical_hf.data` and the card template ships as package data (`lexical_hf.model_cards`). Outside the checkout
    neither name imports, and a user's own packages of those names in the current directory (first on sys.path for
    `python -c`) are never picked up."""
    import subprocess
    import sys

    for name in ("dataset_scripts", "model_cards"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise RuntimeError('the user\'s own {name} was imported')\n")
    uses = ("import lexical_hf\n"
            "from lexical_hf.model_card import _template_path\n"
            "print(lexical_hf.load_benchmark('colors')['test'].num_rows, _template_path(None).is_file())\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", uses], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0 and result.stdout.split() == ["10", "True"], result.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in ("dataset_scripts", "model_cards"):
        imported = subprocess.run([sys.executable, "-c", f"import lexical_hf, {name}"], cwd=elsewhere, capture_output=True,
                                  text=True, timeout=300, env=env)
        assert imported.returncode != 0 and f"No module named '{name}'" in imported.stderr, imported.stderr[-2000:]
