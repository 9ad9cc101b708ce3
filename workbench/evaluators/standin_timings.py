"""CPU stand-in evaluators: SuiteResults without a GPU, for tests, demos and UI development.

They take a CheckRequest like workbench.harness.check.check and return a SuiteResult of the same shape, with
made-up but consistent timings: every scenario of the suite runs at `speedup` times the original kernel, and
the problem's main anchor (FA3 for attention, cuBLAS for the GEMM) at `FA3_OVER_ORIGINAL` times the original.
The problem is the request's, as the harness finds it. Nothing here builds or runs a kernel.

* KnobEvaluator: the speedup is a deterministic function of the `@knob` values in the kernel text, so the
  offline agent has a landscape to search (`workbench campaign --evaluator standin` for a CPU demo).
* SequenceEvaluator: the speedups (and flags) of successive runs are given up front, so a test can make a
  stall, a jump or a suspicion flag happen at an exact harness run.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Callable, Optional

ORIGINAL_TFLOPS = 20.0                  # made-up throughput of the original kernel
FA3_OVER_ORIGINAL = 8.0
EMPTY_CALL_US = 2.0                     # made-up time of a call with no FLOPs (a GEMM with K = 0): a launch


def standin_result(request, speedup: Optional[float], flags=(), row_flags=()):
    """A SuiteResult where the candidate runs at `speedup` x the original (None: every scenario fails)."""
    from workbench.harness import problems
    from workbench.harness.result import ScenarioResult, SuiteResult
    from workbench.harness.scenarios import load_suite
    from workbench.harness.stop import evaluate_stop

    text = Path(request.kernel_path).read_text() if Path(request.kernel_path).exists() else request.kernel_path
    sha = hashlib.sha256(text.encode()).hexdigest()
    problem = problems.load(getattr(request, "problem", "") or problems.infer(request.kernel_path) or None)
    rows = []
    for s in load_suite(request.suite, problem=problem):
        original_us = s.flops() / (ORIGINAL_TFLOPS * 1e12) * 1e6 or EMPTY_CALL_US   # 0 us: speedups divide by 0
        refs = {"original": _stats(original_us), problem.main_anchor: _stats(original_us / FA3_OVER_ORIGINAL)}
        if speedup is None:
            rows.append(ScenarioResult(scenario=s.to_dict(), status="failed", reason="wrong_output",
                                       detail="rel L2 error 0.4 > 1e-2 (stand-in)", rel_l2_err=0.4,
                                       reference_stats=refs))
        else:
            rows.append(ScenarioResult(scenario=s.to_dict(), status="passed", rel_l2_err=2.3e-3, max_abs_err=8e-3,
                                       stats=_stats(original_us / speedup), reference_stats=refs,
                                       flags=list(row_flags)))
    result = SuiteResult(kernel_path=request.kernel_path, kernel_sha=sha, suite=request.suite, status="evaluated",
                         rows=rows, gpu="stand-in (CPU)", versions={"standin": "1"}, flags=list(flags),
                         stop_expr=request.stop_expr, problem=problem.name)
    result.stop_met = evaluate_stop(request.stop_expr, result.stop_variables()) if request.stop_expr else False
    return result


def _stats(us: float):
    from workbench.harness.result import Stats
    return Stats(median_us=us, p10_us=us * 0.98, p90_us=us * 1.02, mean_us=us, stderr_us=us * 0.002, n=20)


def default_landscape(config: dict) -> float:
    """A deterministic speedup for a knob configuration: each (knob, value) adds a fixed factor."""
    factor = 1.0
    for name, value in config.items():
        digest = hashlib.sha256(f"{name}={value}".encode()).digest()
        factor *= 0.85 + digest[0] / 255 * 0.6          # 0.85 .. 1.45 per knob value
    return factor


@functools.lru_cache(maxsize=8)
def original_knobs(original: Path) -> dict:
    """The knob values of a problem's original.cu: the configuration every stand-in speedup is against."""
    from workbench.knobs import parse_knobs

    try:
        return {n: k["value"] for n, k in parse_knobs(original.read_text()).items()}
    except OSError:
        return {}


def _original_of(request) -> Path:
    """The original kernel of the request's problem (attention's when the request names none)."""
    from workbench.harness import problems

    return problems.load(getattr(request, "problem", "") or problems.infer(request.kernel_path) or None).original


class KnobEvaluator:
    def __init__(self, landscape: Callable[[dict], Optional[float]] = default_landscape):
        self.landscape = landscape
        self.requests = []

    def __call__(self, request):
        from workbench.knobs import parse_knobs

        self.requests.append(request)
        knobs = parse_knobs(Path(request.kernel_path).read_text())
        config = {n: k["value"] for n, k in knobs.items()}
        # the original's own configuration is the original: x1 against itself, whatever the landscape says
        speedup = 1.0 if config and config == original_knobs(_original_of(request)) else self.landscape(config)
        return standin_result(request, speedup)


class SequenceEvaluator:
    """Run i returns speedups[i] (the last one repeats); `flags[i]` are suite flags of run i."""

    def __init__(self, speedups: list, flags: dict | None = None):
        self.speedups, self.flags = list(speedups), dict(flags or {})
        self.requests = []

    def __call__(self, request):
        i = len(self.requests)
        self.requests.append(request)
        speedup = self.speedups[min(i, len(self.speedups) - 1)]
        return standin_result(request, speedup, flags=self.flags.get(i, ()))
