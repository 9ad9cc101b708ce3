#!/usr/bin/env bash
# Session 17, first call: v21 (run 46's FINALIZE_UNDER_PV on by default) through the headline campaign on full,
# cold; then v21 on edge through `workbench check` (the campaign's build is reused); then ncu's per-instruction
# stall samples of v21 on C_s9000_d128_c1 (run 45's prediction: the FMUL block's dispatch stalls gone, DEPBAR
# 0x1 toward 4-5 % of the loop's samples; FA3's are run 44's).
# Run as: CALL=scripts/calls/gpu_call_s17a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### campaign: v21 $(date -u +%T)"
timeout 330 bash scripts/gpu_campaign_check.sh $K "v21 (run 46): FINALIZE_UNDER_PV on, a tile's row sums, 1/l and \
lse between the last PV's issue and its wait (FA3's order); interleaved against v20 on full x1.0049 (H100), every \
group up; predicted full +0.3-0.5 % over v20" 2>&1 | grep -vE "^\[" | tail -24
echo "#### edge: v21 through workbench check $(date -u +%T)"
timeout 150 python3 -m workbench.cli check $K --suite edge > "$OUT/edge_check.log" 2>&1; echo "rc $?"
grep -E "^(geomean_vs|all_correct|scenarios|flags)|FAIL|failed" "$OUT/edge_check.log" | head -12
echo "#### ncusrc: v21 on C_s9000_d128_c1 $(date -u +%T)"
WB_CACHE_RESTORED=1 NCU_JOBS="ours:C_s9000_d128_c1" NCU_TIMEOUT=100 timeout 120 \
  bash scripts/gpu_run.sh ncusrc 2>&1 | tail -45
echo "#### done $(date -u +%T)"
