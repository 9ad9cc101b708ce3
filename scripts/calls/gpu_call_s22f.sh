#!/usr/bin/env bash
# Session 22, call 6 (either card; an H100 gives H100 figures and issue 23's H200 bar stays open). v24 (PAIR_TAIL 2,
# run 73) through the recorded campaign on full, issue 23's acceptance command as written (its JSON named by the
# card), then edge through `workbench check` (PAIR_TAIL reaches edge's GQA causal grids). Prediction: over v23's
# campaign row (1.044 on this card kind) +0.1-0.3 % on full; B +0.3-0.6 % (17 of its 72 shapes +2.1 % in run 73);
# 182/182 and edge all passing.
# Run as: CALL=scripts/calls/gpu_call_s22f.sh bash scripts/gpu_run.sh call   (carry .whl/fa3); then unpack
# $OUT/h200-fa3-race.tgz over data/campaigns/ and answer any question the policy served before the next edit.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; day=$(date -u +%F)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
card=$(case "$gpu" in *H200*) echo h200;; *H100*) echo h100;; *) echo gpu;; esac)
echo "#### v24 through the campaign on full $(date -u +%T)"
timeout -k 10 280 bash scripts/gpu_campaign_check.sh $K \
  "v24: PAIR_TAIL 2 - GQA causal pair grids (and the GQA grids up to 32 blocks the static walk took) from the
counter in head-major pair order with an LPT tail (run 73: its 17 B shapes +2.1 % over two copies)" \
  > "$OUT/campaign.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/campaign.log" | grep -E "scenarios|geomean_vs_fa3|stop|question|q0|flags|eval" \
  | head -12
echo "#### acceptance: full with fa3, cudnn, fa2 $(date -u +%T)"
timeout -k 10 200 python3 -m workbench.cli check $K --suite full --anchors fa3,cudnn,fa2 \
  --json "$OUT/${card}_ladder_04_pingpong_full_dt4_v24_$day.json" > "$OUT/v24_full3.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/v24_full3.log" | grep -v "workbench-result" | tail -10
echo "#### edge $(date -u +%T)"
timeout -k 10 150 python3 -m workbench.cli check $K --suite edge --anchors fa3 > "$OUT/v24_edge.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/v24_edge.log" | grep -E "scenarios|geomean_vs_fa3|FAIL|fail" | head -6
echo "#### done $(date -u +%T)"
