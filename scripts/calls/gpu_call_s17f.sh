#!/usr/bin/env bash
# Session 17, sixth call: run 50. The fifth call's ncu (H100) found v21 reading DRAM at 44.5 % of peak on
# A_d128_c1_s8k and 45.3 % on C_s9000_d128_c1 where FA3 reads 12.7 % / 9.4 %, and running at 1.54 GHz against
# FA3's 1.61 (cycles only +2.6 % / +3.0 %): one LPT order over every head (CAUSAL_ORDER 3 under 128 blocks) streams
# the K/V of ~132 heads at once, more than L2 holds. CAUSAL_ORDER=2 (LPT inside chunks of heads whose K/V fit
# 16 MB, FA3's L2 swizzle) against v21 interleaved on full's causal shapes. Prediction: the causal shapes whose K/V
# pass 16 MB (A/C d128 4k-9k, B 8k-16k) +3-6 %, the others unchanged (the same order when every head fits).
# Run as: CALL=scripts/calls/gpu_call_s17f.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab50"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### run 50: v21 against CAUSAL_ORDER=2 on full's causal shapes $(date -u +%T)"
OUT="$OUT/ab50" timeout 200 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1,D_prefill --kernels $K "$K:CAUSAL_ORDER=2" \
  > "$OUT/ab50/log.txt" 2>&1
echo "rc $?"
grep -E "FAIL|rror|unsupported" "$OUT/ab50/log.txt"| head -5
sed -n '/^# geomean/,$p' "$OUT/ab50/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab50/ladder_bench.json" --worst 6 | tee "$OUT/ab50/ratios.txt"
echo "#### done $(date -u +%T)"
