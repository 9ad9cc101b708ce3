#!/usr/bin/env bash
# cuobjdump and nvdisasm from PyPI (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm) into .tools/cuda/bin, for
# machines whose CUDA toolkit has nvcc/ptxas only: then `scripts/sass_counts.sh` reads SASS here, no GPU needed.
set -euo pipefail
dest=${1:-.tools/cuda}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 -m pip install -q --target "$tmp" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
mkdir -p "$dest/bin"
find "$tmp" -type f \( -name cuobjdump -o -name nvdisasm \) -exec cp {} "$dest/bin/" \;
chmod +x "$dest/bin/"*
"$dest/bin/cuobjdump" --version | tail -1
echo "PATH=$dest/bin:\$PATH bash scripts/sass_counts.sh kernels/attn_fwd/ladder/04_pingpong.cu \"\""
