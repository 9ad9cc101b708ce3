#!/usr/bin/env bash
# Session 7, the kernel call (runs 21-23 of docs/kernel_ladder.md; predictions written there before the run):
#   1. A/B on the 72 causal shapes of full: 04 against 04:CAUSAL_PERSIST=1 (ladder_bench, one process);
#   2. the per-tile timeline (scripts/tile_timeline.py, TIMELINE=1 builds) of both on six shapes: where a causal
#      tile's time goes against a non-causal one's (SM idle between CTAs, the start, the diagonal block, the end);
#   1b. `workbench warm --suite full --anchors fa3,cudnn,fa2` on the call's empty cache (its time for the README);
#   3. the recorded campaign's next evaluation on full (scripts/gpu_campaign_check.sh): the A/B's winner, as the rung
#      file with that default (issue 26's GPU item: 04 on full after the merges).
# Run through scripts/gpu_run.sh's cache handling: bash scripts/gpu_run.sh s7k  (or standalone on the machine).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### 1. CAUSAL_PERSIST A/B on the causal shapes $(date -u +%T)"; mkdir -p "$OUT/ab"
OUT=$OUT/ab timeout "${AB_TIMEOUT:-150}" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1 --kernels $K $K:CAUSAL_PERSIST=1 > "$OUT/ab/log.txt" 2>&1
grep -E "FAIL|# built" "$OUT/ab/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
echo "#### 1b. workbench warm on the call's empty cache (the README's warm-up time) $(date -u +%T)"
t0=$SECONDS
timeout "${WARM_TIMEOUT:-170}" python3 -m workbench.cli warm --suite full --anchors fa3,cudnn,fa2 > "$OUT/warm.log" 2>&1
echo "workbench warm rc $? in $((SECONDS - t0)) s"; tail -4 "$OUT/warm.log" | cut -c1-200
echo "#### 2. timeline $(date -u +%T)"; mkdir -p "$OUT/tl"
OUT=$OUT/tl timeout "${TL_TIMEOUT:-110}" python3 scripts/tile_timeline.py --kernels $K $K:CAUSAL_PERSIST=1 \
  --only A_d128_c1_s1k A_d128_c0_s1k A_d128_c1_s4k A_d128_c0_s4k B_h28x4_d128_c1_s8k C_s3000_d128_c1 \
  --anchors fa3 --cap 0.2 --reps 10 > "$OUT/tl/log.txt" 2>&1
tail -c 9000 "$OUT/tl/log.txt"
echo "#### 3. campaign evaluation $(date -u +%T)"
# the winner by the A/B's causal geomean x FA3 (persistent only if every shape passed and it gains >= 0.5 %)
pick=$(python3 - "$OUT/ab/ladder_bench.json" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print("default"); sys.exit()
s = d["summary"]
base, knob = s.get("04_pingpong vs fa3", {}).get("all"), s.get("04_pingpong[CAUSAL_PERSIST=1] vs fa3", {}).get("all")
label = "04_pingpong[CAUSAL_PERSIST=1]"
ok = all(r["impl"].get(label, {}).get("status", "ok") == "ok" and "error" not in r["impl"].get(label, {})
         and "ms" in r["impl"].get(label, {}) for r in d["results"])
print("persist" if ok and base and knob and knob >= 1.005 * base else "default")
EOF
)
echo "A/B pick: $pick"
mkdir -p .experiments
if [ "$pick" = persist ]; then
  sed 's/^#define CAUSAL_PERSIST 0 /#define CAUSAL_PERSIST 1 /' $K > .experiments/04_pingpong.cu
  notes="v9: CAUSAL_PERSIST=1 (paired causal grids persistent, striding the pairs), picked by run 21's A/B"
else
  cp $K .experiments/04_pingpong.cu
  notes="v8 again (CAUSAL_PERSIST=0 kept by run 21's A/B), after the layout, containment and problem merges"
fi
left=$(( ${CALL_BUDGET:-565} - SECONDS )); [ "$left" -lt 60 ] && left=60   # what the device call has left
echo "campaign check limit ${left} s"
timeout "$left" bash scripts/gpu_campaign_check.sh .experiments/04_pingpong.cu "$notes"
grep -E "^(geomean_vs|all_correct|scenarios|flags|stop|question)" "$OUT/campaign_check.log" | head -20
echo "#### done $(date -u +%T)"
