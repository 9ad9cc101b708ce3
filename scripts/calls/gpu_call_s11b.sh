#!/usr/bin/env bash
# Session 11, second call: v15 (runs 34-35 of docs/kernel_ladder.md: packed Q/O by TMA, d64's three-consumer tiles
# of 128 keys, the peeled mask loop at every head_dim) through the campaign, then run 36: which d64 grids take three
# consumers now that their tile is 128 keys (the wave rule was fitted to 96): v15 against D64_WGS=3 and D64_WGS=2
# on the 46 d64 shapes of full, interleaved.
# Run as: CALL=scripts/calls/gpu_call_s11b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/d64"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### campaign $(date -u +%T)"
timeout 200 bash scripts/gpu_campaign_check.sh $K "v15 from runs 34-35: packed Q/O through the producer's TMA \
(groups dividing 64; random 40 shapes 0.972 -> 1.104x FA3, gqa_short 1.278 -> 1.388), d64 three-consumer tiles of \
128 keys with the peeled mask loop (d64 x1.041 interleaved on its 46 shapes; the peel alone at 96 keys x0.970, \
128 keys alone x1.028). Predicted on full: +0.8-1.2 % (46 of 182 shapes at +4 %), no full shape packs" \
  > "$OUT/campaign_check.log" 2>&1
echo "rc $?"; grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
echo "#### d64 consumers $(date -u +%T)"
OUT=$OUT/d64 timeout 150 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _d64 --kernels $K $K:D64_WGS=3 $K:D64_WGS=2 > "$OUT/d64/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|interrupted|rror" "$OUT/d64/log.txt" | head -5; sed -n '/^# geomean/,$p' "$OUT/d64/log.txt"
python3 scripts/ab_ratio.py "$OUT/d64/ladder_bench.json" --worst 4
echo "#### done $(date -u +%T)"
