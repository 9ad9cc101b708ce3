#!/usr/bin/env bash
# Ray for the GPU machine (Python 3.12, x86-64, no package registry there), for scripts/gpu_evolve_acceptance.sh.
#
#   scripts/prep_ray_wheels.sh            # writes .whl/ray/ (ignored by git; a few minutes: xz on 2 cores)
#
# Ray's wheel (~79 MB) is over what travels to the GPU machine in one call (64 MiB with the working tree), so it
# goes unpacked and repacked as tar.xz (the way FA4's libraries travel too), without the parts
# that evaluation never imports: Java jars, RLlib, Serve, Tune, Train, LLM (~32 MB left). jsonschema and its
# needs are the only Ray requirements missing from the GPU image; they travel as wheels. On the GPU machine:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/ray/*.whl
#   tar -xJf .whl/ray/ray-*.tar.xz -C /tmp/site; export PYTHONPATH=$PWD:/tmp/site
set -euo pipefail
cd "$(dirname "$0")/.."
RAY_VERSION=${RAY_VERSION:-2.60.0}
PY=${PYTHON:-.venv/bin/python}
OUT=.whl/ray
PRUNE=(jars rllib serve tune train llm)
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
DOWNLOAD=("$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
          "${PLATFORMS[@]}")

git check-ignore -q .whl/x || echo /.whl/ >>.git/info/exclude     # wheels are never committed
mkdir -p "$OUT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "downloading ray==$RAY_VERSION (cp312, manylinux x86_64) and jsonschema's wheels"
"${DOWNLOAD[@]}" -d "$tmp" "ray==$RAY_VERSION"
"${DOWNLOAD[@]}" -d "$OUT" "jsonschema==4.26.0" "jsonschema-specifications==2025.9.1" "referencing==0.37.0" \
    "rpds-py==2026.9.1"

echo "repacking ray as tar.xz without: ${PRUNE[*]}"
mkdir "$tmp/site"
unzip -q "$tmp"/ray-"$RAY_VERSION"-*.whl -d "$tmp/site"          # unzip keeps the binaries' execute bits
for part in "${PRUNE[@]}"; do rm -rf "$tmp/site/ray/$part"; done
tar -C "$tmp/site" -cf - . | xz -T2 -6 >"$OUT/ray-$RAY_VERSION-cp312-manylinux2014_x86_64.tar.xz"

du -ah "$OUT" | sort -h
total=$(du -sm "$OUT" | cut -f1)
tree=$(git ls-files -z | du -cm --files0-from=- 2>/dev/null | tail -1 | cut -f1)
echo "ray payload ${total} MiB + tracked tree ~${tree} MiB (limit 64 MiB per device call, with everything carried)"
if [ $((total + tree)) -gt 60 ]; then
  echo "warning: little room left under 64 MiB; carry only .whl/ray and what the command needs" >&2
fi
