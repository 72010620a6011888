#!/bin/bash
# The GPU tier (the paper's model on SCAN), eager step, on the lent GPU machine: several rows and seeds at once, each
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
source benchmarks/gpu_env.sh
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
python3 benchmarks/collect_seeds.py "$out/gpu_tier_seeds.json" "$@"
echo "exit status $status"
exit $status
