#!/usr/bin/env bash
# SASS instruction counts per kernel entry of a ladder rung built with each set of -D overrides. Needs cuobjdump
# and nvdisasm: on the GPU machine, or here after `bash scripts/prep_sass_tools.sh` (PATH=.tools/cuda/bin:$PATH).
# Usage: bash scripts/sass_counts.sh kernels/attn_fwd/ladder/04_pingpong.cu "" "-DUNIFORM_WG=1"
set -uo pipefail
src=$1; shift
for defs in "$@"; do
  so=$(mktemp --suffix=.so)
  # shellcheck disable=SC2086
  nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC $defs "$src" -o "$so" || continue
  echo "== ${defs:-(defaults)}"
  cuobjdump --dump-sass "$so" | awk '
    /Function :/ { name = $3; sub(/.*CfgIL/, "", name); sub(/EEEEv.*/, "", name) }
    /^ +\/\*[0-9a-f]+\*\// && name ~ /^i/ {
      n[name]++; op = $2; sub(/^@!?U?P[0-9T]+$/, "", op); if (op == "") op = $3; split(op, a, "."); o = a[1]
      if (o == "R2UR" || o == "HGMMA" || o == "MUFU" || o == "FMNMX" || o == "SYNCS" || o == "BAR" || o == "FSEL" || o == "ISETP") c[name, o]++ }
    END { for (k in n) printf "%-22s instr %5d  R2UR %4d  HGMMA %3d  MUFU %4d  FMNMX %4d  FSEL %4d  ISETP %4d  SYNCS %3d  BAR %3d\n",
          k, n[k], c[k,"R2UR"], c[k,"HGMMA"], c[k,"MUFU"], c[k,"FMNMX"], c[k,"FSEL"], c[k,"ISETP"], c[k,"SYNCS"], c[k,"BAR"] }'
  rm -f "$so"
done
