# Sourced by the GPU scripts: install the carried wheels (.whl/*.whl, .whl/mcp/*.whl for `workbench mcp`, .whl/nb/*.whl
# for running a notebook (scripts/prep_notebook_wheels.sh), and Ray from
# .whl/ray when carried) and unpack the carried tarballs (.whl/*/*.tar.xz: Ray's, FA3's from scripts/prep_fa3_xz.sh)
# into /tmp/site once per machine and wheel set, then put it and the working tree on
# PYTHONPATH. Once only, because two jobs that run side by side on a 2-GPU machine must not re-install a package
# while the other is importing it. A wheel carried in two sets (jsonschema: Ray's and mcp's) is installed once.
SITE=${SITE:-/tmp/site}
_wheels=()
declare -A _seen=()
for _w in .whl/*.whl .whl/mcp/*.whl .whl/nb/*.whl .whl/ray/*.whl; do
  [ -f "$_w" ] || continue
  _name=$(basename "$_w")
  [ -n "${_seen[$_name]:-}" ] && continue
  _seen[$_name]=1
  _wheels+=("$_w")
done
_tars=()
for _t in .whl/*/*.tar.xz; do [ -f "$_t" ] && _tars+=("$_t"); done
_marker="$SITE/.installed-$(printf '%s\n' "${_wheels[@]}" "${_tars[@]}" | xargs -r -n1 basename | sort | md5sum \
  | cut -c1-12)"
if [ $((${#_wheels[@]} + ${#_tars[@]})) -gt 0 ] && [ ! -f "$_marker" ]; then
  mkdir -p "$SITE"
  if [ ${#_wheels[@]} -gt 0 ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
      "${_wheels[@]}" || { echo "wheel install into $SITE failed"; return 2 2>/dev/null || exit 2; }
  fi
  for t in "${_tars[@]}"; do tar -xJf "$t" -C "$SITE"; done
  touch "$_marker"
fi
export PYTHONPATH=$PWD:$SITE
