#!/usr/bin/env bash
# (Run 19 of docs/kernel_ladder.md. The CLUSTER knob was deleted after it; rerun from commit 1f6267b.)
# Session 6, call 1: 04's CLUSTER=2 first run (scripts/gpu_call_cluster.sh), then CAUSAL_ORDER 1 against the v8
# default 2 on the 72 causal shapes of full (one tool, same process). Predictions: docs/gpu_plan.md S3/S3b.
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
bash scripts/gpu_call_cluster.sh
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### CAUSAL_ORDER A/B $(date -u +%T)"; mkdir -p $OUT/co
OUT=$OUT/co timeout 170 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 8 --cap 0.15 \
  --suite kernels/attn_fwd/suites/full.csv --only _c1 --kernels $K $K:CAUSAL_ORDER=1 > $OUT/co/log.txt 2>&1
grep -E "FAIL|# built" $OUT/co/log.txt | head; sed -n '/^# geomean/,$p' $OUT/co/log.txt
echo "#### done $(date -u +%T)"
