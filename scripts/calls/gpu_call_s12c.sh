#!/usr/bin/env bash
# Session 12, third call: v17 (CAUSAL_PAIRS 2: the LPT walk instead of the pairs where run 39 measured it better)
# against v16 interleaved on the 72 causal shapes, v17 on edge, v17 through the campaign on full; then issue 25's
# profiler behind the walls with AF_UNIX allowed and the host's sockets hidden (tests/test_security_gpu.py -k ncu).
# Run as: CALL=scripts/calls/gpu_call_s12c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3, .gpucache, .experiments)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab" "$OUT/edge"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; V16=.experiments/v16_04_pingpong.cu
echo "#### v17 vs v16, causal $(date -u +%T)"
OUT=$OUT/ab timeout 200 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1 --kernels $V16 $K > "$OUT/ab/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab/ladder_bench.json" --worst 5
echo "#### edge $(date -u +%T)"
OUT=$OUT/edge timeout 100 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 3 --cap 0.05 \
  --suite kernels/attn_fwd/suites/edge.csv --kernels $K > "$OUT/edge/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/edge/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/edge/log.txt"
echo "#### campaign $(date -u +%T)"
timeout 240 bash scripts/gpu_campaign_check.sh $K "v17 (run 39): CAUSAL_PAIRS 2, the persistent LPT walk instead of \
the mirrored pairs up to d128 where the pairs would be relaunched CTAs or the GQA group is >= 4 \
(causal +1.1 % predicted \
from run 39's groups, full +0.4 %)" 2>&1 | grep -vE "^\[" | tail -40
echo "#### ncu behind the walls $(date -u +%T)"
timeout 200 python3 -m pytest -m gpu tests/test_security_gpu.py -k ncu -q -s -p no:cacheprovider -W ignore 2>&1 \
  | tail -25
echo "#### done $(date -u +%T)"
