#!/usr/bin/env bash
# Session 16, second call: run 46 first, FINALIZE_UNDER_PV=1 (a tile's row sums, 1/l and lse under its last PV, FA3's
# order) against v20 interleaved on every shape of full; then v20 (run 45's RESCALE_UNDER_EXP at d128 only, the
# default now) through the headline campaign on full, cold; then v20 on edge.
# Run as: CALL=scripts/calls/gpu_call_s16a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab46" "$OUT/edge"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
bench() {   # bench OUTDIR TIMEOUT SUITE KERNELS...
  local out=$1 limit=$2 suite=$3; shift 3
  OUT=$out timeout "$limit" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
    --suite "kernels/attn_fwd/suites/$suite.csv" --kernels "$@" > "$out/log.txt" 2>&1
  echo "rc $?"; grep -E "FAIL|rror" "$out/log.txt" | head -3; sed -n '/^# geomean/,$p' "$out/log.txt"
}
echo "#### run 46: v20 against FINALIZE_UNDER_PV=1 on full $(date -u +%T)"
bench "$OUT/ab46" 200 full $K "$K:FINALIZE_UNDER_PV=1"
python3 scripts/ab_ratio.py "$OUT/ab46/ladder_bench.json" --worst 6
echo "#### campaign: v20 $(date -u +%T)"
timeout 280 bash scripts/gpu_campaign_check.sh $K "v20 (run 45): RESCALE_UNDER_EXP at d128 only, FA3's SASS order: \
the PV wait after row 0's exponentials and O's rescale among row 1's, behind a never-taken warp-uniform branch \
(interleaved against v19: d128 x1.0060, causal x1.0093; d64 x0.98, so d128 only); predicted full +0.2-0.3 %" 2>&1 \
  | grep -vE "^\[" | tail -30
echo "#### edge: v20 $(date -u +%T)"
bench "$OUT/edge" 80 edge $K
echo "#### done $(date -u +%T)"
