#!/usr/bin/env bash
# Session 23, call 2 (either card, ~1.5 min). Run 77: two host-only variants of v25 on full's 72 causal shapes,
# interleaved with v25 and a v25 copy. `PAIR_TAIL=3,DYN_PAIRS=0`: A_d128_c1_s2k/s4k (16-32 blocks, groups of 1) in
# PAIR_TAIL's order instead of DYN_PAIRS' chunked walk (run 69 measured that variant +2.5/+1.3 % over v23 there).
# `GQA_PAIR_BLOCKS=127`: the GQA grids of 33-127 blocks that the static one-order walk takes (B d128 c1 8k, B_h64x8 d64
# c1 2k-8k) in PAIR_TAIL's order too. Prediction: the first +1-2.5 % on its 2 shapes; the second -1..+1 % on its 7
# (the model's balance is equal, -0.1..-0.3 %; at 4k run 73 gained 0-1 %, where the model gave 0). Rule: default for a
# variant whose reached shapes gain >= +1.0 % over both copies, none below -3 %. Run 81 rides along:
# `LONG_CHUNK_MB=32`, FA3's 32 MB scheduler sections instead of 16 MB LPT chunks on the >= 128-block causal grids
# (11 shapes: A/B d128 16k-32k, A_d256_c1_s16k, B_h16x8_d256_c1_s16k); prediction -1..+2 %, same rule. Run 82:
# `DYN_MIN_ROUNDS=4`, DYN_CHUNKS' 32 MB chunks from the counter on grids of >= 4 tiles per SM (C_s3000_d128_c1,
# C_s3000_d256_c1, C_s5000_d128_c1 at 0.935-0.957: one LPT order over 32 heads' 96-160 MB of K/V); -3..+4 %.
# Run as: CALL=scripts/calls/gpu_call_s23b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab77"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### run 77 $(date -u +%T)"
OUT="$OUT/ab77" timeout -k 10 420 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1 --kernels $K "$K:PAIR_TAIL=3,DYN_PAIRS=0" \
  "$K:GQA_PAIR_BLOCKS=127" "$K:LONG_CHUNK_MB=32" "$K:DYN_MIN_ROUNDS=4" \
  "$K:PAIR_TAIL=3" > "$OUT/ab77/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab77/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab77/log.txt" | tail -5
python3 scripts/ab_ratio.py "$OUT/ab77/ladder_bench.json" --worst 4 --moved 1 | tee "$OUT/ab77/ratios.txt"
echo "#### done $(date -u +%T)"
