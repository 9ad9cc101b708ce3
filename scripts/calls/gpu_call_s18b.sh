#!/usr/bin/env bash
# Session 18, call 2: run 54. v21 against DYN_LONG=1 (the causal grids of >= 128 query blocks walked by one CTA per
# SM through the counter, same chunked order, instead of a CTA per tile) and DYN_CHUNKS=1,DYN_MAX_GROUP=1 (run 53's
# chunks only without GQA: a group's tiles in one LPT step share K/V, so the one order's DRAM traffic is 1/group),
# interleaved on full, then the 90 causal shapes again with the kernels in reverse order (per-shape noise in run 53:
# identical code moved up to 6.5 %). Predictions: DYN_LONG the 16k-32k causal shapes +2-4 %, full +0.2-0.4 %;
# DYN_MAX_GROUP=1 its A/C shapes +2-5 % as in run 53, the B shapes unchanged, full +0.1-0.2 %.
# Rule: a knob whose full ratio is >= 1.002 and whose causal pass agrees (>= 1.0) with 182/182 becomes the default.
# Run as: CALL=scripts/calls/gpu_call_s18b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab54" "$OUT/ab54r"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
CAUSAL=$(awk -F, 'NR>1 && $8==1 {printf "%s%s", s, $1; s=","}' kernels/attn_fwd/suites/full.csv)
echo "#### run 54: full $(date -u +%T)"
OUT="$OUT/ab54" timeout 280 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --kernels $K "$K:DYN_LONG=1" "$K:DYN_CHUNKS=1,DYN_MAX_GROUP=1" \
  > "$OUT/ab54/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror|unsupported" "$OUT/ab54/log.txt" | head -5
sed -n '/^# geomean/,$p' "$OUT/ab54/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab54/ladder_bench.json" --worst 6 | tee "$OUT/ab54/ratios.txt"
echo "#### run 54: the causal shapes, reverse order $(date -u +%T)"
OUT="$OUT/ab54r" timeout 200 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only "$CAUSAL" \
  --kernels "$K:DYN_CHUNKS=1,DYN_MAX_GROUP=1" "$K:DYN_LONG=1" $K > "$OUT/ab54r/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror|unsupported" "$OUT/ab54r/log.txt" | head -5
sed -n '/^# geomean/,$p' "$OUT/ab54r/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab54r/ladder_bench.json" --worst 4 | tee "$OUT/ab54r/ratios.txt"
echo "#### done $(date -u +%T)"
