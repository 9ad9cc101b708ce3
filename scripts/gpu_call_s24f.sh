#!/usr/bin/env bash
# Session 24, call 6 (after run 90 met its rule; ~8 min). Both versions into the campaign: v26 (PAIRS_MIN_TILES 768,
# run 84) as the rung is, then v27 = v26 with NARROW_TOP 1 (run 90) through the campaign and the acceptance command
# (its edge ran in run 90 with the knob; `tests/fixtures/pairs_768_shapes.csv` for v26's pair grids). v27's source is
# the rung with the one #define flipped (what its commit will hold), written under .experiments/v27.
# Prediction: v26 over v25's 1.044 +0.05-0.1 %; v27 over v26 +0.3-0.6 % on full (run 90's 98 shapes and the
# non-causal ones it reaches), 182/182 each.
# Run as: CALL=scripts/gpu_call_s24f.sh bash scripts/gpu_run.sh call   (carry .whl/fa3); unpack $OUT/h200-fa3-race.tgz
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; V27=.experiments/v27/04_pingpong.cu
mkdir -p .experiments/v27 && sed 's/^#define NARROW_TOP 0  /#define NARROW_TOP 1  /' $K > $V27
grep -q "^#define NARROW_TOP 1 " $V27 || { echo "s24f: NARROW_TOP's #define not found in $K"; exit 2; }
echo "#### v26 through the campaign on full $(date -u +%T)"
NOTE26="v26: PAIRS_MIN_TILES 768 - mirrored query-block pairs from 768 causal tiles (run 84: C_s3000_d256_c1 +5-6 %,"
NOTE26+=" C_s3000_d128_c1 +3-4 % over v25 and a copy)"
timeout -k 10 280 bash scripts/gpu_campaign_check.sh $K "$NOTE26" > "$OUT/campaign_v26.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/campaign_v26.log" | grep -E "scenarios|geomean_vs_fa3|question|q0|eval" | head -8
VERSION=v27 KERNEL_PATH=$V27 EDGE=0 NOTE="v27: NARROW_TOP 1 - a warpgroup's top key block with <= NW visible keys as a \
narrower S GEMM and fewer PV steps (run 90)" OUT="$OUT" bash scripts/gpu_call_accept.sh
echo "#### done $(date -u +%T)"
