#!/usr/bin/env bash
# Session 25 (either card, ~3 min). Run 93: `D128_BN_SHORT=112` - non-causal d128 under D128_BN_SWITCH, where 112-key
# blocks pad >= 5 % less than 128-key ones, runs Cfg<128, 112> (two Q buffers still fit: 64 + 112 KB of stages). From
# run 91: D_cross_q4k_k333_d128 (0.89-0.91x FA3) spends 9.9 % more tensor cycles than FA3, its 384 padded keys a tile
# against FA3's 352 (176-key blocks, one Q buffer); 112-key blocks hold 333 keys in 336. In full it reaches
# D_cross_q4k/q1k_k333_d128 and C_s100_d128_c0 (`scripts/grid_plan.py -D D128_BN_SHORT=112`); 0 spills in 49 functions,
# steady 112-key loop 435 instructions (128-key: 474). First the knob's correctness on edge and
# tests/fixtures/bn112_shapes.csv (1-3 blocks, last blocks of 1-112 keys, packed GQA, odd queries), then the A/B.
# Prediction: D_cross_q4k_k333_d128 +6-10 % (tensor work -12.5 %, the tile's start and end unchanged), q1k +4-8 %,
# C_s100_d128_c0 +3-8 %; the controls (other code paths) +-0.5 %. Rule: default if the three gain >= +2 % against the
# faster of v26 and a copy per shape, none of them below it, and edge and the fixture pass.
# Run as: CALL=scripts/calls/gpu_call_s25d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab93"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
for suite in kernels/attn_fwd/suites/edge.csv tests/fixtures/bn112_shapes.csv; do
  tag=$(basename $suite .csv)
  echo "#### $tag with the knob (correctness) $(date -u +%T)"
  OUT="$OUT/ab93/$tag" timeout -k 10 150 python3 scripts/ladder_bench.py --anchors "" --seeds 0 --no-scaled --no-time \
    --suite $suite --kernels "$K:D128_BN_SHORT=112" > "$OUT/ab93/$tag.log" 2>&1
  echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab93/$tag.log" | head -5
done
echo "#### run 93 $(date -u +%T)"
SHAPES=D_cross_q4k_k333_d128,D_cross_q1k_k333_d128,C_s100_d128_c0,_k1k_d128,C_s1000_d128_c0   # the three, controls
OUT="$OUT/ab93" timeout -k 10 200 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 7 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only "$SHAPES" \
  --kernels $K "$K:D128_BN_SHORT=112" "$K:D128_BN_SHORT=0" > "$OUT/ab93/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab93/log.txt" | head -3
python3 scripts/ab_ratio.py "$OUT/ab93/ladder_bench.json" --moved 0.5 --copies "04_pingpong[D128_BN_SHORT=0]" \
  | tee "$OUT/ab93/ratios.txt"
echo "#### done $(date -u +%T)"
