#!/usr/bin/env bash
# Session 26, call 1 (`kind: nvidia-h200`; either card). v27 (D128_BN_SHORT 112, run 93) through the campaign, the
# acceptance command as written and edge (scripts/gpu_call_accept.sh), with tests/fixtures/bn112_shapes.csv's
# correctness; on an H200 the known-bad corpus after it in the time left (CALL_BUDGET_S, default 570 s).
# Prediction: over v26 (1.040 / campaign 1.0439 on an H100) +0.1-0.2 % on full: D_cross_q4k/q1k_k333_d128 +7-8 %,
# C_s100_d128_c0 +2 % (run 93) among 182 shapes, D +0.4-0.6 %, A/B/C unchanged within the machines' ~0.5 % spread;
# 182/182, edge 30/30, the fixture 9/9; no shape under 0.85 only if the 32k rows' clocks hold (run 96: the rest).
# Run as: CALL=scripts/calls/gpu_call_s26a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3); then unpack
# $OUT/h200-fa3-race.tgz over data/campaigns/ and answer any question the policy served before the next edit.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; start=$(date +%s)
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
VERSION=v27 NOTE="v27: D128_BN_SHORT 112 - 112-key blocks for short non-causal d128 (run 93: D_cross k333 +7-8 %)" \
  FIXTURE=tests/fixtures/bn112_shapes.csv OUT="$OUT" bash scripts/gpu_call_accept.sh
left=$(( ${CALL_BUDGET_S:-570} - ($(date +%s) - start) ))
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) echo "#### the known-bad corpus in $left s $(date -u +%T)"
          if [ "$left" -ge 150 ]; then WB_CACHE_RESTORED=1 WRONG_TIMEOUT=$left bash scripts/gpu_run.sh wrong; fi ;;
esac
echo "#### done $(date -u +%T)"
