# 04's CLUSTER=2 (CTA pairs sharing K/V by TMA multicast), its first GPU run: correctness under the mbarrier watchdog
# (Run 19 of docs/kernel_ladder.md. The CLUSTER knob was deleted after it; rerun from commit 1f6267b.)
# (a wait over 2 s traps instead of hanging), then an A/B against the default on the non-causal d128/d256 shapes.
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; F=kernels/attn_fwd/suites/full.csv
B="python3 scripts/ladder_bench.py --anchors fa3 --seeds 0"
echo "#### watchdog correctness $(date -u +%T)"; mkdir -p $OUT/c0
OUT=$OUT/c0 timeout 120 $B --no-time --suite $F --only d128_c0,d256_c0,d128_c1 --kernels $K:CLUSTER=2,MBAR_WATCHDOG=1 \
  > $OUT/c0/log.txt 2>&1; echo "rc $?"; grep -E "FAIL|error|passed|# built" $OUT/c0/log.txt | tail -8
echo "#### edge $(date -u +%T)"; mkdir -p $OUT/c1
OUT=$OUT/c1 timeout 90 $B --suite kernels/attn_fwd/suites/edge.csv --kernels $K $K:CLUSTER=2 > $OUT/c1/log.txt 2>&1
sed -n '/^# geomean/,$p' $OUT/c1/log.txt
echo "#### A/B $(date -u +%T)"; mkdir -p $OUT/c2
OUT=$OUT/c2 timeout 180 $B --reps 8 --cap 0.15 --suite $F --only d128_c0,d256_c0 --kernels $K $K:CLUSTER=2 \
  > $OUT/c2/log.txt 2>&1; grep -E "FAIL|# built" $OUT/c2/log.txt | head; sed -n '/^# geomean/,$p' $OUT/c2/log.txt
