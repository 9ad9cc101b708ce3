#!/usr/bin/env bash
# Session 26 (either card, ~4 min). Run 97: the rest's length. Run 96 measured a 1.5 s rest before each long call's
# samples: a row's x FA3 moved 1.3 % between runs against 5.2 % without. Keyed on the row now (a floor >= 2 ms: 36
# rows of full), 1.5 s costs +54 s per candidate on full. Here 0, 0.5 and 1.5 s, two checks each, on the same ten
# rows (tests/fixtures/long_rows.csv), the rung also as its own baseline, fresh timing caches.
# Prediction: 0.5 s steadies them about as well (between-run move <= 2 %), since the clock recovers within a few
# hundred ms of idle. Rule: problem.toml's rest_s becomes the shortest of 0.5 / 1.5 whose move is <= half rest 0's.
# Run as: CALL=scripts/gpu_call_s26b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3; DEADLINE=epoch s)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/rest97"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
for i in 1 2; do
  for r in 0 0.5 1.5; do
    if [ -n "${DEADLINE:-}" ] && [ $(( DEADLINE - $(date +%s) )) -lt 90 ]; then
      echo "no time for rest $r, run $i"; continue
    fi
    echo "#### rest $r, run $i $(date -u +%T)"
    cache=/tmp/rest97_${r}_$i; mkdir -p $cache    # timings fresh each time; the build made once (the first run's)
    [ -d /tmp/rest97_0_1/build ] && [ ! -d $cache/build ] && cp -a /tmp/rest97_0_1/build $cache/
    WORKBENCH_TIMING_REST=$r timeout -k 10 150 python3 -m workbench.cli check $K --baseline $K --anchors fa3 \
      --suite tests/fixtures/long_rows.csv --cache-dir $cache --no-resume --traces '' \
      --json "$OUT/rest97/rest${r}_$i.json" > "$OUT/rest97/rest${r}_$i.log" 2>&1
    echo "rc $?"; grep -E "geomean_vs_fa3|scenarios" "$OUT/rest97/rest${r}_$i.log" | head -3
  done
done
python3 scripts/rest_ab.py "$OUT"/rest97/rest*.json | tee "$OUT/rest97/summary.txt"
# $OUT takes a limited number of files: the JSONs and logs travel as one tar
( cd "$OUT" && tar -czf rest97.tgz rest97 && rm -rf rest97/*.json rest97/*.log )
echo "#### done $(date -u +%T)"
