#!/usr/bin/env bash
# Session 22, call 4 (either card, ~3 min). B is the weakest category (0.990 on the H100, its causal d128 1k-8k
# 0.957-0.984, B_h64x8_d64_c1_s1k 0.952): ncu saw FA3's tensor cycles but +3.6 % active and +2.4 % idle cycles on
# B_h32x8_d128_c1_s2k (run 65), and run 67's counter walk did not recover the modelled imbalance. The per-tile
# timeline with raw records on v23: the CTA-balance line (key blocks per CTA, early CTAs: less work or a slower SM)
# and the phases by tile length; A_d128_c1_s4k beside them to confirm v23's walk ended the pairs' idle last round.
# Run as: CALL=scripts/calls/gpu_call_s22d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### timeline with records $(date -u +%T)"
OUT="$OUT" timeout -k 10 240 python3 scripts/tile_timeline.py --kernels $K --anchors fa3 --save-records \
  --only B_h32x8_d128_c1_s1k B_h32x8_d128_c1_s2k B_h64x8_d64_c1_s1k A_d128_c1_s4k > "$OUT/tile_timeline.log" 2>&1
echo "rc $?"; grep -E "^== |SM time|CTA work|tile us|steady block " "$OUT/tile_timeline.log" | cut -c1-190 | head -30
( cd "$OUT" && ls timeline_*.bin >/dev/null 2>&1 && tar -czf timeline_records.tgz timeline_*.bin \
  && rm -f timeline_*.bin )
echo "#### done $(date -u +%T)"
