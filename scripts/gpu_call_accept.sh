#!/usr/bin/env bash
# One rung version through the recorded campaign on full, issue 23's acceptance command as written (its JSON named by
# the card and VERSION), then edge through `workbench check`: the call every new default of 04_pingpong gets.
#   VERSION=v25 NOTE="v25: what changed (run N: its A/B)" bash scripts/gpu_call_accept.sh   (from a gpu_call_*.sh)
#   FIXTURE="tests/fixtures/NAME.csv ...": also those suites' correctness (no timing), the new rule's odd cases
#   KERNEL_PATH: another source than the rung; CAMPAIGN=0: the acceptance and edge only (a version the campaign
#   holds already, measured on another card); ACCEPT=0: no acceptance command (the campaign's full with FA3 and edge
#   only: a call squeezed by failed starts)
# Logs under $OUT; $OUT/h200-fa3-race.tgz is the campaign folder to unpack over data/campaigns/.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
: "${VERSION:?set VERSION, e.g. v25}"
[ "${CAMPAIGN:-1}" = 0 ] || : "${NOTE:?set NOTE, the one-line campaign message}"
K=${KERNEL_PATH:-kernels/attn_fwd/ladder/04_pingpong.cu}; day=$(date -u +%F)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "GPU: $gpu"
card=$(case "$gpu" in *H200*) echo h200;; *H100*) echo h100;; *) echo gpu;; esac)
if [ "${CAMPAIGN:-1}" != 0 ]; then
  echo "#### $VERSION through the campaign on full $(date -u +%T)"
  timeout -k 10 280 bash scripts/gpu_campaign_check.sh $K "$NOTE" > "$OUT/campaign.log" 2>&1
  echo "rc $?"; grep -vE "^\[" "$OUT/campaign.log" | grep -E "scenarios|geomean_vs_fa3|stop|question|q0|flags|eval" \
    | head -12
fi
if [ "${ACCEPT:-1}" != 0 ]; then
  echo "#### acceptance: full with fa3, cudnn, fa2 $(date -u +%T)"
  timeout -k 10 200 python3 -m workbench.cli check $K --suite full --anchors fa3,cudnn,fa2 \
    --json "$OUT/${card}_ladder_04_pingpong_full_dt4_${VERSION}_$day.json" > "$OUT/${VERSION}_full3.log" 2>&1
  echo "rc $?"; grep -vE "^\[" "$OUT/${VERSION}_full3.log" | grep -v "workbench-result" | tail -10
fi
echo "#### edge $(date -u +%T)"
timeout -k 10 150 python3 -m workbench.cli check $K --suite edge --anchors fa3 > "$OUT/${VERSION}_edge.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/${VERSION}_edge.log" | grep -E "scenarios|geomean_vs_fa3|FAIL|fail" | head -6
for fixture in ${FIXTURE:-}; do   # space-separated suite CSVs
  name=$(basename "$fixture" .csv)
  echo "#### $fixture: correctness beyond full and edge $(date -u +%T)"
  OUT="$OUT/fixture_$name" timeout -k 10 150 python3 scripts/ladder_bench.py --anchors "" --seeds 0 --no-scaled \
    --no-time --suite "$fixture" --kernels $K > "$OUT/fixture_$name.log" 2>&1
  echo "rc $?"; grep -E "FAIL|rror" "$OUT/fixture_$name.log" | head -5   # (a passing shape's row names no status)
done
