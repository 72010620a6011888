#!/bin/bash
# The GPU tier of issue 7 (the paper's model on SCAN) on the lent GPU machine: several rows and seeds at once, each
# seed's training ended by a wall-clock limit so that the whole command fits one device call.
#
# Here, once:   make gpu-wheels          # datasets and what it needs that the GPU image lacks, into .whl/
# There (device tool `run`, carry [".whl"], timeout_s 600):
#   bash benchmarks/gpu_tier.sh MINUTES SEEDS TASK:ROW [TASK:ROW ...]
#   bash benchmarks/gpu_tier.sh 7 0-3 scan-around-right:simple scan-jump:simple
#
# Every row runs `benchmarks/reproduce.py --tier paper` (the paper preset: 2×512 LSTM with the paper code's decoder
# details and source side, dropout 0.4, Noam schedule with 4,000 warm-up updates, 8,000 updates, checkpoint chosen on
# validation) with these changes, which the row file's command records:
#   - batch 512 × 1 instead of 128 × 4 (the same 512 examples per update; a quarter of the launches per update), and
#     evaluation batches of 512;
#   - TF32 matrix products (`--tf32 true`);
#   - `--max_train_minutes MINUTES`: each seed stops after that much training and is evaluated as it stands (the
#     checkpoint chosen on validation among those reached). metrics.json records the updates done; a seed stopped
#     before 8,000 updates is a reduced run, and the results table says so.
# All seeds of all rows train at once, one process each, on the one GPU. Measured on an H200 (2026-11-26,
# results/scan_cpu_tier_analysis.md): a paper-preset update takes 118 ms for a seed alone (Python and kernel launches:
# the decoder runs step by step; the GPU 20% busy) and 187 ms for each of six seeds at once (GPU 93-99% busy), so a
# seed reaches the recipe's 8,000 updates only after about 16 minutes of training: more than one device call.
#
# What comes back under $OUT (at most 8 files): each row's results file, each row's log, and gpu_tier_seeds.json with
# every seed's metrics and its Trainer log history (loss, validation exact match). The rows' Hub-ready folders stay on
# the machine (a paper-size checkpoint is over the 16 MiB a returned file may have). SCAN is generated from its
# grammar, so no data travels. On a machine without a GPU it trains on the CPU (no TF32), which is how it is tested;
# EXTRA adds run_lexical.py arguments (e.g. a tiny model for that test).
set -uo pipefail
minutes=${1:?minutes of training per seed}; seeds=${2:?seeds, e.g. 0-3}; shift 2
[ $# -gt 0 ] || { echo "give at least one TASK:ROW" >&2; exit 2; }
out=${OUT:-outputs/gpu_tier_out}; mkdir -p "$out"
install_wheels() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$@" || exit 3; }
if compgen -G ".whl/*.whl" >/dev/null; then
    install_wheels .whl/*.whl
    export PYTHONPATH=/tmp/site
    # datasets 5.2 needs pyarrow >= 24; the carried wheel only replaces an older one
    if ! python3 -c "import sys, pyarrow; sys.exit(int(pyarrow.__version__.split('.')[0]) < 24)" && compgen -G ".whl/pyarrow/*.whl" >/dev/null; then
        install_wheels .whl/pyarrow/*.whl
    fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
# fail in seconds, not after the training, when the stack cannot run
python3 -c "import torch, transformers, datasets, pyarrow, lexical_hf; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'transformers', transformers.__version__, 'datasets', datasets.__version__, 'pyarrow', pyarrow.__version__)" || exit 3
gpu_args=()
if python3 -c "import sys, torch; sys.exit(not torch.cuda.is_available())"; then
    gpu_args=(--tf32 true)
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    nvidia-smi dmon -s u -d 30 > "$out/gpu_utilization.txt" 2>&1 &
fi
count=$(python3 -c "import sys; sys.path.insert(0, '.'); from lexical_hf.results import parse_seeds; print(len(parse_seeds('$seeds')))") || exit 2
pids=()
for pair in "$@"; do
    task=${pair%%:*}; row=${pair#*:}
    python3 benchmarks/reproduce.py --task "$task" --row "$row" --tier paper --seeds "$seeds" --parallel_seeds "$count" \
        --per_device_train_batch_size 512 --gradient_accumulation_steps 1 --per_device_eval_batch_size 512 \
        --max_train_minutes "$minutes" --keep_seed_checkpoints true --logging_steps 100 "${gpu_args[@]}" ${EXTRA:-} \
        > "$out/$task-$row.log" 2>&1 &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
for pair in "$@"; do
    task=${pair%%:*}; row=${pair#*:}
    tail -n 4 "$out/$task-$row.log"
    row_file=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import reproduce; print(reproduce.row_file('$task', '$row', 'paper'))")
    cp "$row_file" "$out/$task-$row.paper.json" 2>/dev/null || echo "$task $row: no row file"
done
# every seed's metrics and Trainer log history, as one file ($OUT brings back at most 8)
python3 - "$out" "$@" <<'PY'
import glob, json, os, sys
out, pairs = sys.argv[1], sys.argv[2:]
seeds = {}
for pair in pairs:
    task, row = pair.split(":")
    for seed_dir in sorted(glob.glob(f"outputs/reproduce/lexical-{task}-{row}-paper/seeds/seed-*")):
        entry = {}
        if os.path.exists(f"{seed_dir}/metrics.json"):
            entry["metrics"] = json.load(open(f"{seed_dir}/metrics.json"))
        states = sorted(glob.glob(f"{seed_dir}/**/trainer_state.json", recursive=True), key=os.path.getmtime)
        if states:
            entry["log_history"] = json.load(open(states[-1]))["log_history"]
        seeds[f"{task}:{row}:{os.path.basename(seed_dir)}"] = entry
json.dump(seeds, open(f"{out}/gpu_tier_seeds.json", "w"), indent=1)
for name, entry in seeds.items():
    metrics = entry.get("metrics", {})
    print(name, "test exact match", metrics.get("test", {}).get("exact_match"), "training", metrics.get("train_seconds"))
PY
echo "exit status $status"
exit $status
