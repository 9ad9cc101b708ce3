#!/usr/bin/env bash
# Session 29, first call (~7 min, either card): v29 (v28 with the -inf test in every block again: runs 103-105, d64
# +2.7-3.9 %, d128 and d256 +-0.3 %; SASS = v28 -DINF_GUARD=1, correct on edge, gqa_short, bn112 in run 106) through
# the campaign on full, the acceptance command and edge; the known-bad corpus after it on an H200.
# Prediction: overall 1.060 -> 1.065 on an H100 (d64's 30 shapes +3 %), 182/182, edge 30/30.
# Run as: CALL_BUDGET_S=<left - 150> CALL=scripts/calls/gpu_call_s29a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; start=$(date +%s)
VERSION=v29 NOTE="v29: the -inf test in every block again (runs 103-105: INF_GUARD=0 cost d64 3 %)" \
  FIXTURE="kernels/attn_fwd/suites/gqa_short.csv tests/fixtures/bn112_shapes.csv" OUT="$OUT" \
  bash scripts/gpu_call_accept.sh
left=$(( ${CALL_BUDGET_S:-570} - ($(date +%s) - start) ))
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) echo "#### the known-bad corpus in $left s $(date -u +%T)"
          if [ "$left" -ge 150 ]; then WB_CACHE_RESTORED=1 WRONG_TIMEOUT=$left bash scripts/gpu_run.sh wrong; fi ;;
esac
echo "#### done $(date -u +%T)"
