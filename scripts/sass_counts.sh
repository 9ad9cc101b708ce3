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
  sass=$(mktemp --suffix=.sass)
  cuobjdump --dump-sass "$so" > "$sass" && python3 "$(dirname "$0")/sass_loop.py" --counts "$sass" attn_wgmma_kernel
  rm -f "$sass"
  rm -f "$so"
done
