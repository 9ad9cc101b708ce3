#!/usr/bin/env bash
# Session 17, seventh call: run 51. CAUSAL_ORDER=4 (LPT inside chunks of heads whose K/V fit L2_WINDOW_MB, walked
# by one CTA per SM like order 3's single order) at 16 and 32 MB against v21 interleaved on full's causal shapes.
# Prediction: the loop-bound long causal shapes (A_d128_c1_s8k, C_s9000_d128_c1, B 8k-16k) +2-5 % (run 50: DRAM 45 %
# of peak against FA3's 9-13 %, 1.54 against 1.61 GHz), the short ones within +-1 % (the walk stays on).
# Run as: CALL=scripts/calls/gpu_call_s17g.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab51"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### run 51: v21 against CAUSAL_ORDER=4 (16, 32 MB) on full's causal shapes $(date -u +%T)"
OUT="$OUT/ab51" timeout 220 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1,D_prefill --kernels $K "$K:CAUSAL_ORDER=4" \
  "$K:CAUSAL_ORDER=4,L2_WINDOW_MB=32" > "$OUT/ab51/log.txt" 2>&1
echo "rc $?"
grep -E "FAIL|rror|unsupported" "$OUT/ab51/log.txt"| head -5
sed -n '/^# geomean/,$p' "$OUT/ab51/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab51/ladder_bench.json" --worst 6 | tee "$OUT/ab51/ratios.txt"
echo "#### done $(date -u +%T)"
