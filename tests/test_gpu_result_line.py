"""GPU proof that the result line carries x FA3 and that its stdout imports as one run (issue 14). On the H200:

    source scripts/gpu_wheels.sh && python3 -m pytest -m gpu tests/test_gpu_result_line.py -q -s

Runs `workbench check kernels/attn_fwd/ladder/02_mma.cu --suite smoke --anchors fa3` as a subprocess (the CLI a
person or an agent runs), then reads its stdout as an importer does: exactly one run, whose x FA3 and x original
geomeans are the line's and agree with the printed summary to its three decimals. The stdout is written to
$OUT/h200_02_mma_smoke_result_line.txt when $OUT is set (a device call returns it): a capture for the realistic
fixtures' harness_stdout/ once an H200 run exists with the line.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.harness.check import gpu_available
from workbench.harness.result_line import parse_result_lines
from workbench.traces.importers.harness_output import find_sightings

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")]
ROOT = Path(__file__).resolve().parents[1]


def test_h200_stdout_is_one_run_with_fa3(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "workbench.cli", "check", "kernels/attn_fwd/ladder/02_mma.cu",
                           "--suite", "smoke", "--anchors", "fa3", "--traces", "", "--json", str(tmp_path / "r.json")],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                              filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))))   # keep the wheels' site
    out = proc.stdout + proc.stderr
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "h200_02_mma_smoke_result_line.txt").write_text(out)
    assert proc.returncode in (0, 3), out[-2000:]
    [line] = parse_result_lines(proc.stdout)
    fa3 = line["geomeans"]["overall"]["fa3"]
    assert line["status"] == "evaluated" and line["all_correct"] and fa3 is not None and fa3 > 0
    printed = float(re.search(r"^geomean_vs_fa3: ([0-9.]+)", proc.stdout, re.M).group(1))
    assert abs(printed - fa3) <= 0.0005 + 1e-9
    [seen] = find_sightings(out)
    assert (seen.form, seen.eval_id) == ("result_line", line["eval_id"])
    assert seen.rows[0]["geomean_vs_fa3"] == fa3 and seen.rows[0]["gpu"] == line["gpu"]
