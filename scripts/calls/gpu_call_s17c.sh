#!/usr/bin/env bash
# Session 17, third call: runs 48-49 interleaved against v21 on every shape of full, then the winners through the
# headline campaign. MAX_TREE=1 (a row's max as four independent chains; predicted +1-2 % on loop-bound shapes, the
# compute part ~50 cycles of ~1300 shorter) and CAUSAL_LPT_WALK=2 (the LPT walk handed out by an atomic counter,
# FA3's dynamic scheduler; predicted causal 1k-2k +1-3 % from the list-scheduling model, long causal and
# non-causal unchanged: the same code). The rule, written before the run: a knob whose ratio on full is >= 1.003
# with all 182 shapes passed goes on by default in v22 (both if both), and v22 goes through the campaign.
# Run as: CALL=scripts/calls/gpu_call_s17c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab48"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### runs 48-49: v21 against MAX_TREE=1 and CAUSAL_LPT_WALK=2 on full $(date -u +%T)"
OUT="$OUT/ab48" timeout 250 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --kernels $K "$K:MAX_TREE=1" "$K:CAUSAL_LPT_WALK=2" \
  > "$OUT/ab48/log.txt" 2>&1; echo "rc $?"
grep -E "FAIL|rror" "$OUT/ab48/log.txt"| head -5
sed -n '/^# geomean/,$p' "$OUT/ab48/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab48/ladder_bench.json" --worst 5 | tee "$OUT/ab48/ratios.txt"
on=""
for knob in MAX_TREE CAUSAL_LPT_WALK; do
  line=$(grep "^04_pingpong\[$knob=" "$OUT/ab48/ratios.txt" | head -1)
  r=$(echo "$line" | sed -n 's/.* all \([0-9.]*\) (\([0-9]*\)).*/\1 \2/p')
  if [ -n "$r" ] && python3 -c "import sys; r,n=sys.argv[1].split()
sys.exit(0 if float(r)>=1.003 and int(n)==182 else 1)" "$r"
  then on="$on $knob"; fi
done
echo "#### knobs kept by the rule:${on:- none} $(date -u +%T)"
[ -z "$on" ] && { echo "#### no campaign: v21 stays"; exit 0; }
for knob in $on; do
  case $knob in
    MAX_TREE) sed -i 's|^#define MAX_TREE 0 |#define MAX_TREE 1 |' $K ;;
    CAUSAL_LPT_WALK) sed -i 's|^#define CAUSAL_LPT_WALK 1 |#define CAUSAL_LPT_WALK 2 |' $K ;;
  esac
done
grep -nE "^#define (MAX_TREE|CAUSAL_LPT_WALK) " $K
timeout 300 bash scripts/gpu_campaign_check.sh $K "v22 (runs 48-49):$on on by the rule (>= 1.003 interleaved \
against v21 on full, 182/182); MAX_TREE: a row's max in four independent chains; CAUSAL_LPT_WALK 2: the LPT walk \
from an atomic counter (FA3's dynamic scheduler)" 2>&1 | grep -vE "^\[" | tail -22
echo "#### done $(date -u +%T)"
