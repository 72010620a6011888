"""Turn a training folder into a complete Hub model repository (weights, tokenizer, lexicon, results, card), and push
it when asked."""

from __future__ import annotations

import json
from pathlib import Path

import lexical_hf

from ..model_card import build_model_card
from ..files import replace_atomically
from ..results import run_markdown
from .run_folder import LOCK_FILE


def write_json_atomic(path: Path, value) -> None:
    replace_atomically(path, json.dumps(value, indent=2, default=str) + "\n")


def publish_folder(output_dir: Path, first_seed: int, lexicon, results: dict, experiment_args, training_args) -> None:
    """Copy `first_seed`'s final weights and tokenizer to the top of `output_dir` and write `lexicon.json`,
    `results.json`, `results.md` and the model card `README.md` beside them; push the folder with
    ``--push_to_hub``.

    The weights are copied (not moved) from seeds/seed-K/final: runs over other seed sets can share output_dir
    (`--resume_from_checkpoint true` reads finished seeds), so the seed's own copy must survive for the next
    aggregation to publish it again. The card is rendered before anything is replaced, and every file is replaced
    atomically, so a failure leaves each file whole; a lexicon.json of an earlier run with a lexicon is removed when
    this one has none."""
    card = str(build_model_card(results, lexicon, template=experiment_args.model_card_template,
                                repo_id=training_args.hub_model_id))
    final = output_dir / "seeds" / f"seed-{first_seed}" / "final"
    if final.is_dir() and any(final.glob("*.safetensors")):
        for item in final.iterdir():
            if item.is_file() and item.name != "training_args.bin":
                replace_atomically(output_dir / item.name, copy_from=item)
    else:
        # Folders written before weights were copied hold the published seed only at the top level.
        previous = output_dir / "results.json"
        previous_seed = json.loads(previous.read_text())["seeds"][0] if previous.exists() else None
        if previous_seed != first_seed or not (output_dir / "model.safetensors").exists():
            holds = "no published weights" if previous_seed is None else f"seed {previous_seed}'s weights"
            raise FileNotFoundError(
                f"seed {first_seed}'s final weights are not in {final} and {output_dir} holds {holds}: publishing "
                f"would pair these results with other weights. Train seed {first_seed} again (remove {final.parent}) "
                "or list another finished seed first in --seeds."
            )
    if lexicon is not None:
        lexicon.save_pretrained(output_dir)
    else:
        (output_dir / "lexicon.json").unlink(missing_ok=True)
    write_json_atomic(output_dir / "results.json", results)
    replace_atomically(output_dir / "results.md", run_markdown(results))
    replace_atomically(output_dir / "README.md", card)
    if training_args.push_to_hub:
        push_folder(output_dir, results, training_args)


def push_folder(output_dir: Path, results: dict, training_args) -> None:
    """Upload `output_dir` (without the per-seed folders and logs) to ``--hub_model_id`` (default: its name)."""
    from huggingface_hub import HfApi

    repo_id = training_args.hub_model_id or output_dir.name
    api = HfApi(token=training_args.hub_token)
    try:
        api.create_repo(repo_id, private=bool(training_args.hub_private_repo), exist_ok=True)
        api.upload_folder(repo_id=repo_id, folder_path=str(output_dir),
                          ignore_patterns=["seeds/**", "runs/**", LOCK_FILE],
                          commit_message=f"lexical_hf {lexical_hf.__version__}: {results['run_name']}")
    except Exception as error:  # network, token, permissions: the trained folder is complete either way
        raise RuntimeError(
            f"pushing to {repo_id} failed ({type(error).__name__}: {error}). {output_dir} is complete; push it later "
            f"with `hf upload {repo_id} {output_dir} --exclude 'seeds/**' --exclude 'runs/**' --exclude {LOCK_FILE}`"
        ) from error
    print(f"pushed {output_dir} to {repo_id}")
