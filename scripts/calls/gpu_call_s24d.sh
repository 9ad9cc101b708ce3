#!/usr/bin/env bash
# Session 24, call 4 (either card, ~3 min). A measurement before any edit for the weakest single shape,
# D_cross_q4k_k333_d128 (0.90x FA3 on H100s): run 78 refuted the padding as its cause (176-key blocks, FA3's tile,
# ran 7-8 % slower in our kernel on 333 keys), which leaves the short non-causal d128 tile's start and end (3 blocks
# of 128 keys a tile, one Q buffer double-buffered). The per-tile timeline (phases: wait_q, first S, epilogue) and ncu
# beside FA3 on it and on D_cross_q1k_k333_d128. Prediction: the first block and the epilogue are >= 40 % of a tile's
# cycles, SMs busy >= 95 %, FA3 with fewer active cycles at the same tensor cycles.
# Run as: CALL=scripts/calls/gpu_call_s24d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### timeline: D_cross k333 d128 $(date -u +%T)"
WB_CACHE_RESTORED=1 TL_TIMEOUT=120 TL_ARGS="--save-records" TL_SHAPES="D_cross_q4k_k333_d128 D_cross_q1k_k333_d128" \
  timeout -k 10 150 bash scripts/gpu_run.sh timeline 2>&1 \
  | grep -E "^== |SM time|CTA work|tile us|steady block|first_s|epilogue|wait_q" | cut -c1-170 | head -24
echo "#### ncu: ours and FA3 side by side $(date -u +%T)"
WB_CACHE_RESTORED=1 NCU_SCENARIOS="D_cross_q4k_k333_d128" timeout -k 10 120 bash scripts/gpu_run.sh ncucmp 2>&1 \
  | grep -E "^== |Duration|SM Frequency|DRAM Through|Elapsed Cycles|SM Active|pipe_tensor_cycles" \
  | sed 's/  */ /g' | head -20
echo "#### done $(date -u +%T)"
