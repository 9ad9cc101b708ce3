"""The public entry point of the harness: check(request) -> SuiteResult.

Build (here, cached) -> evaluation worker (a fresh subprocess on one GPU) -> aggregate, suspicion flags,
stop predicate. A crashing or hanging candidate costs its worker, never the caller. On a machine without a
GPU the result is `static_only`: build, resource report and forbidden-library checks, and a plain sentence
saying that verification and timing need a CUDA GPU. The problem (harness/problems.py) is the request's, else the
one whose folder holds the kernel, else attention; the worker is told its folder.
"""
from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Optional

from workbench.harness import flags, problems, proc_tree, rep_count, rest, sandbox, worker_events
from workbench.harness.build import build_kernel, default_cache_dir
from workbench.harness.build_pair import concurrently
from workbench.harness.progress_cache import ProgressCache, rows_line, summary_line
from workbench.harness.resume_rows import ResumeRecord
from workbench.harness.paths import REPO_ROOT
from workbench.harness.problem import Problem
from workbench.harness.result import (FAILED, SKIPPED, STATIC_ONLY, CheckRequest, ScenarioResult, SuiteResult)
from workbench.harness.scenarios import Scenario, SuiteError, load_suite
from workbench.harness.stop import evaluate_stop
from workbench.harness.timing import EVENTS_DELAYED
from workbench.harness.timing_proof import profile_samples_from_env

WORKER_START_TIMEOUT_S = 240.0   # torch import, CUDA context, anchor imports
NO_GPU_MESSAGE = ("verification and timing need a CUDA GPU (none found here): ran the build, the resource report "
                  "and the forbidden-library checks only")

Progress = Callable[[str], None]


def gpu_available() -> bool:
    if os.environ.get("WORKBENCH_NO_GPU"):
        return False
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def resolve_problem(request: CheckRequest) -> Problem:
    """The request's problem, else the one whose folder holds the kernel, else attention (ProblemError: a
    SuiteError naming the folder)."""
    return Problem.load(request.problem or problems.infer(request.kernel_path) or None)


def _spec(path: str, request: CheckRequest, problem: Optional[Problem] = None):
    """('standin'|'so', path, sha, build) for a kernel path; build is None for stand-ins."""
    if path.startswith("standin:"):
        return {"kind": "standin", "path": path.split(":", 1)[1], "sha": path}, None
    include_root = request.include_root if path == request.kernel_path else None
    entry = problem.definition.entry_point if problem is not None else None
    build = build_kernel(path, arch=request.arch, timeout_s=request.build_timeout_s, cache_dir=request.cache_dir,
                         include_root=include_root, entry_point=entry)
    return {"kind": "so", "path": build.so_path, "sha": build.sha, "kernels": build.kernels}, build


