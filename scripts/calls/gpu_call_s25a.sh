#!/usr/bin/env bash
# Session 25, call 1 (`kind: nvidia-h200`), rewritten after eight failed starts left ~15 min of device time.
# On an H200 (the card issue 23's bar names; none since session 19): the bar's own checks only, within the call's
# 10 minutes: the acceptance command as written (its JSON h200_ladder_04_pingpong_full_dt4_v26_<date>.json), edge,
# then the known-bad corpus (`gpu_run.sh wrong`) in the time left. v26 is in the campaign already (run 88, an H100).
# On an H100: run 96 (the rest A/B, scripts/calls/gpu_call_s25f.sh) then run 94 (q011's DRAM bytes, s25b) if time is left.
# Prediction on an H200: 182/182 and edge 30/30; x FA3 1.04-1.05 (v21's 1.046 there, run 47, plus runs 48-84's
# H100-measured gains); every category >= 0.97; none < 0.85 unless a 32k row's clock falls (run 96's question).
# Run as: CALL=scripts/calls/gpu_call_s25a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
left() { echo $(( ${CALL_BUDGET_S:-570} - ($(date +%s) - start) )); }   # CALL_BUDGET_S: the device time left
case "$gpu" in
  *H200*) ;;
  *) echo "not an H200: runs 96 and 94"
     DEADLINE=$(( start + ${CALL_BUDGET_S:-570} )) OUT="$OUT" bash scripts/calls/gpu_call_s25f.sh
     if [ "$(left)" -gt 200 ]; then OUT="$OUT" bash scripts/calls/gpu_call_s25b.sh; fi
     exit 0 ;;
esac
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
VERSION=v26 CAMPAIGN=0 OUT="$OUT" bash scripts/gpu_call_accept.sh   # v26 is in the campaign (run 88)
echo "#### the known-bad corpus in $(left) s $(date -u +%T)"
if [ "$(left)" -ge 150 ]; then WB_CACHE_RESTORED=1 WRONG_TIMEOUT=$(left) bash scripts/gpu_run.sh wrong; fi
echo "#### done $(date -u +%T)"
