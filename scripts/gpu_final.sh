#!/usr/bin/env bash
# The last device call of 2026-12-01 (scripts/gpu_hopper.sh and device_time_remeasure.py hold the rest):
# the best rung through the harness on `full` with every anchor (its own baseline: the original's slow
# timings do not fit the session's device time), the known-bad kernels (8 in parallel), compute-sanitizer
# on 04, and 03 verified on `full`. Each step has its own time limit; logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 WORKBENCH_CACHE=/tmp/wbcache WORKBENCH_GPU_OUT=/tmp/gpuout
source scripts/gpu_wheels.sh || exit 2
K4=kernels/attn_fwd/ladder/04_pingpong.cu; K3=kernels/attn_fwd/ladder/03_wgmma.cu
wb() { python3 -m workbench.cli "$@"; }
echo "#### 04 full (harness) $(date -u +%T)"
timeout 300 python3 -m workbench.cli check $K4 --suite full --anchors fa3,cudnn,fa2 --baseline $K4 \
  --json "$OUT/check_04_pingpong_full.json" --traces '' > "$OUT/check_04.log" 2>&1
grep -E "^(suite|scenarios|geomean_vs|all_correct|timing_method|flags)" "$OUT/check_04.log"
grep -c FAIL "$OUT/check_04.log"
echo "#### wrong kernels $(date -u +%T)"
timeout 130 python3 -m pytest -m gpu tests/test_gpu.py -k wrong -q -s -p no:cacheprovider -n 8 > "$OUT/wrong.log" 2>&1
grep -E "^WRONG|passed|failed" "$OUT/wrong.log" | tail -25
echo "#### sanitize 04 $(date -u +%T)"
for tool in racecheck synccheck; do
  timeout 40 compute-sanitizer --tool $tool --kernel-name kns=attn --print-limit 5 python3 scripts/ladder_bench.py \
    --suite kernels/attn_fwd/suites/edge.csv --kernels $K4 --no-time --no-scaled --seeds 0 --only s64_causal,q333_k77 \
    > "$OUT/sanitize_$tool.log" 2>&1
  echo "$tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitize_$tool.log" | tr '\n' ' ')"
done
echo "#### 03 full verification $(date -u +%T)"
timeout 75 python3 -m workbench.cli check $K3 --suite full --anchors '' --no-timing --traces '' \
  --json "$OUT/check_03_wgmma_full_verify.json" > "$OUT/check_03.log" 2>&1
grep -E "^(scenarios|all_correct)" "$OUT/check_03.log"; grep FAIL "$OUT/check_03.log" | head -3
