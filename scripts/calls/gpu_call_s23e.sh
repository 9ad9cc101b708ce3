#!/usr/bin/env bash
# Session 23, call 5 (either card, ~4 min). Run 80, a measurement before any d256 edit: causal d256 is B's and C's
# weakest group after v24 (C_s3000_d256_c1 0.935, C_s9000_d256_c1 0.937, C_s1500_d256_c1 0.962, B_h16x8_d256_c1_s32k
# 0.960, A_d256_c1_s1k 0.963 on the H100), over four walks (`scripts/grid_plan.py`: static walk, pairs per CTA, CTA
# per tile, persistent pairs). With an 80-key d256 block at ~2.1 us (its FLOPs at 650 TFLOP/s, an estimate), the
# list-scheduling model's work bound for C_s3000_d256_c1 is near the measured 249 us, so the question is likely the
# loop, not the schedule: the per-tile timeline (phases, steady 80-key block against the first,
# masked, ones) on those shapes, then ncu beside FA3 on C_s3000_d256_c1 and A_d256_c1_s1k (tensor cycles, active
# cycles, DRAM, stall reasons). Prediction: SMs busy >= 95 % (balanced walks), the diagonal tiles' 2-3 masked 80-key
# blocks dearer than steady ones, and ncu's tensor cycles equal to FA3's with more active cycles.
# Run as: CALL=scripts/calls/gpu_call_s23e.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### timeline: causal d256 $(date -u +%T)"
WB_CACHE_RESTORED=1 TL_TIMEOUT=150 TL_ARGS="--save-records" \
  TL_SHAPES="C_s3000_d256_c1 C_s9000_d256_c1 B_h16x8_d256_c1_s32k A_d256_c1_s1k" \
  timeout -k 10 180 bash scripts/gpu_run.sh timeline 2>&1 | grep -E "^== |SM time|CTA work|tile us|steady block" \
  | cut -c1-170 | head -24
echo "#### ncu: ours and FA3 side by side $(date -u +%T)"
WB_CACHE_RESTORED=1 NCU_SCENARIOS="C_s3000_d256_c1 A_d256_c1_s1k" timeout -k 10 150 \
  bash scripts/gpu_run.sh ncucmp 2>&1 \
  | grep -E "^== |Duration|SM Frequency|DRAM Through|Elapsed Cycles|SM Active|pipe_tensor" | sed 's/  */ /g' | head -30
echo "#### done $(date -u +%T)"
