#!/usr/bin/env bash
# Session 10, fourth call: run 33 of docs/kernel_ladder.md, PACK_GQA (a GQA group's query heads as the rows of one
# tile for short queries, its own Packed<Cfg> kernels). v13 (PACK_GQA=0) against PACK_GQA=1, interleaved with FA3:
# edge (six packed shapes), call 3's 40 random shapes (seed 1796291355) and all of full (no shape of full packs:
# the unpacked code's rebuild); then the rung with PACK_GQA 1 through the campaign when all of that passes.
# Run as: CALL=scripts/calls/gpu_call_s10d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/edge" "$OUT/fresh" "$OUT/full"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
python3 scripts/random_suite.py --seed 1796291355 --n 40 --out "$OUT/fresh/fresh.csv"
fails=0
for leg in edge fresh full; do
  suite=kernels/attn_fwd/suites/$leg.csv; [ $leg = fresh ] && suite=$OUT/fresh/fresh.csv
  echo "#### $leg $(date -u +%T)"
  OUT=$OUT/$leg timeout 170 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
    --suite "$suite" --kernels $K:PACK_GQA=0 $K:PACK_GQA=1 > "$OUT/$leg/log.txt" 2>&1
  echo "rc $?"; grep -E "FAIL|interrupted|rror" "$OUT/$leg/log.txt" | head -5
  sed -n '/^# geomean/,$p' "$OUT/$leg/log.txt"
  n=$(grep -cE "FAIL" "$OUT/$leg/log.txt"); fails=$((fails + n))
done
echo "#### campaign $(date -u +%T), failures $fails"
if [ "$fails" = 0 ]; then
  mkdir -p .experiments; E=.experiments/04_pingpong.cu; cp $K $E
  sed -i 's/^#define PACK_GQA 0 /#define PACK_GQA 1 /' $E; grep -E "^#define PACK_GQA " $E
  timeout 170 bash scripts/gpu_campaign_check.sh $E "v14 from run 33: PACK_GQA 1 (short-query GQA shapes packed). \
q003's answer (gain on scenarios never looked at?): 40 random shapes, v13 x v12 1.0075 (d128 +1.4 %), and they showed \
the tiny-query GQA shapes at 0.17-0.40x FA3, which this packs" > "$OUT/campaign_check.log" 2>&1
  grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
  grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
fi
echo "#### done $(date -u +%T)"
