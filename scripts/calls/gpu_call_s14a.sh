#!/usr/bin/env bash
# Session 14, first call: v19 (D256_O_IN_V: FA3's head_dim 256 scheme, each warp frees Q after its tile's last S
# GEMM and O is staged in V stage wq, the producer's next V held on o_empty until the store has read it) against
# v17 interleaved on the d256 shapes of full, v19 on edge, racecheck and synccheck on three d256 edge shapes (a walk
# of tiles with no key block, a split grid), then v19's timeline on run 41's shapes (run 43).
# Run as: CALL=scripts/calls/gpu_call_s14a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3, .experiments)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab" "$OUT/edge" "$OUT/tl"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; V17=.experiments/v17_04_pingpong.cu
echo "#### v19 vs v17 $(date -u +%T)"
OUT=$OUT/ab timeout 200 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only d256 --kernels $V17 $K > "$OUT/ab/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab/ladder_bench.json" --worst 5
echo "#### edge $(date -u +%T)"
OUT=$OUT/edge timeout 70 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 3 --cap 0.05 \
  --suite kernels/attn_fwd/suites/edge.csv --kernels $K > "$OUT/edge/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/edge/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/edge/log.txt"
for tool in racecheck synccheck; do
  echo "#### $tool $(date -u +%T)"
  timeout 75 compute-sanitizer --tool $tool --kernel-name kns=attn --print-limit 5 python3 scripts/ladder_bench.py \
    --suite kernels/attn_fwd/suites/edge.csv --kernels $K --no-time --no-scaled --seeds 0 \
    --only E_d256_q4097_k129_mqa_causal,E_d256_q2000_k300_causal,E_d256_q100_k16k_split > "$OUT/$tool.log" 2>&1
  echo "rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|FAIL" "$OUT/$tool.log" | head -4
done
echo "#### timeline v19 $(date -u +%T)"
OUT=$OUT/tl timeout 80 python3 scripts/tile_timeline.py --kernels $K \
  --only A_d256_c1_s512 A_d256_c1_s1k A_d256_c0_s1k --anchors fa3 --cap 0.2 --reps 5 > "$OUT/tl/log.txt" 2>&1
echo "rc $?"; grep -E "^==|SM time|wait_q|epilogue" "$OUT/tl/log.txt" | head -20
( cd "$OUT" && tar -czf tl.tgz tl && rm -rf tl )
echo "#### done $(date -u +%T)"
