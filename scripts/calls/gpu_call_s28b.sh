#!/usr/bin/env bash
# Session 28, run 101 (~4 min, either card): why 04 loses the long shapes on clock, not cycles (v26 on an H100, the
# 29 shapes of >= 3 ms: 1.2 % fewer cycles than FA3, 1596 against 1665 MHz, 0.969 in time). scripts/power_probe.py
# holds v27, v28 (run 99's four knobs) and FA3 alone on five long shapes, 1.5 s idle before each 2.5 s hold, ABBA order:
# board power, SM clock and energy per call. Then B_h32x8_d128_c1_s8k re-timed (run 99: 0.91 in two variants, 1.03
# in the third): v27, v28 and a copy interleaved, 9 reps.
# Prediction: 04's energy per call 2-5 % above FA3's on each shape at a 3-4 % lower clock, both held at the power
# cap (reason bit 0x4). Energy within 1 % of FA3's instead: the timer's order made the clock gap (run 97's rest).
# Run as: CALL=scripts/calls/gpu_call_s28b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/power101" "$OUT/s8k101"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
V28="$K:INF_GUARD=0,STSM_EPILOGUE=1,FAST_FINALIZE=1,FAST_DIVMOD=1"
nvidia-smi --query-gpu=name,clocks.sm,power.limit,temperature.gpu --format=csv | tee "$OUT/env.txt"
echo "#### run 101: energy per call $(date -u +%T)"
OUT="$OUT/power101" timeout -k 10 260 python3 scripts/power_probe.py --suite kernels/attn_fwd/suites/full.csv \
  --only A_d128_c0_s16k,B_h64x8_d128_c1_s8k,A_d64_c0_s16k,B_h40x8_d128_c1_s16k,B_h64x8_d128_c1_s32k \
  --kernels $K "$V28" \
  --anchors fa3 --rest 1.5 --hold 2.5 --rounds 2 2>&1 | tee "$OUT/power101/log.txt" | grep -v "^#  "
echo "#### B_h32x8_d128_c1_s8k re-timed $(date -u +%T)"
OUT="$OUT/s8k101" timeout -k 10 120 python3 scripts/ladder_bench.py --suite kernels/attn_fwd/suites/full.csv \
  --only B_h32x8_d128_c1_s8k,B_h32x8_d128_c1_s4k --kernels $K "$V28" "$K:INF_GUARD=1" --anchors fa3 --reps 9 \
  --seeds 0 --no-scaled > "$OUT/s8k101/log.txt" 2>&1
echo "rc $?"; grep -E "^B_" "$OUT/s8k101/log.txt"
echo "#### done $(date -u +%T)"
