"""Evaluation worker: one fresh process per candidate (per GPU) verifies and times it on every scenario.

    python -m workbench.harness.worker < job.json

A job is {"request", "candidate", "baseline", "scenarios", "device"} (see check.py). The worker writes one
JSON line per event to a private copy of stdout (fd 1 itself is pointed at stderr first, so whatever the
candidate prints cannot forge results): {"event": "begin", "scenario": name}, {"event": "result", ...},
{"event": "done", "gpu": ..., "versions": ...}. A result carries `spent`, the seconds each baseline or anchor
timed afresh took (the parent's ETA); a contained worker emits {"event": "cached"} after each cache entry it
stages, so the parent merges it at once (staged_cache.py). A kernel that faults poisons the CUDA context, so
after a CUDA error the worker reports it and stops; the parent marks the rest as skipped. Every kernel that runs
during a recorded call of the candidate or the baseline must come from its own library (own_kernels.py). A job
without a candidate is `workbench warm`'s: each scenario times only the baseline and the anchors (warm_scenario.py).
The job is one line; with `judged_after_start` the parent answers the start event with one more, naming the
scenarios an interrupted run of the same check finished: they are skipped (resume_rows.py reuses their rows).
The job's `problem` (a problem folder; attention when absent) decides what is allocated, called and compared: its
judge.py (problems.py), loaded before the candidate's code can run.
"""
from __future__ import annotations

import dataclasses
import json
import os
import secrets
import sys
import time
import traceback
from pathlib import Path

import torch

from workbench.harness import anchor_plans, own_kernels, proc_tree, rep_count, rest, resume_rows
from workbench.harness.baseline_role import BaselineRole
from workbench.harness.problem import Problem
from workbench.harness.result import FAILED, PASSED, UNSUPPORTED, CheckRequest, ScenarioResult, Stats
from workbench.harness.scenarios import Scenario
from workbench.harness.timed_rows import TimedRows
from workbench.harness.timing import Timer
from workbench.harness.timing_proof import profile_samples_from_env
from workbench.harness.warm_scenario import warm_scenario
from workbench.harness.worker_start import environment, warm_up
from workbench.harness.timing_cache import TimingCache, anchor_impl
from workbench.harness.verify import Verifier, synchronize

_out = None


def emit(event: str, **payload) -> None:
    _out.write(json.dumps({"event": event, **payload}, allow_nan=True) + "\n")
    _out.flush()


def reference(s, x, rows, judge):
    """The problem's fp32 reference on those rows (one name for every reference the timing checks take)."""
    return judge.reference(s, x, rows)


def load_kernel(spec: dict, problem: Problem):
    if spec["kind"] == "standin":
        return problem.definition.standins.STANDINS[spec["path"]]
    return problem.judge.open_library(spec["path"])


def enter_sandbox(job: dict, cache: TimingCache, versions: dict, anchors: dict, problem: Problem) -> list:
    """From here on the candidate's code may run: contain it (sandbox.py). Everything the worker needs is
    opened or imported before this point, as the dropped uid may not be able to read it afterwards."""
    from workbench.harness import cpu_device, kernel_lib, sandbox, standins  # noqa: F401  (imported while readable)

    problem.definition.standins      # noqa: B018  (the problem's stand-ins, imported while readable)
    plan = sandbox.Plan.from_dict(job.get("sandbox"))
    if plan.enabled and job["device"].startswith("cuda"):
        warm_up(job["device"], anchors, problem.judge)
    libraries = {k: job[k]["path"] for k in ("candidate", "baseline") if job.get(k) and job[k]["kind"] == "so"}
    contained = sandbox.contain(plan, libraries)
    for name, path in contained.libraries.items():
        job[name] = dict(job[name], path=path)
    if contained.cache_dir is not None:
        cache.stage_writes(contained.cache_dir)
    versions["sandbox"] = contained.summary
    return contained.notices


