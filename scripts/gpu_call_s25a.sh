#!/usr/bin/env bash
# Session 25, call 1 (`kind: nvidia-h200`). On an H200 (the card issue 23's bar names; none has come since session 19):
# v26's campaign evaluation, the acceptance command as written and edge (scripts/gpu_call_accept.sh, ~5 min); the
# known-bad corpus is the next call on the same machine (`bash scripts/gpu_run.sh wrong`). On an H100 (v26 is recorded
# there, run 88) it runs run 94's measurement instead (scripts/gpu_call_s25b.sh), so the start is not spent.
# Prediction on an H200: 182/182 and edge 30/30; x FA3 within 1 % of v21's 1.046 there (run 47) plus runs 48-84's
# H100-measured gains (~+0.3 %), i.e. 1.04-1.05; every category >= 0.97, none < 0.85 (the H200's clock held 1.76-1.98
# GHz on the long rows in sessions 12-19).
# Run as: CALL=scripts/gpu_call_s25a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3); then unpack
# $OUT/h200-fa3-race.tgz over data/campaigns/ and answer a served question before the next edit.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
case "$gpu" in
  *H200*) ;;
  *) echo "not an H200: run 94 instead"; OUT="$OUT" exec bash scripts/gpu_call_s25b.sh ;;
esac
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
NOTE="v26 on the H200: PAIRS_MIN_TILES 768 (run 84; on an H100 1.0439 in run 88); host: dispatch_cfg, SASS identical"
VERSION=v26 NOTE="$NOTE" OUT="$OUT" \
  bash scripts/gpu_call_accept.sh
echo "#### done $(date -u +%T)"
