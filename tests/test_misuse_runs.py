"""Misuse of training runs, checkpoints and the model, each a silent wrong result or an unhelpful error before: now
correct or a clear error. Runs that must die at a chosen point are real processes killed with SIGKILL there."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from lexical_hf import LexicalSeq2SeqForConditionalGeneration, Lexicon
from lexical_hf.training import main, parse_arguments
from conftest import encode_batch, small_model

REPO = Path(__file__).resolve().parents[1]
TINY = ["--benchmark", "colors", "--embedding_size", "8", "--hidden_size", "8", "--num_layers", "1", "--seeds", "0",
        "--disable_tqdm", "true", "--logging_strategy", "no"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def killed_run(tmp_path: Path, argv: list[str], patch: str) -> subprocess.CompletedProcess:
    """Run the training pipeline in a new process after `patch` (Python that arranges a SIGKILL of the process at
    some point), and return the finished process: it must have died of the SIGKILL."""
    driver = tmp_path / "driver.py"
    driver.write_text("import os, signal, sys, time\nimport lexical_hf.training as training\n"
                      + textwrap.dedent(patch) + "\ntraining.main(sys.argv[1:])\n")
    result = subprocess.run([sys.executable, str(driver), *argv], capture_output=True, text=True, env=ENV, cwd=REPO,
                            timeout=300)
    assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
    return result


def seed_dir(output_dir: Path) -> Path:
    return output_dir / "seeds" / "seed-0"


# ---------------------------------------------------------------------------------------------------- run folders
def test_a_fresh_run_never_adopts_another_runs_checkpoints(tmp_path):
    """Run X leaves checkpoints; a fresh run Y with other settings into the same folder used to train beside them,
    and a resume of Y then continued from X's newest checkpoint while results.json described Y."""
    out = tmp_path / "run"
    main([*TINY, "--max_steps", "4", "--save_steps", "2", "--keep_seed_checkpoints", "true", "--output_dir", str(out)])
    assert (seed_dir(out) / "checkpoint-4").is_dir()
    with pytest.raises(ValueError, match="holds an earlier run of seed 0 .*--overwrite_output_dir true"):
        main([*TINY, "--max_steps", "2", "--learning_rate", "0.01", "--output_dir", str(out)])
    main([*TINY, "--max_steps", "2", "--learning_rate", "0.01", "--keep_seed_checkpoints", "true", "--output_dir",
          str(out), "--overwrite_output_dir", "true"])
    assert sorted(p.name for p in seed_dir(out).glob("checkpoint-*")) == ["checkpoint-2"]  # X's are gone
    results = json.loads((out / "results.json").read_text())
    assert results["training"]["learning_rate"] == 0.01 and results["per_seed"]["0"]["train_seconds"]["updates"] == 2


