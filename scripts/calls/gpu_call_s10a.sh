#!/usr/bin/env bash
# Session 10, first call: the campaign's evaluation of v12 (CAUSAL_LPT_WALK 1 as the rung's default; session 9's
# record of it was lost with its machine), then run 31 of docs/kernel_ladder.md: ladder_bench, interleaved, on all
# of full, 04 against 04:MASK_PEEL=1 (the blocks that need a mask in a loop of their own), then both on edge.
# Run as: CALL=scripts/calls/gpu_call_s10a.sh bash scripts/gpu_run.sh call      (carry .whl/fa3; .gpucache if any)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab" "$OUT/edge"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
KNOB=${KNOB:-MASK_PEEL=1}
echo "#### 0. smoke through the harness $(date -u +%T)"
timeout 120 python3 -m workbench.cli check $K --suite smoke --anchors fa3 --traces '' > "$OUT/smoke.log" 2>&1
echo "smoke rc $?"; grep -E "^(geomean|all_correct)" "$OUT/smoke.log" | head -3
echo "#### 1. campaign evaluation of v12 $(date -u +%T)"
timeout "${CAMPAIGN_TIMEOUT:-260}" bash scripts/gpu_campaign_check.sh $K \
  "v12: CAUSAL_LPT_WALK 1 as the default (run 30: unpaired causal LPT grids under 128 blocks persistent, \
boustrophedon; C causal +2.2 % in the A/B); the cache is cold (session 9's machine and its cache were lost)"
grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
mv "$OUT/campaign_check.log" "$OUT/campaign_check_v12.log"; mv "$OUT/h200-fa3-race.tgz" "$OUT/h200-fa3-race_v12.tgz"
echo "#### 2. A/B on full, interleaved: $KNOB $(date -u +%T)"
OUT=$OUT/ab timeout "${AB_TIMEOUT:-240}" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 6 --cap 0.1 \
  --suite kernels/attn_fwd/suites/full.csv --kernels $K $K:$KNOB > "$OUT/ab/log.txt" 2>&1
grep -E "FAIL|# built|interrupted" "$OUT/ab/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
python3 - "$OUT/ab/ladder_bench.json" "$KNOB" <<'PY'
import json, math, sys
try:
    rows = json.load(open(sys.argv[1]))["results"]
    a, b = "04_pingpong", f"04_pingpong[{sys.argv[2]}]"
    for name, keep in (("full", lambda r: True), ("causal", lambda r: "_c1" in r["name"] or "prefill" in r["name"]),
                       ("non-causal", lambda r: not ("_c1" in r["name"] or "prefill" in r["name"]))):
        xs = [math.log(r["impl"][a]["ms"] / r["impl"][b]["ms"]) for r in rows if keep(r)]
        print(f"{sys.argv[2]} x default, {name}: {math.exp(sum(xs) / len(xs)):.4f} over {len(xs)} shapes")
except Exception as e:
    print("no A/B figure:", e)
PY
echo "#### 3. edge $(date -u +%T)"
OUT=$OUT/edge timeout 90 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 3 --cap 0.05 \
  --suite kernels/attn_fwd/suites/edge.csv --kernels $K $K:$KNOB > "$OUT/edge/log.txt" 2>&1
grep -E "FAIL" "$OUT/edge/log.txt" | head
sed -n '/^# geomean/,$p' "$OUT/edge/log.txt"
echo "#### done $(date -u +%T)"
