"""Evaluation pools: one interface, `pool.submit(request) -> Future[SuiteResult]`, over local GPUs or Ray.

    with make_pool("local") as pool:                      # one slot per local GPU (CPU: `slots`, default 2)
        futures = [pool.submit(CheckRequest(kernel_path=p, suite="dev26")) for p in paths]
        results = [f.result() for f in futures]
    campaign = Campaign.create(config, backend, evaluator=pool.evaluator)   # Callable[[CheckRequest], SuiteResult]

* LocalPool: each candidate is judged by the harness (`check`), which runs it in a fresh worker subprocess
  pinned to one GPU (CUDA_VISIBLE_DEVICES), with the harness's timeouts (worker start, every scenario) and
  crash isolation. Builds run before a GPU is taken, `build_workers` at a time on the CPU cores.
* RayPool (ray_pool.py): each candidate is one Ray task with one GPU (`num_gpus=1`; CPU slots on a cluster
  without GPUs) in a fresh Ray worker (`max_calls=1`), never retried; the kernel's source travels with the task. A task that
  outlives its time limit is cancelled with `ray.cancel(ref, force=True)` (Ray kills the worker and its
  children) and comes back as status `timeout`; a worker that dies comes back as status `crashed`.

Every result is stamped with where it ran (`versions["host"]`, `versions["device"]`, `versions["pool"]`), and
`group_by_gpu` / `one_gpu_model` keep numbers from different GPU models out of one comparison.
`python scripts/pool_bench.py` measures a pool's throughput on one GPU against all of them (docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import socket
import subprocess
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Optional

from workbench.cliargs import count
from workbench.harness.result import CheckRequest, SuiteResult

REPO_ROOT = Path(__file__).resolve().parents[1]
POOLS = ("local", "ray")
DEFAULT_CPU_SLOTS = 2                   # a machine without a GPU runs CPU stand-ins this many at a time
BUILD_WORKERS = max(1, min(8, (os.cpu_count() or 2) - 1))
WORKER_START_S = 240.0                  # the harness's own allowance for torch + CUDA start-up
RAY_SHIP_EXCLUDES = [".git", ".venv", ".whl", ".cache", "build", "campaigns", "evolutions", "data", "docs",
                     "notebooks", "**/__pycache__"]

Evaluator = Callable[[CheckRequest], SuiteResult]
Progress = Callable[[str], None]


class PoolError(RuntimeError):
    """The pool cannot start (Ray missing, no cluster at the address); one readable line."""


class MixedGpuError(ValueError):
    """Results from different GPU models were put into one comparison."""


# ---- helpers shared by both pools ----------------------------------------------------------------------
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
                            "with workbench.pool.group_by_gpu or pin the pool to one model (RayPool "
                            "accelerator_type=...)")
    return models[0] if models else ""


def _is_harness(evaluator) -> bool:
    return evaluator is None


def _evaluate(evaluator: Optional[Evaluator], request: CheckRequest, progress: Optional[Progress]) -> SuiteResult:
    if _is_harness(evaluator):
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
    from workbench.harness.problem import ORIGINAL_KERNEL
    baseline = request.baseline_path or str(ORIGINAL_KERNEL)
    for path in (request.kernel_path, baseline):
        if not (path and path.endswith(".cu") and Path(path).is_file()):
            continue
        sha = source_sha(Path(path).read_text())
        with _build_locks_guard:
            lock = _build_locks.setdefault(sha, threading.Lock())
        with lock:
            build_kernel(path, arch=request.arch, timeout_s=request.build_timeout_s, cache_dir=request.cache_dir)


class _Slots:
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


# ---- LocalPool -----------------------------------------------------------------------------------------
class LocalPool:
    """Fresh harness worker subprocesses on the local GPUs (or CPU slots), one candidate per slot at a time."""
    name = "local"

    def __init__(self, slots: Optional[int] = None, *, evaluator: Optional[Evaluator] = None,
                 gpus: Optional[list] = None, build_workers: int = BUILD_WORKERS,
                 progress: Optional[Progress] = None):
        self.evaluator_fn = evaluator
        self.gpus = list(local_gpus() if gpus is None else gpus)
        if self.gpus:
            self.gpus = self.gpus[:slots] if slots else self.gpus
            tokens = [f"cuda:{g}" for g in self.gpus]
        else:
            tokens = [f"cpu:{i}" for i in range(slots or DEFAULT_CPU_SLOTS)]
        self.slots = len(tokens)
        self._slots = _Slots(tokens)
        self._progress = progress
        self._build = _is_harness(evaluator) and build_workers > 0
        self._executor = ThreadPoolExecutor(self.slots + (build_workers if self._build else 0),
                                            thread_name_prefix="local-pool")
        self.host = socket.gethostname()

    def describe(self) -> str:
        what = f"GPUs {','.join(map(str, self.gpus))}" if self.gpus else f"{self.slots} CPU slots"
        return f"local pool on {self.host}: {what}"

    def submit(self, request: CheckRequest, progress: Optional[Progress] = None) -> Future:
        return self._executor.submit(self._run, request, progress or self._progress)

    def _run(self, request: CheckRequest, progress: Optional[Progress]) -> SuiteResult:
        if self._build:
            prebuild(request)           # the baseline is built even for a stand-in candidate
        slot = self._slots.take()
        try:
            if slot.startswith("cuda:"):
                request = dataclasses.replace(request, gpu_index=int(slot.split(":")[1]))
            tagged = (lambda line: progress(f"[{slot}] {line}")) if progress else None
            result = _evaluate(self.evaluator_fn, request, tagged)
        finally:
            self._slots.give(slot)
        return stamp(result, host=self.host, device=slot, pool=self.name)

    def evaluator(self, request: CheckRequest) -> SuiteResult:
        """The pool as a campaign's evaluator: submit and wait."""
        return self.submit(request).result()

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- choosing a pool --------------------------------------------------------------------------------------
def make_pool(kind: str = "local", *, ray_address: Optional[str] = None, slots: Optional[int] = None,
              evaluator: Optional[Evaluator] = None, progress: Optional[Progress] = None, **options):
    """`local` or `ray` to a pool; `evaluator` None means the real harness (workbench.harness.check)."""
    if kind == "local":
        if ray_address:
            raise PoolError("--ray-address needs --pool ray")
        return LocalPool(slots, evaluator=evaluator, progress=progress, **options)
    if kind == "ray":
        from workbench.ray_pool import RayPool
        return RayPool(ray_address, evaluator=evaluator, slots=slots, progress=progress, **options)
    raise PoolError(f"unknown pool {kind!r}; use local or ray")


def add_pool_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pool", choices=POOLS, default="local",
                        help="where candidates are judged: local GPUs (default) or a Ray cluster")
    parser.add_argument("--ray-address", default=None,
                        help="Ray cluster address (e.g. ray://head:10001 or auto); default: start a local instance")
    parser.add_argument("--slots", type=count(1), default=None,
                        help="candidates judged at once (default: one per GPU; 2 on a machine without one)")


def __getattr__(name: str):
    """`from workbench.pool import RayPool`: RayPool lives in ray_pool.py, which imports this module's helpers."""
    if name == "RayPool":
        from workbench.ray_pool import RayPool
        return RayPool
    raise AttributeError(f"module 'workbench.pool' has no attribute {name!r}")
