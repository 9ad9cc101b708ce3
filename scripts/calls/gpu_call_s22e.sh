#!/usr/bin/env bash
# Session 22, call 5 (either card, ~3 min). Run 73: PAIR_TAIL for GQA grids only. Run 69's PAIR_TAIL on every
# persistent pair grid lost A_d256_c1_s512-s4k 4-10 % but gained B_h16x8_d256_c1_s1k/s2k/s4k +5.7/+3.4/+2.3 % (and
# +6.3/+3.8/+2.2 % in its DYN_PAIRS=0 variant, the same d256 code). PAIR_TAIL=1 now: the GQA persistent pair grids
# (those three shapes); PAIR_TAIL=2: also the GQA pair grids relaunched per pair (B_h16x8_d256_c1_s8k) and the GQA
# d128/d64 grids up to 32/8 blocks that the static one-order LPT walk takes today (B d128 c1 1k-4k, 12 shapes, and
# B_h64x8_d64_c1_s1k), whose order read 1.5x FA3's DRAM bytes (run 65's ncu on B_h32x8_d128_c1_s2k: 49.7 against
# 34.4 % of peak). Host code only (default SASS byte-identical). Prediction: PAIR_TAIL=1 the three d256 shapes +2-6 %,
# nothing else moves; PAIR_TAIL=2's 13 further shapes -2..+4 % (model balance +3 % at 1k-2k, 0 at 4k; the head-major
# order's L2 reuse for; the counter walk's cost on B, run 67's DYN_ONE 3 % under its model, against). Rule: PAIR_TAIL=1
# default if the three gain >= +1 % over both copies; PAIR_TAIL=2 instead if its 16 reached shapes gain >= +0.5 %
# over both copies, none below -3 %.
# Run as: CALL=scripts/calls/gpu_call_s22e.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab73"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### run 73 $(date -u +%T)"
OUT="$OUT/ab73" timeout -k 10 400 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1 --kernels $K "$K:PAIR_TAIL=1" "$K:PAIR_TAIL=2" \
  "$K:PAIR_TAIL=0" > "$OUT/ab73/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab73/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab73/log.txt" | tail -6
python3 scripts/ab_ratio.py "$OUT/ab73/ladder_bench.json" --worst 4 --moved 1 | tee "$OUT/ab73/ratios.txt"
echo "#### done $(date -u +%T)"
