#!/usr/bin/env bash
# Session 30 (~4 min, either card), run 110: the d256 causal grids of >= 1024 tiles on the counter's walk again, now
# that DESC_ADD64=1 keeps the walk kernels' steady loop short. Run 54 left the counter walk off d256 and runs 85/95
# found PAIR_TAIL 4 (the group-1 d256 pairs from the counter, LPT tail) near v26 with 4x the DRAM bytes at 4 rounds;
# the d256 walk kernel's loop was 461 instructions against 448 unwalked, 427 with DESC_ADD64 (`sass_loop.py --all`,
# nvcc 13.0). The schedule model (`causal_schedule_model.py --batch 2 --heads 16 --seqlen 9000 --bn 80 --tile-us 4
# --block-us 1.5 --persist-tile-us 0.8`): relaunched pairs 1570-1580 us, PAIR_TAIL's order 1521, the counter 1515.
# Variants on v29: DESC_ADD64=1 alone; with PAIR_TAIL=4 at 2 and 1 rounds; a copy (PAIR_TAIL=3 spelled out). Rows:
# the five group-1 d256 causal rows of full with >= 1024 tiles or relaunched pairs, 7 reps, checked.
# Prediction: DESC_ADD64 alone +0.5-1 % (run 107: d256 +1.0 %, the copy +0.3 %); PAIR_TAIL 4 with it at 1-2
# rounds: C_s9000_d256_c1 +2-4 %, A_d256_c1_s8k and C_s5000_d256_c1 +0-2 %. Rule: ab_ratio --verdict 0.5,3.
# Run as: CALL=scripts/calls/gpu_call_s30b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab110"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
OUT="$OUT/ab110" timeout -k 10 300 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 7 \
  --suite kernels/attn_fwd/suites/full.csv \
  --only C_s9000_d256_c1,C_s5000_d256_c1,C_s3000_d256_c1,A_d256_c1_s8k,A_d256_c1_s4k \
  --kernels $K "$K:DESC_ADD64=1" "$K:DESC_ADD64=1,PAIR_TAIL=4,PAIR_TAIL_ROUNDS=2" \
  "$K:DESC_ADD64=1,PAIR_TAIL=4,PAIR_TAIL_ROUNDS=1" "$K:PAIR_TAIL=3" > "$OUT/ab110/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab110/log.txt" | head -3; tail -8 "$OUT/ab110/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab110/ladder_bench.json" --moved 1 --copies "04_pingpong[PAIR_TAIL=3]" \
  --verdict 0.5,3 --winners "$OUT/ab110/winners.txt" | tee "$OUT/ab110/ratios.txt"
echo "#### done $(date -u +%T)"
