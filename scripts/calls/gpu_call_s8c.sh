#!/usr/bin/env bash
# Session 8, third call (run 28 of docs/kernel_ladder.md, predicted there before the run): ladder_bench, interleaved,
# on all of full: 04:CAUSAL_ORDER=3 against 04:CAUSAL_ORDER=3,CAUSAL_PERSIST=32, whose persistent walk is now its own
# instantiation (every other grid runs the default build's SASS); the winner through the recorded campaign (timing
# cache carried); then every known-bad kernel of kernels/attn_fwd/wrong/ under the merged harness (issue 25).
# Run as: CALL=scripts/calls/gpu_call_s8c.sh bash scripts/gpu_run.sh call
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### 1. A/B on full, interleaved $(date -u +%T)"
OUT=$OUT/ab timeout "${AB_TIMEOUT:-200}" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15 \
  --suite kernels/attn_fwd/suites/full.csv --kernels $K:CAUSAL_ORDER=3 $K:CAUSAL_ORDER=3,CAUSAL_PERSIST=32 \
  > "$OUT/ab/log.txt" 2>&1
grep -E "FAIL|# built|interrupted" "$OUT/ab/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
echo "#### 2. campaign evaluation $(date -u +%T)"
pick=$(python3 - "$OUT/ab/ladder_bench.json" <<'PY'
import json, math, sys
try:
    rows = json.load(open(sys.argv[1]))["results"]
except Exception:
    sys.exit()
a, b = "04_pingpong[CAUSAL_ORDER=3]", "04_pingpong[CAUSAL_ORDER=3,CAUSAL_PERSIST=32]"
xs = [math.log(r["impl"][a]["ms"] / r["impl"][b]["ms"]) for r in rows if "ms" in r["impl"][a] and "ms" in r["impl"][b]]
g = math.exp(sum(xs) / len(xs)) if len(xs) == len(rows) and xs else 0.0
print(f"# full x ORDER=3: +PERSIST {g:.4f}", file=sys.stderr)
print("persist" if g >= 1.003 else "order3")
PY
)
echo "pick: ${pick:-none}"; mkdir -p .experiments; E=.experiments/04_pingpong.cu; cp $K $E
sed -i 's/^#define CAUSAL_ORDER 2 /#define CAUSAL_ORDER 3 /' $E
[ "$pick" = persist ] && sed -i 's/^#define CAUSAL_PERSIST 0 /#define CAUSAL_PERSIST 32/' $E
grep -E "^#define (CAUSAL_ORDER|CAUSAL_PERSIST) " $E
extra=$([ "$pick" = persist ] && echo ", CAUSAL_PERSIST 32 (own instantiation)")
notes="v10 from run 28's interleaved A/B: CAUSAL_ORDER 3$extra"
timeout "${CAMPAIGN_TIMEOUT:-200}" bash scripts/gpu_campaign_check.sh $E "$notes"
grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
echo "#### 3. known-bad kernels $(date -u +%T)"
left=$(( ${CALL_BUDGET:-570} - SECONDS )); [ "$left" -gt 420 ] && left=420
timeout "$left" python3 -m pytest -m gpu tests/test_gpu.py -k wrong -n 8 -rA -q -p no:cacheprovider -W ignore 2>&1 \
  | tee "$OUT/pytest_wrong.log" | grep -E "^(PASSED|FAILED|ERROR) |passed|failed" \
  | sed 's/tests\/test_gpu.py::test_wrong_kernel_is_rejected_with_its_reason//'
( cd "$OUT" && ls wrong_*.json >/dev/null 2>&1 && tar -czf wrong_json.tgz wrong_*.json && rm -f wrong_*.json )
echo "#### done $(date -u +%T)"
