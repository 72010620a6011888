#!/bin/bash
# The GPU tier of issue 7 (the paper preset on SCAN) on the lent GPU machine, in 10-minute commands that resume.
#
# Here, once:   make gpu-wheels          # datasets and the two packages it needs that the GPU image lacks, into .whl/
# There, each command (device tool `run`, carry [".whl"], timeout_s 600), the same line again until it prints DONE:
#   bash benchmarks/gpu_tier.sh scan-around-right simple 0-9
#   bash benchmarks/gpu_tier.sh scan-jump simple 0-9
#   bash benchmarks/gpu_tier.sh scan-around-right ibm2-prior 0-9
# Optional environment: PARALLEL (seeds trained at once on the one GPU, default 5), STOP_AFTER (seconds before the
# 600-second limit at which training is stopped so that the checkpoints stay whole, default 540), EXTRA (more
# run_lexical.py arguments; a run that resumes must be given the same ones). The log's Trainer lines show the speed.
#
# Trainer checkpoints (every 800 updates in the paper preset) stay in outputs/ on the machine while it is warm, so
# the next command resumes from them — but a machine goes back 30 s after a call ends (device README: "warm after a
# call"), and a paper-preset checkpoint (2×512 LSTM, 10.3 M parameters: ~120 MB per seed with the Adam state) is too
# large to come back under $OUT (16 MiB a file): send the next command at once, or the seeds start over. The row
# file and the seeds' metrics come back under $OUT. SCAN is generated from its grammar, so no data travels. Nothing
# here needs a GPU to run: on a CPU it trains on the CPU.
set -euo pipefail
task=${1:?task, e.g. scan-jump}; row=${2:?row, e.g. simple}; seeds=${3:?seeds, e.g. 0-9}
out=${OUT:-outputs/gpu_tier_out}; mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
python3 -c "import torch, transformers, datasets, lexical_hf; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'transformers', transformers.__version__, 'datasets', datasets.__version__)"
status=0
timeout --signal=INT "${STOP_AFTER:-540}" python3 benchmarks/reproduce.py --task "$task" --row "$row" --tier paper \
    --seeds "$seeds" --parallel_seeds "${PARALLEL:-5}" --resume_from_checkpoint true ${EXTRA:-} \
    > "$out/$task-$row.log" 2>&1 || status=$?
tail -n 3 "$out/$task-$row.log"
row_file=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import reproduce; print(reproduce.row_file('$task', '$row', 'paper').relative_to(reproduce.REPO))")
# $OUT brings back at most 8 files: the finished seeds' metrics travel as one
python3 - "$task" "$row" "$out" <<'PY'
import glob, json, sys
task, row, out = sys.argv[1:]
metrics = {path.split("/")[-2]: json.load(open(path))
           for path in sorted(glob.glob(f"outputs/reproduce/lexical-{task}-{row}-paper/seeds/seed-*/metrics.json"))}
json.dump(metrics, open(f"{out}/{task}-{row}-seeds.json", "w"), indent=1)
print(f"{len(metrics)} seed(s) finished:", {seed: m.get("test", {}).get("exact_match") for seed, m in metrics.items()})
PY
if [ "$status" -eq 0 ]; then
    cp "$row_file" "$out/"
    echo "DONE: $row_file is in \$OUT"
else
    echo "stopped with status $status (124: the time limit; run the same command again to resume)"
fi
