#!/usr/bin/env bash
# Session 14, second call: v19 (run 43: D256_O_IN_V, x1.0175 on the 42 d256 shapes in the first call) through the
# headline campaign on full, cold (no timing cache came back from the first call).
# Run as: CALL=scripts/calls/gpu_call_s14b.sh bash scripts/gpu_run.sh call walls   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### campaign $(date -u +%T)"
timeout 300 bash scripts/gpu_campaign_check.sh $K "v19 (run 43): D256_O_IN_V, FA3's d256 scheme: each warp frees Q \
after its tile's last S GEMM and O is staged in the V ring behind an o_empty barrier (run 41: wait_q 5-11 %; the \
first call: x1.0175 on the 42 d256 shapes, racecheck/synccheck clean; predicted full +0.5-1 %)" 2>&1 \
  | grep -vE "^\[" | tail -30
echo "#### done $(date -u +%T)"
