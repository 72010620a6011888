"""The Hub boundary: push a trained model + lexicon + card, load them back by repo id, compare.

The Hub cannot be reached from the test machines, so these tests run the real client code (`huggingface_hub`,
`transformers`, `examples/run_lexical.py`) against `tests/hub_server.py`, a local stand-in for the few Hub endpoints
involved, with ``HF_ENDPOINT`` pointed at it and ``HF_HUB_DISABLE_XET=1`` (the stand-in speaks the plain
"regular file" commit protocol, not Xet/LFS). `huggingface_hub` reads ``HF_ENDPOINT`` once, at import time, so
pushing and loading by repo id run in fresh subprocesses (this file doubles as their script, see ``__main__``).

`test_real_hub_round_trip` does the same against the real Hub; it is skipped unless ``LEXICAL_HF_REAL_HUB_TOKEN``
holds a write token (it creates a private repo under that account, or ``LEXICAL_HF_REAL_HUB_NAMESPACE``, and
deletes it afterwards).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import torch

from hub_server import LocalHub

REPO_ROOT = Path(__file__).resolve().parents[1]
REPO_ID = "lexical-test/colors-tiny"
TOKEN = "fake-token"
TRAIN_ARGS = ["--benchmark", "colors", "--lexicon", "simple", "--seeds", "0", "--embedding_size", "16",
              "--hidden_size", "16", "--num_layers", "1", "--max_steps", "20", "--disable_tqdm", "true",
              "--report_to", "none"]
# what run_lexical.py writes into the repo folder; seeds/ and runs/ stay local
EXPECTED_FILES = {"config.json", "model.safetensors", "generation_config.json", "source_tokenizer.json",
                  "target_tokenizer.json", "tokenizer_config.json", "lexicon.json", "results.json", "results.md",
                  "README.md", "weights_sha256.json"}
REAL_HUB_TOKEN = os.environ.get("LEXICAL_HF_REAL_HUB_TOKEN")


# ---------------------------------------------------------------------------------------------------- helpers
def hub_env(endpoint: str | None, token: str, hf_home: Path) -> dict[str, str]:
    """Environment of a subprocess that talks to `endpoint` (None: the real Hub) with a clean cache."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
                        "HF_TOKEN_PATH", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT", "HF_HUB_DISABLE_XET",
                        "LEXICAL_HF_REAL_HUB_TOKEN"}}
    env.update(HF_HOME=str(hf_home), HF_TOKEN=token, HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_TELEMETRY="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])))
    if endpoint is not None:
        env.update(HF_ENDPOINT=endpoint, HF_HUB_DISABLE_XET="1",
                   NO_PROXY=",".join(filter(None, ["127.0.0.1", "localhost", env.get("NO_PROXY")])))
    return env


def run_checked(command: list[str], env: dict[str, str], timeout: int = 300) -> subprocess.CompletedProcess:
    result = subprocess.run(command, env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{command[:3]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return result


def train_and_push(output_dir: Path, repo_id: str, env: dict[str, str], private: bool = False) -> None:
    command = [sys.executable, "examples/run_lexical.py", *TRAIN_ARGS, "--output_dir", str(output_dir),
               "--push_to_hub", "true", "--hub_model_id", repo_id]
    if private:
        command += ["--hub_private_repo", "true"]
    run_checked(command, env)


def load_from_hub(repo_id: str, sources: list[str], out: Path, env: dict[str, str]) -> dict:
    """Run `load_and_generate(repo_id)` in a subprocess (fresh `HF_ENDPOINT`) and return its results."""
    (out.parent / "sources.json").write_text(json.dumps(sources))
    run_checked([sys.executable, __file__, "load", repo_id, str(out.parent / "sources.json"), str(out)], env)
    return torch.load(out, weights_only=True)


@torch.no_grad()
def load_and_generate(model_id: str, sources: list[str]) -> dict:
    """Everything a user would load from `model_id` (a Hub repo id or a local folder), and greedy generations."""
    import lexical_hf  # noqa: F401  (registers the Auto classes)
    from huggingface_hub import ModelCard
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    from transformers.utils.hub import cached_file

    model = AutoModelForSeq2SeqLM.from_pretrained(model_id).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_id)
    lexicon = lexical_hf.Lexicon.from_pretrained(model_id)
    card = ModelCard.load(Path(model_id, "README.md") if Path(model_id).is_dir() else model_id)
    batch = tokenizer(sources, padding=True, return_tensors="pt")
    generated = model.generate(**batch, num_beams=1, do_sample=False, max_new_tokens=16,
                               output_scores=True, return_dict_in_generate=True)
    return {
        "model_class": type(model).__name__,
        "tokenizer_class": type(tokenizer).__name__,
        "sequences": generated.sequences,
        "scores": torch.stack(generated.scores, dim=1),
        "predictions": tokenizer.batch_decode(generated.sequences, skip_special_tokens=True),
        "lexicon": lexicon.to_json_string(),
        "model_lexicon": model.lexicon.to_json_string() if model.lexicon is not None else "",
        "card_data": json.dumps(card.data.to_dict()),
        "results.json": Path(cached_file(model_id, "results.json")).read_text(encoding="utf-8"),
        "README.md": Path(cached_file(model_id, "README.md")).read_text(encoding="utf-8"),
    }


def colors_test_sources(cache_dir: Path) -> list[str]:
    from lexical_hf.data import load_benchmark

    return list(load_benchmark("colors", cache_dir=cache_dir)["test"]["source"])


# ---------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def hub():
    with LocalHub() as server:  # 127.0.0.1 on a free port; stopped when the module's tests are done
        yield server


@pytest.fixture(scope="module")
def pushed(hub, tmp_path_factory):
    """Train a tiny Colors model and push it with `run_lexical.py --push_to_hub` through the stand-in."""
    root = tmp_path_factory.mktemp("hub")
    output_dir = root / "colors-tiny"
    env = hub_env(hub.endpoint, TOKEN, root / "hf_home_push")
    train_and_push(output_dir, REPO_ID, env)
    return output_dir


@pytest.fixture(scope="module")
def loaded(hub, pushed, tmp_path_factory):
    """What loading by repo id through the stand-in gives, next to what the local folder gives."""
    root = tmp_path_factory.mktemp("load")
    sources = colors_test_sources(root / "datasets")
    remote = load_from_hub(REPO_ID, sources, root / "remote.pt", hub_env(hub.endpoint, TOKEN, root / "hf_home_load"))
    return remote, load_and_generate(str(pushed), sources)


# ---------------------------------------------------------------------------------------------------- tests
def test_run_lexical_pushes_the_repo_folder(hub, pushed):
    files = hub.files(REPO_ID)
    assert set(files) == EXPECTED_FILES | {".gitattributes"}  # .gitattributes: the Hub's initial commit
    assert not any(path.startswith(("seeds/", "runs/")) for path in files)
    for name in EXPECTED_FILES:
        assert files[name] == (pushed / name).read_bytes(), name
    assert hub.commit_messages(REPO_ID)[-1].startswith("lexical_hf ")
    assert hub.tokens == {TOKEN}  # --push_to_hub authenticated with HF_TOKEN
    assert hub.unhandled == []
    assert not any("/info/lfs/" in path for _, path in hub.requests)  # every file went inline, no LFS


def test_model_loaded_by_repo_id_generates_like_the_local_folder(hub, loaded):
    remote, local = loaded
    assert remote["model_class"] == "LexicalSeq2SeqForConditionalGeneration"
    assert remote["tokenizer_class"] == local["tokenizer_class"] == "LexicalTokenizer"
    assert remote["predictions"] == local["predictions"]
    assert torch.equal(remote["sequences"], local["sequences"])
    torch.testing.assert_close(remote["scores"], local["scores"], rtol=1e-5, atol=1e-6)  # another process
    assert remote["lexicon"] == local["lexicon"]  # Lexicon.from_pretrained(repo_id)
    assert hub.unhandled == []  # transformers asked for nothing the stand-in does not implement
    downloads = {path for method, path in hub.requests if method == "GET" and "/resolve/" in path}
    assert any(path.endswith("/model.safetensors") for path in downloads)


def test_downloaded_results_and_card_match_the_local_files(pushed, loaded):
    remote, _ = loaded
    assert remote["results.json"] == (pushed / "results.json").read_text(encoding="utf-8")
    assert remote["README.md"] == (pushed / "README.md").read_text(encoding="utf-8")
    card = json.loads(remote["card_data"])  # huggingface_hub.ModelCard.load(repo_id).data
    assert card["library_name"] == "transformers" and card["license"] == "mit"
    assert "lexical_hf" in card["tags"]
    (entry,) = card["model-index"]
    assert entry["results"] and entry["results"][0]["metrics"][0]["type"] == "exact_match"


def test_pushed_card_names_the_hub_repo(loaded):
    remote, _ = loaded
    assert f'from_pretrained("{REPO_ID}")' in remote["README.md"]


def test_model_loaded_by_repo_id_carries_its_lexicon(loaded):
    remote, local = loaded
    assert local["model_lexicon"] and remote["model_lexicon"] == local["model_lexicon"]


def test_evaluate_by_repo_id_reproduces_the_pushed_metrics(hub, pushed, tmp_path):
    env = hub_env(hub.endpoint, TOKEN, tmp_path / "hf_home_evaluate")
    result = run_checked([sys.executable, "-m", "lexical_hf.cli", "evaluate", REPO_ID], env)
    assert "reproduced: largest difference 0.00e+00" in result.stdout, result.stdout


def test_lexicon_push_to_hub_round_trip(hub, tmp_path, monkeypatch):
    """`Lexicon.push_to_hub` then `Lexicon.from_pretrained(repo_id)`, in this process.

    Setting ``HF_ENDPOINT`` now would come too late (huggingface_hub read it at import), so the two constants it
    sets are patched instead; `HfApi()` and `hf_hub_download` read them at call time."""
    from huggingface_hub import constants
    from huggingface_hub.errors import RemoteEntryNotFoundError, RepositoryNotFoundError

    from lexical_hf import Lexicon

    monkeypatch.setattr(constants, "ENDPOINT", hub.endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    # the client caches the stand-in's (empty) agent registry under HF_HOME: keep it out of the user's HF_HOME
    monkeypatch.setattr(constants, "AGENT_HARNESSES_PATH", str(tmp_path / "agent_harnesses.json"), raising=False)
    repo_id = "lexical-test/lexicon-only"
    first = Lexicon({"dax": {"RED": 3, "BLUE": 1}, "lug": {"BLUE": 2}}, method="simple", provenance={"dataset": "colors"})
    second = Lexicon({"dax": {"RED": 5}}, method="custom")
    load = dict(token=TOKEN, cache_dir=tmp_path / "cache")

    first_commit = first.push_to_hub(repo_id, token=TOKEN)
    assert hub.files(repo_id)["lexicon.json"] == first.to_json_string().encode()
    assert Lexicon.from_pretrained(repo_id, **load) == first
    assert first.push_to_hub(repo_id, token=TOKEN).oid == first_commit.oid  # unchanged: no new commit
    second.push_to_hub(repo_id, token=TOKEN, commit_message="second lexicon")
    assert hub.commit_messages(repo_id)[-1] == "second lexicon"
    assert Lexicon.from_pretrained(repo_id, **load) == second
    assert Lexicon.from_pretrained(repo_id, revision=first_commit.oid, **load) == first  # pinned revision
    with pytest.raises(RepositoryNotFoundError):
        Lexicon.from_pretrained("lexical-test/no-such-repo", **load)
    with pytest.raises(RemoteEntryNotFoundError):
        Lexicon.from_pretrained(repo_id, subfolder="nested", **load)
    first.push_to_hub("lexical-test/private-lexicon", token=TOKEN, private=True)
    assert Lexicon.from_pretrained("lexical-test/private-lexicon", **load) == first
    with pytest.raises(RepositoryNotFoundError):  # private: invisible without a token
        Lexicon.from_pretrained("lexical-test/private-lexicon", token=False, cache_dir=tmp_path / "anonymous")
    assert hub.unhandled == []


@pytest.mark.skipif(not REAL_HUB_TOKEN, reason="opt-in: set LEXICAL_HF_REAL_HUB_TOKEN to a Hub write token to push a "
                                               "tiny model to a private repo on huggingface.co and load it back")
def test_real_hub_round_trip(tmp_path):
    from huggingface_hub import HfApi

    endpoint = os.environ.get("LEXICAL_HF_REAL_HUB_ENDPOINT", "https://huggingface.co")  # or a staging Hub
    api = HfApi(endpoint=endpoint, token=REAL_HUB_TOKEN)
    namespace = os.environ.get("LEXICAL_HF_REAL_HUB_NAMESPACE") or api.whoami()["name"]
    repo_id = f"{namespace}/lexical-hf-test-{uuid.uuid4().hex[:8]}"
    env = hub_env(None, REAL_HUB_TOKEN, tmp_path / "hf_home")
    env["HF_ENDPOINT"] = endpoint
    try:
        train_and_push(tmp_path / "colors-tiny", repo_id, env, private=True)
        assert api.model_info(repo_id).private
        assert EXPECTED_FILES <= set(api.list_repo_files(repo_id))
        sources = colors_test_sources(tmp_path / "datasets")
        remote = load_from_hub(repo_id, sources, tmp_path / "remote.pt", env)
        local = load_and_generate(str(tmp_path / "colors-tiny"), sources)
        assert remote["predictions"] == local["predictions"]
        torch.testing.assert_close(remote["scores"], local["scores"], rtol=1e-5, atol=1e-6)
        assert remote["lexicon"] == local["lexicon"]
        assert remote["README.md"] == (tmp_path / "colors-tiny" / "README.md").read_text(encoding="utf-8")
    finally:
        api.delete_repo(repo_id, missing_ok=True)


if __name__ == "__main__":  # python tests/test_hub.py load REPO_ID SOURCES_JSON OUT_PT  (used by load_from_hub)
    _, command, model_id, sources_json, out = sys.argv
    assert command == "load", command
    torch.save(load_and_generate(model_id, json.loads(Path(sources_json).read_text())), out)