class _WorkerStream:
    """Reads the worker's JSON lines on a thread so the caller can wait with a timeout."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._pump, args=(proc,), daemon=True)
        self.thread.start()

    def _pump(self, proc):
        while True:             # raw lines: worker_events.Protocol judges them (the candidate can write here)
            line = proc.stdout.readline(worker_events.LINE_CAP + 1)
            if not line:
                break
            if line.strip():
                self.lines.put(line.strip())
        self.lines.put(None)   # end of stream

    def next(self, timeout: float):
        return self.lines.get(timeout=timeout)


def _stderr_tail(path: str, lines: int = 3) -> str:
    try:
        with open(path, errors="replace") as handle:
            text = [l.strip() for l in handle.read().splitlines() if l.strip()]
    except OSError:
        return ""
    text = [l for l in text if not _NOISE.search(l)]
    return " | ".join(text[-lines:])[:800]


# torch's own warnings in a worker's stderr (the profiler's, printed on GPU machines) are not why it failed
_NOISE = re.compile(r"UserWarning: Warning: Profiler clears events|^_warn_once\(")


def run_worker(job: dict, scenarios: list[Scenario], timeout_s: float, progress: Progress,
               gpu_index: int = 0, eval_id: str = "") -> tuple[list[ScenarioResult], dict]:
    """Run one worker process over the scenarios, contained (sandbox.py); returns the rows and the worker's
    start info. A candidate's rows are recorded as they arrive, and an interrupted run's reused (resume_rows.py)."""
    contained = sandbox.plan("eval", sandbox.Limits(cpu_s=_cpu_budget_s(len(scenarios), timeout_s),
                                                    private_bytes=sandbox.private_cap_bytes()))
    # the cache folder resolved here, where the parent merges: the worker's HOME is its private one (child_env)
    cache_dir = Path(job["request"].get("cache_dir") or default_cache_dir())
    job = dict(job, sandbox=contained.to_dict(), request=dict(job["request"], cache_dir=str(cache_dir)))
    # caches the contained worker stages are merged by the trusted side as they are made (progress_cache.py)
    # (the private folder is a tmpfs the parent reaches through its fd while the worker runs: sandbox.staged_dir)
    timings = ProgressCache(job, scenarios, cache_dir,
                            sandbox.staged_dir(contained) / "cache" if contained.enabled else None)
    record = ResumeRecord(cache_dir, job, eval_id)      # inactive for `workbench warm`: no candidate rows
    job, info = dict(job, judged_after_start=record.active), {}
    try:
        rows, info = _run_worker(job, scenarios, timeout_s, progress, gpu_index, contained, timings, record)
    finally:
        timings.finish()        # the last staged entries, merged by the trusted side
        record.close(completed=bool(info.get("completed")))     # a run that judged everything leaves nothing
        sandbox.cleanup(contained)
    info["timings"] = timings.summary()
    return rows, info


def _cpu_budget_s(scenarios: int, timeout_s: float) -> int:
    """CPU seconds a worker may use: every scenario at its time limit on a few busy threads, plus start-up."""
    return int(600 + 4 * scenarios * timeout_s)


_NOTICES_SHOWN: set = set()


def _run_worker(job: dict, scenarios: list[Scenario], timeout_s: float, progress: Progress, gpu_index: int,
                contained, timings: ProgressCache, record: ResumeRecord) -> tuple[list[ScenarioResult], dict]:
    env = sandbox.child_env(dict(os.environ), contained)       # no API key reaches candidate code
    if job["device"].startswith("cuda") and gpu_index >= 0:   # < 0: a pool (Ray) already pinned the GPU
        env["CUDA_VISIBLE_DEVICES"] = str(gpu_index)
    env[proc_tree.PARENT_ENV] = str(os.getpid())              # the worker dies with this process (proc_tree.py)
    with tempfile.NamedTemporaryFile("w+", suffix=".stderr", delete=False) as err_file:
        err_path = err_file.name
    rows: dict[str, ScenarioResult] = {}
    info: dict = {}
    current: Optional[str] = None
    failure: Optional[tuple[str, str]] = None
    with open(err_path, "w") as err_handle:
        proc = subprocess.Popen(sandbox.worker_command(contained), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err_handle, text=True, env=env, cwd=str(REPO_ROOT),
                                pass_fds=sandbox.pass_fds(contained))
        proc.stdin.write(json.dumps(job) + "\n")   # stdin stays open for the judged scenarios (record.at_start)
        proc.stdin.flush()
        stream = _WorkerStream(proc)
        main = problems.load(job.get("problem")).main_anchor
        protocol = worker_events.Protocol(job["scenarios"])
        deadline = worker_events.Deadline(WORKER_START_TIMEOUT_S, timeout_s, len(scenarios))
        index, done, malformed = 0, False, ""
        while True:
            try:
                line = stream.next(timeout=max(0.1, deadline.remaining()))
            except queue.Empty:
                failure = ("timeout", deadline.why(WORKER_START_TIMEOUT_S))
                proc.kill()
                break
            if line is None:
                break
            try:
                event = protocol.accept(line)
            except worker_events.MalformedEvent as err:
                malformed = f"the worker wrote a malformed event ({err}); it was stopped"
                proc.kill()
                break
            kind = event["event"]
            if kind == "start":
                info = event
                for line in timings.start(event):
                    progress(line)
                reused = record.at_start(event, proc.stdin, progress)     # judged by an interrupted run
                protocol.exclude(reused)
                timings.skip(reused)
                rows.update(reused)
                info.update(record.summary())
                index, deadline.scenarios = len(reused), len(scenarios) - len(reused)
                deadline.started()
                for name, why in event["missing_anchors"].items():
                    progress(f"anchor {name} unavailable: {why}")
                if event["foreign_check"] != "all":
                    progress(f"foreign-kernel check: {event['foreign_check']}")
                for notice in event["notices"]:
                    if notice not in _NOTICES_SHOWN:      # once per process, not once per evaluation
                        _NOTICES_SHOWN.add(notice)
                        progress(notice)
            elif kind == "begin":
                current = event["scenario"]
                deadline.begin()
                timings.begin()
            elif kind == "cached":       # an entry staged: merged now, so a killed run keeps it
                timings.merge()
            elif kind == "result":
                row = protocol.row(event)
                rows[row.name] = row
                record.add(row)             # durable before its progress line: a kill after it keeps the row
                index += 1
                eta = timings.done(row.name, event.get("spent") or {}, event.get("rows_s") or {})
                progress(format_progress(index, len(scenarios), row, main) + (f"  {eta}" if eta else ""))
                current = None
            elif kind == "fatal":
                failure = (event["reason"], event["detail"])
            elif kind == "done":
                info.update(event)
                deadline.done()
                done = True
        if not proc.stdin.closed:
            proc.stdin.close()
        try:
            proc.wait(timeout=worker_events.EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stream.thread.join(timeout=10)      # the pipe is at its end once the worker is gone
        proc.stdout.close()
    tail = _stderr_tail(err_path)
    os.unlink(err_path)
    info["completed"] = done and not malformed
    if current and current not in rows:
        reason, detail = failure or ("crash", f"worker {sandbox.describe_exit(proc.returncode)}")
        if malformed:
            reason, detail = "crash", malformed
        elif reason != "timeout":
            reason = "crash"
            detail = f"worker {sandbox.describe_exit(proc.returncode)}" + (f": {tail}" if tail else "")
        scenario = next(s for s in scenarios if s.name == current)
        rows[current] = ScenarioResult(scenario=scenario.to_dict(), status=FAILED, reason=reason, detail=detail)
        index += 1
        progress(format_progress(index, len(scenarios), rows[current], main))
    elif malformed:
        info["error"] = malformed
    elif failure and failure[0] == "timeout" and not done:     # between scenarios: loading the library, say
        info["error"] = f"timeout: {failure[1]}"
    elif not info and proc.returncode:
        info["error"] = f"the evaluation worker failed to start ({sandbox.describe_exit(proc.returncode)}): {tail}"
    elif proc.returncode and not failure and "gpu" in info and not done:
        # died between scenarios, e.g. while loading the library (a constructor in the candidate's host code)
        info["error"] = (f"the evaluation worker {sandbox.describe_exit(proc.returncode)}"
                         + (f": {tail}" if tail else ""))
    lost_at = next((r.name for r in rows.values() if r.reason in ("crash", "timeout", "launch_error")
                    or (job["request"].get("fail_fast") and r.status == FAILED)), None)
    ordered = []
    for s in scenarios:
        if s.name in rows:
            ordered.append(rows[s.name])
        else:
            why = f"not run: the worker stopped after {lost_at}" if lost_at else "not run: the worker stopped"
            ordered.append(ScenarioResult(scenario=s.to_dict(), status=SKIPPED, reason="", detail=why))
    return ordered, info


def format_progress(index: int, total: int, row: ScenarioResult, main: str = "fa3") -> str:
    head = f"[{index:>3}/{total}] {row.name:<34}"
    if row.status != "passed":
        return f"{head} {row.status.upper()} {row.reason}: {row.detail}"[:200]
    if row.stats is None and row.reference_stats:     # `workbench warm`: no candidate, its references' times
        times = "  ".join(f"{name} {st.median_us:.1f} us" for name, st in row.reference_stats.items())
        return f"{head} passed  {times}"
    if row.stats is None:
        return f"{head} passed  rel err {row.rel_l2_err:.1e}  (not timed)"
    parts = [f"{head} passed", f"{row.stats.median_us:>9.1f} us", f"{row.tflops:>6.1f} TFLOP/s"]
    for name in ("original", main):
        x = row.speedup(name)
        if x:
            parts.append(f"x{x:.2f} {name}")
    if row.stats.call_us is not None:
        parts.append(f"(call {row.stats.call_us:.1f} us)")
    return "  ".join(parts)


def clocks_apart(row: ScenarioResult, fraction: float) -> bool:
    """The candidate and an implementation it is compared with were timed at SM clocks more than `fraction`
    apart (clocks are not locked; a cached anchor was timed in another run): that row's ratio carries the GPU's
    state, not only the kernels'. A timing remark, not a suspicion."""
    mine = row.stats.clock_mhz if row.stats is not None else None
    if not mine:
        return False
    return any(st.clock_mhz and abs(st.clock_mhz / mine - 1.0) > fraction for st in row.reference_stats.values())