class ScenarioRun:
    """Everything done for one scenario: verify the candidate, then time it, the baseline and the anchors."""

    def __init__(self, job: dict, problem: Problem, timer: Timer, cache: TimingCache, anchors: dict,
                 fresh_seed: int):
        self.job, self.problem, self.timer, self.cache, self.anchors = job, problem, timer, cache, anchors
        self.device = job["device"]
        self.fresh_seed = fresh_seed
        self.judge = problem.judge
        self.own = own_kernels.OwnKernelCheck(job, problem.tolerances, fresh_seed, problem)
        self.baseline = BaselineRole(job, problem.tolerances, cache, self.own, self.device, self.judge, timer=timer,
                                     shapes=[problem.definition.scenario(r) for r in job.get("scenarios", [])])
        self.spent: dict[str, float] = {}    # seconds per baseline/anchor timed afresh in the current scenario
        self.rows_s: dict[str, float] = {}   # seconds of the baseline's first call made for its rows alone
        self.plans: anchor_plans.PlanLanes | None = None   # lanes of the anchors that keep plans per thread

    def original_rows(self, s: Scenario, verifier: Verifier, baseline):
        """The original kernel's output on the first fixed seed, on a few sampled rows (baseline_role.py)."""
        return self.baseline.rows(s, baseline)

    def time_kernel(self, kernel, s: Scenario, sets: list, check_outputs: bool = True,
                    warm_call_us: float | None = None) -> tuple[Stats, str]:
        """Time with poisoned outputs. For a candidate (check_outputs) every timed launch (plain call or graph
        replay) gets inputs with new contents, and what it wrote is compared with an fp32 reference on a few
        random rows, untimed: a kernel that caches results by contents, gets cheaper after the verification
        calls, or enqueues cheaper work while it is being captured into a CUDA graph, fails here.

        The comparison runs after the samples, not between them: right after each launch only the sampled rows
        of what it wrote are copied aside on the device, into buffers allocated before the first launch
        (timed_rows.py: no host transfer, no allocation between samples); the reference is computed at the end
        from the same contents, regenerated from their seed (so a launch that rewrote its inputs is judged on the
        inputs it was given). An fp32 reference between two samples made the next one read ~4.5 us slower on the
        H200 (timing.Timer.time), and so did a host-to-device copy with fresh tensors (timed_rows.py)."""
        judge = self.judge
        outs = [judge.Outputs(s, self.device, 16) for _ in sets]
        tol = self.problem.tolerances
        counter = iter(range(10**9))
        seed_of = [None] * len(sets)    # the seed of each set's current contents
        kept = TimedRows(s, self.device, tol.original_rows, self.timer.checked_launches_at_most(len(sets)),
                         seed=self.fresh_seed + 1, judge=judge, like=outs[0].tensors) if check_outputs else None

        def before(i: int) -> None:
            if check_outputs:
                seed_of[i] = self.fresh_seed + 7919 * (1 + next(counter))
                sets[i].fill(seed_of[i])
            outs[i].poison()

        def after(i: int) -> None:
            if kept is not None:
                kept.keep(seed_of[i], *outs[i].tensors)

        args = [out.tensors for out in outs]      # resolved once: the timed call is the kernel's own
        stats = self.timer.time(lambda i: kernel(sets[i], *args[i], s), before=before,
                                n_sets=len(sets), after=after if check_outputs else None, prime=check_outputs,
                                warm_call_us=warm_call_us)
        del outs, args
        return stats, self._first_wrong_launch(s, kept)

    def _first_wrong_launch(self, s: Scenario, kept: TimedRows | None) -> str:
        """'' when every saved launch matches the fp32 reference of the contents it was given, else a line."""
        if not kept:
            return ""
        tol, judge = self.problem.tolerances, self.judge
        rel_bound, max_bound = judge.bounds(tol, s)
        x = judge.Inputs.allocate(s, self.device)
        for k, (seed, rows, *saved) in enumerate(kept.launches()):
            x.fill(seed)
            ref = reference(s, x, rows, judge)
            here = torch.arange(len(rows), device=saved[0].device)
            errs = judge.errors(tuple(saved), dataclasses.replace(ref, rows=here), s)
            if not (errs.rel_l2 <= rel_bound and errs.max_abs <= max_bound):
                return (f"a timed launch (new inputs, verification passed; launch {k + 1} of {len(kept)}) has "
                        f"rel L2 {errs.rel_l2:.2e}")
        return ""

    def time_anchor(self, name: str, anchor, s: Scenario, sets: list, refs: list):
        outputs = anchor(sets[0], s)
        synchronize(self.device)
        rel = self.judge.anchor_error(outputs, refs[0])
        stats = self.timer.time(lambda i: anchor(sets[i], s), n_sets=len(sets))   # graph-captured like a kernel
        return stats, rel

    def anchor_errors_only(self, result: ScenarioResult, s: Scenario, sets, refs) -> None:
        """Verification-only runs still measure each anchor's error against the same fp32 reference."""
        for name, (anchor, _) in self.anchors.items():
            try:
                outputs = anchor(sets[0], s)
                synchronize(self.device)
                result.reference_errors[name] = self.judge.anchor_error(outputs, refs[0])
            except Exception as err:
                if "CUDA error" in str(err):
                    raise
                result.reference_errors[name] = f"unsupported: {type(err).__name__}: {str(err)[:100]}"

    def own_kernels_only(self, result: ScenarioResult, candidate, s: Scenario, x, out) -> bool:
        """One recorded call (own_kernels.py); False, with the result failed, when it ran a foreign kernel."""
        result.reason, result.detail = self.own.candidate(candidate, s, x, out, capture=self.timer._capture)
        if result.reason:
            result.status = FAILED
        return not result.reason

    def timing_inputs(self, s: Scenario, verifier: Verifier) -> tuple[list[int], list, list]:
        """Timing inputs: the fresh seed and the first fixed seed, whose references already exist."""
        seeds = [self.fresh_seed, self.problem.tolerances.seeds[0]][: max(1, self.problem.timing.input_sets)]
        refs = [verifier.reference_for(seed) for seed in seeds]
        sets = []
        for seed in seeds:
            x = self.judge.Inputs.allocate(s, self.device)
            x.fill(seed)
            sets.append(x)
        return seeds, refs, sets

    def time_anchors(self, result: ScenarioResult, s: Scenario, sets: list, refs: list) -> None:
        if self.plans is None:    # made in the scenario loop, so after the sandbox was entered
            self.plans = anchor_plans.for_worker(self.anchors, self.job, self.problem, self.cache, self.device)
        plans = self.plans
        for name, seconds in plans.prepare(s).items():      # nothing else of this scenario runs any more
            self.spent[name] = self.spent.get(name, 0.0) + seconds
        for name, (anchor, version) in self.anchors.items():
            key = anchor_impl(name, version)
            cached = self.cache.get(key, s, with_extra=True)
            try:
                if cached is None:
                    start = time.perf_counter()
                    stats, rel = plans.run(name, s, lambda: self.time_anchor(name, anchor, s, sets, refs))
                    self.spent[name] = self.spent.get(name, 0.0) + time.perf_counter() - start
                    self.cache.put(key, s, stats, extra={"rel_l2_err": rel})
                else:
                    stats, rel = cached[0], cached[1].get("rel_l2_err")
                result.reference_stats[name] = stats
                result.reference_errors[name] = rel
            except Exception as err:   # an anchor that refuses a shape is noted, never fatal
                if "CUDA error" in str(err) or "illegal" in str(err):
                    raise
                result.reference_errors[name] = f"unsupported: {type(err).__name__}: {str(err)[:100]}"

    def add_baseline(self, result: ScenarioResult, s: Scenario, baseline, sets: list) -> bool:
        """The baseline's stats into the row (baseline_role.py); False when it failed the scenario."""
        if baseline is None or self.job.get("baseline") is None:
            return True
        timing = self.baseline.timing(s, baseline, sets, result.stats, self.time_kernel)
        self._note_baseline_seconds()
        if timing.foreign:
            result.status, result.reason, result.detail = FAILED, "foreign_kernel", "the baseline: " + timing.foreign
            return False
        if timing.refused:
            result.reference_errors["original"] = timing.refused
        if timing.stats is not None:
            result.reference_stats["original"] = timing.stats
        return True

    def _note_baseline_seconds(self) -> None:
        """Baseline timing work into `spent` (the ETA's, `timed now`), a first call for the rows alone into rows_s."""
        spent, self.rows_s = self.baseline.seconds()
        self.spent.pop("original", None)     # a first call counted as rows may have become the timing's since
        self.spent.update(spent)

    def matches_original(self, result: ScenarioResult, s: Scenario, baseline, first_outputs) -> bool:
        """False, with the result failed (`mismatch_original`), when the candidate differs from the original."""
        detail = self.baseline.mismatch(s, baseline, first_outputs)
        self._note_baseline_seconds()
        if detail:
            result.status, result.reason, result.detail, result.stats = FAILED, "mismatch_original", detail, None
        return not detail

    def run(self, s: Scenario, candidate, baseline) -> ScenarioResult:
        """Verify the candidate, time it, then everything of the baseline and the anchors: nothing of the baseline
        runs before the candidate's timing has ended, whatever the cache holds. A cache without the original's rows
        made its first call (seconds long on large shapes) precede the candidate's verification and timing in that
        state only (C_s100 ~3 us slower, H200 2026-12-02, evaluation f3567d3d525b); the candidate's outputs on the
        first fixed seed are now compared with the original's rows after its timing (BaselineRole.mismatch)."""
        problem, tol = self.problem, self.problem.tolerances
        self.spent, self.rows_s, self.baseline.spent_s, self.baseline.rows_s = {}, {}, 0.0, 0.0
        verifier = Verifier(s, self.device, tol, self.fresh_seed, self.judge)
        compares = baseline is not None and self.baseline.compares()
        outcome = verifier.run(candidate, keep_first=compares)
        result = ScenarioResult(scenario=s.to_dict(), status=PASSED if outcome.passed else FAILED,
                                reason=outcome.reason, detail=outcome.detail, rel_l2_err=outcome.rel_l2_err,
                                max_abs_err=outcome.max_abs_err, lse_err=outcome.lse_err)
        if outcome.reason == "unsupported":
            result.status = UNSUPPORTED
        if not outcome.passed:
            return result
        timing = self.job["request"].get("timing", True)
        own_late = self.own.applies(s) and timing and self.own.after_timing(s)
        if self.own.applies(s) and not own_late and not self.own_kernels_only(result, candidate, s, verifier.inputs,
                                                                              verifier.out):
            return result
        seeds, refs, sets = self.timing_inputs(s, verifier)
        first_outputs = verifier.first_outputs
        del verifier
        if not timing:
            if self.matches_original(result, s, baseline, first_outputs):
                self.anchor_errors_only(result, s, sets, refs)
            return result
        result.stats, timed_problem = self.time_kernel(candidate, s, sets)
        if timed_problem:
            result.status, result.reason, result.detail = FAILED, "timed_mismatch", timed_problem
            return result
        if own_late and not self.own_kernels_only(result, candidate, s, sets[0],
                                                  self.judge.Outputs(s, self.device, 16)):
            return result
        if not self.matches_original(result, s, baseline, first_outputs):
            return result
        del first_outputs
        for x, seed in zip(sets, seeds):   # back to the contents `refs` describe (anchor errors use them)
            x.fill(seed)
        if self.add_baseline(result, s, baseline, sets):
            self.time_anchors(result, s, sets, refs)
        return result


