"""scripts/setup.sh says what it is doing (issue 27 item 14): a line as each step starts and one with its duration as
it ends, then the total. Run on a copy of the script with a stand-in interpreter whose pip does nothing (the
package index is the network edge; the real install is what CI's `bash scripts/setup.sh` does); environment.yml
names the bounds pyproject.toml's extras name."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a python3 whose `-m venv DIR` makes DIR/bin/python (this script again) and DIR/bin/workbench; everything else
# (pip, -c probes) succeeds at once; `-c 'import torch'` fails, so the torch step has work to do
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; printf '#!/bin/sh\\necho workbench 0.0\\n' > "$3/bin/workbench"
  chmod +x "$3/bin/python" "$3/bin/workbench"; exit 0
fi
if [ "$1" = "-c" ] && [[ "$2" == *"import torch"* ]]; then exit 1; fi
echo "$@" >> "$(dirname "$0")/calls.log"
exit 0
"""


def test_setup_prints_each_step_with_its_duration(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    fake = tmp_path / "fake-python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    env = os.environ | {"PYTHON": str(fake), "WORKBENCH_SKIP_CHROMIUM": "1"}
    done = subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for n in range(1, 6):
        start = next(i for i, line in enumerate(lines) if line.startswith(f"setup: [{n}/5] "))
        assert re.search(r" in \d+ s$", lines[start + 1]), lines[start:start + 2]
    assert re.search(r"setup: \.venv ready in \d+ s \(no torch, workbench 0\.0\)", lines[-1]), lines[-1]
    calls = (tmp_path / ".venv" / "bin" / "calls.log").read_text()
    assert "install -qq torch==2.13.0+cpu" in calls and "-e .[dev,agent,notebook,ray,mcp]" in calls


def test_environment_yml_names_the_bounds_of_the_extras():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s*- ipykernel>=6\s*$", text, re.M)
    assert re.search(r"^\s*- pytest-timeout>=2\s*$", text, re.M)
