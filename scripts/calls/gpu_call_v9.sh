# 04 v9 A/B on the H200: the softmax pinned under the PV GEMM (SOFTMAX_UNDER_PV), with and without WAIT_ONE, on
# full and edge; ncu stall sampling of the winner on A_d128_c1_s4k. Logs under $OUT/<n>.
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; F=kernels/attn_fwd/suites/full.csv
B="python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15"
ab() { n=$1; shift; mkdir -p $OUT/$n; echo "#### $n $(date -u +%T)"
       OUT=$OUT/$n timeout $T $B "$@" > $OUT/$n/log.txt 2>&1
       grep -E "^# (built|interrupted)|FAIL" $OUT/$n/log.txt | head -8; sed -n '/^# geomean/,$p' $OUT/$n/log.txt; }
T=220 ab q1 --suite $F --kernels $K $K:SOFTMAX_UNDER_PV=1 $K:SOFTMAX_UNDER_PV=1,WAIT_ONE=1 $K:WAIT_ONE=1
T=60 ab q2 --suite kernels/attn_fwd/suites/edge.csv --kernels $K:SOFTMAX_UNDER_PV=1,WAIT_ONE=1
echo "#### q3 $(date -u +%T)"
mkdir -p /tmp/k9 && cp $K /tmp/k9/04.cu \
  && sed -i -e 's/^#define SOFTMAX_UNDER_PV 0 /#define SOFTMAX_UNDER_PV 1 /' \
            -e 's/^#define WAIT_ONE 0 /#define WAIT_ONE 1 /' /tmp/k9/04.cu
NCU_KERNEL=/tmp/k9/04.cu NCU_JOBS="ours:A_d128_c1_s4k" NCU_TIMEOUT=100 bash scripts/gpu_run.sh ncusrc 2>&1 \
  | grep -v "^####" | tail -60
