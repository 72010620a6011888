#!/bin/bash
# Waits for the paper-tier runs that `benchmarks/gpu_fast.sh` started (their state is in outputs/gpu_runs/) and brings
# back, under $OUT, each row's file and log and every seed's metrics and Trainer log history (gpu_fast_seeds.json).
#
#   bash benchmarks/gpu_collect.sh [SECONDS]
#
# With SECONDS it waits at most that long: runs still training then are left to run on (they were started in their
# own process sessions, so they outlive the device call while the machine stays warm), their logs so far come back,
# and it exits with status 6; a device call started within the machine's warm period runs it again to collect them.
# Without SECONDS it waits until every run has ended. Exit status: the runs' worst, or 6 while some still train.
set -uo pipefail
out=${OUT:-outputs/gpu_fast_out}; mkdir -p "$out"
runs=outputs/gpu_runs
[ -s "$runs/pairs" ] || { echo "no runs in $runs: start them with benchmarks/gpu_fast.sh" >&2; exit 2; }
mapfile -t pairs < "$runs/pairs"
if command -v nvidia-smi >/dev/null && [ ! -s "$out/gpu_utilization.txt" ]; then
    nvidia-smi dmon -s u -d 30 > "$out/gpu_utilization.txt" 2>&1 &
fi
log() { echo "$runs/${1%%:*}-${1#*:}"; }
running() { for pair in "${pairs[@]}"; do [ -e "$(log "$pair").status" ] || echo "$pair"; done; }
waited=0
while [ -n "$(running)" ]; do
    if [ -n "${1:-}" ] && [ "$waited" -ge "$1" ]; then break; fi
    sleep 10; waited=$((waited + 10))
    if [ $((waited % 60)) -eq 0 ]; then  # a timeline in the call's output, should it be cut off
        echo "== $(( $(date +%s) - $(cat "$runs/start") )) s since the start"
        for pair in "${pairs[@]}"; do grep -a "'loss'\|_exact_match'\|Error" "$(log "$pair").log" | tail -n 2; done
    fi
done
status=0
for pair in "${pairs[@]}"; do
    base=$(log "$pair"); name=$(basename "$base")
    cp "$base.log" "$out/$name.log"
    if [ -e "$base.status" ]; then
        tail -n 4 "$base.log"
        [ "$(cat "$base.status")" = 0 ] || status=$(cat "$base.status")
        cp "$base.paper.json" "$out/$name.paper.json" 2>/dev/null || echo "$pair: no row file"
    fi
done
python3 benchmarks/collect_seeds.py "$out/gpu_fast_seeds.json" "${pairs[@]}"
still=$(running)
if [ -n "$still" ]; then
    echo "still training after ${waited} s: $(echo $still); collect them with: bash benchmarks/gpu_collect.sh"
    exit 6
fi
echo "exit status $status"
exit $status
