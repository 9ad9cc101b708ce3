#!/usr/bin/env bash
# Session 11, first call: run 34 of docs/kernel_ladder.md, PACK_TMA (packed Q and O through the producer's TMA,
# prefetched like the unpacked Q, for groups that divide 64; the consumers' own loads made short packed tiles
# 1.2-2x slower: random shapes 23, 31, 36), interleaved with FA3 on the new gqa_short suite (every group 2-32,
# the consumer path for 3/5/7), the 40 random shapes of session 10 and edge; then run 35, d64 on full: the
# peeled mask loop (MASK_PEEL_MIN_D=64) and FA3's 128-key three-consumer tile (D64_WG3_BN=128), alone and together.
# Run as: CALL=scripts/calls/gpu_call_s11a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
python3 scripts/random_suite.py --seed 1796291355 --n 40 --out "$OUT/fresh.csv"
leg() {   # name, timeout, suite, ladder_bench arguments...
  local name=$1 limit=$2 suite=$3; shift 3; mkdir -p "$OUT/$name"
  echo "#### $name $(date -u +%T)"
  OUT=$OUT/$name timeout "$limit" python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --suite "$suite" "$@" \
    > "$OUT/$name/log.txt" 2>&1
  echo "rc $?"; grep -E "FAIL|interrupted|rror" "$OUT/$name/log.txt" | head -5
  sed -n '/^# geomean/,$p' "$OUT/$name/log.txt"
  python3 scripts/ab_ratio.py "$OUT/$name/ladder_bench.json" --worst 3
}
leg gqa 120 kernels/attn_fwd/suites/gqa_short.csv --reps 5 --cap 0.08 --kernels $K:PACK_TMA=0 $K
leg fresh 130 "$OUT/fresh.csv" --reps 5 --cap 0.08 --kernels $K:PACK_TMA=0 $K
leg edge 80 kernels/attn_fwd/suites/edge.csv --reps 3 --cap 0.05 --kernels $K:PACK_TMA=0 $K
leg d64 230 kernels/attn_fwd/suites/full.csv --only _d64 --reps 5 --cap 0.08 --kernels $K $K:MASK_PEEL_MIN_D=64 \
  $K:D64_WG3_BN=128 $K:MASK_PEEL_MIN_D=64,D64_WG3_BN=128
echo "#### done $(date -u +%T)"
