"""`workbench check KERNEL.cu --suite dev26 [--baseline ...] [--anchors fa3,cudnn] [--stop EXPR] [--json PATH]`

The problem is the one whose folder holds KERNEL (kernels/gemm_bf16/ladder/01_mma_sync.cu is the GEMM's), or
--problem NAME|DIR (a stand-in or a file elsewhere), else attention; the suite, anchors and baseline default to
the problem's.

Prints a progress line per scenario, then the table and `key: value` geomean lines, and last one
`workbench-result: {json}` line for programs (harness/result_line.py). Exit codes:
0 stop condition met, 3 evaluated but not met, 1 candidate failed (build or verification),
2 usage or environment error (bad suite, no GPU for verification and timing).

A check that is interrupted (killed, Ctrl-C, a CUDA error) keeps the rows it finished; the same check run again
judges only the rest and says "resume: N of M scenarios from the interrupted run of DATE" (--no-resume: all).

Every argument is checked before anything is built (validate.py): a bad suite, stop predicate, kernel path or
output path costs nothing and leaves nothing behind. A CPU stand-in's rows (`standin:NAME`) are written to the
trace tables only when --traces names a folder: they are never measurements and must not sit beside GPU runs.
"""
from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
import time
from pathlib import Path

from workbench import cli, validate
from workbench.arguments import Parser, UsageError, count, number, refuse
from workbench.harness.result import ANCHORS, FAILED, CheckRequest, SuiteResult, exit_code
from workbench.harness.result_line import format_result_line
from workbench.harness.scenarios import SuiteError
from workbench.traces.rows import rows_from_result
from workbench.traces.sources import is_standin_result

DEFAULT_STOP = "all_correct"
DEFAULT_TRACES = "data/traces"


def parse_args(argv):
    p = Parser(prog="workbench check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kernel", help="candidate .cu file (or standin:NAME for a CPU stand-in)")
    p.add_argument("--problem", default=None, help="problem name under kernels/ or a problem folder (default: the "
                                                   "kernel's folder's, else attn_fwd)")
    p.add_argument("--suite", default=None, help="smoke | dev26 | full | path/to/suite.csv (default: the problem's, "
                                                 "dev26 for attention)")
    p.add_argument("--baseline", default=None, help="kernel speedups are measured against (default: the original)")
    p.add_argument("--anchors", default=None,
                   help=f"comma list of the problem's anchors (attention: {','.join(ANCHORS)}); those that do not "
                        "import are named and skipped (default: all)")
    p.add_argument("--stop", default=DEFAULT_STOP, help=f"stop predicate (default {DEFAULT_STOP!r})")
    p.add_argument("--previous-best", type=number(above=0), default=None,
                   help="best geomean vs original so far (jump flag)")
    p.add_argument("--arch", default="sm_90a", help="nvcc target, e.g. sm_90a or sm_100a")
    p.add_argument("--json", default=None, help="write the full SuiteResult as JSON here")
    p.add_argument("--traces", default=None,
                   help=f"append evaluation rows here ('' to skip; default {DEFAULT_TRACES}, except for a CPU "
                        "stand-in, whose rows are written only where --traces says)")
    p.add_argument("--cache-dir", default=None, help="build and timing cache (default ~/.cache/workbench)")
    p.add_argument("--timeout", type=number(above=0, unit="seconds"), default=120.0,
                   help="hard limit per scenario, seconds")
    p.add_argument("--gpu", type=count(0), default=0, help="GPU index")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first failing scenario")
    p.add_argument("--no-timing", action="store_true", help="verify only (no timing, no speedups)")
    p.add_argument("--no-resume", action="store_true",
                   help="judge every scenario, even those an interrupted run of this same check (same kernel build, "
                        "baseline, anchors, GPU and versions) finished; by default they are reused and the progress "
                        "says so; a run that completes keeps nothing to reuse (also: WORKBENCH_NO_RESUME=1)")
    p.add_argument("--campaign", metavar="ID", help="judge KERNEL inside campaign ID (artifact, trace rows, "
                   "questions): see `workbench check KERNEL --campaign ID --help`")
    return p.parse_args(argv)


def _fmt(value, spec: str, empty: str = "-") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return empty
    return format(value, spec)


