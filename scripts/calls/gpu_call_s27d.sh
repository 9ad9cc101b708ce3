#!/usr/bin/env bash
# Session 27, right after gpu_call_s27b.sh on the same warm machine (~7 min): v28 = v27 with run 99's winners as
# defaults (.gpucache/run99_winners.txt, NAME=VALUE lines the knob rule adopted) through the campaign, the acceptance
# command and edge, with the 112-key fixture (scripts/gpu_call_accept.sh); no winners (or no file): v27 instead
# (gpu_call_s26a.sh). The patched rung comes back as $OUT/04_pingpong_v28.cu: commit those exact bytes as v28.
# Prediction (run 99's): +0.5-2 % on the 1k-4k causal shapes, the rest within the ~0.5 % spread; 182/182, edge 30/30.
# On an H200 the known-bad corpus after it in the time left (CALL_BUDGET_S, default 570 s), as gpu_call_s26a.sh does.
# Run as: CALL=scripts/calls/gpu_call_s27d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; start=$(date +%s)
K=kernels/attn_fwd/ladder/04_pingpong.cu
winners=$(grep -E '^[A-Z0-9_]+=[0-9]+$' .gpucache/run99_winners.txt 2>/dev/null | tr '\n' ' ' | sed 's/ $//')
if [ -z "$winners" ]; then
  echo "#### no run-99 winners on this machine: v27's acceptance"; exec bash scripts/calls/gpu_call_s26a.sh
fi
for w in $winners; do   # the knob's #define and its @knob default, in the knobs section only
  name=${w%=*}; value=${w#*=}
  sed -i -E "s/^#define $name [0-9]+( +\/\/ @knob $name )[0-9]+/#define $name $value\1$value/" $K
  grep -q "^#define $name $value " $K || { echo "could not set $name=$value in $K" >&2; exit 2; }
done
cp $K "$OUT/04_pingpong_v28.cu"; echo "#### v28 = v27 + $winners"
VERSION=v28 NOTE="v28: $winners as defaults (run 99's knob A/B on A and B_h32x8_d128)" \
  FIXTURE=tests/fixtures/bn112_shapes.csv OUT="$OUT" bash scripts/gpu_call_accept.sh
left=$(( ${CALL_BUDGET_S:-570} - ($(date +%s) - start) ))
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) echo "#### the known-bad corpus in $left s $(date -u +%T)"
          if [ "$left" -ge 150 ]; then WB_CACHE_RESTORED=1 WRONG_TIMEOUT=$left bash scripts/gpu_run.sh wrong; fi ;;
esac
echo "#### done $(date -u +%T)"
