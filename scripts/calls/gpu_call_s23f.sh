#!/usr/bin/env bash
# Session 23, last call (either card, ~2 min with the build). Runs 84 and 85 (host only, prepared from run 80's
# timeline and ncu of causal d256): `PAIRS_MIN_TILES=768` (C_s3000_d256_c1 persistent pairs, C_s3000_d128_c1
# PAIR_TAIL's order) and `PAIR_TAIL=4` (the group-1 d256 pair grids relaunched per pair: C_s5000/s9000_d256_c1,
# A_d256_c1_s8k in PAIR_TAIL's order), interleaved with v25 and a v25 copy on those 5 shapes and C_s3000_d64_c1 (d64:
# not planned by scripts/grid_plan.py). Predictions and rules: docs/kernel_ladder.md rows 84-85.
# Run as: CALL=scripts/calls/gpu_call_s23f.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab84"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### runs 84-85 $(date -u +%T)"
only=C_s3000_d64_c1,C_s3000_d128_c1,C_s3000_d256_c1,C_s5000_d256_c1,C_s9000_d256_c1,A_d256_c1_s8k
OUT="$OUT/ab84" timeout -k 10 240 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only $only \
  --kernels $K "$K:PAIRS_MIN_TILES=768" "$K:PAIR_TAIL=4" "$K:PAIR_TAIL=3" > "$OUT/ab84/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab84/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab84/log.txt" | tail -4
python3 scripts/ab_ratio.py "$OUT/ab84/ladder_bench.json" --worst 3 --moved 1 | tee "$OUT/ab84/ratios.txt"
echo "#### done $(date -u +%T)"
