#!/usr/bin/env bash
# Session 19, call 1 (470 s of device time left): does run 56's hang on E_d256_q4097_k129_mqa_causal reproduce?
# A: our kernel alone (v22 and v21 builds, no anchor) on the q4097 shapes and the d256 edge shapes, reps 40 seeds
# 0 1 (some 10^4 launches each); C: edge through `workbench check` as in run 56; then, only if either stopped,
# compute-sanitizer synccheck on the shape alone.
# Run as: CALL=scripts/calls/gpu_call_s19a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; E=kernels/attn_fwd/suites/edge.csv; bad=0
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### A: ours alone on q4097 and d256 edge shapes, v22 and v21 $(date -u +%T)"
timeout 100 python3 scripts/ladder_bench.py --anchors "" --seeds 0 1 --reps 40 --cap 0.3 --suite $E \
  --only E_d256,q4097 --kernels $K "$K:DYN_CHUNKS=0,DYN_LONG=0" > "$OUT/a_ours.txt" 2>&1
rc=$?; echo "rc $rc"; [ $rc -ne 0 ] && bad=1
grep -E "FAIL|rror|imeout" "$OUT/a_ours.txt" | head -5; grep -E "^E_" "$OUT/a_ours.txt" | cut -c1-160
echo "#### C: edge through workbench check (fa3,cudnn,fa2) $(date -u +%T)"
timeout 150 python3 -m workbench.cli check $K --suite edge --anchors fa3,cudnn,fa2 > "$OUT/edge_check.log" 2>&1
rc=$?; echo "rc $rc"; [ $rc -gt 1 ] && bad=1
grep -E "^(geomean_vs_fa3|all_correct|scenarios)|FAIL|failed" "$OUT/edge_check.log" | head -8
grep -E "^\[ *2[4-6]/30\]" "$OUT/edge_check.log" | cut -c1-150
grep -q "FAILED timeout" "$OUT/edge_check.log" && bad=1
if [ $bad -eq 1 ]; then
  echo "#### synccheck on E_d256_q4097_k129_mqa_causal $(date -u +%T)"
  timeout 60 compute-sanitizer --tool synccheck --kernel-name kns=attn_wgmma --error-exitcode 9 python3 \
    scripts/ladder_bench.py --anchors "" --seeds 0 --suite $E --only E_d256_q4097_k129_mqa_causal --no-time \
    --no-scaled --kernels $K > "$OUT/san_synccheck.log" 2>&1
  echo "synccheck rc $?"; grep -E "ERROR SUMMARY|hazard|Barrier|error" "$OUT/san_synccheck.log" | head -4
fi
echo "#### done $(date -u +%T)"
