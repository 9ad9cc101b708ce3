# 04 v8 A/B on the H200 (docs/gpu_plan.md P1-P3): K/V ring depth 3, FA3's single waiter, 176-key causal blocks, and
# ncu's per-instruction stall sampling of 04 and FA3 on a causal d128 shape. Logs under $OUT/<n>.
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; F=kernels/attn_fwd/suites/full.csv
B="python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15"
ab() { n=$1; shift; mkdir -p $OUT/$n; echo "#### $n $(date -u +%T)"
       OUT=$OUT/$n timeout $T $B "$@" > $OUT/$n/log.txt 2>&1
       grep -E "^# (built|interrupted)|FAIL" $OUT/$n/log.txt | head -8; sed -n '/^# geomean/,$p' $OUT/$n/log.txt; }
T=220 ab p1 --suite $F --kernels $K $K:KV_STAGES=3 $K:WAIT_ONE=1 $K:KV_STAGES=3,WAIT_ONE=1
T=60 ab p2 --suite $F --only d128_c1 --kernels $K $K:D128_BN_CAUSAL=176
echo "#### p3 $(date -u +%T)"
NCU_JOBS="ours:A_d128_c1_s4k fa3:A_d128_c1_s4k ours:A_d128_c0_s4k" NCU_TIMEOUT=100 bash scripts/gpu_run.sh ncusrc 2>&1 \
  | grep -v "^####" | tail -150
