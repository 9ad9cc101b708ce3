#!/usr/bin/env bash
# The issue-3 acceptance campaign on the H200, in device calls of under 10 minutes each, resumed between calls.
#   first call : bash scripts/gpu_campaign.sh start  ID 8     # offline agent, original.cu, dev26, bank mode, 8 min
#   next calls : bash scripts/gpu_campaign.sh resume ID 16    # the wall budget is cumulative: 16 = 8 more minutes;
#                                                              # carry .gpucache/ID.tgz (from the last $OUT)
# Each call leaves $OUT/ID.tgz (the campaign folder) and $OUT/wbcache.tgz (original/anchor timings): copy both to
# .gpucache/ here and name .gpucache (and .whl) in `carry` for the next call. Afterwards, on the CPU machine:
#   tar -xzf .gpucache/ID.tgz -C campaigns && workbench import campaigns/ID -o data/traces --arm bank
set -uo pipefail
mode=$1 id=$2 minutes=${3:-8}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" campaigns /tmp/wbcache
export PYTHONUNBUFFERED=1 WORKBENCH_CACHE=/tmp/wbcache
source scripts/gpu_wheels.sh || exit 2
[ -f .gpucache/wbcache.tgz ] && [ -z "${WB_CACHE_RESTORED:-}" ] && tar -xzf .gpucache/wbcache.tgz -C /tmp/wbcache
[ -f ".gpucache/$id.tgz" ] && tar -xzf ".gpucache/$id.tgz" -C campaigns
save() { tar -czf "$OUT/$id.tgz" -C campaigns "$id"; tar -czf "$OUT/wbcache.tgz" -C /tmp/wbcache --exclude=build .; }
trap save EXIT
common=(--budget "wall=${minutes}m" --root campaigns)
if [ "$mode" = start ]; then
  python3 -m workbench.cli campaign --kernel kernels/attn_fwd/original.cu --suite dev26 --mode bank --agent offline \
    --stop "all_correct and geomean_vs_fa3 >= 1.0" --id "$id" "${common[@]}" 2>&1 | tee "$OUT/campaign_$id.log"
else
  python3 -m workbench.cli campaign --resume "$id" "${common[@]}" 2>&1 | tee -a "$OUT/campaign_$id.log"
fi
