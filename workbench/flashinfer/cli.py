"""`workbench suite from-flashinfer DIR` and `workbench export --flashinfer`: production shapes in, comparable
results out (FlashInfer-Bench's formats; workloads.py and export.py say how each maps).

    workbench suite from-flashinfer fi_run/ --problem gemm_bf16         # -> kernels/gemm_bf16/suites/flashinfer.csv
    workbench check kernels/gemm_bf16/ladder/02_wgmma_tma.cu --suite flashinfer
    workbench export --flashinfer data/traces --session check-3f9c2a1b7d4e -o gemm.jsonl
    workbench export --flashinfer --result run.json -o gemm.jsonl        # a `workbench check --json` file

Files and lines that give no scenario (or no trace) are listed with why; bad input (no such folder, nothing
usable in it, an output that exists or cannot be written) is one line, exit 2, and nothing is created.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from workbench import validate
from workbench.arguments import Parser, UsageError, refuse

SKIPS_SHOWN = 40


def _say_skipped(skipped: list, what: str) -> None:
    """One line per file and reason (a file's lines skipped for one reason, e.g. an op_type no problem here covers,
    are counted, not listed), at most SKIPS_SHOWN lines."""
    groups: dict = {}
    for where, why in skipped:
        path, _, line = where.rpartition(":")
        key = (path if path and line.isdigit() else where, why)
        groups.setdefault(key, []).append(where)
    for (where, why), members in list(groups.items())[:SKIPS_SHOWN]:
        many = f" ({len(members)} lines)" if len(members) > 1 else (f":{members[0].rpartition(':')[2]}"
                                                                   if members[0] != where else "")
        print(f"skipped {where}{many}: {why}")
    if len(groups) > SKIPS_SHOWN:
        print(f"... and {len(groups) - SKIPS_SHOWN} more {what} skipped")


# ---- workbench suite from-flashinfer -----------------------------------------------------------------------------
def suite_main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench suite", description="make a suite CSV from production shapes")
    parser.add_argument("action", choices=("from-flashinfer",), help="from-flashinfer: FlashInfer-Bench workload files")
    parser.add_argument("folder", type=Path, help="definitions (*.json) and workloads (*.jsonl) of a serving run")
    parser.add_argument("--problem", default=None, help="the problem whose operations to take (default attn_fwd)")
    parser.add_argument("-o", "--out", type=Path, default=None,
                        help="the suite CSV (default: the problem's suites/flashinfer.csv)")
    parser.add_argument("--force", action="store_true", help="replace --out when it exists")
    parser.add_argument("--any-dtype", action="store_true",
                        help="keep the shapes of fp16/fp32/fp8 workloads too (the suite is bf16: the same work)")
    args = parser.parse_args(argv)
    try:
        return _suite(args)
    except UsageError as err:
        return refuse("workbench suite", err)


def _suite(args) -> int:
    from workbench.flashinfer.workloads import Reader
    from workbench.harness.scenarios import write_suite

    problem = validate.problem(args.problem)
    if not args.folder.is_dir():
        raise UsageError(f"DIR: {str(args.folder)!r} is not a folder; pass the folder of a serving run's "
                         "FlashInfer-Bench files (definitions/*.json, workloads/*.jsonl)")
    out = args.out or problem.suites_dir / "flashinfer.csv"
    if out.exists() and not args.force:
        raise UsageError(f"--out: {out} exists; pass --force to replace it or --out elsewhere")
    validate.output_file(out, "--out")
    imported = Reader(args.folder, problem, any_dtype=args.any_dtype).read()
    if not imported.scenarios:
        first = f"; first: {imported.skipped[0][0]}: {imported.skipped[0][1]}" if imported.skipped else ""
        raise UsageError(f"DIR: no workload in {args.folder} is one {problem.name} covers ({imported.definitions} "
                         f"definitions, {imported.workloads} workloads, {len(imported.skipped)} skipped{first})")
    _say_skipped(imported.skipped, "files or lines")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.tmp")
    write_suite(staging, imported.scenarios, problem=problem)
    staging.replace(out)
    many = sum(n > 1 for n in imported.stands_for.values())
    print(f"wrote {out}: {len(imported.scenarios)} {problem.name} scenarios from {imported.workloads} workloads of "
          f"{imported.definitions} definitions ({many} shapes seen more than once); {len(imported.skipped)} skipped")
    print(f"  workbench check {problem.original} --suite {out}")
    return 0


# ---- workbench export --flashinfer --------------------------------------------------------------------------------
def export_main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench export", description="a run's evaluations in another ecosystem's format")
    parser.add_argument("--flashinfer", action="store_true", required=True,
                        help="as FlashInfer-Bench traces (.jsonl), the only format so far")
    parser.add_argument("traces", nargs="?", type=Path, help="a trace root (e.g. data/traces)")
    parser.add_argument("--session", default=None, help="the session (campaign, `check-<eval id>`) to export")
    parser.add_argument("--eval", dest="eval_id", default=None, help="only this harness run (eval_id)")
    parser.add_argument("--result", type=Path, default=None, help="a SuiteResult JSON (`workbench check --json`)")
    parser.add_argument("--include-standins", action="store_true",
                        help="export CPU stand-in rows too (never measurements; tests and demos)")
    parser.add_argument("-o", "--out", type=Path, required=True, help="the traces .jsonl to write")
    args = parser.parse_args(argv)
    try:
        return _export(args)
    except UsageError as err:
        return refuse("workbench export", err)


def _results(args) -> list[tuple[object, str, list]]:
    """(SuiteResult, ISO timestamp, the suite's scenarios) per harness run asked for; UsageError when none."""
    from workbench.harness import problems
    from workbench.harness.result import SuiteResult
    from workbench.harness.scenarios import load_suite
    from workbench.traces.sources import is_standin_result

    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if (args.result is None) == (args.traces is None):
        raise UsageError("pass a trace root or --result FILE.json (one of them)")
    if args.result is not None:
        try:
            result = SuiteResult.from_dict(json.loads(validate.text_file(args.result, "--result", "result file")))
        except (ValueError, TypeError, KeyError) as err:
            raise UsageError(f"--result: {args.result} is not a `workbench check --json` file ({err})") from None
        runs = [(result, now)]
    else:
        runs = _runs_from_traces(args)
    if not args.include_standins:
        runs = [(r, ts) for r, ts in runs if not is_standin_result(r.kernel_path, r.gpu, r.versions)]
        if not runs:
            raise UsageError("every run asked for is a CPU stand-in's (not a measurement); pass --include-standins "
                             "to export them anyway")
    out = []
    for result, ts in runs:
        try:
            shapes = load_suite(result.suite, problem=problems.load(result.problem or None))
        except Exception:         # a suite gone since: only a run that judged nothing needs it
            shapes = []
        out.append((result, ts, shapes))
    return out


def _runs_from_traces(args) -> list:
    import pandas as pd

    from workbench.harness.result import CheckRequest
    from workbench.traces.rows import result_from_rows
    from workbench.traces.writer import read_table

    if not args.traces.is_dir():
        raise UsageError(f"TRACES: {str(args.traces)!r} is not a trace root (expected <root>/evaluations/...)")
    rows = read_table(args.traces, "evaluations")
    if args.session:
        rows = rows[rows["session_id"] == args.session]
    if args.eval_id:
        rows = rows[rows["eval_id"] == args.eval_id]
    if rows.empty:
        what = " and ".join(x for x in (f"session {args.session}" if args.session else "",
                                        f"eval {args.eval_id}" if args.eval_id else "") if x) or "any run"
        raise UsageError(f"TRACES: {args.traces} holds no evaluation rows of {what}; `workbench report` lists sessions")
    runs = []
    for eval_id, group in rows.groupby("eval_id", sort=False):
        first = group.iloc[0]
        result = result_from_rows(group, CheckRequest(kernel_path=str(first.kernel_sha), suite=first.suite))
        result.eval_id = str(eval_id)
        result.kernel_path = "standin:" + str(first.kernel_sha) if bool(first.is_standin) else str(first.kernel_sha)
        ts = pd.Timestamp(group["ts"].min()).strftime("%Y-%m-%dT%H:%M:%SZ") if group["ts"].notna().any() else ""
        runs.append((result, ts or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")))
    return runs


def _export(args) -> int:
    from workbench.flashinfer.export import traces_of

    validate.output_file(args.out, "-o/--out")
    runs = _results(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{args.out.stem}.", dir=args.out.parent))
    try:
        traces, skipped = [], []
        for result, ts, shapes in runs:
            got, why = traces_of(result, staging / args.out.name, ts, shapes)
            traces += got
            skipped += why
        _say_skipped(skipped, "scenarios")
        if not traces:
            raise UsageError(f"nothing to export: every scenario of the {len(runs)} run(s) was skipped")
        (staging / args.out.name).write_text("".join(json.dumps(t, allow_nan=False) + "\n" for t in traces))
        blobs = staging / f"{args.out.stem}_tensors"
        if blobs.exists():
            target = args.out.parent / blobs.name
            shutil.rmtree(target, ignore_errors=True)
            blobs.rename(target)
        (staging / args.out.name).replace(args.out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    print(f"wrote {args.out}: {len(traces)} FlashInfer-Bench traces from {len(runs)} harness run(s), checked "
          f"against the published schema; {len(skipped)} scenarios skipped")
    return 0


if __name__ == "__main__":
    sys.exit(suite_main())