def scenario_result(runner: ScenarioRun, s: Scenario, candidate, baseline) -> ScenarioResult:
    runner.timer.rest_s = rest.rest_for_row_s(runner.problem.floor_us(s), runner.problem.timing)
    if candidate is None:
        return warm_scenario(runner, s, baseline)
    return runner.run(s, candidate, baseline)


def main() -> int:
    global _out
    proc_tree.die_with_parent()     # uncontained (no sandbox_entry in front): this process dies with the harness
    _out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)   # candidate printf/puts goes to stderr, never into the result stream
    job = json.loads(sys.stdin.readline())     # one line: the parent may write the judged scenarios after it
    request = CheckRequest.from_dict(job["request"])
    problem = Problem.load(job.get("problem"))
    device = job["device"]
    fresh_seed = job.get("fresh_seed") or secrets.randbelow(2**31 - 1) + 100
    anchors, anchor_versions, missing = {}, {}, {}
    if device.startswith("cuda"):
        loaded, anchor_versions, missing = problem.judge.load_anchors(request.anchors)
        anchors = {n: (loaded[n], anchor_versions[n]) for n in loaded}
    elif request.anchors:
        missing = {n: "anchors need a CUDA GPU" for n in request.anchors}
    problem.timing.rest_s = rest.rest_from_env(os.environ, problem.timing.rest_s)   # check() validated it
    gpu, versions = environment(device, anchor_versions)
    versions["timing"] = rest.timing_label(versions["timing"], problem.timing)
    cache = TimingCache(Path(request.cache_dir) if request.cache_dir else None, gpu, versions)
    cache.on_stage = lambda: emit("cached")     # staged: the parent merges it now (staged_cache.py)
    problem.timing.profile_samples = profile_samples_from_env(os.environ)   # check() validated it already
    problem.timing.rules = rep_count.rules_from_env(os.environ)             # so did it this
    if problem.timing.rules != rep_count.COST_SIZED:
        versions["timing_rules"] = problem.timing.rules        # an A/B of the proof says which rules it ran
    timer = Timer(device, problem.timing)
    scenarios = [problem.definition.scenario(r) for r in job["scenarios"]]
    BaselineRole(job, problem.tolerances, cache, None, device, problem.judge).preload_rows(scenarios)
    try:
        notices = enter_sandbox(job, cache, versions, anchors, problem)
    except (RuntimeError, OSError) as err:      # WORKBENCH_SANDBOX=require and a piece is missing, or no drop
        sys.stderr.write(f"sandbox: {err}\n")
        return 3
    emit("start", gpu=gpu, versions=versions, missing_anchors=missing, fresh_seed=fresh_seed, notices=notices,
         foreign_check=own_kernels.policy(device)[1])
    judged = resume_rows.judged_by_parent(job, sys.stdin)      # before the candidate's code is loaded
    scenarios = [s for s in scenarios if s.name not in judged]
    try:
        candidate = load_kernel(job["candidate"], problem) if job.get("candidate") else None   # None: warm
        baseline = load_kernel(job["baseline"], problem) if job.get("baseline") else None
    except OSError as err:
        emit("fatal", reason="launch_error", detail=f"cannot load the kernel library: {err}")
        return 3
    runner = ScenarioRun(job, problem, timer, cache, anchors, fresh_seed)
    stream = torch.cuda.Stream() if device.startswith("cuda") else None
    for s in scenarios:
        emit("begin", scenario=s.name)
        try:
            if stream is not None:
                with torch.cuda.stream(stream):
                    result = scenario_result(runner, s, candidate, baseline)
            else:
                result = scenario_result(runner, s, candidate, baseline)
        except RuntimeError as err:   # a CUDA error poisons the context: report and stop
            text = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
            emit("result", result=ScenarioResult(scenario=s.to_dict(), status=FAILED, reason="launch_error",
                                                 detail=text).to_dict())
            if "CUDA" in str(err) or "cuda" in str(err):
                emit("fatal", reason="launch_error", detail=f"CUDA context lost in {s.name}: {text}")
                return 3
            continue
        finally:
            if device.startswith("cuda"):
                torch.cuda.empty_cache()
        emit("result", result=result.to_dict(), spent=runner.spent,   # its cache entries are on disk already
             rows_s=runner.rows_s)
        if request.fail_fast and result.status == FAILED:
            break
    if runner.plans is not None:
        runner.plans.close()
    if timer.tare_us is not None:   # the in-graph event pair's zero offset, subtracted from every sample
        versions["timing_tare_us"] = round(timer.tare_us, 3)
    emit("done", gpu=gpu, versions=versions, foreign_check_s=round(runner.own.seconds, 3),
         foreign_calls=runner.own.calls)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception:
        sys.stderr.write(traceback.format_exc())
        code = 4
    sys.exit(code)
