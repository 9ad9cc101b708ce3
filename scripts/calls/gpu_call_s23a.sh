#!/usr/bin/env bash
# Session 23, call 1 (kind nvidia-h200; on an H100 the figures are H100 ones and issue 23's H200 bar stays open). v25
# (PAIR_TAIL 3, run 76) through the campaign, the acceptance command and edge (scripts/gpu_call_accept.sh), then
# PAIR_TAIL's grids beyond full and edge. Prediction: on an H100, over v24's 1.041-1.042 +0.05-0.1 % (its 4 A shapes
# +2 %) inside the machines' spread (run 74: unchanged code 0.8 % apart); 182/182, edge 30/30, the fixture passing.
# Run as: CALL=scripts/calls/gpu_call_s23a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3); then unpack
# $OUT/h200-fa3-race.tgz over data/campaigns/ and answer any question the policy served before the next edit.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
VERSION=v25 NOTE="v25: PAIR_TAIL 3 - the head-major pair order from the counter also on group-1 pair grids up to d128
(run 76: its 4 A shapes +1.8-2.0 % over v24 and a copy)" OUT="$OUT" bash scripts/gpu_call_accept.sh
echo "#### PAIR_TAIL's grids beyond full and edge (keyless blocks, odd counts and groups) $(date -u +%T)"
OUT="$OUT/pair_tail" timeout -k 10 120 python3 scripts/ladder_bench.py --anchors "" --seeds 0 --no-scaled --no-time \
  --suite tests/fixtures/pair_tail_shapes.csv --kernels $K > "$OUT/pair_tail_shapes.log" 2>&1
echo "rc $?"; grep -E "^T_|FAIL|rror" "$OUT/pair_tail_shapes.log" | cut -c1-120 | head -10
echo "#### done $(date -u +%T)"
