#!/usr/bin/env bash
# Session 21, call 6 (either card; ~200 s of the last ~290 s of device time). Run 67: the two imbalances run 65's
# raw timeline records named, each a host-only knob (the default's SASS is byte-identical, no device code changes):
# - DYN_PAIRS=1: A_d128_c1_s512-s4k run 1024 equal persistent pairs on 132 SMs (CTAs 0-99 eight, 100-131 seven:
#   those 32 SMs idle for the last pair, 50 us at 4k); the counter's chunked LPT walk instead. Model
#   (list scheduling, docs/kernel_ladder.md row 67): +1.2-2.2 %.
# - DYN_ONE=1: the static one-order LPT walk (GQA B grids) from the counter where it has >= 12 tiles per SM; the
#   boustrophedon's rounds straddle tile lengths (B_h32x8_d128_c1_s2k: CTAs' work 25 us apart). Model: B_h32x8 s1k/s2k
#   +2.6-2.9 %, B_h28x4_s2k +0.8 %, the other 13 B d128 shapes it reaches +-0.2 %.
# Rule (before the run): a knob becomes default if the shapes it reaches gain >= +0.5 % (geomean) with every shape
# passing and no causal shape under x0.97 twice; the rest of causal within +-0.5 %.
# Run as: CALL=scripts/calls/gpu_call_s21f.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab67"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### run 67: v22, DYN_ONE=1, DYN_PAIRS=1 on full's causal shapes $(date -u +%T)"
OUT="$OUT/ab67" timeout -k 10 300 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1 --kernels $K "$K:DYN_ONE=1" "$K:DYN_PAIRS=1" \
  > "$OUT/ab67/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror|unsupported" "$OUT/ab67/log.txt" | head -5
sed -n '/^# geomean/,$p' "$OUT/ab67/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab67/ladder_bench.json" --worst 6 | tee "$OUT/ab67/ratios.txt"
echo "#### done $(date -u +%T)"
