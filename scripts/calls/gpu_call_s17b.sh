#!/usr/bin/env bash
# Session 17, second call: where v21's causal tiles lose to FA3 now that the steady d128 loop is within ~1 % of
# FA3's (run 47): the per-tile timeline (scripts/tile_timeline.py, plain and -DTIMELINE=1 builds, FA3 timed beside)
# on the weakest causal groups of eval 472824c8c0da, then ncu source counters of v21 and FA3 on the causal d256
# short shape (the weakest group, B d256 c1 0.961x FA3).
# Run as: CALL=scripts/calls/gpu_call_s17b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### timeline: v21 on causal shapes $(date -u +%T)"
WB_CACHE_RESTORED=1 TL_TIMEOUT=300 TL_SHAPES="A_d128_c1_s2k B_h32x8_d128_c1_s1k A_d128_c1_s8k B_h16x8_d256_c1_s1k \
C_s9000_d256_c1 A_d64_c1_s2k A_d128_c0_s2k" timeout 330 bash scripts/gpu_run.sh timeline 2>&1 | tail -120
echo "#### ncusrc: v21 and FA3 on B_h16x8_d256_c1_s1k $(date -u +%T)"
WB_CACHE_RESTORED=1 NCU_JOBS="ours:B_h16x8_d256_c1_s1k fa3:B_h16x8_d256_c1_s1k" NCU_TIMEOUT=90 timeout 200 \
  bash scripts/gpu_run.sh ncusrc 2>&1 | tail -70
echo "#### done $(date -u +%T)"
