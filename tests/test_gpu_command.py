"""The prepared device call (`benchmarks/gpu_fast.sh`), dry-run on the CPU with a tiny config: it benches, trains a
paper-tier row and leaves at most 8 files under $OUT, the row file among them."""

import json
import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_gpu_command_runs_end_to_end_on_a_cpu(tmp_path):
    for folder in ("benchmarks", "examples"):  # a scratch copy: the row file is written beside its benchmarks/
        shutil.copytree(REPO / folder, tmp_path / folder)
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "OMP_NUM_THREADS": "1",
           "BENCH_ARGS": "--task colors --size tiny --updates 1 --warmup 1 --seeds-at-once 1 --batch-size 8",
           "EXTRA": "--embedding_size 8 --hidden_size 8 --num_layers 1 --max_steps 2 --max_eval_samples 8"}
    result = subprocess.run(["bash", "benchmarks/gpu_fast.sh", "4", "0", "scan-jump:simple"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    returned = sorted(path.name for path in out.iterdir())
    assert returned == ["bench_gpu.json", "gpu_fast_seeds.json", "scan-jump-simple.log", "scan-jump-simple.paper.json"]
    bench = next(iter(json.loads((out / "bench_gpu.json").read_text()).values()))
    assert set(bench["modes"]) == {"eager", "static"} and bench["floor_ms"] > 0  # graphed needs CUDA
    row = json.loads((out / "scan-jump-simple.paper.json").read_text())
    assert row["preset"] == "paper" and row["seeds"] == [0] and "--max_train_minutes" in row["command"]
    assert row["per_seed"]["0"]["train_seconds"]["updates"] == 2
    seeds = json.loads((out / "gpu_fast_seeds.json").read_text())
    assert "log_history" in seeds["scan-jump:simple:seed-0"]
    assert "training for at most" in result.stdout and "ms per update" in result.stdout


def test_a_detached_call_leaves_the_seeds_training_and_the_next_call_collects_them(tmp_path):
    """DETACH_AFTER returns the call while its seeds train on in their own process sessions (status 6, no row file
    yet); `gpu_collect.sh`, as the next device call runs it, waits for them and brings back the row, its log and
    every seed's log history. A row whose run fails brings back no row file, not the one the checkout holds."""
    for folder in ("benchmarks", "examples"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "DETACH_AFTER": "0",
           "BENCH_ARGS": "--task colors --size tiny --updates 1 --warmup 1 --seeds-at-once 1 --batch-size 8 --modes eager",
           "EXTRA": "--embedding_size 8 --hidden_size 8 --num_layers 1 --max_steps 2 --max_eval_samples 8"}
    first = subprocess.run(["bash", "benchmarks/gpu_fast.sh", "4", "0", "scan-jump:simple"], cwd=tmp_path,
                           env={**env, "OUT": str(tmp_path / "first")}, capture_output=True, text=True, timeout=900)
    assert first.returncode == 6 and "still training" in first.stdout, first.stdout[-3000:] + first.stderr[-3000:]
    assert not (tmp_path / "first" / "scan-jump-simple.paper.json").exists()
    second = subprocess.run(["bash", "benchmarks/gpu_collect.sh"], cwd=tmp_path, env={**env, "OUT": str(tmp_path / "second")},
                            capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    returned = sorted(path.name for path in (tmp_path / "second").iterdir())
    assert returned == ["gpu_fast_seeds.json", "scan-jump-simple.log", "scan-jump-simple.paper.json"]
    row = json.loads((tmp_path / "second" / "scan-jump-simple.paper.json").read_text())
    assert row["per_seed"]["0"]["train_seconds"]["updates"] == 2
    failing = {**env, "OUT": str(tmp_path / "third"), "EXTRA": env["EXTRA"] + " --no_such_flag 1"}
    failing.pop("DETACH_AFTER")
    third = subprocess.run(["bash", "benchmarks/gpu_fast.sh", "4", "0", "scan-jump:simple"], cwd=tmp_path, env=failing,
                           capture_output=True, text=True, timeout=900)
    assert third.returncode not in (0, 6) and "no row file" in third.stdout, third.stdout[-3000:]
    assert not (tmp_path / "third" / "scan-jump-simple.paper.json").exists()


def test_the_device_call_trains_only_the_seeds_that_can_finish():
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    from gpu_plan import plan

    pairs = ["scan-jump:simple", "scan-around-right:simple"]
    bench = {"H100": {"modes": {"graphed": {"ms_per_update": 20.0}}}}  # 8,000 updates × 1.25: 200 s a seed
    assert plan(bench, [0, 1, 2], 6.0, True, pairs) == {"scan-jump:simple": [0]}
    assert plan(bench, [0, 1, 2], 14.0, True, pairs) == {"scan-jump:simple": [0, 1], "scan-around-right:simple": [0, 1]}
    assert plan(bench, [0], 60.0, True, pairs) == {pair: [0] for pair in pairs}  # never more than asked for
    failed = {"H100": {"modes": {"graphed": {"error": "RuntimeError: ..."}}}}
    assert plan(failed, [0, 1], 9.0, True, pairs) == {} and plan({}, [0, 1], 9.0, True, pairs) == {}
    assert plan({}, [0, 1], 0.1, False, pairs) == {pair: [0, 1] for pair in pairs}  # the CPU dry run trains all


def test_the_dropout_check_tells_fresh_masks_from_a_frozen_one():
    """`bench_gpu.py --dropout-draws`, with stand-ins for the capture: one that runs the module as it is (new masks
    at each call, as a replayed CUDA graph should draw) and one that replays the same random numbers each time (a
    frozen mask: what the check is there to catch)."""
    import sys

    import torch

    import lexical_hf
    from lexical_hf import LexicalTokenizer

    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_gpu as bench
    data = lexical_hf.load_benchmark("colors")
    tokenizer = LexicalTokenizer.from_dataset(data["train"])
    lexicon = lexical_hf.learn_lexicon(data["train"], method="simple")
    batch = bench.batches(tokenizer, data["train"], 8, 1)[0]

    def fresh(module, args, allow_unused_input):
        return module

    def frozen(module, args, allow_unused_input):
        def replay(*replayed):
            with torch.random.fork_rng():
                torch.manual_seed(0)
                return module(*replayed)
        return replay

    drawn = bench.graphed_dropout_draws(tokenizer, lexicon, "tiny", batch, 5, capture=fresh)
    assert drawn["graphed"]["distinct"] == drawn["eager"]["distinct"] == 5 and drawn["graphed"]["std"] > 0
    stuck = bench.graphed_dropout_draws(tokenizer, lexicon, "tiny", batch, 5, capture=frozen)
    assert stuck["graphed"]["distinct"] == 1 and stuck["graphed"]["std"] == 0 and stuck["eager"]["distinct"] == 5
    if not torch.cuda.is_available():
        assert bench.graphed_dropout_draws(tokenizer, lexicon, "tiny", batch, 5) is None  # measured on CUDA only


def test_a_bench_run_with_other_checks_keeps_the_earlier_block(tmp_path):
    """`bench_gpu.write` replaces a block only with a run of the same device, task, size, modes and checks: a later
    run that measured the dropout check alone must not erase the block that measured seeds as one model."""
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_gpu as bench

    def entry(ms, **checks):
        return {"device": "GPU", "task": "scan-jump", "size": "paper", "modes": {"graphed": {
                    "ms_per_update": ms, "warmup_seconds": 1.0, "warmup_updates": 2, "updates": 5}},
                "command": f"bench {ms}", "machine": "m", "torch": "t", "revision": "r", "date": "d", "batch_size": 512,
                "speedup_over_eager": {}, "floor_ms": 3.0, "flops_per_update": 1e12, "matmul_tflops": 400.0,
                "graphed_training_agreement": None, "graphed_dropout_draws": None, "graphed_seeds": [],
                "concurrent": [], "decoding": {"batch_size": 8, "sentences": 8, "seconds": 1.0,
                                                 "sentences_per_second": 8.0}, **checks}

    seeds = [{"seeds": 4, "ms_per_update": 109.2, "padded_shape": [16, 64]}]
    draws = {"replays": 3, "graphed": {"distinct": 3, "mean": 2.0, "std": 0.1},
             "eager": {"distinct": 3, "mean": 2.0, "std": 0.1}}
    out = tmp_path / "bench_gpu"
    bench.write(out, entry(32.0, graphed_seeds=seeds))
    bench.write(out, entry(32.2, graphed_dropout_draws=draws))
    kept = json.loads(out.with_suffix(".json").read_text())
    assert sorted(e["command"] for e in kept.values()) == ["bench 32.0", "bench 32.2"]
    bench.write(out, entry(31.0, graphed_dropout_draws=draws))  # the same checks again: the newer run replaces
    kept = json.loads(out.with_suffix(".json").read_text())
    assert sorted(e["command"] for e in kept.values()) == ["bench 31.0", "bench 32.0"]
    assert "## GPU · scan-jump · paper · graphed · seeds as one model" in out.with_suffix(".md").read_text()
