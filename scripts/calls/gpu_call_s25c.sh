#!/usr/bin/env bash
# Session 25 (either card, ~2.5 min). Run 92: run 86's confirmation. SLOT_WALK=1 (the static walk's consumers read
# each tile from its Q slot: the d256 kWalk 1 loop without R2UR descriptors, 461 -> 448 instructions) measured
# x1.0059 on its nine d256 shapes against the faster of v26 and a copy, none below it, under its +1.0 % rule. Here the
# nine alone, v26 and two copies interleaved, 7 reps.
# Prediction: +0.5-1 % against the fastest reference per shape (run 86's). Rule (as run 86's): default if the nine
# gain >= +1.0 % against the fastest of v26 and both copies per shape, none below -3 %; else SLOT_WALK is deleted.
# Run as: CALL=scripts/calls/gpu_call_s25c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab92"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
NINE=A_d256_c1_s512,A_d256_c1_s1k,A_d256_c1_s2k,A_d256_c1_s4k,C_s1000_d256_c1,C_s1500_d256_c1,C_s3000_d256_c1
NINE+=,D_prefill_q2048_k4k_h16x8_d256,D_prefill_q2048_k16k_h16x8_d256
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### run 92 $(date -u +%T)"
OUT="$OUT/ab92" timeout -k 10 300 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 7 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only "$NINE" \
  --kernels $K "$K:SLOT_WALK=1" "$K:SLOT_WALK=0" "$K:EMPTY_SOLO=1" > "$OUT/ab92/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab92/log.txt" | head -3
python3 scripts/ab_ratio.py "$OUT/ab92/ladder_bench.json" --moved 0.5 \
  --copies "04_pingpong[SLOT_WALK=0],04_pingpong[EMPTY_SOLO=1]" | tee "$OUT/ab92/ratios.txt"
echo "#### done $(date -u +%T)"
