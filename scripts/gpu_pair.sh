#!/usr/bin/env bash
# Two jobs side by side on the 2-GPU H200 machine (device kind nvidia-h200-x2), one pinned to each GPU, so a
# campaign's long wall time shares a device call with other work instead of holding a machine by itself:
#   bash scripts/gpu_pair.sh "start c-offline-1 9"   evolve        # campaign on GPU 0, evolution on GPU 1
#   bash scripts/gpu_pair.sh "resume c-offline-1 17" "rung02 bench" # campaign on GPU 0, gpu_run.sh stages on GPU 1
# GPU 0: scripts/gpu_campaign.sh with the first argument; its files land in $OUT as usual.
# GPU 1: `evolve` (scripts/gpu_evolve_acceptance.sh evolve over a LocalPool of that one GPU) or scripts/gpu_run.sh
#        stages; its files land in $OUT/gpu1/. Stages share the campaign's timing cache (merged on write, builds
#        replaced atomically); the evolution keeps its own. Timings on one GPU are not disturbed by the other
#        GPU's work (separate devices, 32 cores).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/gpu1"
export PYTHONUNBUFFERED=1
source scripts/gpu_wheels.sh || exit 2      # once, before the two jobs start importing from it
nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu --format=csv,noheader
campaign=($1); second=$2
# the carried timing cache is unpacked once here, not by both jobs at the same moment
mkdir -p /tmp/wbcache; [ -f .gpucache/wbcache.tgz ] && tar -xzf .gpucache/wbcache.tgz -C /tmp/wbcache
export WB_CACHE_RESTORED=1
( export CUDA_VISIBLE_DEVICES=0; bash scripts/gpu_campaign.sh "${campaign[@]}" > /tmp/gpu0.log 2>&1 ) &
gpu0=$!
(
  export CUDA_VISIBLE_DEVICES=1 OUT=$OUT/gpu1
  if [ "$second" = evolve ]; then
    WORKBENCH_CACHE=/tmp/wbcache_gpu1 POOL=local bash scripts/gpu_evolve_acceptance.sh evolve
  else
    bash scripts/gpu_run.sh $second
    rm -f "$OUT/wbcache.tgz"                 # the campaign's cache is the one carried between calls
  fi
) > /tmp/gpu1.log 2>&1 &
gpu1=$!
wait $gpu1; echo "== GPU 1 job ($second) exit $?"; tail -25 /tmp/gpu1.log
wait $gpu0; echo "== GPU 0 campaign (${campaign[*]}) exit $?"; tail -40 /tmp/gpu0.log
