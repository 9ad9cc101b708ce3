#!/usr/bin/env bash
# Session 26 (either card, ~3 min). A measurement before any edit for B d128 causal (0.96-0.99x FA3 on 24 shapes, the
# weakest group of the weakest category). Run 94 ruled memory out: v26 reads the inputs once where FA3 reads
# 1.66-1.81x, yet spends 2.4-3.0 % more cycles with the tensor pipe 1.6-2.0 points less busy. The group-1 twins
# A_d128_c1_s2k/s8k run the same loop at 0.969/0.975x FA3 in run 88 (grid_plan --json: the premise "~1.00" was
# H200 run 47's), so causal d128 from 2k keys trails FA3 by 2-4 % in both groups. The per-tile timeline (SM busy, gaps, tail; steady block cycles;
# first S and epilogue phases) of B_h32x8_d128_c1_s2k and s8k beside A_d128_c1_s2k and s8k, then ncu's pipes and
# issue stalls of B_h32x8_d128_c1_s2k beside FA3.
# Prediction: the steady block within 2 % of A's (same loop, K/V in L2 either way); the difference in the walk: B's
# grids (pair tail on s2k, the static one-order walk on s8k) with a longer tail or more gaps than A's (the counter's
# chunked walk on both, scripts/grid_plan.py).
# Run as: CALL=scripts/calls/gpu_call_s26c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### timeline: B d128 causal beside A $(date -u +%T)"
WB_CACHE_RESTORED=1 TL_TIMEOUT=150 TL_ARGS="--save-records" \
  TL_SHAPES="B_h32x8_d128_c1_s2k A_d128_c1_s2k B_h32x8_d128_c1_s8k A_d128_c1_s8k" \
  timeout -k 10 180 bash scripts/gpu_run.sh timeline 2>&1 \
  | grep -E "^== |SM time|CTA work|tile us|steady block|first_s|epilogue|wait_q" | cut -c1-170 | head -40
echo "#### ncu: ours and FA3 side by side $(date -u +%T)"
WB_CACHE_RESTORED=1 NCU_SCENARIOS="B_h32x8_d128_c1_s2k" timeout -k 10 120 bash scripts/gpu_run.sh ncucmp 2>&1 \
  | grep -E "^== |Duration|SM Frequency|Elapsed Cycles|SM Active|pipe_tensor_cycles|dram__bytes|stall" \
  | sed 's/  */ /g' | head -30
echo "#### done $(date -u +%T)"
