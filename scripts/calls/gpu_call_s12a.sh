#!/usr/bin/env bash
# Next session's kernel call (prepared in session 11): where causal d64's time goes, the weakest group of v16
# (0.91-0.95x FA3 on the same 192x128 three-consumer tile as FA3's). The per-tile timeline (TIMELINE=1 builds,
# scripts/tile_timeline.py) of the rung on three causal d64 shapes and the non-causal one of the same size: SM idle
# between CTAs and at the end, a tile's start (Q and K_0 to S_0), the masked diagonal blocks against a steady block.
# The d64 three-consumer TIMELINE build spills 56-124 B (its clock marks at 160 registers): its overhead is printed.
# Then run 37: D64_CAUSAL_PERSIST=32 against 8 on the 18 causal d64 shapes, and run 38: CAUSAL_PERSIST=128
# against 32 on the causal d128/d256 shapes, interleaved.
# Run as: CALL=scripts/calls/gpu_call_s12a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/tl"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### timeline $(date -u +%T)"
OUT=$OUT/tl timeout "${TL_TIMEOUT:-150}" python3 scripts/tile_timeline.py --kernels $K \
  --only A_d64_c1_s2k A_d64_c1_s8k C_s9000_d64_c1 A_d64_c0_s8k --anchors fa3 --cap 0.2 --reps 10 \
  > "$OUT/tl/log.txt" 2>&1
echo "rc $?"; tail -c 9000 "$OUT/tl/log.txt"
( cd "$OUT" && tar -czf tl.tgz tl && rm -rf tl )
echo "#### causal d64 persistence bound $(date -u +%T)"; mkdir -p "$OUT/ab"
# run 37: with 128-key three-consumer tiles, are the paired causal d64 grids of 9-32 blocks better persistent?
OUT=$OUT/ab timeout 120 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _d64_c1 --kernels $K $K:D64_CAUSAL_PERSIST=32 > "$OUT/ab/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab/ladder_bench.json" --worst 4
echo "#### causal d128/d256 persistence bound $(date -u +%T)"; mkdir -p "$OUT/ab2"
# run 38: the paired causal d128/d256 grids of 33-127 blocks (B_*_d128_c1_s8k: 64) persistent too (run 21's 8k loss
# came with the odd-n pairing fixed in run 24)
OUT=$OUT/ab2 timeout 150 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _d128_c1,_d256_c1 --kernels $K $K:CAUSAL_PERSIST=128 \
  > "$OUT/ab2/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab2/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab2/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab2/ladder_bench.json" --worst 4
echo "#### done $(date -u +%T)"
