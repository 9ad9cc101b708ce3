#!/usr/bin/env bash
# Session 24, call 5 (either card, ~5 min). Run 90: `NARROW_TOP=1` - a tile's top key block, where a consumer
# warpgroup sees at most Cfg::NW of its keys (a ragged seqlen_k, or the causal diagonal: warpgroup 0's rows see half
# a 128-key diagonal block, d256's 80-key top block often none), runs its S GEMM as m64nNW (the rest predicated off)
# and its PV in NW/16 k-steps. NW: d128 80 (BN 128) / 96 (BN 176), d64 64 / 96 (BN 192), d256 48. Found on the CPU
# (session 24): D_cross_q4k_k333_d128 (0.90x FA3, the weakest shape) pads 333 keys to 384 where FA3 pads to 352;
# with a narrow top block 336. 0 spills in 44 functions (a branch around the GEMM spilled 20 of them).
# Prediction: D_cross_q4k/q1k_k333_d128 +5-8 / +3-6 %, d64 non-causal 1k (last block 64 of 192) +3-5 %, the causal
# s512-s2k shapes +1-3 %, 4k +0.5-1 %, the rest +-0.5 %. Rule: default if the 107 shapes gain >= +0.7 % over both
# copies (the faster per shape, ab_ratio --copies), none below -3 %, and edge passes with the knob.
# Run as: CALL=scripts/calls/gpu_call_s24e.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab90"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### edge with the knob first (correctness before time) $(date -u +%T)"
OUT="$OUT/ab90/edge" timeout -k 10 150 python3 scripts/ladder_bench.py --anchors "" --seeds 0 --no-scaled --no-time \
  --suite kernels/attn_fwd/suites/edge.csv --kernels "$K:NARROW_TOP=1" > "$OUT/ab90/edge.log" 2>&1
echo "rc $?"; grep -cE "^E_" "$OUT/ab90/edge.log"; grep -E "FAIL|rror" "$OUT/ab90/edge.log" | head -5
echo "#### run 90 $(date -u +%T)"
OUT="$OUT/ab90" timeout -k 10 400 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1_s512,_c1_s1k,_c1_s2k,_c1_s4k,C_s,D_cross,c0_s512,c0_s1k,c0_s4k \
  --kernels $K "$K:NARROW_TOP=1" "$K:NARROW_TOP=0" > "$OUT/ab90/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab90/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab90/log.txt" | tail -4
python3 scripts/ab_ratio.py "$OUT/ab90/ladder_bench.json" --worst 5 --moved 1 --copies "04_pingpong[NARROW_TOP=0]" \
  | tee "$OUT/ab90/ratios.txt"
echo "#### done $(date -u +%T)"
