#!/usr/bin/env bash
# Session 11, fourth call: issue 25's ncu hang behind the walls (scripts/ncu_contained_diag.py): ncu --version, ncu on
# launch_one with the original kernel contained and with WORKBENCH_SANDBOX=off, and on the hostile probe with and
# without its fork, each under run_contained for 40 s, the processes still running written down at 15 s.
# Run as: CALL=scripts/calls/gpu_call_s11d.sh bash scripts/gpu_run.sh call
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
echo "#### ncu contained $(date -u +%T)"
timeout 260 python3 scripts/ncu_contained_diag.py --out "$OUT/ncu_contained.json" --limit 40 --sample 15 \
  ${NCU_CASES:+--cases $NCU_CASES}
echo "rc $?"
python3 - "$OUT/ncu_contained.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    print("==", r["case"], "notices:", r.get("notices"))
    print("   stderr:", (r.get("stderr_tail") or "")[-600:].replace("\n", " | "))
    for p in r["left_at_sample"][:6]:
        print("   left:", p["pid"], p["name"], p["state"], "wchan", p["wchan"], "syscall", p["syscall"][:40],
              "stack", " / ".join(p["stack"][:3])[:200])
PY
echo "#### done $(date -u +%T)"