def format_table(result: SuiteResult) -> str:
    """device us: the median device time (timing.py); call us: wall time of one plain call until its GPU work
    is done, host overhead included, never part of a speedup or geomean. `x FA3`: the problem's main anchor."""
    from workbench.harness import problems

    main = problems.load(result.problem).main_anchor
    label = f"x {main.upper()}"
    width = max(7, len(label))
    header = (f"{'scenario':<34} {'status':<22} {'rel err':>8} {'device us':>10} {'TFLOP/s':>8} {'x orig':>8} "
              f"{label:>{width}} {'call us':>9}")
    lines = [header, "-" * len(header)]
    for r in result.rows:
        status = r.status if r.status != FAILED else f"FAIL {r.reason}"
        if r.flags:
            status += " !" + ",".join(r.flags)
        lines.append(f"{r.name[:34]:<34} {status[:22]:<22} {_fmt(r.rel_l2_err, '.1e'):>8} "
                     f"{_fmt(r.stats.median_us if r.stats else None, '.1f'):>10} {_fmt(r.tflops, '.1f'):>8} "
                     f"{_fmt(r.speedup('original'), '.2f'):>8} {_fmt(r.speedup(main), '.3f'):>{width}} "
                     f"{_fmt(r.stats.call_us if r.stats else None, '.1f'):>9}")
    return "\n".join(lines)


def timing_lines(result: SuiteResult) -> list[str]:
    """How each implementation was timed; one note per implementation and reason it could not be captured
    into a CUDA graph, with the scenarios it concerns."""
    methods: dict = {}
    notes: dict = {}
    for r in result.rows:
        for name, st in [("candidate", r.stats), *r.reference_stats.items()]:
            if st is None:
                continue
            method = st.method or "per_call_events"       # figures recorded before device timing
            methods.setdefault(name, {}).setdefault(method, 0)
            methods[name][method] += 1
            if st.note:
                notes.setdefault((name, st.note), []).append(r.name)
    if not methods:
        return []
    lines = ["timing_method: " + ", ".join(f"{name} " + "/".join(f"{m} {n}" for m, n in counts.items())
                                           for name, counts in methods.items())]
    for (name, note), scenarios in notes.items():
        where = ", ".join(scenarios[:4]) + (f" and {len(scenarios) - 4} more" if len(scenarios) > 4 else "")
        lines.append(f"note: {name}: {note} ({len(scenarios)} scenarios: {where})")
    return lines


def format_summary(result: SuiteResult) -> str:
    counts = result.counts()
    lines = [f"kernel: {result.kernel_path} (sha {result.kernel_sha[:12]})",
             f"suite: {result.suite}  gpu: {result.gpu or '-'}  "
             f"wall_s: {result.wall_s:.{1 if result.wall_s >= 10 else 2}f}"]
    ran = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    lines.append(f"scenarios: {ran}" if ran else f"scenarios: none run ({result.status.replace('_', ' ')})")
    if result.resumed_rows:
        lines.append(f"resumed: {result.resumed_rows} of {len(result.rows)} scenarios from the interrupted run of "
                     f"{result.resumed_from} (their rows as it judged them; --no-resume judges every scenario)")
    geomeans = result.geomeans()
    for name, value in geomeans.get("overall", {}).items():
        per_cat = ", ".join(f"{c} {_fmt(g.get(name), '.3f')}" for c, g in geomeans.items() if c != "overall")
        lines.append(f"geomean_vs_{name}: {_fmt(value, '.3f')}" + (f"   ({per_cat})" if per_cat else ""))
    for r in result.rows:
        notes = {k: v for k, v in r.reference_errors.items() if isinstance(v, str)}
        for name, note in notes.items():
            lines.append(f"note: {r.name}: {name}: {note}")
    lines += timing_lines(result)
    if result.flags:
        lines.append("flags: " + ", ".join(result.flags))
    if result.status != "evaluated":
        return "\n".join(lines)      # nothing was verified: no verdict to print
    lines.append(f"all_correct: {str(result.all_correct).lower()}")
    if result.stop_expr:
        lines.append(f"stop: {result.stop_expr!r} -> {'met' if result.stop_met else 'not met'}")
    return "\n".join(lines)


