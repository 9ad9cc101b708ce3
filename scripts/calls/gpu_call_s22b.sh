#!/usr/bin/env bash
# Session 22, call 2 (an H100: kind nvidia-h100-x1; the hang is an H100 one, ~4 min). Run 66: the old launch rule
# (EMPTY_SOLO=0) hangs in whichever library has no WATCHDOG=1 marks; the instrumented one always finished. WATCHDOG=2
# keeps only the stuck-wait records (no per-tile host writes). Here the reproducer with WATCHDOG=2 in one library,
# then in both. Prediction: it hangs (the marks, not the bounded waits, were what hid it) and the records name the
# mbarrier and parity of the stuck waits; if it hangs with 0 records, the stuck step is a named barrier (bar.sync),
# not an mbarrier wait.
# Run as: CALL=scripts/calls/gpu_call_s22b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; E=kernels/attn_fwd/suites/edge.csv
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
probe() {   # name, then kernel specs
  local name=$1; shift
  echo "#### hang_probe --together: $name $(date -u +%T)"
  OUT="$OUT" timeout -k 10 200 python3 scripts/hang_probe.py --suite $E --only E_d256,q4097 --together \
    --timeout 10 --kernels "$@" > "$OUT/together_$name.log" 2>&1
  echo "rc $?"; cp "$OUT/hang_probe.json" "$OUT/together_$name.json" 2>/dev/null
  grep -E "HANG|ok |watchdog|stuck" "$OUT/together_$name.log" | cut -c1-170 | head -24
}
probe stuck_only_first "$K:EMPTY_SOLO=0,WATCHDOG=2" "$K:EMPTY_SOLO=0,DYN_CHUNKS=0,DYN_LONG=0"
probe stuck_only_both "$K:EMPTY_SOLO=0,WATCHDOG=2" "$K:EMPTY_SOLO=0,DYN_CHUNKS=0,DYN_LONG=0,WATCHDOG=2"
rm -f "$OUT/hang_probe.json"
echo "#### done $(date -u +%T)"
