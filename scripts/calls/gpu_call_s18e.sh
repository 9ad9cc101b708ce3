#!/usr/bin/env bash
# Session 18, call 5: run 56's edge check of v22 stopped on E_d256_q4097_k129_mqa_causal ("no progress for 120 s",
# H100), a shape whose launch runs code identical to v21's (same host choice: d256, group 8, the static LPT walk;
# the 36 shared functions' SASS identical), which passed on the H200 in session 17. Reproduce: the shape and its
# edge neighbours many times in both builds under a timeout, edge again through `workbench check`, then
# compute-sanitizer synccheck on the shape alone; then q013 (the campaign's question after v22: is the work of
# ragged scenarios balanced?) by v22's per-tile timeline on A_d128_c1_s8k (DYN_CHUNKS) and B_h32x8_d128_c1_s16k
# (DYN_LONG).
# Run as: CALL=scripts/calls/gpu_call_s18e.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/rep"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; E=kernels/attn_fwd/suites/edge.csv
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
for i in 1; do
  echo "#### repeat $i: E_d256 and the q4097 shapes, v22 and v21 $(date -u +%T)"
  OUT="$OUT/rep/$i" timeout 75 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 1 --reps 40 --cap 0.3 \
    --suite $E --only E_d256,q4097 --kernels $K "$K:DYN_CHUNKS=0,DYN_LONG=0" > "$OUT/rep/log$i.txt" 2>&1
  echo "rc $?"; grep -E "FAIL|rror|imeout" "$OUT/rep/log$i.txt" | head -5
  grep -E "^(04|kernel)" "$OUT/rep/log$i.txt" | tail -3
done
echo "#### edge: v22 through workbench check $(date -u +%T)"
timeout 150 python3 -m workbench.cli check $K --suite edge > "$OUT/edge_check.log" 2>&1; echo "rc $?"
grep -E "^(geomean_vs_fa3|all_correct|scenarios)|FAIL|failed" "$OUT/edge_check.log" | head -8
echo "#### compute-sanitizer on E_d256_q4097_k129_mqa_causal $(date -u +%T)"
for tool in synccheck; do
  timeout 80 compute-sanitizer --tool $tool --kernel-name kns=attn_wgmma --error-exitcode 9 python3 \
    scripts/ladder_bench.py --anchors "" --seeds 0 --suite $E --only E_d256_q4097_k129_mqa_causal --no-time \
    --no-scaled --kernels $K > "$OUT/san_$tool.log" 2>&1
  echo "$tool rc $?"; grep -E "ERROR SUMMARY|hazard|Barrier|error" "$OUT/san_$tool.log" | head -4
done
echo "#### timeline: v22 on two ragged shapes (q013, served by the campaign) $(date -u +%T)"
WB_CACHE_RESTORED=1 TL_TIMEOUT=110 TL_SHAPES="A_d128_c1_s8k B_h32x8_d128_c1_s16k" timeout 130 \
  bash scripts/gpu_run.sh timeline 2>&1 | grep -E "^== |SM time|tiles |tile us" | head -12
echo "#### done $(date -u +%T)"
