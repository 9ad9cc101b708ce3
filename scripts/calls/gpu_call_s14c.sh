#!/usr/bin/env bash
# Session 14, third call: issue 23's acceptance command for v19 (run 43) as written,
# `workbench check <best rung> --suite full --anchors fa3,cudnn,fa2`, its JSON kept for notebooks/03_kernel_ladder
# (workbench/ui/ladder.py reads docs/data/h200_ladder_04_pingpong_full_*.json); then (the gpu_run.sh stage ncucmp)
# v19 against FA3 under ncu on the weakest shapes of the campaign's eval a1e304f741c6 (causal d128).
# Run as: NCU_SCENARIOS="C_s9000_d128_c1 A_d128_c1_s8k" CALL=scripts/calls/gpu_call_s14c.sh bash scripts/gpu_run.sh call \
#   ncucmp   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; day=$(date -u +%F)
echo "#### acceptance: full with fa3, cudnn, fa2 $(date -u +%T)"
timeout 330 python3 -m workbench.cli check $K --suite full --anchors fa3,cudnn,fa2 \
  --json "$OUT/h200_ladder_04_pingpong_full_dt4_v19_$day.json" > "$OUT/v19_full3.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/v19_full3.log" | tail -12
echo "#### done $(date -u +%T)"
