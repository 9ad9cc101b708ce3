#!/usr/bin/env bash
# Session 25 (either card, ~4 min). Run 96: does a rest before each long call's samples (workbench/harness/rest.py)
# steady the 16k-32k rows? The same rung read 0.83-1.06x FA3 on them from run to run, its SM clock 1441 against
# FA3's 1659 MHz where it read 0.83 (run 88). Four checks of the ten rows of tests/fixtures/long_rows.csv, rest 0 and
# 1.5 s alternating, the rung also as its own baseline (each row: the rung, the rung again, FA3), each in a fresh
# cache (nothing reused). Prediction: with the rest the rung's two timings in a row and the two runs agree within
# ~2 % per row (without: up to 15 %), the clocks of all three within ~3 %; the geomean x FA3 moves by under 3 %.
# Rule: the rest becomes problem.toml's default (rest_s 1.5) only if it halves the between-run spread.
# Run as: CALL=scripts/calls/gpu_call_s25f.sh bash scripts/gpu_run.sh call   (carry .whl/fa3; DEADLINE=epoch s: skip a
# check that would start under 90 s before it)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
RESTS="0 1.5" TAG=rest96 OUT="$OUT" bash scripts/gpu_rest_ab.sh
echo "#### done $(date -u +%T)"
