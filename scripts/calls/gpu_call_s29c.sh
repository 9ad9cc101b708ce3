#!/usr/bin/env bash
# Session 29, right after gpu_call_s29b.sh on the same warm machine (~7 min): v30 = v29 with run 107's winners as
# defaults (.gpucache/run107_winners.txt, NAME=VALUE lines the knob rule adopted, or WINNERS="NAME=V ...") through
# the campaign, the acceptance command, edge, gqa_short and the 112-key fixture (scripts/gpu_call_accept.sh). No
# winners: nothing to do. The patched rung comes back as $OUT/04_pingpong_v30.cu: commit those exact bytes as v30.
# Prediction: run 107's gain on its shapes, the rest within the ~0.5 % spread; 182/182, edge 30/30.
# Run as: CALL=scripts/calls/gpu_call_s29c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
K=kernels/attn_fwd/ladder/04_pingpong.cu
winners=${WINNERS:-$(grep -E '^[A-Z0-9_]+=[0-9]+$' .gpucache/run107_winners.txt 2>/dev/null | tr '\n' ' ')}
winners=$(echo $winners)
if [ -z "$winners" ]; then echo "#### no run-107 winners on this machine: nothing to do"; exit 0; fi
for w in $winners; do   # the knob's #define and its @knob default, in the knobs section only
  name=${w%=*}; value=${w#*=}
  sed -i -E "s/^#define $name [0-9]+( +\/\/ @knob $name )[0-9]+/#define $name $value\1$value/" $K
  grep -q "^#define $name $value " $K || { echo "could not set $name=$value in $K" >&2; exit 2; }
done
cp $K "$OUT/04_pingpong_v30.cu"; echo "#### v30 = v29 + $winners"
VERSION=v30 NOTE="v30: $winners as defaults (runs 107 and 109: one-knob A/Bs)" \
  FIXTURE="kernels/attn_fwd/suites/gqa_short.csv tests/fixtures/bn112_shapes.csv" OUT="$OUT" \
  bash scripts/gpu_call_accept.sh
echo "#### done $(date -u +%T)"