def test_a_second_run_into_a_folder_in_use_fails_and_a_killed_holder_leaves_no_lock(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from pathlib import Path
        from lexical_hf.training.run_folder import locked_run_folder
        with locked_run_folder(Path({str(out)!r})):
            print("locked", flush=True)
            time.sleep(300)
        """)], stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert holder.stdout.readline().strip() == "locked"
        second = subprocess.run([sys.executable, str(REPO / "examples" / "run_lexical.py"), *TINY, "--max_steps", "1",
                                 "--output_dir", str(out)], capture_output=True, text=True, env=ENV, timeout=300)
        assert second.returncode != 0 and "is in use by another training run (pid" in second.stderr
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    main([*TINY, "--max_steps", "1", "--output_dir", str(out)])  # the kernel released the dead holder's lock
    assert (out / "results.json").is_file()


# ---------------------------------------------------------------------------------------------------- resume
def test_a_seed_killed_while_decoding_the_test_split_resumes_without_training_more(tmp_path):
    """Killed after its last update (in the test decoding): the resume used to train one update more
    (checkpoint-7 of a 6-update run) and publish other weights."""
    straight, out = tmp_path / "straight", tmp_path / "killed"
    argv = [*TINY, "--max_steps", "6", "--save_steps", "3"]
    main([*argv, "--output_dir", str(straight)])
    killed_run(tmp_path, [*argv, "--output_dir", str(out)], """
        training.seeds.generate_texts = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)
    """)
    assert not (seed_dir(out) / "metrics.json").exists() and (seed_dir(out) / "checkpoint-6").is_dir()
    main([*argv, "--output_dir", str(out), "--resume_from_checkpoint", "true"])
    metrics = json.loads((seed_dir(out) / "metrics.json").read_text())
    reference = json.loads((seed_dir(straight) / "metrics.json").read_text())
    assert metrics["train_seconds"]["updates"] == 6 and metrics["test"] == reference["test"]
    assert not (seed_dir(out) / "checkpoint-7").exists()
    from safetensors.torch import load_file

    resumed, uninterrupted = load_file(out / "model.safetensors"), load_file(straight / "model.safetensors")
    assert all(torch.equal(resumed[name], uninterrupted[name]) for name in uninterrupted)


def test_a_save_killed_half_way_and_a_damaged_checkpoint_are_skipped_and_training_time_adds_up(tmp_path, caplog):
    """SIGKILL while optimizer.pt of checkpoint-6 is half written (after checkpoints 2 and 4 were saved, and after a
    first segment made slow on purpose): the resume continues from checkpoint-4, and train_seconds counts the first
    segment too (it used to record only the last one)."""
    out = tmp_path / "run"
    argv = [*TINY, "--max_steps", "8", "--save_steps", "2", "--save_total_limit", "5", "--output_dir", str(out)]
    killed_run(tmp_path, argv, """
        import torch
        from transformers import TrainerCallback
        real_save = torch.save
        def save(obj, path, *args, **kwargs):
            if str(path).endswith("checkpoint-6/optimizer.pt"):
                with open(path, "wb") as file:
                    file.write(b"PK" + b"0" * 100)
                    file.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            return real_save(obj, path, *args, **kwargs)
        torch.save = save
        class Slow(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                time.sleep(0.5)
        real_add = training.seeds.LexicalSeq2SeqTrainer.add_callback
        training.seeds.LexicalSeq2SeqTrainer.add_callback = lambda self, callback: (real_add(self, callback), real_add(self, Slow()))[0]
    """)
    recorded = json.loads((seed_dir(out) / "train_seconds.json").read_text())
    assert set(recorded) == {"checkpoint-2", "checkpoint-4"} and recorded["checkpoint-4"] > 2.0
    main([*argv, "--resume_from_checkpoint", "true"])
    assert "checkpoint-6: no readable trainer_state.json" in caplog.text
    seconds = json.loads((seed_dir(out) / "metrics.json").read_text())["train_seconds"]
    assert seconds["updates"] == 8 and seconds["value"] > recorded["checkpoint-4"] and "earlier_segments_unrecorded" not in seconds


def test_a_checkpoint_whose_files_changed_after_its_save_is_skipped_with_a_warning(tmp_path, caplog):
    from lexical_hf.training.checkpoints import last_complete_checkpoint

    out = tmp_path / "run"
    main([*TINY, "--max_steps", "4", "--save_steps", "2", "--keep_seed_checkpoints", "true", "--output_dir", str(out)])
    assert last_complete_checkpoint(seed_dir(out)).endswith("checkpoint-4")
    optimizer = seed_dir(out) / "checkpoint-4" / "optimizer.pt"
    optimizer.write_bytes(optimizer.read_bytes()[: optimizer.stat().st_size // 2])  # truncated
    assert last_complete_checkpoint(seed_dir(out)).endswith("checkpoint-2")
    assert "checkpoint-4: optimizer.pt differs from the sha256 recorded when it was saved" in caplog.text


# ---------------------------------------------------------------------------------------------------- arguments
@pytest.mark.parametrize("flags,message", [
    (["--max_train_samples", "0"], "--max_train_samples must be a positive number of examples, got 0"),
    (["--max_eval_samples", "0"], "--max_eval_samples must be a positive number of examples, got 0"),
    (["--max_grad_norm", "nan"], "--max_grad_norm must be a finite number >= 0, got nan"),
    (["--learning_rate", "inf"], "--learning_rate must be a finite number >= 0, got inf"),
])
def test_flag_values_that_would_be_ignored_or_turn_a_feature_off_are_refused(flags, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_arguments([*TINY, *flags, "--output_dir", "unused"])


# ---------------------------------------------------------------------------------------------------- the model
def test_a_missing_or_truncated_generation_config_is_rebuilt_from_the_config(toy_tokenizer, toy_data, tmp_path):
    """transformers' defaults would cap decoding at 20 tokens and drop the <unk> ban of an abstaining lexicon."""
    model = small_model(toy_tokenizer, max_decode_length=40)
    lexicon = Lexicon({"dax": {"RED": 1}}, fallback="mutual_exclusivity_or_abstain")
    model.set_lexicon(lexicon, toy_tokenizer)
    model.save_pretrained(tmp_path)
    for damage in (lambda path: path.unlink(), lambda path: path.write_text('{"max_length": 5')):
        damage(tmp_path / "generation_config.json")
        loaded = LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)
        assert loaded.generation_config.max_new_tokens == 40
        assert toy_tokenizer.unk_token_id in loaded.generation_config.suppress_tokens
        model.save_pretrained(tmp_path)


