"""Evaluation pools: one interface, `pool.submit(request) -> Future[SuiteResult]`, over local GPUs or Ray.

    with make_pool("local") as pool:                      # one slot per local GPU (CPU: `slots`, default 2)
        futures = [pool.submit(CheckRequest(kernel_path=p, suite="dev26")) for p in paths]
        results = [f.result() for f in futures]
    campaign = Campaign.create(config, backend, evaluator=pool.evaluator)   # Callable[[CheckRequest], SuiteResult]

* LocalPool: each candidate is judged by the harness (`check`), which runs it in a fresh worker subprocess
  pinned to one GPU (CUDA_VISIBLE_DEVICES), with the harness's timeouts (worker start, every scenario) and
  crash isolation. Builds run before a GPU is taken, `build_workers` at a time on the CPU cores.
* RayPool: each candidate is one Ray task with one GPU (`num_gpus=1`; CPU slots on a cluster without GPUs) in
  a fresh Ray worker (`max_calls=1`), never retried; the kernel's source travels with the task. A task that
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
import tempfile
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


# ---- RayPool ------------------------------------------------------------------------------------------
def _ray_task(payload: dict, evaluator: Optional[Evaluator]) -> dict:
    """Runs inside a fresh Ray worker: write the shipped sources, judge, stamp, return a plain dict."""
    import ray

    request = CheckRequest.from_dict(payload["request"])
    gpu_ids = ray.get_gpu_ids()
    if gpu_ids:
        request.gpu_index = -1          # Ray has set CUDA_VISIBLE_DEVICES for this worker; keep it
    device = f"cuda:{','.join(str(g) for g in gpu_ids)}" if gpu_ids else "cpu"
    with tempfile.TemporaryDirectory(prefix="workbench-ray-") as tmp:
        for key, field in (("kernel", "kernel_path"), ("baseline", "baseline_path")):
            text = payload["sources"].get(key)
            if text is not None:
                path = Path(tmp) / key / Path(getattr(request, field)).name
                path.parent.mkdir()
                path.write_text(text)
                setattr(request, field, str(path))
        result = _evaluate(evaluator, request, None)
    result.kernel_path = payload["request"]["kernel_path"]
    return stamp(result, host=socket.gethostname(), device=device, pool="ray").to_dict()


_remote = None


def _remote_task():
    global _remote
    if _remote is None:
        import ray
        # max_calls=1: a fresh worker process per candidate; max_retries=0: a candidate that kills its worker
        # is reported, never run again
        _remote = ray.remote(max_calls=1, max_retries=0)(_ray_task)
    return _remote


def _import_ray():
    try:
        import ray
    except ModuleNotFoundError as err:
        raise PoolError("--pool ray needs the Python package 'ray' (pip install 'ray>=2.9'), which is not "
                        "installed") from err
    return ray


class RayPool:
    """One Ray task per candidate, one GPU each, on a local Ray instance or the cluster at `address`."""
    name = "ray"

    def __init__(self, address: Optional[str] = None, *, evaluator: Optional[Evaluator] = None,
                 slots: Optional[int] = None, num_gpus: Optional[int] = None, num_cpus: Optional[int] = None,
                 timeout_s: Optional[float] = None, accelerator_type: Optional[str] = None,
                 ship_repo: Optional[bool] = None, build_workers: int = BUILD_WORKERS,
                 progress: Optional[Progress] = None):
        ray = _import_ray()
        self._ray = ray
        self.address = address or ""
        self._started = False
        if not ray.is_initialized():
            remote = bool(address) and address not in ("local",)
            runtime_env = {"working_dir": str(REPO_ROOT), "excludes": RAY_SHIP_EXCLUDES} if (
                ship_repo if ship_repo is not None else remote) else None
            kwargs = dict(address=address or None, include_dashboard=False, log_to_driver=False,
                          runtime_env=runtime_env)
            if not address:
                kwargs.update(num_gpus=num_gpus, num_cpus=num_cpus)
            try:
                ray.init(**{k: v for k, v in kwargs.items() if v is not None})
            except (ConnectionError, RuntimeError, ValueError) as err:
                raise PoolError(f"cannot start or reach Ray at {address or 'a new local instance'}: {err}") from err
            self._started = True
        resources = ray.cluster_resources()
        self.use_gpus = int(resources.get("GPU", 0)) > 0
        capacity = int(resources.get("GPU", 0)) or int(resources.get("CPU", 1))
        self.slots = max(1, min(slots, capacity) if slots else capacity)
        self.evaluator_fn = evaluator
        self.timeout_s = timeout_s
        self.accelerator_type = accelerator_type
        self._progress = progress
        # builds on this host are only useful when the cluster shares this host's build cache
        self._build = _is_harness(evaluator) and not (address and address != "local") and build_workers > 0
        self._slots = _Slots(list(range(self.slots)))
        self._executor = ThreadPoolExecutor(self.slots + (build_workers if self._build else 0),
                                            thread_name_prefix="ray-pool")

    def describe(self) -> str:
        what = f"{self.slots} GPU slots" if self.use_gpus else f"{self.slots} CPU slots (no GPU in the cluster)"
        return f"ray pool ({self.address or 'local instance'}): {what}"

    def submit(self, request: CheckRequest, progress: Optional[Progress] = None) -> Future:
        return self._executor.submit(self._run, request, progress or self._progress)

    def _payload(self, request: CheckRequest) -> dict:
        sources = {}
        for key, path in (("kernel", request.kernel_path), ("baseline", request.baseline_path)):
            if path and path.endswith(".cu") and Path(path).is_file():
                sources[key] = Path(path).read_text()
        return {"request": request.to_dict(), "sources": sources}

    def _run(self, request: CheckRequest, progress: Optional[Progress]) -> SuiteResult:
        ray = self._ray
        if self._build:
            prebuild(request)
        limit = self.timeout_s or candidate_timeout_s(request)
        options = {"num_gpus": 1 if self.use_gpus else 0, "num_cpus": 1}
        if self.accelerator_type:
            options["accelerator_type"] = self.accelerator_type
        slot = self._slots.take()
        try:
            ref = _remote_task().options(**options).remote(self._payload(request), self.evaluator_fn)
            if progress:
                progress(f"[ray {slot}] {request.kernel_path}: submitted")
            ready, _ = ray.wait([ref], timeout=limit)
            if not ready:
                ray.cancel(ref, force=True)
                result = failed_result(request, "timeout", f"the evaluation took more than {limit:.0f} s; the "
                                                           "pool cancelled its Ray task (worker killed)")
            else:
                result = self._collect(ray, ref, request)
        finally:
            self._slots.give(slot)
        if progress:
            progress(f"[ray {slot}] {request.kernel_path}: {result.status}")
        if result.status in ("timeout", "crashed") and not result.versions:
            stamp(result, host="", device="", pool=self.name)
        return result

    @staticmethod
    def _collect(ray, ref, request: CheckRequest) -> SuiteResult:
        try:
            return SuiteResult.from_dict(ray.get(ref))
        except ray.exceptions.RayTaskError as err:
            cause = getattr(err, "cause", None)
            if isinstance(cause, Exception) and not isinstance(cause, ray.exceptions.RayError):
                raise cause from None          # the evaluator's own error (a bad suite, say), as check() raises it
            return failed_result(request, "crashed", f"the Ray task failed: {str(err).splitlines()[0][:300]}")
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.RayError) as err:
            return failed_result(request, "crashed", f"the Ray worker died: {type(err).__name__}: "
                                                     f"{str(err).splitlines()[0][:300] if str(err) else ''}")

    def evaluator(self, request: CheckRequest) -> SuiteResult:
        return self.submit(request).result()

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
        if self._started:
            self._ray.shutdown()

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
        return RayPool(ray_address, evaluator=evaluator, slots=slots, progress=progress, **options)
    raise PoolError(f"unknown pool {kind!r}; use local or ray")


def add_pool_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pool", choices=POOLS, default="local",
                        help="where candidates are judged: local GPUs (default) or a Ray cluster")
    parser.add_argument("--ray-address", default=None,
                        help="Ray cluster address (e.g. ray://head:10001 or auto); default: start a local instance")
    parser.add_argument("--slots", type=count(1), default=None,
                        help="candidates judged at once (default: one per GPU; 2 on a machine without one)")
