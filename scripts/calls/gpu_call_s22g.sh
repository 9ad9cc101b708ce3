#!/usr/bin/env bash
# Session 22, call 7 (either card, ~1 min): q042's measurement (served after v24's campaign evaluation, flagged row
# C_s9000_d256_c0 at 765 TFLOP/s near the 790 ceiling): what one call of the rung puts on the GPU and the host
# (kernels with grid/block/smem, memsets, copies; CUDA runtime calls), its device time, and an empty kernel of the
# same launch timed the same way. Prediction: one kernel per call on single-split shapes (combine_kernel only on split
# grids), no allocation, memset or attribute call per call (the host sets attributes once), the empty launch 2-5 us
# against 3470 us on the flagged row (< 0.2 %) and a few us of C_s100's ~9 us.
# Run as: CALL=scripts/calls/gpu_call_s22g.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### q042: launch floor $(date -u +%T)"
OUT="$OUT" timeout -k 10 240 python3 scripts/launch_floor.py $K C_s9000_d256_c0 C_s100_d64_c0 \
  D_prefill_q128_k16k_h16x8_d256 > "$OUT/launch_floor.log" 2>&1
echo "rc $?"; cut -c1-700 "$OUT/launch_floor.log" | tail -8
echo "#### done $(date -u +%T)"
