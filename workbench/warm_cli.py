"""`workbench warm [--suite full] [--anchors fa3,cudnn,fa2] [--baseline other.cu]`: time the baseline and the
anchors once on this GPU, into the timing cache, so the first `workbench check` here pays only for its candidate.

Prints a progress line per scenario (with an ETA), then what it timed and what was cached already. Timings
already in the cache are not timed again, and a killed warm-up keeps what it finished: run it again to go on.
Exit codes: 0 done, 1 the baseline failed a scenario (or the worker crashed), 2 usage error or no GPU.
Every argument is checked before anything is built or created; without a GPU it says so in one line.
"""
from __future__ import annotations

import argparse
import sys

from workbench import validate
from workbench.arguments import Parser, UsageError, count, number, refuse
from workbench.harness.result import ANCHORS, CheckRequest

PROG = "workbench warm"


def parse_args(argv):
    p = Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", default="full", help="smoke | dev26 | full | path/to/suite.csv (default full)")
    p.add_argument("--anchors", default=",".join(ANCHORS),
                   help=f"comma list of {','.join(ANCHORS)} (default: all); those that do not import are named")
    p.add_argument("--baseline", default=None, help="the kernel speedups are measured against (default: the original)")
    p.add_argument("--arch", default="sm_90a", help="nvcc target, e.g. sm_90a or sm_100a")
    p.add_argument("--cache-dir", default=None, help="build and timing cache (default ~/.cache/workbench)")
    p.add_argument("--timeout", type=number(above=0, unit="seconds"), default=120.0,
                   help="hard limit per scenario, seconds")
    p.add_argument("--gpu", type=count(0), default=0, help="GPU index")
    return p.parse_args(argv)


def validate_request(args) -> tuple[str, ...]:
    """Everything checkable before anything is built; returns the anchors. Raises UsageError."""
    anchors = tuple(a.strip() for a in args.anchors.split(",") if a.strip())
    unknown = [a for a in anchors if a not in ANCHORS]
    if unknown:
        raise UsageError(f"--anchors: unknown anchor(s) {', '.join(unknown)}; choose from {', '.join(ANCHORS)}")
    if args.baseline is not None:
        validate.kernel(args.baseline, "--baseline", standin_ok=True)
    validate.suite(args.suite, warn=lambda line: print(f"{PROG}: warning: {line}", file=sys.stderr))
    validate.arch(args.arch)
    if args.cache_dir:
        validate.output_dir(args.cache_dir, "--cache-dir")
    return anchors


def report(result) -> list[str]:
    lines = []
    total = len(result.rows)
    before, timed, seconds = (result.timings.get(k, {}) for k in ("cached_before", "timed", "timed_s"))
    for role in before:
        lines.append(f"{role}: timed now {timed.get(role, 0)} of {total} ({seconds.get(role, 0.0):.1f} s), "
                     f"cached already {before[role]}")
    for row in result.failed:
        lines.append(f"FAILED {row.name}: {row.reason}: {row.detail}"[:300])
    lines.append(f"warm: {total} scenarios on {result.gpu or '-'} in {result.wall_s:.1f} s; "
                 + ("done" if result.status == "done" and not result.failed else result.status))
    return lines


def main(argv=None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        anchors = validate_request(args)
    except UsageError as err:
        return refuse(PROG, err)
    from workbench.harness.paths import ORIGINAL_KERNEL
    from workbench.harness.warm import NO_GPU, device_for, warm

    baseline = args.baseline or str(ORIGINAL_KERNEL)
    if not device_for(baseline):
        return refuse(PROG, NO_GPU)
    request = CheckRequest(kernel_path=baseline, suite=args.suite, baseline_path=baseline,
                           anchors=anchors, arch=args.arch, cache_dir=args.cache_dir,
                           scenario_timeout_s=args.timeout, gpu_index=args.gpu)
    result = warm(request, progress=lambda line: print(line, flush=True))
    if result.status == "no_gpu":
        return refuse(PROG, result.error)
    for line in report(result):
        print(line)
    if result.error:
        print(f"error: {result.error}")
    return 0 if result.status == "done" and not result.failed else 1


warm_main = main
