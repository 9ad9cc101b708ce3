#!/usr/bin/env bash
# What a notebook needs to run on the GPU machine (CPython 3.12, x86-64, no package registry there) beyond that
# image's own packages: nbclient, ipykernel and their closure, ipywidgets. For `bash scripts/gpu_run.sh notebook`
# (notebooks/03_kernel_ladder.ipynb executed live on the H200):
#
#   scripts/prep_notebook_wheels.sh       # writes .whl/nb/ (ignored by git; ~15 MB)
#
# The list is nbclient + nbformat + ipykernel + ipywidgets's dependency closure as the CPU machine's .venv holds
# it, less what the GPU image already has (its own package list), pinned to the versions the CPU tests
# ran with. scripts/gpu_wheels.sh installs .whl/nb/*.whl with the others.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/wheels_lib.sh
WHEELS=(nbclient==0.11.0 nbformat==5.11.1 ipykernel==7.4.0 ipython==9.18.1 ipython-pygments-lexers==1.1.1
        jupyter-client==8.10.0 jupyter-core==5.9.1 traitlets==5.16.1 tornado==6.6.1 pyzmq==27.3.0 comm==0.2.3
        debugpy==1.8.22 matplotlib-inline==0.2.2 nest-asyncio2==1.7.4 platformdirs==4.14.9 fastjsonschema==2.22.3
        jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
        asttokens==3.0.2 executing==2.3.0 jedi==0.20.1 parso==0.8.7 pexpect==4.9.0 ptyprocess==0.7.0
        prompt-toolkit==3.0.53 pure-eval==0.2.4 stack-data==0.6.3 wcwidth==0.9.4
        ipywidgets==8.1.9 widgetsnbextension==4.0.16 jupyterlab-widgets==3.0.17)
download_wheels .whl/nb "${WHEELS[@]}"
