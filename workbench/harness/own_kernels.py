"""The worker's side of reason `foreign_kernel`: record calls and judge what ran (the rule itself: foreign.py).

Per scenario, one untimed call of the candidate on new input contents is recorded the way the timer runs it:
captured into a CUDA graph (outside the window) and replayed inside it, so a kernel that launches other work
only while it is being captured is seen doing so; as a plain call where it cannot be captured (or where the
profiler sees nothing inside a graph replay). It happens either just before the timing or just after it (a
coin this run alone knows, so counting calls cannot tell a recorded call from a timed one), and its output is
checked like a timed launch's (a wrong one is `timed_mismatch`). The baseline's first call of a scenario is
recorded too (the call it makes anyway, plain; no extra call). Fills, poison, capture and the reference run
before the window.

WORKBENCH_FOREIGN_CHECK = all (default) | sampled (only the first and the largest scenario) | off: the lead's
switch for measuring what the check costs; an unknown value keeps the check on. With the variable set, check
prints how many calls were recorded and the seconds the check took (fills, reference, recorded calls).
"""
from __future__ import annotations

import os
import random
import time
from typing import Optional

import torch

from workbench.harness import activity
from workbench.harness.foreign import judge as judge_activity
from workbench.harness.scenarios import Scenario
from workbench.harness.timing import CaptureFailed
from workbench.harness.verify import Tolerances, default_judge, synchronize

POLICY_ENV = "WORKBENCH_FOREIGN_CHECK"
POLICIES = ("all", "sampled", "off")


def policy(device: str) -> tuple[str, str]:
    """(the policy applied, a line saying so for the worker's start event)."""
    raw = os.environ.get(POLICY_ENV, "").strip().lower() or "all"
    if raw not in POLICIES:
        return "all", f"all ({POLICY_ENV}={raw!r} is not one of {', '.join(POLICIES)})"
    why = activity.unavailable(device) if raw != "off" else ""
    return ("off", f"off: {why}") if why else (raw, raw)


class OwnKernelCheck:
    def __init__(self, job: dict, tol: Tolerances, fresh_seed: int, problem=None):
        self.job, self.tol, self.fresh_seed = job, tol, fresh_seed
        self.device = job["device"]
        self.policy, self.note = policy(self.device)
        self.problem = problem
        self.judge = problem.judge if problem is not None else default_judge()
        shapes = [self._scenario(raw) for raw in job.get("scenarios", [])]
        self.sampled = {shapes[0].name, max(shapes, key=lambda s: s.flops()).name} if shapes else set()
        self.seconds, self.calls = 0.0, 0       # what the check cost this worker (reported in its done event)
        self.last_call_us = None                 # wall time of the last baseline call, kernel + synchronize

    def _scenario(self, raw: dict):
        return self.problem.definition.scenario(raw) if self.problem is not None else Scenario(**raw)

    def applies(self, s: Scenario) -> bool:
        return self.policy == "all" or (self.policy == "sampled" and s.name in self.sampled)

    def after_timing(self, s: Scenario) -> bool:
        return random.Random(f"{self.fresh_seed}|{s.key}").random() < 0.5

    def own_names(self, role: str) -> list[str]:
        spec = self.job.get(role) or {}
        if spec.get("kind") == "standin":
            if self.problem is not None:
                return list(self.problem.definition.standins.KERNELS)
            from workbench.harness.standins import KERNELS
            return KERNELS
        return list(spec.get("kernels") or [])

    def _recorded(self, kernel, x, out, s: Scenario) -> tuple[int, list[str]]:
        synchronize(self.device)
        with activity.recording(self.device) as seen:
            start = time.perf_counter()
            rc = kernel(x, *out.tensors, s)
            synchronize(self.device)
            self.last_call_us = (time.perf_counter() - start) * 1e6
        self.calls += 1
        return rc, seen

    def _recorded_replay(self, graph, out) -> list[str]:
        out.poison()
        synchronize(self.device)
        with activity.recording(self.device) as seen:
            getattr(graph, "graph", graph).replay()    # timing's _CudaGraph holds the torch graph; the CPU's is one
            synchronize(self.device)
        self.calls += 1
        return seen

    def candidate(self, kernel, s: Scenario, x, out, capture=None) -> tuple[str, str]:
        """(reason, detail): reason '' when the call ran only the candidate's kernels and got the output right;
        detail then lists the copies/sets it issued, if any. capture: the timer's capture(launch, i) -> graph."""
        start = time.perf_counter()
        tol, judge = self.tol, self.judge
        x.fill(self.fresh_seed + 104729)
        rows = judge.sample_rows(s, tol, tol.original_rows, torch.Generator().manual_seed(self.fresh_seed + 3))
        ref = judge.reference(s, x, rows)
        out.poison()
        seen: list[str] = []
        args = out.tensors
        if capture is not None:
            try:
                graph = capture(lambda _i: kernel(x, *args, s), 0)
            except CaptureFailed:                  # timed as plain calls, so recorded as one
                graph = None
            if graph is not None:
                seen = self._recorded_replay(graph, out)
                del graph
        rc = 0
        if not seen:
            out.poison()
            rc, seen = self._recorded(kernel, x, out, s)
        verdict = judge_activity(seen, self.own_names("candidate"), wrote_output=out.tensors[0].numel() > 0)
        outcome = ("", verdict.detail() if verdict.transfers else "")
        rel_bound, max_bound = judge.bounds(tol, s)
        if rc:
            outcome = "unsupported", (f"{judge.ENTRY} returned error code {rc} on the call recorded for the "
                                      "foreign-kernel check")
        elif not verdict.ok:
            outcome = "foreign_kernel", verdict.detail()
        else:
            errs = judge.errors(out.tensors, ref, s)
            if not (errs.rel_l2 <= rel_bound and errs.max_abs <= max_bound):
                outcome = "timed_mismatch", (f"the call recorded for the foreign-kernel check (new inputs, after "
                                             f"verification passed) has rel L2 {errs.rel_l2:.2e}")
        self.seconds += time.perf_counter() - start
        return outcome

    def judge_baseline(self, seen: list, out, seconds: float) -> Optional[str]:
        """The baseline's first call made as a recorded graph replay (first_replay.py): a detail line when the
        device ran kernels not its own during it, else None."""
        self.calls += 1
        self.seconds += seconds
        verdict = judge_activity(seen, self.own_names("baseline"), wrote_output=out.tensors[0].numel() > 0)
        return None if verdict.ok else "the baseline: " + verdict.detail()

    def baseline(self, kernel, s: Scenario, x, out=None) -> tuple[int, Optional[str]]:
        """The baseline's first call: (its return code, a detail line when it ran kernels not its own). Its output
        is in `out` after it returns (synchronized), its wall time in `last_call_us`."""
        out = out or self.judge.Outputs(s, self.device, 16)
        if not self.applies(s):
            synchronize(self.device)
            start = time.perf_counter()
            rc = kernel(x, *out.tensors, s)
            synchronize(self.device)
            self.last_call_us = (time.perf_counter() - start) * 1e6
            return rc, None
        start = time.perf_counter()
        rc, seen = self._recorded(kernel, x, out, s)
        verdict = judge_activity(seen, self.own_names("baseline"), wrote_output=out.tensors[0].numel() > 0)
        self.seconds += time.perf_counter() - start
        return rc, (None if rc or verdict.ok else "the baseline: " + verdict.detail())