def test_flipped_bytes_in_the_weights_are_refused_at_load(toy_tokenizer, tmp_path):
    small_model(toy_tokenizer).save_pretrained(tmp_path)
    weights = tmp_path / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0xFF  # a tensor byte, the header intact
    weights.write_bytes(bytes(data))
    with pytest.raises(OSError, match="differs from the sha256 recorded when it was saved"):
        LexicalSeq2SeqForConditionalGeneration.from_pretrained(tmp_path)


def test_masks_of_another_shape_or_soft_masks_are_clear_errors(toy_tokenizer, toy_data):
    model = small_model(toy_tokenizer)
    batch = encode_batch(toy_tokenizer, toy_data[:2])
    ids = batch["input_ids"]
    for mask in (torch.ones(2, 1, dtype=torch.long), torch.ones(2, ids.shape[1] + 2, dtype=torch.long)):
        with pytest.raises(ValueError, match="attention_mask has shape .* they must be equal"):
            model(input_ids=ids, attention_mask=mask, labels=batch["labels"])
        with pytest.raises(ValueError, match="attention_mask has shape"):
            model.generate(ids, attention_mask=mask, max_new_tokens=2)
    with pytest.raises(ValueError, match="0 \\(padding\\) and 1 \\(token\\) only"):
        model(input_ids=ids, attention_mask=batch["attention_mask"] * 0.5, labels=batch["labels"])


def test_bad_decoder_ids_lexicons_and_beam_counts_are_clear_errors(toy_tokenizer, toy_data):
    from transformers import GenerationConfig

    model = small_model(toy_tokenizer)
    batch = encode_batch(toy_tokenizer, toy_data[:2])
    with pytest.raises(ValueError, match="decoder_input_ids must be in \\[0, "):
        model(input_ids=batch["input_ids"], decoder_input_ids=torch.full((2, 3), 10_000))
    with pytest.raises(TypeError, match="set_lexicon takes a lexical_hf.Lexicon .* got a dict"):
        model.set_lexicon({"dax": {"RED": 1}}, toy_tokenizer)
    with pytest.raises(ValueError, match="num_beams must be a positive integer, got 0"):
        model.generate(batch["input_ids"], generation_config=GenerationConfig(num_beams=0, max_new_tokens=2))
    # ids are checked against the source vocabulary; what generate() cannot check, its docstring says
    with pytest.raises(ValueError, match="another tokenizer"):
        model.generate(batch["input_ids"] + 1000, max_new_tokens=2)
    assert "ids from a tokenizer with the same sizes but" in model.generate.__doc__
