#!/usr/bin/env bash
# The rest A/B (runs 96, 97): `workbench check` of the rung on tests/fixtures/long_rows.csv with the rung also as its
# own baseline and FA3, under each WORKBENCH_TIMING_REST of RESTS in turn, ROUNDS times, each in a fresh timing cache
# (the first check's build copied in), then scripts/rest_ab.py's table. Logs and JSONs travel as $OUT/$TAG.tgz ($OUT
# takes a limited number of files). DEADLINE (epoch s): a check that would start under 90 s before it is skipped.
#   RESTS="0 1.5" TAG=rest96 bash scripts/gpu_rest_ab.sh   (from a gpu_call_*.sh, wheels sourced)
set -uo pipefail
OUT=${OUT:-/tmp/out}; : "${RESTS:?e.g. RESTS=\"0 1.5\"}" "${TAG:?e.g. TAG=rest96}"; mkdir -p "$OUT/$TAG"
K=kernels/attn_fwd/ladder/04_pingpong.cu; first=""
for i in $(seq 1 "${ROUNDS:-2}"); do
  for r in $RESTS; do
    if [ -n "${DEADLINE:-}" ] && [ $(( DEADLINE - $(date +%s) )) -lt 90 ]; then
      echo "no time for rest $r, run $i"; continue
    fi
    echo "#### rest $r, run $i $(date -u +%T)"
    cache=/tmp/${TAG}_${r}_$i; mkdir -p $cache    # timings fresh each time; the build made once (the first run's)
    [ -n "$first" ] && [ ! -d $cache/build ] && cp -a "$first/build" $cache/
    WORKBENCH_TIMING_REST=$r timeout -k 10 150 python3 -m workbench.cli check $K --baseline $K --anchors fa3 \
      --suite tests/fixtures/long_rows.csv --cache-dir $cache --no-resume --traces '' \
      --json "$OUT/$TAG/rest${r}_$i.json" > "$OUT/$TAG/rest${r}_$i.log" 2>&1
    echo "rc $?"; grep -E "geomean_vs_fa3|scenarios" "$OUT/$TAG/rest${r}_$i.log" | head -3
    [ -z "$first" ] && [ -d $cache/build ] && first=$cache
    nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader
  done
done
python3 scripts/rest_ab.py "$OUT/$TAG"/rest*.json | tee "$OUT/$TAG/summary.txt"
( cd "$OUT" && tar -czf "$TAG.tgz" "$TAG" && rm -f "$TAG"/*.json "$TAG"/*.log )
