#!/usr/bin/env bash
# Session 8, first call (run 26 of docs/kernel_ladder.md, predicted there before the run): `workbench check` on smoke
# first (a harness that cannot judge here costs 40 s, not the call), then on all of full 04, 04:CAUSAL_PERSIST=32
# (h-persist's spill-free build) and 04:CAUSAL_ORDER=3 (one LPT order over every head) in one ladder_bench process,
# the three on edge, then the rung with every knob that won (>= 0.3 % over the default on full, every shape
# passed on full and edge) through the recorded campaign.
# Run as: CALL=scripts/calls/gpu_call_s8a.sh bash scripts/gpu_run.sh call
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab" "$OUT/edge"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
KS="$K $K:CAUSAL_PERSIST=32 $K:CAUSAL_ORDER=3"
echo "#### 0. smoke through the harness $(date -u +%T)"
timeout 120 python3 -m workbench.cli check $K --suite smoke --anchors fa3 --traces '' > "$OUT/smoke.log" 2>&1
echo "smoke rc $?"; grep -E "^(geomean|all_correct|scenarios)" "$OUT/smoke.log" | head -5
echo "#### 1. A/B on full $(date -u +%T)"
OUT=$OUT/ab timeout "${AB_TIMEOUT:-240}" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15 \
  --suite kernels/attn_fwd/suites/full.csv --kernels $KS > "$OUT/ab/log.txt" 2>&1
grep -E "FAIL|# built" "$OUT/ab/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
echo "#### 2. edge $(date -u +%T)"
OUT=$OUT/edge timeout "${EDGE_TIMEOUT:-90}" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 3 \
  --cap 0.05 --suite kernels/attn_fwd/suites/edge.csv --kernels $KS > "$OUT/edge/log.txt" 2>&1
grep -E "FAIL" "$OUT/edge/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/edge/log.txt"
echo "#### 3. campaign evaluation $(date -u +%T)"
picks=$(python3 - "$OUT/ab/ladder_bench.json" "$OUT/edge/ladder_bench.json" <<'PY'
import json, sys
try:
    runs = [json.load(open(f)) for f in sys.argv[1:]]
except Exception:
    sys.exit()
def passed(label):
    return all("ms" in r["impl"].get(label, {}) and "error" not in r["impl"][label] for d in runs for r in d["results"])
s = runs[0]["summary"]
base = s.get("04_pingpong vs fa3", {}).get("all") or 0
for knob in ("CAUSAL_PERSIST=32", "CAUSAL_ORDER=3"):
    g = s.get(f"04_pingpong[{knob}] vs fa3", {}).get("all") or 0
    if passed(f"04_pingpong[{knob}]") and g >= 1.003 * base:
        print(knob)
PY
)
echo "picks: ${picks:-none}"; mkdir -p .experiments; E=.experiments/04_pingpong.cu; cp $K $E
case $picks in *CAUSAL_PERSIST*) sed -i 's/^#define CAUSAL_PERSIST 0 /#define CAUSAL_PERSIST 32/' $E;; esac
case $picks in *CAUSAL_ORDER*) sed -i 's/^#define CAUSAL_ORDER 2 /#define CAUSAL_ORDER 3 /' $E;; esac
grep -E "^#define (CAUSAL_ORDER|CAUSAL_PERSIST) " $E
if [ -n "$picks" ]; then
  notes="v10 candidate from run 26's A/B: $(echo $picks | tr '\n' ' ')as the defaults"
  left=$(( ${CALL_BUDGET:-565} - SECONDS )); [ "$left" -lt 60 ] && left=60
  echo "campaign check limit ${left} s"
  timeout "$left" bash scripts/gpu_campaign_check.sh $E "$notes"
  grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
  grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
else
  echo "no knob won: the campaign check waits for a new version"
fi
echo "#### done $(date -u +%T)"
