#!/usr/bin/env bash
# Session 17, fourth call: run 49 again, CAUSAL_LPT_WALK=2 (the LPT walk handed out by an atomic counter, FA3's
# dynamic scheduler) against v21 interleaved on every shape of full: the third call launched the walk's
# instantiation without its shared-memory attribute (rc 1 on its 47 shapes, nothing wrong computed). Prediction:
# causal 1k-2k +1-3 % (the list-scheduling model), long causal and non-causal unchanged (the same code). The rule,
# written before the run: >= 1.003 on full with 182/182 passed makes it v22's default, then the campaign and edge.
# Run as: CALL=scripts/calls/gpu_call_s17d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab49"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### run 49: v21 against CAUSAL_LPT_WALK=2 on full $(date -u +%T)"
OUT="$OUT/ab49" timeout 200 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --kernels $K "$K:CAUSAL_LPT_WALK=2" > "$OUT/ab49/log.txt" 2>&1
echo "rc $?"
grep -E "FAIL|rror|unsupported" "$OUT/ab49/log.txt"| head -5
sed -n '/^# geomean/,$p' "$OUT/ab49/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab49/ladder_bench.json" --worst 6 | tee "$OUT/ab49/ratios.txt"
r=$(sed -n 's/^04_pingpong\[CAUSAL_LPT_WALK=2\] x 04_pingpong: all \([0-9.]*\) (\([0-9]*\)).*/\1 \2/p' \
  "$OUT/ab49/ratios.txt")
if ! python3 -c "import sys; r,n=sys.argv[1].split()
sys.exit(0 if float(r)>=1.003 and int(n)==182 else 1)" "${r:-0 0}"
then echo "#### the rule keeps v21 (ratio and count: ${r:-none}) $(date -u +%T)"; exit 0; fi
sed -i 's|^#define CAUSAL_LPT_WALK 1 |#define CAUSAL_LPT_WALK 2 |' $K
grep -nE "^#define CAUSAL_LPT_WALK " $K
echo "#### campaign: v22 $(date -u +%T)"
timeout 300 bash scripts/gpu_campaign_check.sh $K "v22 (run 49): CAUSAL_LPT_WALK 2, the LPT walk from an atomic \
counter (FA3's dynamic scheduler); interleaved against v21 on full: $r" 2>&1 | grep -vE "^\[" | tail -22
echo "#### edge: v22 $(date -u +%T)"
timeout 100 python3 -m workbench.cli check $K --suite edge > "$OUT/edge_check.log" 2>&1; echo "rc $?"
grep -E "^(geomean_vs_fa3|all_correct|scenarios)|FAIL|failed" "$OUT/edge_check.log" | head -8
echo "#### done $(date -u +%T)"
