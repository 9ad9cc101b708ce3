"""The kernel ladder for teaching (notebooks/03_kernel_ladder): each rung's own account of itself, the harness
run on each, and the measured H200 figures that are on record.

    for path in rungs():
        print(header(path))                  # the comment block at the top of the .cu: what changed and why
        results[path.stem] = check_rung(path, suite="smoke")

On a machine without a GPU the harness builds each rung and reports its resources (registers, spills, shared
memory) and forbidden-library verdict; verification and timing need the GPU machine.
"""
from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Callable, Optional

import pandas as pd

from workbench.harness.paths import REPO_ROOT

KERNELS = REPO_ROOT / "kernels" / "attn_fwd"
RECORDED_DIR = REPO_ROOT / "docs" / "data"
RECORDED_PATTERN = "h200_ladder_{stem}_full_*.json"     # `workbench check --suite full --json` of each rung (H200)
CATEGORIES = ("A", "B", "C", "D")


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


def recorded_results(folder: Path = RECORDED_DIR) -> dict:
    """{rung name: SuiteResult} of the measured runs on record (H200, suite full; see docs/kernel_ladder.md), the
    original first: its timings are the baseline timed in the same process as the last rung run against it (a
    run that was its own baseline, to save device time, carries no timing of the original)."""
    from workbench.harness.result import SuiteResult

    out = {}
    for path in rungs()[1:]:
        files = sorted(folder.glob(RECORDED_PATTERN.format(stem=path.stem)), key=_recorded_order)
        if files:
            out[path.stem] = SuiteResult.from_dict(json.loads(files[-1].read_text()))
    against_original = [r for r in out.values() if not _own_baseline(r)]
    if against_original:
        out = {"original": baseline_result(against_original[-1]), **out}
    return out


def _name_date_version(path: Path) -> tuple[str, int]:
    """A recorded file's date ('' if none) and rung version (-1 if none) from its name."""
    date = re.search(r"(\d{4}-\d{2}-\d{2})", path.name)
    version = re.search(r"_v(\d+)_", path.name)
    return (date.group(1) if date else "", int(version.group(1)) if version else -1)


def _recorded_order(path: Path) -> tuple:
    """The newest run last: by the file's date, then its rung version (`_v11_` after `_v8_`, which plain name order
    puts first), then the name."""
    return (*_name_date_version(path), path.name)


def _own_baseline(result) -> bool:
    """True when the run's 'original' timings are the candidate's own (it was run with --baseline itself)."""
    pairs = [(row.stats.median_us, row.reference_stats["original"].median_us) for row in result.rows
             if row.stats is not None and "original" in row.reference_stats]
    return bool(pairs) and all(a == b for a, b in pairs)


def baseline_result(result):
    """The original kernel's own result, rebuilt from the baseline timings inside another kernel's run."""
    base = copy.deepcopy(result)
    base.kernel_path, base.kernel_sha, base.flags = str(KERNELS / "original.cu"), "", []
    for row in base.rows:
        row.stats = row.reference_stats.get("original")
        row.flags = []
    return base


def geomean_frame(results: dict, anchors=("fa2", "cudnn")) -> pd.DataFrame:
    """Long frame (kernel, category, x_fa3): each rung's geomean speedup over FA3 per category and overall, and
    the anchors' own (from the last run's reference timings), for `plots.ladder_geomeans`."""
    rows = []
    for name, r in results.items():
        # runs made before device timing (events around the Python call) say so: their x FA3 mixes in FA3's
        # host overhead and is not comparable with the device-time runs beside them
        timing = "device" if r.versions.get("timing") else "per-call"
        for category in CATEGORIES + ("all",):
            value = r.geomean_vs("fa3", None if category == "all" else category)
            rows.append({"kernel": name, "category": category, "x_fa3": value if value == value else None,
                         "timing": timing})
    if results:
        last = list(results.values())[-1]
        for anchor in anchors:
            for category in CATEGORIES + ("all",):
                ratios = [row.reference_stats["fa3"].median_us / row.reference_stats[anchor].median_us
                          for row in last.rows if category in ("all", row.category)
                          and "fa3" in row.reference_stats and anchor in row.reference_stats]
                value = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
                rows.append({"kernel": {"fa2": "FA2", "cudnn": "cuDNN"}.get(anchor, anchor), "category": category,
                             "x_fa3": value, "timing": "device" if last.versions.get("timing") else "per-call"})
    return pd.DataFrame(rows, columns=["kernel", "category", "x_fa3", "timing"])


def version_history(stem: str = "04_pingpong", folder: Path = RECORDED_DIR) -> pd.DataFrame:
    """One row per recorded `full` run of one rung on any card (`<card>_ladder_<stem>_full_*_v<N>_<date>.json`),
    oldest first: the card and GPU, version, date, scenarios passed, x FA3 per category and overall, x cuDNN and x
    FA2 where the run timed them. H100 runs sit beside the H200's: the same command, not the same card."""
    from workbench.harness.result import SuiteResult

    rows = []
    for path in sorted(folder.glob(f"*_ladder_{stem}_full_*.json"), key=_recorded_order):
        result = SuiteResult.from_dict(json.loads(path.read_text()))
        date, version = _name_date_version(path)
        row = {"card": path.name.split("_", 1)[0], "gpu": result.gpu, "version": f"v{version}" if version >= 0 else "",
               "date": date, "passed": sum(r.status == "passed" for r in result.rows), "scenarios": len(result.rows)}
        for category in CATEGORIES + ("all",):
            value = result.geomean_vs("fa3", None if category == "all" else category)
            row[f"x_fa3_{category}"] = round(value, 3) if value == value else None
        for anchor in ("cudnn", "fa2"):
            value = result.geomean_vs(anchor)
            row[f"x_{anchor}"] = round(value, 3) if value == value else None
        rows.append(row)
    return pd.DataFrame(rows)


def dev26_frame(result) -> pd.DataFrame:
    """The rows of a result on the dev26 scenarios (full contains them): 26 shapes fit in one figure."""
    from workbench.harness.scenarios import load_suite

    names = [s.name for s in load_suite("dev26")]
    frame = result.to_frame()
    return frame[frame["scenario"].isin(names)].reset_index(drop=True)
