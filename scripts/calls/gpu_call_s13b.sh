#!/usr/bin/env bash
# Next session's kernel call (prepared in session 12): where causal d256's time goes on the short shapes that are
# v17's slowest (B_h16x8_d256_c1_s1k 0.89x FA3, A_d256_c1_s1k 0.90, A_d256_c1_s512 0.92; eval 96aa79e88a96), with
# the non-causal A_d256_c0_s1k as the reference, as run 37 did for d64: SM busy/gaps/tail, a tile's start (Q and K_0
# to S_0), the diagonal blocks against a steady block (scripts/tile_timeline.py; the d256 TIMELINE build spills
# 4-28 B: its overhead is printed beside each shape).
# Run as: CALL=scripts/calls/gpu_call_s13b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/tl"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### timeline d256 $(date -u +%T)"
OUT=$OUT/tl timeout "${TL_TIMEOUT:-200}" python3 scripts/tile_timeline.py --kernels $K \
  --only B_h16x8_d256_c1_s1k A_d256_c1_s1k A_d256_c1_s512 A_d256_c0_s1k --anchors fa3 --cap 0.2 --reps 10 \
  > "$OUT/tl/log.txt" 2>&1
echo "rc $?"; grep -v "^# 04_pingpong" "$OUT/tl/log.txt" | tail -c 9000
( cd "$OUT" && tar -czf tl.tgz tl && rm -rf tl )
echo "#### done $(date -u +%T)"
