#!/usr/bin/env bash
# Session 17, eighth call: run 52. CAUSAL_ORDER=4 with CAUSAL_LPT_WALK=2 (the chunked LPT order handed out by the
# atomic counter of run 49: FA3's L2 swizzle with its dynamic scheduler; run 51's static walk over chunks paired long
# tiles with long ones: A_d128_c1_s8k x0.68) at 16 and 32 MB against v21 interleaved on full's causal shapes.
# Prediction: the loop-bound long causal shapes (A_d128_c1_s8k, C_s9000_d128_c1, B 8k-16k) +2-5 % (run 50: DRAM 45 %
# of peak against FA3's 9-13 %, 1.54 against 1.61 GHz), the short ones within +-1 % (the walk stays on).
# Run as: CALL=scripts/calls/gpu_call_s17h.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab52"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### run 52: v21 against CAUSAL_ORDER=4,CAUSAL_LPT_WALK=2 (16, 32 MB) on full's causal shapes $(date -u +%T)"
OUT="$OUT/ab52" timeout 220 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1,D_prefill --kernels $K "$K:CAUSAL_ORDER=4,CAUSAL_LPT_WALK=2" \
  "$K:CAUSAL_ORDER=4,CAUSAL_LPT_WALK=2,L2_WINDOW_MB=32" > "$OUT/ab52/log.txt" 2>&1
echo "rc $?"
grep -E "FAIL|rror|unsupported" "$OUT/ab52/log.txt"| head -5
sed -n '/^# geomean/,$p' "$OUT/ab52/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab52/ladder_bench.json" --worst 6 | tee "$OUT/ab52/ratios.txt"
echo "#### done $(date -u +%T)"
