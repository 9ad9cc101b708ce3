#!/usr/bin/env bash
# Next session, first call (prepared in session 8; `docs/gpu_plan.md` V1 + V3): smoke through `workbench check`,
# issue 25's two ncu wall tests (ncu now profiles only the application process), then run 30 of
# docs/kernel_ladder.md: ladder_bench, interleaved, on the causal shapes of full, 04 against 04:CAUSAL_LPT_WALK=1;
# the rung with the knob on through the campaign (timing cache carried) when the causal shapes gain >= 0.3 %.
# Run as: CALL=scripts/calls/gpu_call_s9a.sh bash scripts/gpu_run.sh call      (carry .whl and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### 0. smoke through the harness $(date -u +%T)"
timeout 120 python3 -m workbench.cli check $K --suite smoke --anchors fa3 --traces '' > "$OUT/smoke.log" 2>&1
echo "smoke rc $?"; grep -E "^(geomean|all_correct)" "$OUT/smoke.log" | head -3
echo "#### 1. ncu behind the walls $(date -u +%T)"
timeout "${NCU_TIMEOUT:-240}" python3 -m pytest -m gpu tests/test_security_gpu.py -k ncu -q -s -rA -p no:cacheprovider \
  -W ignore --tb=short > "$OUT/pytest_ncu_walls.log" 2>&1
echo "ncu walls rc $?"
grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|^E " "$OUT/pytest_ncu_walls.log" | head -20
echo "#### 2. A/B on the causal shapes, interleaved $(date -u +%T)"
OUT=$OUT/ab timeout "${AB_TIMEOUT:-150}" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1,prefill --kernels $K $K:CAUSAL_LPT_WALK=1 > "$OUT/ab/log.txt" 2>&1
grep -E "FAIL|# built|interrupted" "$OUT/ab/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
gain=$(python3 - "$OUT/ab/ladder_bench.json" <<'PY'
import json, math, sys
try:
    rows = json.load(open(sys.argv[1]))["results"]
    a, b = "04_pingpong", "04_pingpong[CAUSAL_LPT_WALK=1]"
    xs = [math.log(r["impl"][a]["ms"] / r["impl"][b]["ms"]) for r in rows]
    print(f"{math.exp(sum(xs) / len(xs)):.4f}")
except Exception:
    print("0")
PY
)
echo "causal x default: $gain"
mkdir -p "$OUT/edge"
OUT=$OUT/edge timeout 90 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 3 --cap 0.05 \
  --suite kernels/attn_fwd/suites/edge.csv --kernels $K $K:CAUSAL_LPT_WALK=1 > "$OUT/edge/log.txt" 2>&1
grep -E "FAIL" "$OUT/edge/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/edge/log.txt"
grep -q "FAIL" "$OUT/edge/log.txt" && gain=0    # a knob that fails an edge shape is not evaluated
echo "#### 3. campaign evaluation $(date -u +%T)"
if python3 -c "import sys; sys.exit(0 if float('$gain') >= 1.003 else 1)"; then
  mkdir -p .experiments; E=.experiments/04_pingpong.cu; cp $K $E
  sed -i 's/^#define CAUSAL_LPT_WALK 0 /#define CAUSAL_LPT_WALK 1 /' $E; grep -E "^#define CAUSAL_LPT_WALK " $E
  timeout "${CAMPAIGN_TIMEOUT:-150}" bash scripts/gpu_campaign_check.sh $E \
    "v12 from run 30: CAUSAL_LPT_WALK 1 (unpaired causal LPT grids persistent, boustrophedon); q028's answer: K/V \
are never converted, P one F2FP per two values (F2FP/FFMA 0.49)"
  grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
  grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
else
  echo "no gain: the campaign check waits"
fi
echo "#### done $(date -u +%T)"
