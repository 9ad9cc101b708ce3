"""The kernel ladder for teaching (notebooks/03_kernel_ladder): each rung's own account of itself, the harness
run on each, and the measured H200 figures that are on record.

    for path in rungs():
        print(header(path))                  # the comment block at the top of the .cu: what changed and why
        results[path.stem] = check_rung(path, suite="smoke")

On a machine without a GPU the harness builds each rung and reports its resources (registers, spills, shared
memory) and forbidden-library verdict; verification and timing need the GPU machine.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

import pandas as pd

from workbench.agent.loop import REPO_ROOT

KERNELS = REPO_ROOT / "kernels" / "attn_fwd"
RECORDED = {   # measured results on record: kernel file name -> SuiteResult JSON written by `workbench check --json`
    "original": REPO_ROOT / "docs" / "data" / "h200_original_dev26_2026-11-30.json",
}


def rungs(root: Path = KERNELS) -> list[Path]:
    """original.cu, then ladder/NN_*.cu in order."""
    return [root / "original.cu"] + sorted((root / "ladder").glob("[0-9][0-9]_*.cu"))


def header(path: str | Path, max_lines: int = 80) -> str:
    """The leading `//` comment block of a kernel file, without the comment markers."""
    lines = []
    for line in Path(path).read_text().splitlines():
        stripped = line.strip()
        if not stripped.startswith("//"):
            if lines:
                break
            continue
        lines.append(stripped[2:][1:] if stripped[2:3] == " " else stripped[2:])
    text = "\n".join(lines[:max_lines])
    return text + ("\n[...]" if len(lines) > max_lines else "")


def check_rung(path: str | Path, suite: str = "smoke", anchors=("fa3", "cudnn", "fa2"),
               progress: Optional[Callable[[str], None]] = None):
    """The harness on one rung (against the original kernel); static_only without a GPU."""
    from workbench.harness.check import check
    from workbench.harness.result import CheckRequest

    return check(CheckRequest(kernel_path=str(path), suite=suite, anchors=tuple(anchors)), progress=progress)


def summary_frame(results: dict) -> pd.DataFrame:
    """One row per rung: harness status, scenarios passed/failed, geomeans against the original and anchors."""
    rows = []
    for name, r in results.items():
        counts = r.counts()
        row = {"kernel": name, "status": r.status, "gpu": r.gpu or "-", "passed": counts["passed"],
               "failed": counts["failed"], "unsupported": counts["unsupported"],
               "registers (max)": max((k["registers"] for k in r.build.get("resources", [])), default=None),
               "spills (bytes)": sum(k["spill_stores"] + k["spill_loads"] for k in r.build.get("resources", [])),
               "note": r.error or ""}
        for against in ("original", "fa3", "cudnn", "fa2"):
            value = r.geomean_vs(against)
            row[f"x_{against}"] = value if value == value else None
        rows.append(row)
    return pd.DataFrame(rows)


def resources_frame(results: dict) -> pd.DataFrame:
    """One row per compiled kernel function of every rung (ptxas -v): registers, spills, stack, static smem."""
    rows = []
    for name, r in results.items():
        for k in r.build.get("resources", []):
            rows.append({"kernel": name, "function": k["name"], "registers": k["registers"],
                         "spill stores": k["spill_stores"], "spill loads": k["spill_loads"],
                         "stack bytes": k["stack_bytes"], "static smem bytes": k["smem_bytes"]})
    return pd.DataFrame(rows)


def recorded_results() -> dict:
    """{rung name: SuiteResult} for every measured result on record (real GPU runs, see docs/benchmarks.md)."""
    from workbench.harness.result import SuiteResult

    out = {}
    for name, path in RECORDED.items():
        if path.exists():
            out[name] = SuiteResult.from_dict(json.loads(path.read_text()))
    return out
