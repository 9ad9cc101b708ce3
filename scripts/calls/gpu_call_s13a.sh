#!/usr/bin/env bash
# Next session's first call (prepared in session 12): issue 23's acceptance command for v17 as written,
# `workbench check <best rung> --suite full --anchors fa3,cudnn,fa2`, its JSON kept for notebooks/03_kernel_ladder
# (workbench/ui/ladder.py reads docs/data/h200_ladder_04_pingpong_full_*.json); then issue 25's cost of the walls on
# the same kernel: `full` with the contained worker against WORKBENCH_SANDBOX=off, both warm
# (scripts/sandbox_overhead.sh without its warm-up: the first step warmed every cache).
# Run as: CALL=scripts/calls/gpu_call_s13a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; day=$(date -u +%F)
echo "#### acceptance: full with fa3, cudnn, fa2 $(date -u +%T)"
timeout 330 python3 -m workbench.cli check $K --suite full --anchors fa3,cudnn,fa2 \
  --json "$OUT/h200_ladder_04_pingpong_full_dt4_v17_$day.json" > "$OUT/v17_full3.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/v17_full3.log" | tail -12
echo "#### the walls' cost on full, warm $(date -u +%T)"
for way in off on; do
  env $( [ $way = off ] && echo WORKBENCH_SANDBOX=off ) timeout 120 python3 -m workbench.cli check $K --suite full \
    --anchors fa3 --json "$OUT/walls_$way.json" > "$OUT/walls_$way.log" 2>&1
  python3 - "$OUT/walls_$way.json" $way <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<4} wall {r['wall_s']:7.1f} s  x FA3 {r['geomeans']['overall']['fa3']:.4f}  "
      f"sandbox: {r.get('versions', {}).get('sandbox')}")
PY
done
echo "#### done $(date -u +%T)"
