#!/usr/bin/env bash
# Create .venv with everything the workbench and its tests need (CPU machine; idempotent).
# torch is pinned to the CPU build that pip finds on this kind of machine; GPU machines use their own torch.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev,agent,notebook,ray,mcp]"
# The real-browser notebook test drives Debian's Chromium (Playwright never downloads a browser here);
# best effort: without it that one test is skipped with the reason.
if [ -z "${WORKBENCH_SKIP_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
   && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "setup: chromium could not be installed; the browser test will be skipped"
fi
echo "setup: .venv ready ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
