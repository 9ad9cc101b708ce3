#!/usr/bin/env bash
# Session 7, last call: issue 24's cold/warm/killed/resumed legs after the resume of a killed run's candidate rows
# (h-resume), then the recorded campaign's evaluation of 04 v9 (SPLIT_WAVES 1) on the legs' cold cache (every
# baseline and anchor timing and the original's rows cached, so nothing but the candidate runs between its samples).
# Run as: CALL=scripts/calls/gpu_call_s7c.sh bash scripts/gpu_run.sh call
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/coldrun"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### 1. coldrun legs $(date -u +%T)"
python3 scripts/coldrun.py --kernel $K --out "$OUT/coldrun" --budget-s "${COLDRUN_BUDGET:-440}" --cold-limit-s 240 \
  --warm-limit-s 60 --keep-cache "$WORKBENCH_CACHE" 2>&1 | tee "$OUT/coldrun/coldrun.log" | grep -vE "^\[" | tail -45
python3 scripts/coldrun_profile.py "$OUT/coldrun" > "$OUT/coldrun/profile.txt" 2>&1
tar -czf "$OUT/coldrun.tgz" -C "$OUT" coldrun && rm -rf "$OUT/coldrun"
echo "#### 2. campaign evaluation of v9 $(date -u +%T)"
left=$(( ${CALL_BUDGET:-570} - SECONDS )); [ "$left" -lt 60 ] && left=60
timeout "$left" bash scripts/gpu_campaign_check.sh $K \
  "v9: SPLIT_WAVES 1 (keys split only under one wave; run 24's A/B 0.967 -> 0.981), on a fully cached baseline"
grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
echo "#### done $(date -u +%T)"
