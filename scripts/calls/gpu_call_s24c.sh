#!/usr/bin/env bash
# Session 24, call 3 (either card, ~3 min). Run 89, a measurement before any d256 tail edit: why every counter walk
# at d256 with groups of 1 lost (runs 54, 69, 85; run 85's PAIR_TAIL 4 on A_d256_c1_s8k -2..-4 %) where the schedule
# model (no memory) prices its LPT tail +1.6-3.7 %. Suspect (session 23, on the CPU): the tail must cover 4 rounds of
# tiles, at d256 with 40-71 query blocks 8-13 heads in flight (8 MB of K/V each on A_d256_c1_s8k: 72 MB against the
# 50 MB L2), against the relaunched pairs' ~4. v26 beside a9a36be's rung with PAIR_TAIL 4 (carried in
# .experiments/pt4): the per-tile timeline (SM busy, the tail) and ncu's DRAM throughput, duration and SM clock.
# Prediction: PAIR_TAIL 4 with >= 1.5x v26's DRAM throughput and a lower SM clock at equal or fewer idle SM cycles;
# if its DRAM is equal, the memory suspect is refuted and the loss sits in the walk's per-tile cost instead.
# Run as: CALL=scripts/calls/gpu_call_s24c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .experiments/pt4)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; PT4=.experiments/pt4/pingpong_pair_tail4.cu
[ -f "$PT4" ] || { echo "s24c: $PT4 missing: carry .experiments/pt4"; exit 2; }
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### timeline: v26 and PAIR_TAIL 4 on the group-1 d256 relaunched pairs $(date -u +%T)"
WB_CACHE_RESTORED=1 TL_TIMEOUT=150 TL_KERNELS="$K $PT4" TL_SHAPES="A_d256_c1_s8k C_s9000_d256_c1" \
  timeout -k 10 180 bash scripts/gpu_run.sh timeline 2>&1 | grep -E "^== |SM time|CTA work|tail|steady block" \
  | cut -c1-170 | head -24
for k in $K $PT4; do
  tag=$([ "$k" = "$K" ] && echo v26 || echo pt4)
  echo "#### ncu $tag ($k) $(date -u +%T)"
  WB_CACHE_RESTORED=1 NCU_KERNEL=$k NCU_SCENARIOS="A_d256_c1_s8k" OUT="$OUT" timeout -k 10 100 \
    bash scripts/gpu_run.sh ncu > "$OUT/ncu_stage_$tag.log" 2>&1
  f="$OUT/ncu_$(basename "$k" .cu)_A_d256_c1_s8k.txt"; [ -f "$f" ] && mv "$f" "$OUT/ncu_${tag}_A_d256_c1_s8k.txt"
  grep -E "Duration|SM Frequency|DRAM Through|L2 Cache Through|Elapsed Cycles|Grid Size" \
    "$OUT/ncu_${tag}_A_d256_c1_s8k.txt" 2>/dev/null | sed 's/  */ /g' | head -8 || tail -3 "$OUT/ncu_stage_$tag.log"
done
echo "#### done $(date -u +%T)"
