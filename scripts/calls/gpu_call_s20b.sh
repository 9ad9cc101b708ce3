#!/usr/bin/env bash
# Session 20, call 2 (an H200: kind nvidia-h200): v22 (DYN_CHUNKS, DYN_LONG; EMPTY_SOLO) through the headline campaign
# on full, then edge through `workbench check` (the campaign's build reused). Before it, call 1 (s20a) must have
# shown the new default passing the keyless d256 shapes on an H100, and q013 answered.
# Run as: CALL=scripts/calls/gpu_call_s20b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### campaign: v22 $(date -u +%T)"
timeout -k 10 380 bash scripts/gpu_campaign_check.sh $K "v22 (runs 53-57): DYN_CHUNKS (deep causal grids without \
GQA: LPT in 32 MB chunks of heads from an atomic counter), DYN_LONG (causal grids of >= 128 query blocks up to d128 \
walked by one CTA per SM from the counter), EMPTY_SOLO (d256 grids with keyless tiles one tile per CTA: run 57's \
H100 hang); on an H100 x1.02-1.03 over v21 on the 22 shapes it reaches, full x1.004; predicted here +0.3-0.5 % \
over v21's 1.0456" 2>&1 | grep -vE "^\[" | tail -24
echo "#### edge: v22 through workbench check $(date -u +%T)"
timeout -k 10 170 python3 -m workbench.cli check $K --suite edge --anchors fa3,cudnn,fa2 > "$OUT/edge_check.log" 2>&1
echo "rc $?"; grep -E "^(geomean_vs|all_correct|scenarios|flags)|FAIL|failed" "$OUT/edge_check.log" | head -12
echo "#### done $(date -u +%T)"
