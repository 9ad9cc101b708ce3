"""The evaluator interface (a CheckRequest in, a SuiteResult out) and what both pools build on: GPU slots,
builds before a GPU is taken, where a result ran, and keeping results of different GPU models apart."""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Callable, Optional

from workbench.harness.paths import ORIGINAL_KERNEL
from workbench.harness.result import CheckRequest, SuiteResult

BUILD_WORKERS = max(1, min(8, (os.cpu_count() or 2) - 1))
WORKER_START_S = 240.0                  # the harness's own allowance for torch + CUDA start-up

Evaluator = Callable[[CheckRequest], SuiteResult]
Progress = Callable[[str], None]


class PoolError(RuntimeError):
    """The pool cannot start (Ray missing, no cluster at the address); one readable line."""


class MixedGpuError(ValueError):
    """Results from different GPU models were put into one comparison."""


def local_gpus() -> list[int]:
    """Indices of the GPUs this process may use: CUDA_VISIBLE_DEVICES when set, else what nvidia-smi lists."""
    if os.environ.get("WORKBENCH_NO_GPU"):
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        items = [v.strip() for v in visible.split(",") if v.strip()]
        return [int(v) for v in items] if all(v.isdigit() for v in items) else []
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return list(range(sum(line.startswith("GPU ") for line in out.stdout.splitlines())))


def candidate_timeout_s(request: CheckRequest, n_scenarios: Optional[int] = None) -> float:
    """A hard limit for one whole candidate: build, worker start, and every scenario at its own limit."""
    if n_scenarios is None:
        try:
            from workbench.harness.scenarios import load_suite
            n_scenarios = len(load_suite(request.suite))
        except Exception:
            n_scenarios = 200
    return request.build_timeout_s + WORKER_START_S + n_scenarios * request.scenario_timeout_s + 60.0


def stamp(result: SuiteResult, *, host: str, device: str, pool: str) -> SuiteResult:
    """Record where a result was produced; `versions` lands in the evaluations table's versions_json."""
    result.versions = dict(result.versions or {}, host=host, device=device, pool=pool)
    return result


def failed_result(request: CheckRequest, status: str, error: str) -> SuiteResult:
    """A result for a candidate whose evaluation never finished (status timeout or crashed)."""
    return SuiteResult(kernel_path=request.kernel_path, kernel_sha="", suite=request.suite, status=status,
                       error=error, stop_expr=request.stop_expr, stop_met=False if request.stop_expr else None)


def gpu_model(result: SuiteResult) -> str:
    return result.gpu or "unknown"


def group_by_gpu(results) -> dict:
    """{GPU model: [results]}: the only groups inside which timings may be compared."""
    groups: dict = {}
    for r in results:
        groups.setdefault(gpu_model(r), []).append(r)
    return groups


def one_gpu_model(results) -> str:
    """The one GPU model that produced every evaluated result; MixedGpuError when there are several."""
    models = sorted({gpu_model(r) for r in results if r.status == "evaluated"})
    if len(models) > 1:
        raise MixedGpuError(f"results from {', '.join(models)} cannot be compared with each other; group them "
                            "with workbench.evaluators.evaluator.group_by_gpu or pin the pool to one model (RayPool "
                            "accelerator_type=...)")
    return models[0] if models else ""


def is_harness(evaluator) -> bool:
    return evaluator is None


def evaluate(evaluator: Optional[Evaluator], request: CheckRequest, progress: Optional[Progress]) -> SuiteResult:
    if is_harness(evaluator):
        from workbench.harness.check import check      # lazy: pulls in torch
        return check(request, progress=progress)
    return evaluator(request)


_build_locks: dict = {}
_build_locks_guard = threading.Lock()


def prebuild(request: CheckRequest) -> None:
    """Build the candidate and its baseline into the content-addressed build cache (CPU only, no GPU held).
    The harness then finds the builds cached; a failed build is reported by the harness itself. One build per
    source at a time in this process: the build cache's temporary file is named per process, not per thread."""
    if not shutil.which("nvcc"):
        return
    from workbench.harness.build import build_kernel, source_sha
    baseline = request.baseline_path or str(ORIGINAL_KERNEL)
    for path in (request.kernel_path, baseline):
        if not (path and path.endswith(".cu") and Path(path).is_file()):
            continue
        sha = source_sha(Path(path).read_text())
        with _build_locks_guard:
            lock = _build_locks.setdefault(sha, threading.Lock())
        with lock:
            build_kernel(path, arch=request.arch, timeout_s=request.build_timeout_s, cache_dir=request.cache_dir)


class Slots:
    """The free evaluation slots; `take` hands out the lowest free one, so a one-at-a-time caller (a campaign)
    always lands on the same GPU."""

    def __init__(self, slots: list):
        self.free = list(slots)
        self.order = {s: i for i, s in enumerate(slots)}
        self.cond = threading.Condition()

    def take(self):
        with self.cond:
            while not self.free:
                self.cond.wait()
            self.free.sort(key=self.order.get)
            return self.free.pop(0)

    def give(self, slot) -> None:
        with self.cond:
            self.free.append(slot)
            self.cond.notify()
