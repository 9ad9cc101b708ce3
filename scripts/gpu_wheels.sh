# Sourced by the GPU scripts: install the carried wheels (.whl/*.whl, and Ray from .whl/ray when carried) into
# /tmp/site once per machine, then put it and the working tree on PYTHONPATH. Once only, because two jobs that run
# side by side on a 2-GPU machine must not re-install a package while the other is importing it.
SITE=${SITE:-/tmp/site}
_wheels=()
ls .whl/*.whl >/dev/null 2>&1 && _wheels+=(.whl/*.whl)
ls .whl/ray/*.whl >/dev/null 2>&1 && _wheels+=(.whl/ray/*.whl)
if [ ${#_wheels[@]} -gt 0 ] && [ ! -f "$SITE/.installed" ]; then
  mkdir -p "$SITE"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
    "${_wheels[@]}" || { echo "wheel install into $SITE failed"; return 2 2>/dev/null || exit 2; }
  for t in .whl/ray/ray-*.tar.xz; do [ -f "$t" ] && tar -xJf "$t" -C "$SITE"; done
  touch "$SITE/.installed"
fi
export PYTHONPATH=$PWD:$SITE