def apply_flags(result: SuiteResult, problem: Problem, previous_best: Optional[float]) -> None:
    """Suspicion flags: reported, never failures. Each one is a reason to look before believing."""
    ceiling = float(problem.ceilings.get("bf16_tflops", 790.0))
    near = float(problem.flags.get("near_ceiling_fraction", 0.9))
    noisy = problem.timing.noisy_rel_spread
    clock_apart = float(problem.flags.get("clock_apart_fraction", 0.10))
    over_anchor = float(problem.flags.get("near_ceiling_over_best_anchor", 0.0))
    for row in result.rows:
        if row.stats is None:
            continue
        if flags.above_ceiling(row, ceiling, over_anchor):   # both: and faster than every anchor on the shape
            row.flags.append("above_ceiling")
        elif flags.near_ceiling(row, ceiling, near, over_anchor):
            row.flags.append("near_ceiling")
        if row.stats.rel_spread > noisy:
            row.flags.append("noisy")
        if row.stats.method == EVENTS_DELAYED:
            row.flags.append("not_graph_capturable")   # timed behind a GPU delay instead (row.stats.note: why)
        if clocks_apart(row, clock_apart):
            row.flags.append("clock_apart")
        shape = problems.scenario_from_dict(row.scenario)
        row.floor_us = problem.floor_us(shape)
        if row.stats.median_us < problem.memory_floor_us(shape):
            row.flags.append("below_memory_floor")
    for flag in ("above_ceiling", "near_ceiling", "below_memory_floor", "noisy", "not_graph_capturable", "clock_apart"):
        n = sum(flag in r.flags for r in result.rows)
        if n:
            result.flags.append(f"{flag}:{n}")
    jump = float(problem.flags.get("jump_over_previous_best", 1.5))
    current = result.geomean_vs("original")
    if previous_best and current == current and current > jump * previous_best:
        result.flags.append(f"jump:{current / previous_best:.2f}x_over_previous_best")


