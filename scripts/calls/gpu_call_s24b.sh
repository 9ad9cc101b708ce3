#!/usr/bin/env bash
# Session 24, call 2 (either card, ~4 min). Run 86: `SLOT_WALK=1` - the static walk's consumers (kWalk 1:
# persistent pairs and the one-order LPT walk) take each tile from its Q slot, as the counter's do. Found on the CPU
# (session 23): in the d256 kWalk 1 kernel ptxas kept the consumers' block index in vector registers, so every HGMMA
# descriptor went through R2UR (steady loop 461 instructions against 448 in kWalk 0/2; masked 630 against 616); with
# the slot the loop is kWalk 2's (448/615). d128 and d64's walk loops are the same in every kWalk already. Run 80's
# timeline: steady 80-key block 2832 cycles on C_s3000_d256_c1 (kWalk 1) against 2579 on C_s9000_d256_c1 (kWalk 0).
# v26, the knob, a v26 copy on the causal shapes and D_prefill, interleaved. Prediction: the 9 d256 kWalk 1 shapes
# (A_d256_c1_s512-s4k, C_s1000/s1500/s3000_d256_c1, D_prefill_q2048_k4k/k16k_h16x8_d256) +0-6 %, the d128/d64 ones
# +-0.5 %; in the timeline the steady block of C_s1500_d256_c1 and A_d256_c1_s1k closer to kWalk 0's ~2580 cycles.
# Rule: default if the d256 nine gain >= +1.0 % over both copies (the faster per shape), none below -3 %.
# Run as: CALL=scripts/calls/gpu_call_s24b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab86"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### run 86 $(date -u +%T)"
OUT="$OUT/ab86" timeout -k 10 400 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1,D_prefill --kernels $K "$K:SLOT_WALK=1" "$K:SLOT_WALK=0" \
  > "$OUT/ab86/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab86/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab86/log.txt" | tail -4
python3 scripts/ab_ratio.py "$OUT/ab86/ladder_bench.json" --worst 4 --moved 1 --copies "04_pingpong[SLOT_WALK=0]" \
  | tee "$OUT/ab86/ratios.txt"
echo "#### the mechanism: steady 80-key block cycles with and without the knob (per-tile timeline) $(date -u +%T)"
WB_CACHE_RESTORED=1 TL_TIMEOUT=150 TL_KERNELS="$K $K:SLOT_WALK=1" TL_SHAPES="C_s1500_d256_c1 A_d256_c1_s1k" \
  timeout -k 10 180 bash scripts/gpu_run.sh timeline 2>&1 | grep -E "^== |SM time|steady block" | cut -c1-170 | head -16
echo "#### edge with the knob (its walk's tiles with no keys, odd pairs) $(date -u +%T)"
OUT="$OUT/ab86/edge" timeout -k 10 150 python3 scripts/ladder_bench.py --anchors "" --seeds 0 --no-scaled --no-time \
  --suite kernels/attn_fwd/suites/edge.csv --kernels "$K:SLOT_WALK=1" > "$OUT/ab86/edge.log" 2>&1
echo "rc $?"; grep -cE "^E_" "$OUT/ab86/edge.log"; grep -E "FAIL|rror" "$OUT/ab86/edge.log" | head -5
echo "#### done $(date -u +%T)"
