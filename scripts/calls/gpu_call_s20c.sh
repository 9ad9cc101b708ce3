#!/usr/bin/env bash
# Session 20, an H200 (s20b's campaign step skipped: v22 is in the campaign from run 56): issue 23's acceptance
# command as written for v22,
# `workbench check <best rung> --suite full --anchors fa3,cudnn,fa2`, its JSON kept for notebooks/03_kernel_ladder
# (workbench/ui/ladder.py reads docs/data/h200_ladder_04_pingpong_full_*.json). The `wrong/` kernels are a call of
# their own (`bash scripts/gpu_run.sh wrong`, ~290 s): both would pass the 600 s a call may run. After it, q013's
# measurement (moved here from s20a to time it on the card of the bar): v22's per-tile timeline on A_d128_c1_s8k
# (DYN_CHUNKS) and B_h32x8_d128_c1_s16k (DYN_LONG): is the work of those ragged grids balanced?
# Run as: CALL=scripts/calls/gpu_call_s20c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; day=$(date -u +%F)
# the JSON is named by the card it ran on (session 20: a call naming nvidia-h200 ran on an H100)
card=$(case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H200*) echo h200;; *H100*) echo h100;;
  *) echo gpu;; esac)
echo "#### acceptance: full with fa3, cudnn, fa2 $(date -u +%T)"
timeout -k 10 330 python3 -m workbench.cli check $K --suite full --anchors fa3,cudnn,fa2 \
  --json "$OUT/${card}_ladder_04_pingpong_full_dt4_v22_$day.json" > "$OUT/v22_full3.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/v22_full3.log" | tail -12
echo "#### edge: v22 through workbench check $(date -u +%T)"
timeout -k 10 170 python3 -m workbench.cli check $K --suite edge --anchors fa3,cudnn,fa2 > "$OUT/edge_check.log" 2>&1
echo "rc $?"; grep -E "^(geomean_vs|all_correct|scenarios|flags)|FAIL|failed" "$OUT/edge_check.log" | head -12
echo "#### timeline: v22 on two ragged shapes (q013) $(date -u +%T)"
WB_CACHE_RESTORED=1 TL_TIMEOUT=150 TL_SHAPES="A_d128_c1_s8k B_h32x8_d128_c1_s16k" timeout -k 10 200 \
  bash scripts/gpu_run.sh timeline 2>&1 | grep -vE "^\[" | head -40
echo "#### done $(date -u +%T)"
