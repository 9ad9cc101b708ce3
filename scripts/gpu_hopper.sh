#!/usr/bin/env bash
# One device call for the Hopper ladder rungs: build, check and time them; logs and JSON under $OUT.
#   bash scripts/gpu_hopper.sh edge dev26 sass          (stages run in order; each prints a short summary)
# Stages
#   edge      scripts/ladder_bench.py on the `edge` suite, check only (every corner of the contract)
#   dev26     ladder_bench on dev26: check + device time (graph replay) against FA3 and 02_mma
#   full      ladder_bench on full: check + device time against FA3, cuDNN, FA2
#   sass      SASS instruction counts per rung (HGMMA, HMMA, UTMALDG, LDL/STL, USETMAXREG)
#   sanitize  compute-sanitizer racecheck + synccheck on two small shapes per head_dim
#   gemm      the wgmma GEMM microbenchmark (scripts/wgmma_gemm_bench.sh)
# Kernels: HOPPER_KERNELS (default: every ladder rung from 03 on); BASE_KERNEL is timed beside them.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
source scripts/gpu_wheels.sh || exit 2
KERNELS=${HOPPER_KERNELS:-$(ls kernels/attn_fwd/ladder/0[3-9]_*.cu | tr '\n' ' ')}
BASE=${BASE_KERNEL:-kernels/attn_fwd/ladder/02_mma.cu}
bench() { python3 scripts/ladder_bench.py "$@"; }
for stage in "$@"; do
  echo "#### stage $stage $(date -u +%FT%TZ)"
  case $stage in
    edge)
      OUT=$OUT/edge bench --suite kernels/attn_fwd/suites/edge.csv --kernels $KERNELS --no-time 2>&1 \
        | tee "$OUT/edge.log" | grep -vE " ok " | tail -40 ;;
    dev26)
      OUT=$OUT/dev26 bench --suite kernels/attn_fwd/suites/dev26.csv --kernels $BASE $KERNELS --anchors fa3 \
        --check-only "$(basename "$BASE" .cu)" --reps 10 --cap 0.2 2>&1 | tee "$OUT/dev26.log" | tail -45 ;;
    full)
      OUT=$OUT/full bench --suite kernels/attn_fwd/suites/full.csv --kernels $KERNELS --anchors fa3,cudnn,fa2 \
        --seeds 0 --reps 8 --cap 0.15 2>&1 | tee "$OUT/full.log" | tail -20 ;;
    sass)
      for k in $KERNELS; do
        so=/tmp/sass_$(basename "$k" .cu).so
        nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a -o "$so" "$k" 2>/dev/null
        cuobjdump --dump-sass "$so" > "$OUT/sass_$(basename "$k" .cu).txt"
        printf '%s: ' "$(basename "$k")"
        for op in HGMMA HMMA UTMALDG UTMASTG USETMAXREG LDL STL; do
          printf '%s %s  ' $op "$(grep -c "\b$op\b" "$OUT/sass_$(basename "$k" .cu).txt")"; done; echo
      done ;;
    sanitize)
      for k in $KERNELS; do
        for tool in racecheck synccheck; do
          compute-sanitizer --tool $tool --kernel-name kns=attn --print-limit 5 \
            python3 scripts/ladder_bench.py --suite kernels/attn_fwd/suites/edge.csv --kernels "$k" --no-time \
            --no-scaled --seeds 0 --only s64_causal,q333_k77 > "$OUT/sanitize_${tool}_$(basename "$k" .cu).log" 2>&1
          log="$OUT/sanitize_${tool}_$(basename "$k" .cu).log"
          echo "$(basename "$k") $tool: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tr '\n' ' ')"
        done
      done ;;
    gemm)
      bash scripts/wgmma_gemm_bench.sh 2>&1 | tee "$OUT/gemm.log" | tail -15 ;;
    *) echo "unknown stage $stage" ;;
  esac
done
