#!/usr/bin/env bash
# The mcp SDK and what it needs, as wheels for the GPU machine (CPython 3.12, x86-64, no package registry there),
# for scripts/mcp_campaign_demo.py (`workbench mcp` on the H200):
#
#   scripts/prep_mcp_wheels.sh            # writes .whl/mcp/ (ignored by git; ~10 MB, a minute)
#
# The list is mcp 2.3.0's dependency closure for CPython 3.12 on manylinux x86-64 (as `pip install --dry-run
# --report` resolves it), pinned to the versions the CPU machine's tests ran with. The image's own anyio, pydantic
# and typing-extensions may be older than mcp needs, so they travel too: /tmp/site comes first on PYTHONPATH.
# scripts/gpu_wheels.sh installs .whl/*.whl, .whl/mcp/*.whl and .whl/ray/*.whl once per machine and wheel set.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/wheels_lib.sh
WHEELS=(mcp==2.3.0 mcp-types==2.3.0 anyio==4.16.0 httpx2==2.16.2 httpcore2==2.16.2 h11==0.16.0 idna==3.20
        jsonschema==4.26.0 attrs==26.1.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
        opentelemetry-api==1.45.2 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0
        typing-extensions==4.16.0 typing-inspection==0.4.5 pyjwt==2.15.1 cryptography==50.0.2 cffi==2.1.1
        pycparser==3.12 python-multipart==0.0.34 sse-starlette==3.7.0 starlette==1.10.0 uvicorn==0.54.0
        click==8.5.1 truststore==0.10.5)
download_wheels .whl/mcp "${WHEELS[@]}"
