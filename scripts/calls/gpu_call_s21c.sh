#!/usr/bin/env bash
# Session 21, call 3 (H200 or H100; the A/B is within one run, so either card): run 63, D128_O_IN_V=1 (prepared in
# session 20, CPU: only the three Cfg<128,176,2> kernels change, the default's SASS is byte-identical, 0 spills in
# 44 functions). FA3 stages O at the end of its V buffer for every head_dim; our d128 176-key tiles (non-causal,
# more than 3072 keys) have one Q buffer and stage O in it, so each tile's next Q waits for the O store's read.
# With the knob, d256's scheme: Q freed after the last S GEMM, O staged in the V ring, the next V held on o_empty.
# 1. v22 against v22 + D128_O_IN_V=1 interleaved on the 25 full shapes that use 176-key tiles, FA3 as anchor;
# 2. the knob on every d128 edge shape (E_d128_q100_k16k_split is the one on that path: split, O_IN_V's
#    no-staging branch) and compute-sanitizer synccheck/racecheck on tests/fixtures/d128_176_walk.csv.
# Prediction (written before the run): each tile's Q wait goes, a 256-thread barrier before the staging and a V_0
# wait come; on tiles of 24-190 blocks +0.3-1.5 %, most where tiles are shortest (the 4k shapes), none slower than
# -0.5 %. Rule: default when the 25 shapes gain >= +0.5 % with 25/25 and edge passes; else delete the knob. The A/B
# is itself run 57's hang path (two libraries checked and timed round-robin): a hang there stops the knob too.
# Run as: CALL=scripts/calls/gpu_call_s21c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab63"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### run 63: v22 against D128_O_IN_V=1 on the 176-key shapes $(date -u +%T)"
OUT="$OUT/ab63" timeout -k 10 300 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 7 --cap 0.15 \
  --suite kernels/attn_fwd/suites/full.csv --only d128_c0_s4k,d128_c0_s8k,d128_c0_s16k,d128_c0_s32k,C_s5000_d128_c0,\
C_s9000_d128_c0,D_cross_q1k_k4k_d128,D_cross_q1k_k8k_d128,D_cross_q4k_k4k_d128,D_cross_q4k_k8k_d128 \
  --kernels $K "$K:D128_O_IN_V=1" \
  > "$OUT/ab63/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror|unsupported" "$OUT/ab63/log.txt" | head -5
sed -n '/^# geomean/,$p' "$OUT/ab63/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab63/ladder_bench.json" --worst 5 | tee "$OUT/ab63/ratios.txt"
echo "#### the knob on edge's d128 shapes $(date -u +%T)"
OUT="$OUT/edge63" timeout -k 10 120 python3 scripts/ladder_bench.py --anchors "" --no-time \
  --suite kernels/attn_fwd/suites/edge.csv --only E_d128 --kernels "$K:D128_O_IN_V=1" > "$OUT/edge63.log" 2>&1
echo "rc $?"; grep -E "^E_" "$OUT/edge63.log" | cut -c1-120
echo "#### compute-sanitizer with the knob: 320 176-key tiles, 2-3 per persistent CTA $(date -u +%T)"
for tool in synccheck racecheck; do
  timeout -k 10 150 compute-sanitizer --tool $tool --kernel-name kns=attn_wgmma --error-exitcode 9 python3 \
    scripts/ladder_bench.py --anchors "" --seeds 0 --no-scaled --no-time --suite tests/fixtures/d128_176_walk.csv \
    --kernels "$K:D128_O_IN_V=1" > "$OUT/san_$tool.log" 2>&1
  echo "$tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" "$OUT/san_$tool.log" | head -3
done
echo "#### done $(date -u +%T)"
