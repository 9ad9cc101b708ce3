#!/usr/bin/env bash
# Session 21, call 1 (an H100: kind nvidia-h100-x1; the hang is an H100 one). Runs 60-62: run 57's hang came back
# only with two kernel libraries checked and timed round-robin in one process (ladder_bench, the harness's worker),
# never with one (the probe alone, in sequence, with graph replays). Here:
# 1. the tools' GPU tests: hang_probe's three (one child per shape, --sequence, --together) and tile_timeline's (its
#    stub records one per tile since session 20);
# 2. `hang_probe --together` on run 57's shapes with the old rule in both libraries, plain (the reproducer, 4 of 4 so
#    far), with WATCHDOG=1 in both and in the first only (where every CTA stopped, which waits are stuck; if the
#    watchdog's timing hides the race, the plain pair still says it is there);
# 3. the default pair the same way (EMPTY_SOLO 1: passed run 62).
# Run as: CALL=scripts/calls/gpu_call_s21a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; E=kernels/attn_fwd/suites/edge.csv
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### the tools' GPU tests $(date -u +%T)"
timeout -k 10 200 python3 -m pytest -q -m gpu tests/test_gpu_hang_probe.py tests/test_gpu_tile_timeline.py \
  > "$OUT/tool_tests.log" 2>&1
echo "rc $?"; tail -4 "$OUT/tool_tests.log"
probe() {   # name, then kernel specs
  local name=$1; shift
  echo "#### hang_probe --together: $name $(date -u +%T)"
  OUT="$OUT" timeout -k 10 200 python3 scripts/hang_probe.py --suite $E --only E_d256,q4097 --together \
    --timeout 10 --kernels "$@" > "$OUT/together_$name.log" 2>&1
  echo "rc $?"; cp "$OUT/hang_probe.json" "$OUT/together_$name.json" 2>/dev/null
  grep -vE "^    (mark|stuck) |^    \{" "$OUT/together_$name.log" | cut -c1-150 | head -12
  grep -E "^    (HANG|watchdog|mark|stuck)" "$OUT/together_$name.log" | cut -c1-160 | head -40
}
probe old_watchdog "$K:EMPTY_SOLO=0,WATCHDOG=1" "$K:EMPTY_SOLO=0,DYN_CHUNKS=0,DYN_LONG=0,WATCHDOG=1"
probe old_watchdog_first "$K:EMPTY_SOLO=0,WATCHDOG=1" "$K:EMPTY_SOLO=0,DYN_CHUNKS=0,DYN_LONG=0"
probe old "$K:EMPTY_SOLO=0" "$K:EMPTY_SOLO=0,DYN_CHUNKS=0,DYN_LONG=0"
probe default "$K" "$K:DYN_CHUNKS=0,DYN_LONG=0"
rm -f "$OUT/hang_probe.json"
echo "#### done $(date -u +%T)"
