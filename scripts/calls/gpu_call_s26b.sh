#!/usr/bin/env bash
# Session 26 (either card, ~4 min). Run 97: the rest's length. Run 96 measured a 1.5 s rest before each long call's
# samples: a row's x FA3 moved 1.3 % between runs against 5.2 % without. Keyed on the row now (a floor >= 2 ms: 36
# rows of full), 1.5 s costs +54 s per candidate on full. Here 0, 0.5 and 1.5 s, two checks each, on the same ten
# rows (tests/fixtures/long_rows.csv), the rung also as its own baseline, fresh timing caches.
# Prediction: 0.5 s steadies them about as well (between-run move <= 2 %), since the clock recovers within a few
# hundred ms of idle. Rule: problem.toml's rest_s becomes the shortest of 0.5 / 1.5 whose move is <= half rest 0's.
# Run as: CALL=scripts/calls/gpu_call_s26b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3; DEADLINE=epoch s)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
RESTS="0 0.5 1.5" TAG=rest97 OUT="$OUT" bash scripts/gpu_rest_ab.sh
echo "#### done $(date -u +%T)"
