#!/usr/bin/env bash
# Create .venv with everything the workbench and its tests need (CPU machine; idempotent).
#
# torch: the CPU build, asked for by name. `torch==2.13.0` alone would let pip take PyPI's Linux wheel, which is
# the CUDA build (several GB of CUDA libraries): a version pin does not choose a build. The CPU build is the
# local version `2.13.0+cpu`; pip finds it in a wheel folder named by PIP_FIND_LINKS (the project's machines
# keep one), else on PyTorch's CPU wheel index, which this script adds only when the first try finds nothing.
# A GPU machine brings its own CUDA torch: set WORKBENCH_TORCH="" to leave torch alone.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH=${WORKBENCH_TORCH-torch==2.13.0+cpu}
TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "setup: $("$PY" --version 2>&1) is too old: the workbench needs Python 3.11 or newer (set PYTHON=python3.11)" >&2
  exit 2
fi
# one line as each step starts and one as it ends, with its duration: the whole run is silent work otherwise
# (a first run on this 2-core machine takes minutes, most of it torch and the notebook extra)
STARTED=$SECONDS
step() { STEP_NAME=${1%% *}; STEP_AT=$SECONDS; echo "setup: $1 ..."; }
done_step() { echo "setup: $STEP_NAME ${1:-done} in $((SECONDS - STEP_AT)) s"; }
step "[1/5] the virtual environment .venv"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  done_step "made"
else
  done_step "there already"
fi
pip() { .venv/bin/python -m pip "$@"; }
step "[2/5] pip itself"
pip install -qq --upgrade pip >/dev/null
done_step
step "[3/5] torch ($TORCH, the CPU build; WORKBENCH_TORCH=\"\" leaves torch alone)"
if [ -n "$TORCH" ] && ! .venv/bin/python -c 'import torch' 2>/dev/null; then
  pip install -qq "$TORCH" 2>/dev/null || pip install -qq "$TORCH" --extra-index-url "$TORCH_CPU_INDEX"
  done_step "installed"
else
  done_step "nothing to do"
fi
# setuptools announces every editable install of a flat-layout package with an "InformationOnly" notice
# (a UserWarning: mind folders named like the package); it says nothing about this project, so it is muted here only.
# -qq: pip's own warnings about this kind of machine's configuration (find-links folders that do not exist) stay out
# of the output too; errors (a failed or conflicting install) are still printed.
step "[4/5] the workbench and its extras (dev, agent, notebook, ray, mcp)"
PYTHONWARNINGS="ignore::UserWarning" pip install -qq -e ".[dev,agent,notebook,ray,mcp]"
done_step
# The real-browser tests drive Debian's Chromium (Playwright never downloads a browser here);
# best effort: without it those tests are skipped with the reason.
step "[5/5] Chromium for the browser tests (best effort)"
if [ -z "${WORKBENCH_SKIP_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 \
   && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    && done_step "installed" || echo "setup: chromium could not be installed; the browser tests will be skipped"
else
  done_step "nothing to do"
fi
torch_version=$(.venv/bin/python -c 'import torch; print("torch", torch.__version__)' 2>/dev/null || echo 'no torch')
echo "setup: .venv ready in $((SECONDS - STARTED)) s ($torch_version, $(.venv/bin/workbench --version))"
