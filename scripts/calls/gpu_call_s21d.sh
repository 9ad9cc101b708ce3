#!/usr/bin/env bash
# Session 21, call 4 (either card; the A/B is within one run): run 64, KV_HINT=1 (prepared in session 20, CPU): FA3's
# L2 eviction hints, K/V loads EVICT_LAST and Q EVICT_FIRST (691 of the 708 TMA loads carry a policy; the default's
# SASS is byte-identical; 0 spills in 44 functions). Run 6 refuted the hints at d64 under v3's schedule; since then
# runs 50 and 53 measured that DRAM traffic costs the SM clock on deep causal grids (ncu: 44.5 -> 13.2 % of peak
# DRAM, 1.55 -> 1.63 GHz on A_d128_c1_s8k), and run 59's 32k B rows follow the clock.
# v22, KV_HINT=1, v22 again interleaved on full (the copies measure the order's drift, runs 55-56).
# Prediction (written before the run): the deep grids whose K/V pass the L2 (16k-32k A/B, C_s9000, the 8k B) +1-3 %,
# the rest within +-0.5 %, full +0.2-0.6 %. Rule: default when full >= +0.3 % over each copy with 182/182; else
# the knob is deleted.
# Run as: CALL=scripts/calls/gpu_call_s21d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab64"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### run 64: v22, KV_HINT=1, v22 on full $(date -u +%T)"
OUT="$OUT/ab64" timeout -k 10 400 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --kernels $K "$K:KV_HINT=1" "$K:KV_HINT=0" > "$OUT/ab64/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror|unsupported" "$OUT/ab64/log.txt" | head -5
sed -n '/^# geomean/,$p' "$OUT/ab64/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab64/ladder_bench.json" --worst 5 | tee "$OUT/ab64/ratios.txt"
echo "#### done $(date -u +%T)"
