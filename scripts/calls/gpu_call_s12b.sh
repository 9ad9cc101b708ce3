#!/usr/bin/env bash
# Session 12, second kernel call: run 39, the mirrored pairs against the persistent LPT walk on the causal grids that
# pair today (>= 1024 tiles under 128 query blocks). CAUSAL_PAIRS=0 sends them to CAUSAL_ORDER 3's one LPT order,
# which CAUSAL_LPT_WALK walks with one CTA per SM (run 30); the pairs predate the walk (run 17 compared them with a
# relaunched LPT grid). Interleaved with FA3 on the 72 causal shapes of full, then edge for the knob's build.
# Run as: CALL=scripts/calls/gpu_call_s12b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### pairs vs walk $(date -u +%T)"
OUT=$OUT/ab timeout 240 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1 --kernels $K $K:CAUSAL_PAIRS=0 > "$OUT/ab/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab/ladder_bench.json" --worst 6
echo "#### edge $(date -u +%T)"; mkdir -p "$OUT/edge"
OUT=$OUT/edge timeout 120 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 3 --cap 0.05 \
  --suite kernels/attn_fwd/suites/edge.csv --kernels $K:CAUSAL_PAIRS=0 > "$OUT/edge/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/edge/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/edge/log.txt"
echo "#### done $(date -u +%T)"
