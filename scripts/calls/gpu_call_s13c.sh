#!/usr/bin/env bash
# Session 13, second call: v18 (O_DIRECT: with one Q buffer, d256 and d128/176, O leaves from registers and the Q
# buffer is freed after the tile's last S GEMM, so the next Q loads under the last PV and the epilogue; run 41's
# timeline: wait_q 5-11 % and epilogue 8-17 % of the d256 tiles) against v17 interleaved on the shapes whose
# kernels changed (d256, non-causal d128 past 3072 keys), v18 on edge, v18 through the campaign on full, then
# v18's timeline on run 41's shapes.
# Ran 2026-12-04 (run 42): O_DIRECT refuted (x0.936), the knob deleted; the script stays as the record of that run.
# Run as: CALL=scripts/calls/gpu_call_s13c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3, .gpucache, .experiments)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab" "$OUT/edge" "$OUT/tl"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; V17=.experiments/v17_04_pingpong.cu
echo "#### v18 vs v17 $(date -u +%T)"
OUT=$OUT/ab timeout 220 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only d256,d128_c0,k4k_d128,k8k_d128 --kernels $V17 $K \
  > "$OUT/ab/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab/ladder_bench.json" --worst 5
echo "#### edge $(date -u +%T)"
OUT=$OUT/edge timeout 70 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 3 --cap 0.05 \
  --suite kernels/attn_fwd/suites/edge.csv --kernels $K > "$OUT/edge/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/edge/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/edge/log.txt"
echo "#### campaign $(date -u +%T)"
timeout 150 bash scripts/gpu_campaign_check.sh $K "v18 (run 42): O_DIRECT, O from registers where the tile has \
one Q buffer (d256, d128/176) and that buffer freed after the last S GEMM, so the next Q loads under the last PV \
(run 41's d256 timeline: wait_q 5-11 %, epilogue 8-17 %; predicted d256 +3-6 %, full +0.5-1 %)" 2>&1 \
  | grep -vE "^\[" | tail -30
echo "#### timeline v18 $(date -u +%T)"
OUT=$OUT/tl timeout 70 python3 scripts/tile_timeline.py --kernels $K \
  --only A_d256_c1_s512 A_d256_c1_s1k A_d256_c0_s1k --anchors fa3 --cap 0.2 --reps 5 > "$OUT/tl/log.txt" 2>&1
echo "rc $?"; grep -E "^==|SM time|wait_q|epilogue" "$OUT/tl/log.txt" | head -20
( cd "$OUT" && tar -czf tl.tgz tl && rm -rf tl )
echo "#### done $(date -u +%T)"
