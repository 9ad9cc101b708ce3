#!/usr/bin/env bash
# FA3's wheel (a 27 MiB zip) repacked as tar.xz (~10 MiB), for device calls that carry Ray too: the working tree
# (~15 MiB) + .whl/ray (30 MiB, scripts/prep_ray_wheels.sh) + the FA3 wheel as is would be over the 64 MiB a call
# may carry; with .whl/fa3 they are ~55 MiB. The wheel holds only importable files (no .data), so unpacking it
# into the site folder is its install; scripts/gpu_wheels.sh unpacks every .whl/*/*.tar.xz there.
#   scripts/prep_fa3_xz.sh [WHEEL]      # default .whl/fa3_fwd-*.whl; writes .whl/fa3/ (ignored by git)
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=${1:-$(ls .whl/fa3_fwd-*.whl 2>/dev/null | head -1 || true)}
if [ -z "$wheel" ] || [ ! -f "$wheel" ]; then
  echo "prep_fa3_xz: no FA3 wheel ('${1:-.whl/fa3_fwd-*.whl}'); name it: scripts/prep_fa3_xz.sh PATH.whl" >&2
  exit 2
fi
git check-ignore -q .whl/x || { echo "prep_fa3_xz: .whl/ is not ignored by git here; add /.whl/ to .gitignore" >&2
                                exit 2; }
out=.whl/fa3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unzip -q "$wheel" -d "$tmp/site"
mkdir -p "$out"
rm -f "$out"/*.tar.xz
tar -C "$tmp/site" -cf - . | xz -T2 -6 >"$out/$(basename "$wheel" .whl).tar.xz"
du -h "$out"/*
