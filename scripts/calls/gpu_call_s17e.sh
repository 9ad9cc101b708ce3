#!/usr/bin/env bash
# Session 17, fifth call: v21 and FA3 side by side on one machine under ncu's source counters, on the two
# loop-bound causal d128 shapes where v21 trails FA3 most (A_d128_c1_s8k 0.93-0.95x, C_s9000_d128_c1 0.945x):
# is the remaining gap the steady loop's period (run 47's estimate: ~2329 against 2304 cycles, FA3's from run 44 on
# another day) or outside it?
# Run as: CALL=scripts/calls/gpu_call_s17e.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
WB_CACHE_RESTORED=1 NCU_JOBS="ours:A_d128_c1_s8k fa3:A_d128_c1_s8k ours:C_s9000_d128_c1 fa3:C_s9000_d128_c1" \
  NCU_TIMEOUT=100 timeout 420 bash scripts/gpu_run.sh ncusrc 2>&1 \
  | grep -E "^== ncusrc|stall samples|top 30" -A3 | head -60
echo "#### done $(date -u +%T)"
