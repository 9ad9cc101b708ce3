#!/usr/bin/env bash
# Session 12, fourth call: q004 (served on v17's evaluation 96aa79e88a96, above_ceiling 807 TFLOP/s) answered with
# ncu: DRAM bytes, instructions, duration and SM clock of one launch of v17 and of FA3 on the two fastest flagged
# shapes; then issue 25's profiler test again (the hostile probe's own 400 accepted, as in the worker test).
# Run as: CALL=scripts/calls/gpu_call_s12d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/q004"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
so=$(python3 -c "import sys; from workbench.harness.build import build_kernel as b; print(b(sys.argv[1]).so_path)" $K)
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum
M=$M,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
echo "#### q004 ncu $(date -u +%T)"
for sc in B_h16x8_d256_c1_s32k A_d256_c0_s16k; do
  for impl in ours fa3; do
    timeout 100 ncu --clock-control none --metrics $M --csv --kernel-name-base demangled \
      --kernel-name regex:"attn_wgmma_kernel|FlashAttnFwd" \
      --launch-skip 1 --launch-count 1 python3 -m workbench.agent.launch_one --impl $impl --so "$so" --suite full \
      --scenario $sc > "$OUT/q004/${impl}_$sc.csv" 2>&1
    echo "== $impl $sc rc $?"
    grep -E '^"[0-9]' "$OUT/q004/${impl}_$sc.csv" | awk -F'","' '{print "  " $(NF-2), $(NF-1), $NF}' | tr -d '"'
  done
done
echo "#### ncu behind the walls $(date -u +%T)"
timeout 200 python3 -m pytest -m gpu tests/test_security_gpu.py -k ncu -q -p no:cacheprovider -W ignore 2>&1 | tail -4
echo "#### done $(date -u +%T)"
