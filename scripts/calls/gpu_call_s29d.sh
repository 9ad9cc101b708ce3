#!/usr/bin/env bash
# Session 29 (~4 min, either card). Run 109: D256_BN_SHORT=64 (new; default 0 = v29's SASS): head_dim 256 takes
# 64-key blocks on causal calls of <= 1024 keys and on non-causal ones they pad >= 5 % less than 80 (run 107's
# D256_BN=64 everywhere: A_d256_c1_s512 x1.093, s1k x1.040, B_h16x8_d256_c1_s1k x1.037, A_d256_c0_s512 x1.033, the
# long rows -2-5 %). Timed on the 7 rows of full the rule moves and 2 it leaves (A_d256_c1_s2k, C_s1500_d256_c1),
# a copy, 9 reps; checked first (seed 0, x16); then checked on edge, gqa_short and the 112-key fixture (seeds 0, 1).
# Prediction: A_d256_c1_s512 +7-9 %, A/B s1k c1 +3-4 %, A_d256_c0_s512 +2-3 %, C_s100_d256 +5-15 % (128 key
# columns against 160), C_s1000_d256_c1 +3 %; the two controls within the copy's spread; all correct.
# A win (the rule of run 107) with THEN_V30=1: v30 = v29 + the knob through scripts/calls/gpu_call_s29c.sh at once
# (~6 min more; its acceptance step checks edge, gqa_short and the fixture); otherwise the checks here (SKIP_CHECKS=1:
# none, for a squeezed budget: ~2 min in all).
# Run as: THEN_V30=1 CALL=scripts/calls/gpu_call_s29d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab109"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
ROWS=A_d256_c0_s512,A_d256_c1_s512,A_d256_c1_s1k,B_h16x8_d256_c1_s1k,C_s100_d256,C_s1000_d256_c1,A_d256_c1_s2k
OUT="$OUT/ab109" timeout -k 10 200 python3 scripts/ladder_bench.py --suite kernels/attn_fwd/suites/full.csv \
  --only $ROWS,C_s1500_d256_c1 --kernels $K "$K:D256_BN_SHORT=64" "$K:MASK_PEEL=1" \
  --anchors fa3 --reps 9 --seeds 0 > "$OUT/ab109/log.txt" 2>&1
echo "rc $?"; tail -4 "$OUT/ab109/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab109/ladder_bench.json" --copies "04_pingpong[MASK_PEEL=1]" --moved 2 \
  --verdict 0.5,3 --winners "$OUT/ab109/winners.txt" | tee "$OUT/ab109/ratios.txt"
winners=$(tr '\n' ' ' < "$OUT/ab109/winners.txt" 2>/dev/null); echo "winners: $winners"
if [ -n "${winners// }" ] && [ "${THEN_V30:-0}" = 1 ]; then   # v30 is checked on the same suites in gpu_call_accept
  WINNERS="$winners" OUT="$OUT" bash scripts/calls/gpu_call_s29c.sh; exit $?
fi
[ "${SKIP_CHECKS:-0}" = 1 ] && { echo "#### checks skipped (SKIP_CHECKS=1) $(date -u +%T)"; exit 0; }
for suite in kernels/attn_fwd/suites/edge.csv kernels/attn_fwd/suites/gqa_short.csv tests/fixtures/bn112_shapes.csv; do
  tag=$(basename $suite .csv); mkdir -p "$OUT/check109_$tag"
  OUT="$OUT/check109_$tag" timeout -k 10 120 python3 scripts/ladder_bench.py --suite $suite \
    --kernels "$K:D256_BN_SHORT=64" --anchors "" --no-time --seeds 0 1 > "$OUT/check109_$tag/log.txt" 2>&1
  echo "check $tag rc $?: $(grep -cE '^[A-Z]_' "$OUT/check109_$tag/log.txt") rows, a failing row says FAIL:"
  grep -E "FAIL|rror" "$OUT/check109_$tag/log.txt" | head -5
done
echo "#### done $(date -u +%T)"