def write_traces(result: SuiteResult, traces_dir: str) -> str:
    from workbench.traces.writer import TraceWriter

    session_id = f"check-{result.eval_id}"
    writer = TraceWriter(traces_dir, session_id)
    now = dt.datetime.now(dt.timezone.utc)
    writer.append("sessions", [{"session_id": session_id, "source": "workbench", "agent": "none", "started_at": now,
                                "ended_at": now, "kernel_path": result.kernel_path, "suite": result.suite,
                                "stop_expr": result.stop_expr, "gpu": result.gpu,
                                "is_standin": is_standin_result(result.kernel_path, result.gpu, result.versions),
                                "stop_reason": "stop met" if result.stop_met else result.status}])
    writer.append("evaluations", rows_from_result(result, session_id=session_id, call_id=None, ts=now))
    return session_id


def validate_request(args) -> tuple[str, ...]:
    """Everything checkable before the build (validate.py); returns the anchors and fills in the problem's
    defaults (args.problem becomes its definition). Raises UsageError."""
    args.problem = problem = validate.problem(args.problem, args.kernel)
    args.suite = args.suite or problem.default_suite
    validate.kernel(args.kernel, "kernel", standin_ok=True, problem=problem)
    if args.baseline not in (None, "", "none"):
        validate.kernel(args.baseline, "--baseline", standin_ok=True, problem=problem)
    known = problem.anchors
    anchors = tuple(a.strip() for a in (",".join(known) if args.anchors is None else args.anchors).split(",")
                    if a.strip())
    unknown = [a for a in anchors if a not in known]
    if unknown:
        raise UsageError(f"--anchors: unknown anchor(s) {', '.join(unknown)} for {problem.name}; choose from "
                         f"{', '.join(known)}")
    validate.stop(args.stop, anchors=known)
    validate.suite(args.suite, warn=lambda line: print(f"workbench check: warning: {line}", file=sys.stderr),
                   problem=problem)
    validate.output_file(args.json, "--json")
    validate.arch(args.arch)
    validate.output_dir(DEFAULT_TRACES if args.traces is None else args.traces, "--traces")
    if args.cache_dir:
        validate.output_dir(args.cache_dir, "--cache-dir")
    return anchors


def traces_target(args, result: SuiteResult) -> tuple[str, str]:
    """(folder to append the rows to or '', why not when '')."""
    if args.traces == "":
        return "", ""
    if args.traces is None and is_standin_result(result.kernel_path, result.gpu, result.versions):
        return "", (f"not written: a CPU stand-in's results are not measurements (pass --traces DIR to keep them "
                    f"apart from {DEFAULT_TRACES})")
    return args.traces or DEFAULT_TRACES, ""


def main(argv=None) -> int:
    # wall_s is the run's time as a person measures it: from `workbench check` starting, so the harness's
    # start-up (torch, CUDA) counts too; a cached build and no GPU can leave the check itself at 0.02 s
    started = cli.launched_at or time.monotonic()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.campaign is not None:       # the dispatcher sends `check --campaign` to the campaign's own command
        return refuse("workbench check", UsageError("--campaign: run it as `workbench check KERNEL --campaign ID`"))
    try:
        anchors = validate_request(args)
    except UsageError as err:
        return refuse("workbench check", err)
    request = CheckRequest(kernel_path=args.kernel, suite=args.suite, baseline_path=args.baseline, anchors=anchors,
                           stop_expr=args.stop, previous_best=args.previous_best, arch=args.arch,
                           cache_dir=args.cache_dir, scenario_timeout_s=args.timeout, gpu_index=args.gpu,
                           fail_fast=args.fail_fast, timing=not args.no_timing, problem=args.problem.ref,
                           resume=not args.no_resume)
    from workbench.harness.check import check      # here, not above: `check --help` and refusals need no torch

    try:
        result = check(request, progress=lambda line: print(line, flush=True))
    except SuiteError as err:
        return refuse("workbench check", err)
    result.wall_s = time.monotonic() - started
    if result.build.get("resources"):
        from workbench.harness.build import BuildResult
        print(BuildResult.from_dict(result.build).resource_table())
    if result.status == "evaluated":
        print(format_table(result))
    print(format_summary(result))
    if result.error:
        print(f"error: {result.error}")
    if args.json:
        Path(args.json).write_text(result.to_json())        # its folder exists: validate.output_file
    traces, why_not = traces_target(args, result)
    if traces and result.status == "evaluated":
        session_id = write_traces(result, traces)
        print(f"traces: {traces} (session {session_id})")
    elif why_not and result.status == "evaluated":
        print(f"traces: {why_not}")
    print(format_result_line(result), flush=True)      # last, for programs reading this stdout (result_line.py)
    return exit_code(result)


check_main = main
