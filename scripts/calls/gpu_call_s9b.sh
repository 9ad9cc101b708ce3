#!/usr/bin/env bash
# Session 9, call 3: why session 9's first call left an empty log for the two ncu wall tests (issue 25), with
# pytest verbose, a stack dump after 60 s and ncu's own process list; then `ray1` (issue 28's one-GPU item).
# Run as: CALL=scripts/calls/gpu_call_s9b.sh bash scripts/gpu_run.sh call      (carry .whl/ray and .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
echo "#### 1. ncu behind the walls, verbose $(date -u +%T)"
( sleep 75; ps -eo pid,ppid,pgid,etimes,comm,args --sort=start_time | tail -25 > "$OUT/ps_at_75s.txt" ) &
timeout -k 5 "${NCU_TIMEOUT:-150}" python3 -X faulthandler -m pytest -m gpu tests/test_security_gpu.py -k ncu -v -s \
  -rA -p no:cacheprovider -o faulthandler_timeout=60 -W ignore --tb=short > "$OUT/pytest_ncu_walls.log" 2>&1
echo "ncu walls rc $? $(date -u +%T)"; wait
grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed|^E |Timeout|File " "$OUT/pytest_ncu_walls.log" | head -30
echo "#### 2. ray1 $(date -u +%T)"
RAY1_TIMEOUT=${RAY1_TIMEOUT:-330} bash scripts/gpu_run.sh ray1
echo "#### done $(date -u +%T)"
