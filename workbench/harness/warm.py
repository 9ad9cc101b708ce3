"""`workbench warm`: time the baseline and the anchors on a suite once, into the timing cache, with no candidate,
so that the first `workbench check` on a new GPU (or after a change of timing version) pays only for its
candidate. What is cached already is not timed again; a killed warm-up keeps what it finished (progress_cache.py).

The worker gets a job without a candidate (warm_scenario.py): per scenario the baseline's comparison rows
(checked against the fp32 reference) and its timing, and each anchor's timing and error, all cached.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from workbench.harness.check import _spec, gpu_available, resolve_problem, run_worker
from workbench.harness.result import FAILED, CheckRequest, ScenarioResult
from workbench.harness.scenarios import load_suite

NO_GPU = "timing the baseline and the anchors needs a CUDA GPU (none found here): nothing was built or cached"


@dataclass
class WarmResult:
    status: str                                  # done | no_gpu | build_failed | crashed
    error: str = ""
    gpu: str = ""
    rows: list = field(default_factory=list)     # ScenarioResult per scenario (reference_stats filled)
    timings: dict = field(default_factory=dict)  # progress_cache.ProgressCache.summary()
    wall_s: float = 0.0

    @property
    def failed(self) -> list[ScenarioResult]:
        return [r for r in self.rows if r.status == FAILED]


def device_for(baseline_path: str) -> str:
    """'cpu' for a CPU stand-in baseline (tests), 'cuda' on a GPU machine, '' without one."""
    if baseline_path.startswith("standin:"):
        return "cpu"
    return "cuda" if gpu_available() else ""


def warm(request: CheckRequest, progress: Optional[Callable[[str], None]] = None) -> WarmResult:
    """Time request.baseline_path (default: the original) and request.anchors on request.suite, once."""
    progress = progress or (lambda line: None)
    start = time.monotonic()
    problem = resolve_problem(request)
    scenarios = load_suite(request.suite, problem=problem.definition)
    baseline_path = request.baseline_path or str(problem.definition.original)
    device = device_for(baseline_path)
    if not device:
        return WarmResult(status="no_gpu", error=NO_GPU)
    baseline, build = _spec(baseline_path, request, problem)
    if build is not None:
        progress(build.summary)
        if build.forbidden or not build.ok:
            return WarmResult(status="build_failed", error=build.summary, wall_s=time.monotonic() - start)
    job = {"request": request.to_dict(), "candidate": None, "baseline": baseline, "device": device,
           "scenarios": [s.to_dict() for s in scenarios], "problem": str(problem.definition.folder)}
    rows, info = run_worker(job, scenarios, request.scenario_timeout_s, progress, request.gpu_index)
    result = WarmResult(status="crashed" if info.get("error") else "done", error=info.get("error", ""),
                        gpu=info.get("gpu", ""), rows=rows, timings=info.get("timings", {}))
    result.wall_s = time.monotonic() - start
    return result
