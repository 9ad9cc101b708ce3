# One device call: the GEMM problem's standalone check (issue 29) and 04's CAUSAL_ORDER=2 A/B on the 72 causal shapes.
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; F=kernels/attn_fwd/suites/full.csv
B="python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15"
echo "#### r1 $(date -u +%T)"; mkdir -p $OUT/r1
OUT=$OUT/r1 timeout 100 $B --suite $F --only _c1 --kernels $K $K:CAUSAL_ORDER=2 > $OUT/r1/log.txt 2>&1
grep -E "^# (built|interrupted)|FAIL" $OUT/r1/log.txt | head -5; sed -n '/^# geomean/,$p' $OUT/r1/log.txt
echo "#### gemm $(date -u +%T)"; mkdir -p $OUT/gemm
timeout 300 python3 scripts/gemm_gpu_check.py --out $OUT/gemm 2>&1 | tee $OUT/gemm/gemm_gpu_check.log \
  | grep -vE "^(built|verified) " | tail -80
