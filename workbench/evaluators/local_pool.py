"""LocalPool: the harness's fresh worker subprocesses on this machine's GPUs (or CPU slots), one candidate per
slot at a time; builds run first on the CPU cores, before a GPU is taken."""
from __future__ import annotations

import dataclasses
import socket
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Optional

from workbench.evaluators.evaluator import (BUILD_WORKERS, Evaluator, Progress, Slots, evaluate, is_harness,
                                            local_gpus, prebuild, stamp)
from workbench.harness.result import CheckRequest, SuiteResult

DEFAULT_CPU_SLOTS = 2                   # a machine without a GPU runs CPU stand-ins this many at a time


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
        self._slots = Slots(tokens)
        self._progress = progress
        self._build = is_harness(evaluator) and build_workers > 0
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
            result = evaluate(self.evaluator_fn, request, tagged)
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
