#!/usr/bin/env bash
# Session 7, second kernel call (run 24 of docs/kernel_ladder.md, predicted there before the run): on all of full
# 04, 04:SPLIT_WAVES=1 and 04:SPLIT_WAVES=1,CAUSAL_PERSIST=32 (ladder_bench, one process), the same three on edge,
# then the winner (best geomean x FA3, every shape passed, >= 0.5 % over the default) as the rung file with those
# defaults through the recorded campaign. Run as: CALL=scripts/calls/gpu_call_s7k2.sh bash scripts/gpu_run.sh call
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab" "$OUT/edge"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
KS="$K $K:SPLIT_WAVES=1 $K:SPLIT_WAVES=1,CAUSAL_PERSIST=32"
echo "#### 1. A/B on full $(date -u +%T)"
OUT=$OUT/ab timeout "${AB_TIMEOUT:-240}" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15 \
  --suite kernels/attn_fwd/suites/full.csv --kernels $KS > "$OUT/ab/log.txt" 2>&1
grep -E "FAIL|# built" "$OUT/ab/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
echo "#### 2. edge $(date -u +%T)"
OUT=$OUT/edge timeout "${EDGE_TIMEOUT:-90}" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 3 \
  --cap 0.05 --suite kernels/attn_fwd/suites/edge.csv --kernels $KS > "$OUT/edge/log.txt" 2>&1
grep -E "FAIL" "$OUT/edge/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/edge/log.txt"
echo "#### 3. campaign evaluation $(date -u +%T)"
pick=$(python3 - "$OUT/ab/ladder_bench.json" "$OUT/edge/ladder_bench.json" <<'PY'
import json, sys
try:
    runs = [json.load(open(f)) for f in sys.argv[1:]]
except Exception:
    print("04_pingpong"); sys.exit()
def passed(label):
    return all("ms" in r["impl"].get(label, {}) and "error" not in r["impl"][label] for d in runs for r in d["results"])
s = runs[0]["summary"]
base = s.get("04_pingpong vs fa3", {}).get("all") or 0
best, best_g = "04_pingpong", base
for label in ("04_pingpong[SPLIT_WAVES=1]", "04_pingpong[SPLIT_WAVES=1,CAUSAL_PERSIST=32]"):
    g = s.get(f"{label} vs fa3", {}).get("all") or 0
    if passed(label) and g >= 1.005 * base and g > best_g:
        best, best_g = label, g
print(best)
PY
)
echo "pick: $pick"; mkdir -p .experiments; cp $K .experiments/04_pingpong.cu
E=.experiments/04_pingpong.cu
case $pick in *SPLIT_WAVES*) sed -i 's/^#define SPLIT_WAVES 0 /#define SPLIT_WAVES 1 /' $E;; esac
case $pick in *CAUSAL_PERSIST*) sed -i 's/^#define CAUSAL_PERSIST 0 /#define CAUSAL_PERSIST 32/' $E;; esac
grep -E "^#define (SPLIT_WAVES|CAUSAL_PERSIST) " .experiments/04_pingpong.cu
notes="v9 candidate from run 24's A/B: $pick as the defaults (SPLIT_WAVES: keys split only under one wave)"
left=$(( ${CALL_BUDGET:-560} - SECONDS )); [ "$left" -lt 60 ] && left=60
echo "campaign check limit ${left} s"
timeout "$left" bash scripts/gpu_campaign_check.sh .experiments/04_pingpong.cu "$notes"
grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
echo "#### done $(date -u +%T)"
