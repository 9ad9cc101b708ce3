#!/usr/bin/env bash
# What the evaluation sandbox costs: the `full` suite's harness wall time with the contained worker (the default)
# and with WORKBENCH_SANDBOX=off, after one warm-up run that fills the build and timing caches.
#   bash scripts/sandbox_overhead.sh            # on the GPU machine, as root (about 3 full-suite runs)
#   KERNEL=kernels/attn_fwd/ladder/03_wgmma.cu SUITE=dev26 bash scripts/sandbox_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
KERNEL=${KERNEL:-kernels/attn_fwd/original.cu}
SUITE=${SUITE:-full}
OUT=${OUT:-.cache/sandbox_overhead}
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python )}
mkdir -p "$OUT"
run() {   # run NAME [ENV...]: one `workbench check`, its result JSON in $OUT/NAME.json
  local name=$1; shift
  env "$@" "$PY" -m workbench.cli check "$KERNEL" --suite "$SUITE" --anchors fa3 --json "$OUT/$name.json" \
      > "$OUT/$name.log" 2>&1 || true        # exit 3 (stop predicate not met) is a normal outcome here
  "$PY" - "$OUT/$name.json" "$name" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<10} wall {r['wall_s']:8.1f} s  status {r['status']}  "
      f"sandbox: {r.get('versions', {}).get('sandbox')}")
PYEOF
}
run warmup
run off WORKBENCH_SANDBOX=off
run on
"$PY" - "$OUT" <<'PYEOF'
import json, sys
off = json.load(open(f"{sys.argv[1]}/off.json"))["wall_s"]
on = json.load(open(f"{sys.argv[1]}/on.json"))["wall_s"]
change = 100 * (on - off) / off
print(f"contained vs unconfined: {on:.1f} s vs {off:.1f} s = {change:+.1f} % "
      f"({'PASS' if abs(change) < 5 else 'FAIL'}: < 5 %)")
PYEOF
