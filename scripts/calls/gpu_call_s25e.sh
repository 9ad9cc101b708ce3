#!/usr/bin/env bash
# Session 25 (either card, ~5 min). Run 95, a measurement and an A/B: run 89 found PAIR_TAIL 4's walk from the counter
# on A_d256_c1_s8k 1.9 % fewer cycles than v26's relaunched pairs but 4x the DRAM throughput and 7 % less SM clock.
# Suspect: its LPT tail of 4 rounds (9 heads of 8 MB K/V there, 75 MB against the 50 MB L2), not its head-major lead.
# `PAIR_TAIL_ROUNDS` (new, default 4) sizes that tail: 2 rounds are 5 heads (42 MB), 1 round 3 (25 MB). ncu's DRAM
# bytes for v26 and PAIR_TAIL 4 at 4, 2, 1 rounds (copies of the rung with the #defines written in, under
# .experiments/), then the timed A/B on the three group-1 d256 relaunched-pair shapes.
# Prediction: DRAM bytes fall with the rounds (1 round within 1.5x v26's), the cycles stay 1-2 % under v26's; then
# C_s9000_d256_c1 / A_d256_c1_s8k / C_s5000_d256_c1 +1-3 % at 1-2 rounds. If 4x DRAM stays at 1 round, the tail is
# not the cause: the counter walk's lead is (next: its order within the in-flight heads).
# Rule for a default: PAIR_TAIL 4 at the best round count >= +1.0 % over the faster of v26 and a copy on the three,
# none below -2 %.
# Run as: CALL=scripts/calls/gpu_call_s25e.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab95"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
mkdir -p .experiments/pt95
for r in 4 2 1; do
  { echo "#define PAIR_TAIL 4"; echo "#define PAIR_TAIL_ROUNDS $r"; cat $K; } > .experiments/pt95/pingpong_pt4_r$r.cu
done
for k in $K .experiments/pt95/pingpong_pt4_r4.cu .experiments/pt95/pingpong_pt4_r2.cu \
         .experiments/pt95/pingpong_pt4_r1.cu; do
  b=$(basename $k .cu)
  WB_CACHE_RESTORED=1 NCU_KERNEL=$k NCU_SCENARIOS=A_d256_c1_s8k OUT="$OUT/ab95" timeout -k 5 90 \
    bash scripts/gpu_run.sh ncu > "$OUT/ab95/ncu_stage_$b.log" 2>&1
  echo "== ncu $b rc $? $(date -u +%T)"
  grep -E "Duration|SM Frequency|DRAM Through|Elapsed Cycles" "$OUT/ab95/ncu_${b}_A_d256_c1_s8k.txt" | sed 's/  */ /g'
done
echo "#### run 95 A/B $(date -u +%T)"
OUT="$OUT/ab95" timeout -k 10 200 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only C_s9000_d256_c1,A_d256_c1_s8k,C_s5000_d256_c1 \
  --kernels $K "$K:PAIR_TAIL=4,PAIR_TAIL_ROUNDS=4" "$K:PAIR_TAIL=4,PAIR_TAIL_ROUNDS=2" \
  "$K:PAIR_TAIL=4,PAIR_TAIL_ROUNDS=1" "$K:PAIR_TAIL=3" > "$OUT/ab95/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab95/log.txt" | head -3
python3 scripts/ab_ratio.py "$OUT/ab95/ladder_bench.json" --moved 0.5 --copies "04_pingpong[PAIR_TAIL=3]" \
  | tee "$OUT/ab95/ratios.txt"
echo "#### done $(date -u +%T)"
