#!/usr/bin/env bash
# Next session's first call (prepared in session 14, run 45): the two knobs of docs/fa3_d128_causal_study.md, both
# off in v19, against v19 interleaved: RESCALE_UNDER_EXP=1 (the PV wait after row 0's exponentials, O's rescale among
# row 1's: FA3's SASS order) and D128_RESCALE_BEFORE_PV=1 (d256's order at d128) on the d128 shapes of full, then
# RESCALE_UNDER_EXP=1 on the d64 shapes, then both variants on edge.
# Run as: CALL=scripts/calls/gpu_call_s15a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/d128" "$OUT/d64" "$OUT/edge"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
bench() {   # bench OUTDIR TIMEOUT SUITE ONLY KERNELS...
  local out=$1 limit=$2 suite=$3 only=$4; shift 4
  OUT=$out timeout "$limit" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
    --suite "kernels/attn_fwd/suites/$suite.csv" ${only:+--only $only} --kernels "$@" > "$out/log.txt" 2>&1
  echo "rc $?"; grep -E "FAIL|rror" "$out/log.txt" | head -3; sed -n '/^# geomean/,$p' "$out/log.txt"
}
echo "#### d128: v19, RESCALE_UNDER_EXP=1, D128_RESCALE_BEFORE_PV=1 $(date -u +%T)"
bench "$OUT/d128" 260 full _d128_ $K "$K:RESCALE_UNDER_EXP=1" "$K:D128_RESCALE_BEFORE_PV=1"
python3 scripts/ab_ratio.py "$OUT/d128/ladder_bench.json" --worst 5
echo "#### d64: v19, RESCALE_UNDER_EXP=1 $(date -u +%T)"
bench "$OUT/d64" 170 full _d64_ $K "$K:RESCALE_UNDER_EXP=1"
python3 scripts/ab_ratio.py "$OUT/d64/ladder_bench.json" --worst 5
echo "#### edge $(date -u +%T)"
bench "$OUT/edge" 90 edge "" "$K:RESCALE_UNDER_EXP=1" "$K:D128_RESCALE_BEFORE_PV=1"
echo "#### done $(date -u +%T)"
