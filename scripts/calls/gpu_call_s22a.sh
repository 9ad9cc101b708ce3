#!/usr/bin/env bash
# Session 22, call 1 (kind nvidia-h200; on an H100 the figures are H100 ones and issue 23's bar stays open): v23
# (DYN_PAIRS 1, runs 67-68) through the recorded campaign on full, then issue 23's acceptance command as written,
# its JSON named by the card. Prediction: the campaign's row within +-0.5 % of v22's on the same card kind plus
# A_d128_c1_s2k/s4k's +0.5-1.7 % (full +0.02-0.05 %); 182/182.
# Run as: CALL=scripts/calls/gpu_call_s22a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3); then unpack
# $OUT/h200-fa3-race.tgz over data/campaigns/ and answer any question the policy served before the next edit.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; day=$(date -u +%F)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
card=$(case "$gpu" in *H200*) echo h200;; *H100*) echo h100;; *) echo gpu;; esac)
echo "#### v23 through the campaign on full $(date -u +%T)"
timeout -k 10 300 bash scripts/gpu_campaign_check.sh $K \
  "v23: DYN_PAIRS 1 - the persistent-pair causal grids of 16-32 query blocks (groups of 1) walked by the counter's
chunked LPT order (runs 67-68: 1024 equal pairs on 132 SMs left 32 SMs a pair short)" > "$OUT/campaign.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/campaign.log" | grep -E "scenarios|geomean_vs_fa3|stop|question|q0|flags|eval" \
  | head -12
echo "#### acceptance: full with fa3, cudnn, fa2 $(date -u +%T)"
timeout -k 10 300 python3 -m workbench.cli check $K --suite full --anchors fa3,cudnn,fa2 \
  --json "$OUT/${card}_ladder_04_pingpong_full_dt4_v23_$day.json" > "$OUT/v23_full3.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/v23_full3.log" | grep -v "workbench-result" | tail -10
echo "#### done $(date -u +%T)"
