#!/usr/bin/env bash
# Session 25 (either card, ~4 min). Run 96: does a rest before each long call's samples (workbench/harness/rest.py)
# steady the 16k-32k rows? The same rung read 0.83-1.06x FA3 on them from run to run, its SM clock 1441 against
# FA3's 1659 MHz where it read 0.83 (run 88). Four checks of the ten rows of tests/fixtures/long_rows.csv, rest 0 and
# 1.5 s alternating, the rung also as its own baseline (each row: the rung, the rung again, FA3), each in a fresh
# cache (nothing reused). Prediction: with the rest the rung's two timings in a row and the two runs agree within
# ~2 % per row (without: up to 15 %), the clocks of all three within ~3 %; the geomean x FA3 moves by under 3 %.
# Rule: the rest becomes problem.toml's default (rest_s 1.5) only if it halves the between-run spread.
# Run as: CALL=scripts/gpu_call_s25f.sh bash scripts/gpu_run.sh call   (carry .whl/fa3; DEADLINE=epoch s: skip a
# check that would start under 90 s before it)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/rest96"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/rest96/env.txt"
for i in 1 2; do
  for r in 0 1.5; do
    if [ -n "${DEADLINE:-}" ] && [ $(( DEADLINE - $(date +%s) )) -lt 90 ]; then
      echo "no time for rest $r, run $i"; continue
    fi
    echo "#### rest $r, run $i $(date -u +%T)"
    cache=/tmp/rest96_${r}_$i; mkdir -p $cache    # timings fresh each time; the build made once (the first run's)
    [ -d /tmp/rest96_0_1/build ] && [ ! -d $cache/build ] && cp -a /tmp/rest96_0_1/build $cache/
    WORKBENCH_TIMING_REST=$r timeout -k 10 150 python3 -m workbench.cli check $K --baseline $K --anchors fa3 \
      --suite tests/fixtures/long_rows.csv --cache-dir $cache --no-resume --traces '' \
      --json "$OUT/rest96/rest${r}_$i.json" > "$OUT/rest96/rest${r}_$i.log" 2>&1
    echo "rc $?"; grep -E "geomean_vs_fa3|scenarios" "$OUT/rest96/rest${r}_$i.log" | head -3
    nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
  done
done
python3 scripts/rest_ab.py "$OUT"/rest96/rest*.json | tee "$OUT/rest96/summary.txt"
echo "#### done $(date -u +%T)"
