# Sourced by scripts/prep_*_wheels.sh: fetch wheels for the GPU machine's python (CPython 3.12, manylinux x86-64,
# no package registry there) into one folder of .whl/, which git never sees.
#   download_wheels .whl/NAME pkg==ver ...
PY=${PYTHON:-.venv/bin/python}
WHEEL_PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
                 --platform manylinux2014_x86_64 --platform manylinux1_x86_64)

download_wheels() {
  local out=$1; shift
  git check-ignore -q .whl/x || echo /.whl/ >>.git/info/exclude     # wheels are never committed
  mkdir -p "$out"
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      "${WHEEL_PLATFORMS[@]}" -d "$out" "$@"
  ls "$out"/*.whl | wc -l | xargs echo "wheels in $out:"
  du -sh "$out"
}
