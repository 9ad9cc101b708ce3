#!/usr/bin/env bash
# Session 10, third call. (1) q003's measurement (asked after v13's evaluation: does the gain survive on scenarios
# never looked at?): 40 random shapes (scripts/random_suite.py, a seed of this call) checked and timed, v12
# (MASK_PEEL=0) against v13 with FA3, interleaved. (2) issue 25's ncu hang taken apart (scripts/ncu_probe_diag.sh).
# Then the ray1 stage after this script.
# Run as: CALL=scripts/calls/gpu_call_s10c.sh bash scripts/gpu_run.sh call ray1   (carry .whl/fa3, .whl/ray)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/fresh"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
SEED=${SEED:-$(date +%s)}
echo "#### 1. q003: 40 fresh shapes, seed $SEED $(date -u +%T)"
python3 scripts/random_suite.py --seed "$SEED" --n 40 --out "$OUT/fresh/fresh.csv"
OUT=$OUT/fresh timeout 200 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 6 --cap 0.1 \
  --suite "$OUT/fresh/fresh.csv" --kernels $K:MASK_PEEL=0 $K > "$OUT/fresh/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|interrupted" "$OUT/fresh/log.txt" | head; sed -n '/^# geomean/,$p' "$OUT/fresh/log.txt"
python3 - "$OUT/fresh/ladder_bench.json" <<'PY'
import json, math, sys
rows = json.load(open(sys.argv[1]))["results"]
a, b = "04_pingpong[MASK_PEEL=0]", "04_pingpong"
pairs = [(r["impl"][a]["ms"] / r["impl"][b]["ms"], r["name"]) for r in rows
         if "ms" in r["impl"].get(a, {}) and "ms" in r["impl"].get(b, {})]
for d in ("d64", "d128", "d256"):
    xs = [math.log(x) for x, n in pairs if n.endswith(f"_{d}_c0") or n.endswith(f"_{d}_c1")]
    if xs:
        print(f"v13 x v12 at {d}: {math.exp(sum(xs) / len(xs)):.4f} over {len(xs)} shapes")
xs = [math.log(x) for x, _ in pairs]
print(f"v13 x v12, all: {math.exp(sum(xs) / len(xs)):.4f} over {len(xs)}; worst {min(pairs)}, best {max(pairs)}")
PY
echo "#### 2. ncu on the hostile probe, in parts $(date -u +%T)"
timeout 200 bash scripts/ncu_probe_diag.sh
echo "#### done $(date -u +%T)"
