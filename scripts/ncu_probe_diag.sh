#!/usr/bin/env bash
# Issue 25's ncu hang, taken apart on the GPU machine: tests/test_security_gpu.py's hostile probe under Nsight
# Compute with the ncu_profile tool's command line, uncontained, in variants: as it is, without its fork, without
# CUDA in its constructor, and neither. Each gets `timeout NCU_DIAG_S` (45); the line per variant says its exit,
# its wall time, whether ncu printed a profile, and which processes of it were left.
#   bash scripts/ncu_probe_diag.sh        (on the GPU machine; $OUT/ncu_diag/ gets each variant's output)
set -uo pipefail
OUT=${OUT:-/tmp/out}/ncu_diag; mkdir -p "$OUT"; work=$(mktemp -d)
limit=${NCU_DIAG_S:-45}
python3 - "$work/probe.cu" <<'PY'
import ast, pathlib, sys
tree = ast.parse(pathlib.Path("tests/test_security_gpu.py").read_text())
src = next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "PROBE")
src = src.replace("  if (fork() == 0) {", "#ifndef NO_FORK\n  if (fork() == 0) {", 1)
src = src.replace("    _exit(0);\n  }\n", "    _exit(0);\n  }\n#endif\n", 1)
src = src.replace("cuda_works(),", "CTOR_CUDA(),", 1)
src = src.replace("__attribute__((constructor))",
                  "#ifdef NO_CTOR_CUDA\n#define CTOR_CUDA() \"[deferred]\"\n#else\n#define CTOR_CUDA() cuda_works()\n"
                  "#endif\n__attribute__((constructor))", 1)
pathlib.Path(sys.argv[1]).write_text(src)
PY
ncu=$(command -v ncu) || { echo "ncu_probe_diag: no ncu on PATH"; exit 2; }
export WORKBENCH_PROBE_NAME=wbncudiag WORKBENCH_PROBE_DIR=$work WORKBENCH_PROBE_SOCK=$work/none.sock
export WORKBENCH_PROBE_PID=$$
for variant in plain NO_FORK NO_CTOR_CUDA "NO_FORK NO_CTOR_CUDA"; do
  tag=${variant// /+}; defs=()
  [ "$variant" != plain ] && for d in $variant; do defs+=("-D$d"); done
  nvcc -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a "${defs[@]}" -o "$work/$tag.so" \
    "$work/probe.cu" || { echo "$tag: build failed"; continue; }
  argv=$(python3 -c "
import shutil, shlex, sys
from workbench.agent.tools import NCU_METRICS, ncu_argv
print(shlex.join(a.replace('{private}/lib/kernel.so', sys.argv[1]) for a in
                 ncu_argv(shutil.which('ncu'), list(NCU_METRICS), 'smoke', 'smoke_basic')))" "$work/$tag.so")
  start=$(date +%s.%N)
  timeout -k 5 "$limit" bash -c "$argv" > "$OUT/$tag.out" 2> "$OUT/$tag.err"; rc=$?
  wall=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
  prof=$(grep -c gpu__time_duration "$OUT/$tag.out")
  left=$( (pgrep -a wbncudiag; pgrep -af "launch_one|bin/ncu") | grep -v pgrep | cut -c1-120 | tr "\n" ";")
  echo "$tag: rc $rc, ${wall} s, profile lines $prof, probe: $(grep -o 'cuda=\[[^]]*\]' "$OUT/$tag.err" | head -1);" \
    "left: ${left:-nothing}"
  pkill -9 wbncudiag 2>/dev/null; pkill -9 -f "launch_one --so $work" 2>/dev/null; sleep 1
done
rm -rf "$work"
