#!/usr/bin/env bash
# Session 20, an H100 (kind nvidia-h100-x1): run 58 found no hang with each keyless d256 shape in a process of its own
# (50 plain launches each, the old rule with and without the watchdog, the default), and edge passed 30/30 through
# `workbench check`. Run 57's hang came after other shapes in the same process, on the timing path (graph replays
# after a 256 MB write). Here the same shapes as run 57 (edge's E_d256 and q4097 ones) in suite order in one process
# per kernel, 50 launches and 30 graph replays each, then ladder_bench's check with its x16 inputs.
# Run as: CALL=scripts/calls/gpu_call_s20d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; E=kernels/attn_fwd/suites/edge.csv
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### the probe on its stub (one child per shape, and --sequence) $(date -u +%T)"
timeout -k 10 150 python3 -m pytest -q -m gpu tests/test_gpu_hang_probe.py > "$OUT/probe_test.log" 2>&1
echo "rc $?"; tail -3 "$OUT/probe_test.log"
echo "#### hang_probe --sequence: run 57's shapes in order, old rule with watchdog, old rule, default $(date -u +%T)"
OUT="$OUT" timeout -k 10 400 python3 scripts/hang_probe.py --suite $E --launches 50 --replays 30 --timeout 10 \
  --sequence --only E_d256,q4097 \
  --kernels "$K:EMPTY_SOLO=0,WATCHDOG=1" "$K:EMPTY_SOLO=0" $K > "$OUT/hang_probe_seq.log" 2>&1
echo "rc $?"; grep -vE "^    (mark|stuck) |^    \{" "$OUT/hang_probe_seq.log" | cut -c1-150 | head -40
grep -E "^    (mark|stuck)" "$OUT/hang_probe_seq.log" | head -40
echo "#### run 57's own command: ladder_bench, no anchors, the old rule $(date -u +%T)"
OUT="$OUT/lb" timeout -k 10 150 python3 scripts/ladder_bench.py --anchors "" --seeds 0 1 --reps 40 --cap 0.3 \
  --suite $E --only E_d256,q4097 --kernels "$K:EMPTY_SOLO=0" "$K:EMPTY_SOLO=0,DYN_CHUNKS=0,DYN_LONG=0" \
  > "$OUT/ladder_bench_old.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/ladder_bench_old.log" | cut -c1-150 | tail -16
echo "#### done $(date -u +%T)"
