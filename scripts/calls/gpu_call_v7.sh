# 04 v7 A/B on the H200 (docs/gpu_plan.md N1, N1b, N1d, N1c): one ladder_bench run per question, logs under $OUT/<n>.
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; F=kernels/attn_fwd/suites/full.csv; V=UNIFORM_RING=2,MASK_LIMIT=1
B="python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15"
ab() { n=$1; shift; mkdir -p $OUT/$n; echo "#### $n $(date -u +%T)"
       OUT=$OUT/$n timeout $T $B "$@" > $OUT/$n/log.txt 2>&1
       grep -E "^# (built|interrupted)|FAIL" $OUT/$n/log.txt | head -8; sed -n '/^# geomean/,$p' $OUT/$n/log.txt; }
T=200 ab n1 --suite $F --kernels $K $K:UNIFORM_RING=2 $K:$V $K:$V,FIRST_SCHED=1 $K:$V,FIRST_SCHED=1,STORE_LATE=1
T=130 ab n1b --suite $F --only _c1 --kernels $K:$V $K:$V,PERSISTENT=3 $K:$V,PERSISTENT=3,PUBLISH_LATE=1 \
  $K:$V,PERSISTENT=3,DYNAMIC_SCHED=0
T=70 ab n1d --suite $F --only d64_c0,k77_d64,k333_d64,k1k_d64,k4k_d64,k8k_d64 --kernels $K:$V $K:$V,D64_SSPV=1
T=90 ab n1c --suite kernels/attn_fwd/suites/edge.csv --kernels $K $K:D64_WGS=3 $K:$V $K:$V,FIRST_SCHED=1,STORE_LATE=1
