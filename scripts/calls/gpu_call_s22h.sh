#!/usr/bin/env bash
# Session 22, call 8 (either card, ~1 min). Run 76: PAIR_TAIL=3, v24's PAIR_TAIL order also on the persistent pair
# grids of groups of 1 up to d128 (under 16 blocks at d128, up to 8 at d64: A_d128/A_d64 c1 s512-s1k, C_s1000 d64/d128).
# Run 69 (every pair grid) measured A_d128_c1_s1k +2.8/+2.1 %, A_d64_c1_s512 +2.1/+2.1 %, A_d64_c1_s1k +1.2 %, and
# lost only at d256 (left out here). Host code only. Prediction: those four A shapes +0-3 % (s512 at d128 ~0), C_s1000
# +-3 % (it moved 5 % on identical code in run 73). Rule: default if the reached shapes gain >= +1.0 % over both
# copies, none below -3 %. v24, PAIR_TAIL=3, a v24 copy on full's causal shapes.
# Run as: CALL=scripts/calls/gpu_call_s22h.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab74"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### run 76 $(date -u +%T)"
OUT="$OUT/ab74" timeout -k 10 300 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1 --kernels $K "$K:PAIR_TAIL=3" "$K:PAIR_TAIL=2" \
  > "$OUT/ab74/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab74/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab74/log.txt" | tail -4
python3 scripts/ab_ratio.py "$OUT/ab74/ladder_bench.json" --worst 4 --moved 1 | tee "$OUT/ab74/ratios.txt"
echo "#### done $(date -u +%T)"
