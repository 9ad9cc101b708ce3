#!/usr/bin/env bash
# Session 8, fourth call (run 29 of docs/kernel_ladder.md, predicted there before the run): ladder_bench, interleaved,
# on the 18 causal d64 shapes of full: v10 as committed (.experiments/04_v10.cu, from git: `git show
# HEAD:kernels/attn_fwd/ladder/04_pingpong.cu`) against the rung with persistent d64 grids only to 8 blocks; the
# rung through the recorded campaign if it gains >= 0.3 % there; then issue 25's walls on the GPU (the stage
# `walls` of scripts/gpu_run.sh in what is left of the call).
# Run as: CALL=scripts/calls/gpu_call_s8d.sh bash scripts/gpu_run.sh call
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; V10=.experiments/04_v10.cu
[ -f "$V10" ] || { echo "no $V10 (carry .experiments)"; exit 2; }
echo "#### 1. A/B on the causal d64 shapes, interleaved $(date -u +%T)"
OUT=$OUT/ab timeout "${AB_TIMEOUT:-120}" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15 \
  --suite kernels/attn_fwd/suites/full.csv --only _d64_c1 --kernels $V10 $K > "$OUT/ab/log.txt" 2>&1
grep -E "FAIL|# built|interrupted" "$OUT/ab/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
gain=$(python3 - "$OUT/ab/ladder_bench.json" <<'PY'
import json, math, sys
try:
    rows = json.load(open(sys.argv[1]))["results"]
    xs = [math.log(r["impl"]["04_v10"]["ms"] / r["impl"]["04_pingpong"]["ms"]) for r in rows]
    print(f"{math.exp(sum(xs) / len(xs)):.4f}")
except Exception:
    print("0")
PY
)
echo "d64 causal x v10: $gain"
echo "#### 2. campaign evaluation $(date -u +%T)"
if python3 -c "import sys; sys.exit(0 if float('$gain') >= 1.003 else 1)"; then
  timeout "${CAMPAIGN_TIMEOUT:-150}" bash scripts/gpu_campaign_check.sh $K \
    "v11 from run 29: persistent d64 causal grids only to 8 query blocks (the 2k ones lost 5 % in runs 26-28)"
  grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
  grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
else
  echo "no gain: the campaign check waits"
fi
echo "#### 3. walls $(date -u +%T)"
left=$(( ${CALL_BUDGET:-565} - SECONDS ))
timeout $(( left * 3 / 4 )) python3 -m pytest -m gpu tests/test_security_gpu.py -q -s -rA -p no:cacheprovider \
  -W ignore \
  > "$OUT/pytest_walls_gpu.log" 2>&1
grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|^held:|probe uid|passed|failed" "$OUT/pytest_walls_gpu.log" | cut -c1-300
left=$(( ${CALL_BUDGET:-565} - SECONDS )); [ "$left" -lt 20 ] && left=20
timeout "$left" python3 -m pytest -n 8 tests/test_security_walls.py tests/test_security_outside_worker.py -q -rfE \
  -p no:cacheprovider > "$OUT/pytest_walls_cpu.log" 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest_walls_cpu.log" | tail -12
echo "#### done $(date -u +%T)"
