#!/usr/bin/env bash
# Session 10, second call. (1) q038's measurement (the policy asked it after v12's evaluation: B_h16x8_d256_c1_s32k
# at 785 TFLOP/s, near the 790 ceiling): every d256 shape checked on five fresh seeds (and the x16-scaled set) for
# v12 and v13, and that shape timed interleaved with FA3 (10 reps) for both. (2) v13 (MASK_PEEL 1 at head_dim
# 128/256, run 31) through the campaign.
# Run as: CALL=scripts/calls/gpu_call_s10b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/seeds" "$OUT/s32k"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### 1. q038: fresh seeds on every d256 shape, v12 (MASK_PEEL=0) and v13 $(date -u +%T)"
OUT=$OUT/seeds timeout 150 python3 scripts/ladder_bench.py --anchors fa3 --seeds 11 12 13 14 15 --no-time \
  --suite kernels/attn_fwd/suites/full.csv --only d256 --kernels $K:MASK_PEEL=0 $K > "$OUT/seeds/log.txt" 2>&1
echo "seeds rc $?: $(grep -c passed "$OUT/seeds/log.txt") passed lines, $(grep -c FAIL "$OUT/seeds/log.txt") FAIL"
grep FAIL "$OUT/seeds/log.txt" | head -5
OUT=$OUT/s32k timeout 90 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 10 --cap 2 \
  --suite kernels/attn_fwd/suites/full.csv --only B_h16x8_d256_c1_s32k,B_h16x8_d256_c0_s32k \
  --kernels $K:MASK_PEEL=0 $K > "$OUT/s32k/log.txt" 2>&1
grep -E "^B_h16x8|^#|TFLOP" "$OUT/s32k/log.txt" | head -20
echo "#### 2. campaign evaluation of v13 $(date -u +%T)"
timeout "${CAMPAIGN_TIMEOUT:-200}" bash scripts/gpu_campaign_check.sh $K \
  "v13 from run 31: MASK_PEEL 1 at head_dim 128/256 (the masked key blocks, a prefix of the walk, in a loop of their \
own: the unmasked d128 loop 469 static instructions against 744; A/B x1.028 on full, d64 lost 2.5 % and keeps one \
loop). q038's answer (race? fresh seeds?): every d256 shape passed on five fresh seeds and the x16 set for v12 and \
v13 (this call, step 1), and the flagged shape's device time spans 10986-13071 us over the nine evaluations of the \
same d256 code: 785 TFLOP/s was a fast clock on a single-rep 11 ms shape, not a race"
grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
echo "#### done $(date -u +%T)"
