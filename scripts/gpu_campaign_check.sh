#!/usr/bin/env bash
# One evaluation of the workbench's own headline campaign on the H200: the kernel race against FlashAttention-3,
# recorded through `workbench check --campaign` (docs/kernel_ladder.md "Campaign log"). Run on the GPU machine:
#   bash scripts/gpu_campaign_check.sh KERNEL.cu "what changed and why (the notes)" ["a claim, if any"]
# The campaign lives in data/campaigns/h200-fa3-race/ (made on its first call) and comes back as
# $OUT/h200-fa3-race.tgz: unpack it over data/campaigns/ here. WORKBENCH_CACHE (the timing cache) is saved as
# $OUT/wbcache.tgz by the caller's gpu_run.sh when run through it; standalone, the cache stays on the machine.
set -uo pipefail
kernel=${1:?kernel .cu}; notes=${2:-}; claim=${3:-}
id=${CAMPAIGN_ID:-h200-fa3-race}; root=data/campaigns; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
[ -f "$kernel" ] || { echo "gpu_campaign_check: no kernel $kernel" >&2; exit 2; }
wb() { python3 -m workbench.cli "$@"; }
if [ ! -f "$root/$id/config.json" ]; then
  # the first call makes the campaign from this kernel and judges it
  wb check "$root/$id/kernel.cu" --campaign "$id" --root "$root" --new --kernel "$kernel" --suite full \
    --mode hybrid --stop "all_correct and geomean_vs_fa3 >= 1.16" --notes "$notes" 2>&1 | tee "$OUT/campaign_check.log"
else
  cp "$kernel" "$root/$id/kernel.cu"
  wb check "$root/$id/kernel.cu" --campaign "$id" --root "$root" --notes "$notes" ${claim:+--claim "$claim"} 2>&1 \
    | tee "$OUT/campaign_check.log"
fi
rc=${PIPESTATUS[0]}
tar -czf "$OUT/$id.tgz" -C "$root" "$id"
echo "campaign check exit $rc; the campaign folder is in \$OUT/$id.tgz"
exit "$rc"
