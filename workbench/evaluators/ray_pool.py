"""RayPool: one Ray task per candidate, one GPU each, in a fresh worker (evaluator.py has the interface).

Each task carries the kernel's source and is cancelled with `ray.cancel(ref, force=True)` when it outlives its time
limit (status `timeout`). A Ray worker that dies (killed, out of memory, its node lost) is judged again once when
the evaluator is the harness, whose candidate code runs in a contained subprocess and so cannot be what killed it
(the result says so in `versions["retried"]`); a second death, or any death under an in-process evaluator, comes
back as status `crashed`. The harness's progress lines (notices, one per scenario, the timing-cache summary) are
collected on the node and replayed through the pool's `progress` when the task returns.
"""
from __future__ import annotations

import os
import socket
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Optional

from workbench.evaluators.evaluator import (BUILD_WORKERS, Evaluator, PoolError, Progress, Slots, candidate_timeout_s,
                                            evaluate, failed_result, is_harness, prebuild, stamp)
from workbench.evaluators.ray_start import init_ray
from workbench.harness.paths import REPO_ROOT
from workbench.harness.result import CheckRequest, SuiteResult

# what a remote cluster is not sent of this checkout (runtime_env working_dir): the code travels, not the records
RAY_SHIP_EXCLUDES = [".git", ".venv", ".whl", ".cache", ".gpucache", "build", "campaigns", "evolutions", "data", "docs",
                     "notebooks", "**/__pycache__"]
PROGRESS_LINES_KEPT = 2000              # a full suite's lines and notices; a runaway source cannot fill the reply
# how a Ray worker's death (not the task's own error) reads; a harness evaluation is judged again once after one
WORKER_DEATHS = ("WorkerCrashedError", "NodeDiedError", "OutOfMemoryError")
# Ray turns token authentication on for `ray.init` and `ray start` when ~/.ray/auth_token exists, but a driver
# given an explicit address does not look for the token unless told to
TOKEN_HINT = ("; if the cluster uses token authentication, set RAY_AUTH_MODE=token here, with the head's token in "
              "~/.ray/auth_token or RAY_AUTH_TOKEN (`ray get-auth-token` on the head prints it)")


def _ray_task(payload: dict, evaluator: Optional[Evaluator]) -> dict:
    """Runs inside a fresh Ray worker: write the shipped sources, judge, stamp; returns the result as a plain dict
    and the progress lines the harness wrote on the node."""
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
        lines: list = []
        result = evaluate(evaluator, request, lambda line: len(lines) < PROGRESS_LINES_KEPT and lines.append(line))
    result.kernel_path = payload["request"]["kernel_path"]
    return {"result": stamp(result, host=socket.gethostname(), device=device, pool="ray").to_dict(),
            "progress": lines}


_remote = None


def _remote_task():
    global _remote
    if _remote is None:
        import ray
        # max_calls=1: a fresh worker process per candidate; max_retries=0: RayPool decides what is judged again
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
                init_ray(ray, **{k: v for k, v in kwargs.items() if v is not None})
            except (ConnectionError, RuntimeError, ValueError) as err:
                raise PoolError(f"cannot start or reach Ray at {address or 'a new local instance'}: {err}"
                                + (TOKEN_HINT if remote and not os.environ.get("RAY_AUTH_MODE") else "")) from err
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
        self._build = is_harness(evaluator) and not (address and address != "local") and build_workers > 0
        self._slots = Slots(list(range(self.slots)))
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
        if self._build:
            prebuild(request)
        options = {"num_gpus": 1 if self.use_gpus else 0, "num_cpus": 1}
        if self.accelerator_type:
            options["accelerator_type"] = self.accelerator_type
        slot = self._slots.take()
        try:
            result, died = self._attempt(request, options, slot, progress)
            if died and is_harness(self.evaluator_fn):
                if progress:
                    progress(f"[ray {slot}] {request.kernel_path}: {result.error}; judged again (once)")
                first = result.error
                result, _ = self._attempt(request, options, slot, progress)
                result.versions = dict(result.versions or {}, retried=first[:300])
        finally:
            self._slots.give(slot)
        if progress:
            progress(f"[ray {slot}] {request.kernel_path}: {result.status}")
        if "pool" not in (result.versions or {}):       # it never reached a node's stamp
            stamp(result, host="", device="", pool=self.name)
        return result

    def _attempt(self, request: CheckRequest, options: dict, slot, progress: Optional[Progress]):
        """One Ray task for the candidate: (result, whether its Ray worker died)."""
        ray = self._ray
        limit = self.timeout_s or candidate_timeout_s(request)
        ref = _remote_task().options(**options).remote(self._payload(request), self.evaluator_fn)
        if progress:
            progress(f"[ray {slot}] {request.kernel_path}: submitted")
        ready, _ = ray.wait([ref], timeout=limit)
        if not ready:
            ray.cancel(ref, force=True)
            return failed_result(request, "timeout", f"the evaluation took more than {limit:.0f} s; the pool "
                                                     "cancelled its Ray task (worker killed)"), False
        result, died, lines = self._collect(ray, ref, request)
        for line in lines if progress else ():
            progress(f"[ray {slot}] {line}")
        return result, died

    @staticmethod
    def _collect(ray, ref, request: CheckRequest) -> tuple[SuiteResult, bool, list]:
        """(result, whether the Ray worker died, the progress lines from the node)."""
        try:
            reply = ray.get(ref)
            return SuiteResult.from_dict(reply["result"]), False, list(reply["progress"])
        except ray.exceptions.RayTaskError as err:
            cause = getattr(err, "cause", None)
            if isinstance(cause, Exception) and not isinstance(cause, ray.exceptions.RayError):
                raise cause from None          # the evaluator's own error (a bad suite, say), as check() raises it
            failed = failed_result(request, "crashed", f"the Ray task failed: {str(err).splitlines()[0][:300]}")
            return failed, False, []
        except ray.exceptions.RayError as err:
            why = f"{type(err).__name__}: {str(err).splitlines()[0][:300] if str(err) else ''}"
            failed = failed_result(request, "crashed", f"the Ray worker died: {why}")
            return failed, type(err).__name__ in WORKER_DEATHS, []

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


