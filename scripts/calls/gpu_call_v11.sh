# One device call: issue 24's acceptance (scripts/coldrun.py: cold, warm, killed at half, resumed) on 04 v8, then two
# evaluations of the h200-fa3-race campaign on the cold run's cache: 04 v8 as it is, and with CAUSAL_ORDER=2.
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1 WORKBENCH_CACHE=/tmp/wbcache
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### coldrun $(date -u +%T)"
timeout 440 python3 scripts/coldrun.py --kernel $K --out $OUT/coldrun --budget-s 430 --cold-limit-s 250 \
  --warm-limit-s 70 --keep-cache $WORKBENCH_CACHE 2>&1 | grep -vE "^\[" | tail -25
cp $OUT/coldrun/coldrun_table.txt $OUT/ 2>/dev/null; tar -czf $OUT/coldrun.tgz -C $OUT coldrun && rm -rf $OUT/coldrun
echo "#### campaign 1 $(date -u +%T)"
note="04_pingpong v8 (runs 14-16 of docs/kernel_ladder.md): the v7 knobs as code, FA3's single poller of the K/V"
note+=" barriers; ladder_bench 0.972x FA3"
timeout 80 bash scripts/gpu_campaign_check.sh $K "$note" \
  > $OUT/campaign_eval1.log 2>&1; grep -vE "^\[|^[A-D]_" $OUT/campaign_eval1.log | tail -22
echo "#### campaign 2 $(date -u +%T)"
sed 's/^#define CAUSAL_ORDER 1 /#define CAUSAL_ORDER 2 /' $K > /tmp/04_causal_order2.cu
note="CAUSAL_ORDER=2: pairs only under 128 query blocks, FA3's L2-aware LPT order (chunks of heads whose K/V fit in"
note+=" 16 MB) elsewhere; run 17 predicts C +5-10 %, 16k-32k causal +3-5 %"
timeout 80 bash scripts/gpu_campaign_check.sh /tmp/04_causal_order2.cu "$note" \
  > $OUT/campaign_eval2.log 2>&1; grep -vE "^\[|^[A-D]_" $OUT/campaign_eval2.log | tail -22
rm -f $OUT/campaign_check.log
