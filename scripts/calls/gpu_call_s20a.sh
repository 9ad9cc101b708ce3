#!/usr/bin/env bash
# Session 20, call 1 (an H100: name kind nvidia-h100-x1): run 57's hang. The rung's d256 walk over tiles with no
# key (E_d256_q4097_k129_mqa_causal) hung on H100s 3 times of 3 (sessions 16, 18, 19), never on H200s.
# 1. the probe's own GPU test (a stub that hangs);
# 2. scripts/hang_probe.py on the d256 edge shapes with keyless tiles, each launch in a process of its own: the old
#    launch rule instrumented (EMPTY_SOLO=0 WATCHDOG=1: where every CTA stopped, which waits are stuck), the old
#    rule plain, the new default (EMPTY_SOLO 1: one tile per CTA there);
# 3. edge through `workbench check` with the default;
# (q013's timeline runs on the H200, in s20c.)
# Run as: CALL=scripts/calls/gpu_call_s20a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; E=kernels/attn_fwd/suites/edge.csv
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### the probe on its stub $(date -u +%T)"
timeout -k 10 200 python3 -m pytest -q -m gpu tests/test_gpu_hang_probe.py > "$OUT/probe_test.log" 2>&1
echo "rc $?"; tail -3 "$OUT/probe_test.log"
echo "#### hang_probe: d256 edge shapes, old rule with watchdog, old rule, new default $(date -u +%T)"
OUT="$OUT" timeout -k 10 300 python3 scripts/hang_probe.py --suite $E --launches 50 --timeout 10 \
  --only E_d256_q4097,E_d256_q2000,E_d256_q1000 \
  --kernels "$K:EMPTY_SOLO=0,WATCHDOG=1" "$K:EMPTY_SOLO=0" $K > "$OUT/hang_probe.log" 2>&1
echo "rc $?"; grep -vE "^    (mark|stuck) " "$OUT/hang_probe.log" | cut -c1-150 | head -60
grep -E "^    (mark|stuck)" "$OUT/hang_probe.log" | head -40
echo "#### edge through workbench check, the default $(date -u +%T)"
timeout -k 10 200 python3 -m workbench.cli check $K --suite edge --anchors fa3,cudnn,fa2 > "$OUT/edge_check.log" 2>&1
echo "rc $?"; grep -E "^(geomean_vs_fa3|all_correct|scenarios)|FAIL|failed" "$OUT/edge_check.log" | head -8
echo "#### done $(date -u +%T)"
