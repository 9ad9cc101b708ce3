#!/usr/bin/env bash
# Session 12, fifth call: issue 23's milestone-1 items other than the full-suite figure, for v17: every edge scenario
# through `workbench check`, then every wrong/ kernel rejected with its reason (tests/test_gpu.py -k wrong).
# Run as: CALL=scripts/calls/gpu_call_s12e.sh bash scripts/gpu_run.sh call   (carry .whl/fa3 and .gpucache)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### edge through workbench check $(date -u +%T)"
timeout 100 python3 -m workbench.cli check $K --suite edge --anchors fa3 --json "$OUT/v17_edge.json" --traces '' \
  > "$OUT/v17_edge.log" 2>&1
echo "rc $?"; grep -vE "^\[" "$OUT/v17_edge.log" | tail -6
echo "#### wrong kernels $(date -u +%T)"
timeout 175 python3 -m pytest -m gpu tests/test_gpu.py -k wrong -n 8 -rA -q -p no:cacheprovider -W ignore 2>&1 \
  | tee "$OUT/pytest_wrong.log" | grep -E "^(PASSED|FAILED|ERROR) |passed|failed" \
  | sed 's/tests\/test_gpu.py::test_wrong_kernel_is_rejected_with_its_reason//'
( cd "$OUT" && ls wrong_*.json >/dev/null 2>&1 && tar -czf wrong_json.tgz wrong_*.json && rm -f wrong_*.json )
echo "#### done $(date -u +%T)"