def check(request: CheckRequest, progress: Optional[Progress] = None, device: Optional[str] = None) -> SuiteResult:
    """Build, verify and time request.kernel_path on request.suite. Raises SuiteError for a bad suite."""
    progress = progress or (lambda line: None)
    start = time.monotonic()
    problem = resolve_problem(request)
    scenarios = load_suite(request.suite, problem=problem.definition)
    try:                      # the proof's switches, read by the worker: a bad value fails here, before any work
        profile_samples_from_env(os.environ)
        rep_count.rules_from_env(os.environ)
        rest.rest_from_env(os.environ, 0.0)
    except ValueError as err:
        raise SuiteError(str(err)) from None
    result = SuiteResult(kernel_path=request.kernel_path, kernel_sha="", suite=request.suite, status="error",
                         stop_expr=request.stop_expr, eval_id=uuid.uuid4().hex[:12], problem=problem.name)
    baseline_path = request.baseline_path or str(problem.definition.original)
    (candidate, build), (baseline, baseline_build) = concurrently(
        lambda: _spec(request.kernel_path, request, problem),
        lambda: (None, None) if baseline_path in ("", "none") else _spec(baseline_path, request, problem))
    result.kernel_sha = candidate["sha"]
    if build is not None:
        result.build = build.to_dict()
        progress(build.summary)
        if build.forbidden or not build.ok:
            result.status, result.error = ("forbidden" if build.forbidden else "build_failed"), build.summary
            return _finish(result, request, start, problem)
    if baseline_build is not None and not baseline_build.ok:
        result.error = f"the baseline kernel does not build: {baseline_build.summary}"
        return _finish(result, request, start, problem)

    if device is None:
        device = "cpu" if candidate["kind"] == "standin" else ("cuda" if gpu_available() else "")
    if not device:
        result.status, result.error = STATIC_ONLY, NO_GPU_MESSAGE
        result.rows = [ScenarioResult(scenario=s.to_dict(), status=STATIC_ONLY) for s in scenarios]
        progress(NO_GPU_MESSAGE)
        return _finish(result, request, start, problem)
    if baseline is not None and baseline["kind"] == "so" and device == "cpu":
        baseline = {"kind": "standin", "path": "slow_correct", "sha": "standin:slow_correct"}
    job = {"request": request.to_dict(), "candidate": candidate, "baseline": baseline, "device": device,
           "scenarios": [s.to_dict() for s in scenarios], "problem": str(problem.definition.folder)}
    rows, info = run_worker(job, scenarios, request.scenario_timeout_s, progress, request.gpu_index, result.eval_id)
    result.resumed_rows, result.resumed_from = info.get("resumed_rows", 0), info.get("resumed_from", "")
    if summary_line(info["timings"]):
        progress(summary_line(info["timings"]))
    if rows_line(info["timings"]):
        progress(rows_line(info["timings"]))
    result.rows, result.gpu, result.versions = rows, info.get("gpu", ""), info.get("versions", {})
    if info.get("error"):
        result.status, result.error = "crashed", info["error"]
    else:
        result.status = "evaluated"
    applied = info.get("foreign_check", "all").split(":")[0].split(" ")[0]
    if applied != "all":   # a result judged without (all of) the foreign-kernel check says so
        result.flags.append(f"foreign_check:{applied}")
    if "foreign_calls" in info and os.environ.get("WORKBENCH_FOREIGN_CHECK"):   # measuring the check: its cost
        progress(f"foreign-kernel check: {info['foreign_calls']} call(s) recorded, {info['foreign_check_s']:.1f} s")
    apply_flags(result, problem, request.previous_best)
    return _finish(result, request, start, problem)


def _finish(result: SuiteResult, request: CheckRequest, start: float, problem: Problem) -> SuiteResult:
    result.wall_s = time.monotonic() - start
    if request.stop_expr and result.status == "evaluated":
        result.stop_met = evaluate_stop(request.stop_expr, result.stop_variables())
    elif request.stop_expr:
        result.stop_met = False
    return result
