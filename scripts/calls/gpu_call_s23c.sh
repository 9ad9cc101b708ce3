#!/usr/bin/env bash
# Session 23, call 3 (either card, ~1.5 min). Run 78: `D128_BN_PAD=1` (host only): non-causal d128 under the 3072-key
# switch takes 176-key blocks where they pad the keys >= 5 % less than 128-key ones. The worst shape of v23/v24's
# acceptance, D_cross_q4k_k333_d128 (0.90-0.91x FA3), runs three 128-key blocks (384 keys for 333) where FA3's
# 176-key tile runs two (352): 8 % more key work. In full it reaches D_cross_q1k_k333_d128 and D_cross_q4k_k333_d128
# only. First correctness of the knob on tests/fixtures/d128_pad_keys.csv (partial blocks, GQA, odd rows), then v25,
# the knob, a v25 copy on D_cross and the non-causal d128 shapes, interleaved. Prediction: q4k_k333 +5-9 %,
# q1k_k333 +2-6 % (512 tiles: the 176 tile's single Q buffer starts each tile later), the rest unchanged. Rule:
# default if both gain >= +2 % over both copies.
# Run as: CALL=scripts/calls/gpu_call_s23c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab78"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### run 78: correctness of the knob $(date -u +%T)"
OUT="$OUT/ab78/check" timeout -k 10 120 python3 scripts/ladder_bench.py --anchors "" --seeds 0 --no-scaled --no-time \
  --suite tests/fixtures/d128_pad_keys.csv --kernels "$K:D128_BN_PAD=1" > "$OUT/ab78/check.log" 2>&1
echo "rc $?"; grep -E "^P_|FAIL|rror" "$OUT/ab78/check.log" | cut -c1-120 | head -8
echo "#### run 78: A/B $(date -u +%T)"
OUT="$OUT/ab78" timeout -k 10 300 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only D_cross,_d128_c0 --kernels $K "$K:D128_BN_PAD=1" \
  "$K:D128_BN_PAD=0" > "$OUT/ab78/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab78/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab78/log.txt" | tail -4
python3 scripts/ab_ratio.py "$OUT/ab78/ladder_bench.json" --worst 4 --moved 1 | tee "$OUT/ab78/ratios.txt"
echo "#### done $(date -u +%T)"
