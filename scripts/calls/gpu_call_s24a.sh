#!/usr/bin/env bash
# Session 24, call 1 (kind nvidia-h200; on an H100 the figures are H100 ones and issue 23's H200 bar stays open). v26
# (PAIRS_MIN_TILES 768, run 84) through the campaign, the acceptance command and edge (scripts/gpu_call_accept.sh).
# Prediction: over v25's 1.044 (run 83, an H100) +0.05-0.1 % on full (C +0.3-0.4 %: C_s3000_d256_c1 and
# C_s3000_d128_c1 +3-6 % among 36 C shapes), inside the machines' ~0.5 % spread; 182/182, edge 30/30, and
# tests/fixtures/pairs_768_shapes.csv 9/9 (the new pair grids' odd cases).
# Run as: CALL=scripts/calls/gpu_call_s24a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3); then unpack
# $OUT/h200-fa3-race.tgz over data/campaigns/ and answer any question the policy served before the next edit.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
VERSION=v26 NOTE="v26: PAIRS_MIN_TILES 768 - mirrored query-block pairs from 768 causal tiles (run 84: C_s3000_d256_c1
+5-6 %, C_s3000_d128_c1 +3-4 % over v25 and a copy)" FIXTURE=tests/fixtures/pairs_768_shapes.csv OUT="$OUT" \
  bash scripts/gpu_call_accept.sh
echo "#### done $(date -u +%T)"
