#!/bin/bash
# One device call on the lent GPU: measure the training step (benchmarks/bench_gpu.py, at most BENCH_SECONDS, default
# 150), then train as many full 8,000-update paper-preset seeds as fit with the fast step and bring back their rows.
#
# Here, once:   make gpu-wheels          # datasets and what it needs that the GPU image lacks, into .whl/
# There (device tool `run`, carry [".whl"], timeout_s 600):
#   bash benchmarks/gpu_fast.sh MINUTES SEEDS TASK:ROW [TASK:ROW]
#   BENCH_ARGS="--modes eager,static,graphed --graphed-seeds 4,8 --seeds-at-once 1 --updates 20 --warmup 3
#   --decode-sentences 1024" bash benchmarks/gpu_fast.sh 9.2 0-4 scan-jump:simple scan-around-right:simple
#
# DETACH_AFTER=SECONDS (since the start) returns the call then, with the seeds still training in their own process
# sessions; the next call, started within the machine's warm period (30 s), runs `bash benchmarks/gpu_collect.sh`
# to wait for them and bring their files back. MINUTES is then the time of both calls together.
# BENCH_JSON=FILE skips the bench and plans from FILE (the bench_gpu.json an earlier call on the same kind of device
# brought back; carry it).
# MINUTES is the whole call's budget. Each seed's training gets what is left after the bench less 1.5 minutes for
# decoding and writing (`--max_train_minutes`, so a seed that cannot finish stops in time, is evaluated as it stands
# and is marked as stopped short). On a GPU only as many of SEEDS train as the bench's captured update says can finish
# (the seeds share the GPU; the rows take turns, seeds in order), and none when the capture failed (exit status 5).
# Every row runs `benchmarks/reproduce.py --tier paper` with:
#   - the fast step: `--cuda_graphs true` (the loss's forward and backward captured into CUDA graphs, one per padded
#     batch shape; batches padded to multiples of 16), the fused AdamW (`--optim adamw_torch_fused`), TF32 matrix
#     products, no per-update host read of the loss (`--logging_nan_inf_filter false`: a NaN shows in the logged
#     loss instead of being left out of it), and two persistent data-loading workers a seed (collating 512 pairs takes
#     ~17 ms of Python). `--torch_compile` is not used: compiling the unrolled decoder took about 7 minutes on the
#     H100 machine (results/gpu_fast_step.md);
#   - batch 512 × 1 instead of 128 × 4 (the same examples per update), evaluation batches of 1,024.
# All seeds of all rows train at once, one process each. The row files record the command.
#
# What comes back under $OUT (at most 8 files; at most two rows): each row's results file and log,
# gpu_fast_seeds.json (every seed's metrics and Trainer log history), gpu_utilization.txt and bench_gpu.json (its
# Markdown is printed, and `python benchmarks/bench_gpu.py --render` rebuilds it here).
# On a machine without a GPU it runs on the CPU with the default step, which is how it is tested: BENCH_ARGS and EXTRA
# add bench_gpu.py and run_lexical.py arguments (a tiny model for that test).
set -uo pipefail
minutes=${1:?minutes for the whole call}; seeds=${2:?seeds, e.g. 0-3}; shift 2
[ $# -gt 0 ] && [ $# -le 2 ] || { echo "give one or two TASK:ROW" >&2; exit 2; }
out=${OUT:-outputs/gpu_fast_out}; mkdir -p "$out"
start=$(date +%s)
source benchmarks/gpu_env.sh
fast_args=()
if [ ${#gpu_args[@]} -gt 0 ]; then
    fast_args=(--cuda_graphs true --optim adamw_torch_fused --logging_nan_inf_filter false
               --dataloader_num_workers 2 --dataloader_persistent_workers true)
fi

if [ -n "${BENCH_JSON:-}" ]; then  # a bench of an earlier call on this device: all the time goes to training
    cp "$BENCH_JSON" "$out/bench_gpu.json" || exit 2
else
    timeout "${BENCH_SECONDS:-150}" python3 benchmarks/bench_gpu.py --out "$out/bench_gpu" ${BENCH_ARGS:-} 2>&1 | tail -n 40
    echo "bench exit status ${PIPESTATUS[0]}"; cat "$out/bench_gpu.md" 2>/dev/null; rm -f "$out/bench_gpu.md"
fi

left=$(python3 -c "print(round(($minutes * 60 - ($(date +%s) - $start)) / 60 - 1.5, 2))")
python3 -c "import sys; sys.exit(not $left > 0.5)" || { echo "no time left to train ($left min)"; exit 4; }
echo "training for at most $left minutes per seed"
plan=$(python3 benchmarks/gpu_plan.py "$out/bench_gpu.json" "$seeds" "$left" "${#gpu_args[@]}" "$@") || exit 2
[ -n "$plan" ] || { echo "no seed can finish: nothing trained"; exit 5; }
echo "$plan"
runs=outputs/gpu_runs  # the runs' state, for benchmarks/gpu_collect.sh in this call or the next
rm -rf "$runs"; mkdir -p "$runs"; echo "$start" > "$runs/start"
while read -r pair row_seeds; do
    task=${pair%%:*}; row=${pair#*:}; base="$runs/$task-$row"
    echo "$pair" >> "$runs/pairs"
    row_file=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import reproduce; print(reproduce.row_file('$task', '$row', 'paper'))")
    # each row in a process session of its own: with DETACH_AFTER it trains on after this call has returned
    setsid bash -c 'python3 benchmarks/reproduce.py "$@"; status=$?
        [ $status = 0 ] && [ "'"$row_file"'" -nt "'"$runs"'/start" ] && cp "'"$row_file"'" "'"$base"'.paper.json"
        echo $status > "'"$base"'.status"' \
        reproduce --task "$task" --row "$row" --tier paper --seeds "$row_seeds" \
        --parallel_seeds "$(echo "$row_seeds" | tr ',' '\n' | wc -l)" \
        --per_device_train_batch_size 512 --gradient_accumulation_steps 1 --per_device_eval_batch_size 1024 \
        --max_train_minutes "$left" --keep_seed_checkpoints true --logging_steps 200 "${gpu_args[@]}" "${fast_args[@]}" ${EXTRA:-} \
        > "$base.log" 2>&1 < /dev/null &
done <<< "$plan"
if [ -n "${DETACH_AFTER:-}" ]; then
    exec bash benchmarks/gpu_collect.sh "$(( DETACH_AFTER - ($(date +%s) - start) ))"
fi
exec bash benchmarks/gpu_collect.sh
