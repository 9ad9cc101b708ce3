#!/usr/bin/env bash
# Session 27 (either card, ~3 min). Run 100, a measurement before the next edit: where run 98's 3 % of extra
# instructions on B_h32x8_d128_c1_s2k live. ncu's per-instruction executed counts and stall samples (SourceCounters)
# of v27 and FA3 on that shape, as SASS CSVs (`gpu_run.sh ncusrc`): summed by region (steady loop, masked loop,
# per tile: first block, last PV, epilogue, the walk) they say which per-tile or per-block code to cut next.
# Prediction: the steady loop's executed count per block within 1 % of FA3's (474 against 469 static); the excess in
# the per-tile code (the walk's index maths and branches, the STS staging) and the masked blocks (+110 static).
# Run as: CALL=scripts/calls/gpu_call_s27c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
WB_CACHE_RESTORED=1 NCU_JOBS="ours:B_h32x8_d128_c1_s2k fa3:B_h32x8_d128_c1_s2k" NCU_TIMEOUT=120 \
  timeout -k 10 290 bash scripts/gpu_run.sh ncusrc 2>&1 | grep -vE "^\s*$" | head -90
echo "#### done $(date -u +%T)"
