#!/usr/bin/env bash
# The wgmma GEMM gate on the H200 (issue 12, "Rung A": the wgmma GEMM before any attention rung), one device call
# of about a minute:
#   bash scripts/wgmma_gemm_bench.sh        # log in $OUT/wgmma_gemm_bench.log ($OUT defaults to /tmp/out)
# 1. builds the release binary (ptxas -v summary, any C75xx line flagged) and a -DWGMMA_WATCHDOG one;
# 2. SASS counts (HGMMA, UTMALDG, USETMAXREG, LDL/STL) when cuobjdump is there;
# 3. correctness under the watchdog build (an mbarrier parity bug reports instead of hanging);
# 4. correctness + timing + gate with the release build; prints a short table last.
# Exit status: the benchmark's (0 pass, 1 wrong result, 3 CUDA error or watchdog, 4 gate missed); 2 build failed;
# 124 a hang past the timeout.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LOG=$OUT/wgmma_gemm_bench.log
SRC=scripts/wgmma_gemm_bench.cu
BIN=/tmp/wgmma_gemm
FLAGS=(-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a)

ptxas_summary() {  # "ptxas <kernel>: registers, stack, spills" for our two kernels; any C75xx or warning flagged
  awk -v build="$2" '/Compiling entry function/ {name = ""; if ($0 ~ /gemm_kernel/) name = "gemm_kernel";
                                   if ($0 ~ /rs_probe_kernel/) name = "rs_probe_kernel"}
       /stack frame/ && name != "" {sub(/^[ \t]+/, ""); frame[name] = $0}
       /Used [0-9]+ registers/ && name != "" {match($0, /Used [0-9]+ registers/);
         printf "  ptxas %-8s %-16s %s, %s\n", build, name, substr($0, RSTART + 5, RLENGTH - 5), frame[name]}
       /C75[0-9][0-9]|[Ww]arning/ {print "  WARNING: " $0}' "$1"
}

sass_counts() {
  command -v cuobjdump >/dev/null || { echo "  (cuobjdump not found: SASS counts skipped)"; return; }
  cuobjdump --dump-sass "$BIN" > /tmp/wgmma_gemm.sass
  for k in gemm_kernel rs_probe_kernel; do
    awk -v k="$k" '/Function :/ {on = index($0, k) > 0} on' /tmp/wgmma_gemm.sass > "/tmp/$k.sass"
    printf "  %-16s HGMMA %3d  UTMALDG %2d  USETMAXREG %d  LDL %d  STL %d\n" "$k" \
      "$(grep -c HGMMA "/tmp/$k.sass")" "$(grep -c UTMALDG "/tmp/$k.sass")" \
      "$(grep -c USETMAXREG "/tmp/$k.sass")" "$(grep -c 'LDL' "/tmp/$k.sass")" "$(grep -c 'STL' "/tmp/$k.sass")"
  done
  grep -ohE "HGMMA\.[0-9x]+\.[A-Z0-9]+\.[A-Z0-9]+" /tmp/wgmma_gemm.sass | sort | uniq -c | sed 's/^/  /'
}

main() {
  echo "#### wgmma_gemm_bench $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader \
    || true
  nvcc --version | tail -1
  echo "== build (release)"
  nvcc "${FLAGS[@]}" -Xptxas -v -o "$BIN" "$SRC" > /tmp/wgmma_ptxas.log 2>&1 || { cat /tmp/wgmma_ptxas.log; return 2; }
  ptxas_summary /tmp/wgmma_ptxas.log release
  echo "== build (-DWGMMA_WATCHDOG)"
  nvcc "${FLAGS[@]}" -Xptxas -v -DWGMMA_WATCHDOG -o "${BIN}_wd" "$SRC" > /tmp/wgmma_ptxas_wd.log 2>&1 \
    || { cat /tmp/wgmma_ptxas_wd.log; return 2; }
  ptxas_summary /tmp/wgmma_ptxas_wd.log watchdog
  echo "== SASS"
  sass_counts
  echo "== correctness, watchdog build"
  timeout 180 "${BIN}_wd" --check-only
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "watchdog-build check failed (rc $rc); the release run is skipped"
    return $rc
  fi
  echo "== correctness + timing, release build"
  timeout 300 "$BIN" --reps 30
}

main 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
echo
echo "==== wgmma GEMM gate: table (full log $LOG)"
grep -E "^  (ptxas release|WARNING|gemm_kernel|rs_probe_kernel)" "$LOG"
sed -n '/^== summary/,$p' "$LOG" | tail -n +2
echo "exit status $rc"
exit "$rc"
