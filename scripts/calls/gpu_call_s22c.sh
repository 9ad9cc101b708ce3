#!/usr/bin/env bash
# Session 22, call 3 (either card, ~3 min). Run 69: PAIR_TAIL=1 (prepared in session 21: the persistent pair grids
# from the counter, each head's mirrored pair tiles head after head, then the last heads' tiles longest first over
# >= 4 rounds of tiles; tile_of's order checked on the CPU by tests/test_persist_tiles.py; 0 spills, default SASS
# byte-identical). v23, PAIR_TAIL=1, PAIR_TAIL=1 with DYN_PAIRS=0 (its order on A_d128_c1_s2k/s4k instead of the
# chunked walk), v23 again, on full's causal shapes. Prediction (scripts/causal_schedule_model.py, no memory model):
# A_d256_c1_s2k/s4k and B_h16x8_d256_c1_s1k-s4k +1.3-2.2 %; A_d128_c1_s2k/s4k (DYN_PAIRS=0 build) +0.3-1 % over v23;
# the 4-8-block pair grids (A_d128/A_d256 s512/s1k, A_d64 s512/s1k) +-2 %, sign unknown (run 67's walk lost 6-11 %
# there with a chunked order; this order keeps the pairs' head-major L2 reuse). Rule: PAIR_TAIL becomes default
# where it gains >= +0.5 % over both v23 copies, by a rule on query blocks fixed from this run and checked again.
# Run as: CALL=scripts/calls/gpu_call_s22c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab69"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### run 69 $(date -u +%T)"
OUT="$OUT/ab69" timeout -k 10 400 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1,D_prefill --kernels $K "$K:PAIR_TAIL=1" \
  "$K:PAIR_TAIL=1,DYN_PAIRS=0" "$K:DYN_PAIRS=1" > "$OUT/ab69/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab69/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab69/log.txt" | tail -6
python3 scripts/ab_ratio.py "$OUT/ab69/ladder_bench.json" --worst 6 --moved 1 | tee "$OUT/ab69/ratios.txt"
echo "#### done $(date -u +%T)"
