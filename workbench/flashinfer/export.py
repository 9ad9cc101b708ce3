"""A run's evaluations as FlashInfer-Bench traces: one Trace per judged scenario, checked against the published
schema (schema.py) before it is written.

Each scenario is an instance of the FlashInfer-Bench definition its problem names (problem.py to_flashinfer: e.g.
`gemm_n4096_k4096` with axes {"M": 2048}); index tensors (ragged attention's indptr) are written beside the .jsonl
as safetensors. The evaluation maps the harness's verdict: passed -> PASSED (latency: the median device time;
reference: the problem's main anchor, else the original kernel), a wrong output (unwritten, nonfinite, mismatch,
stale, nondeterministic, large_scale, timed_mismatch, ...) -> INCORRECT_NUMERICAL, timeout -> TIMEOUT, a build that
failed or was forbidden -> COMPILE_ERROR, anything else (unsupported, out_of_bounds, inputs_modified, stream,
foreign_kernel, crash) -> RUNTIME_ERROR; the reason and its detail go in `log`. FlashInfer-Bench's correctness
figures are elementwise maxima this harness does not compute: they are NaN, and what it measured (rel L2 and max
|err| / max |ref| on the compared rows) is in `correctness.extra`. Skipped and static-only rows have no
evaluation to export: they are reported, not written.
"""
from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

from workbench.flashinfer import schema, tensors
from workbench.harness import problems

NUMERICAL = {"unwritten", "nonfinite", "mismatch", "lse_mismatch", "mismatch_original", "large_scale", "stale",
             "nondeterministic", "timed_mismatch"}
NAN = "NaN"                     # as pydantic writes it (ser_json_inf_nan="strings"), and reads it back


def _status(status: str, reason: str) -> str:
    if status == "passed":
        return "PASSED"
    if reason in ("build_failed", "forbidden"):
        return "COMPILE_ERROR"
    if reason == "timeout":
        return "TIMEOUT"
    return "INCORRECT_NUMERICAL" if reason in NUMERICAL else "RUNTIME_ERROR"


def _figure(value):
    return value if isinstance(value, (int, float)) and value == value else None


def _evaluation(row, status: str, result, main: str, note: str, ts: str) -> dict:
    env = {"hardware": (result.gpu or "unknown").replace(" ", "_"),
           "libs": {str(k): str(v) for k, v in sorted((result.versions or {}).items())}}
    log = f"workbench {result.problem}: {row.status if row else result.status}"
    if row is not None and row.reason:
        log += f" {row.reason}: {row.detail}"
    elif row is None:
        log += f": {result.error}"
    out = {"status": status, "environment": env, "timestamp": ts, "log": f"{log}; {note}"}
    if status in ("PASSED", "INCORRECT_NUMERICAL"):
        out["correctness"] = {"max_relative_error": NAN, "max_absolute_error": NAN, "extra": {
            "rel_l2_err": _figure(row.rel_l2_err), "max_abs_err_over_max_ref": _figure(row.max_abs_err),
            "compared": "sampled rows of the output against an fp32 reference (workbench verify.py)"}}
    if status == "PASSED":
        latency = row.stats.median_us / 1000.0
        ref_name = main if main in row.reference_stats else "original"
        ref = row.reference_stats.get(ref_name)
        ref_ms = ref.median_us / 1000.0 if ref is not None else 0.0
        out["performance"] = {"latency_ms": latency, "reference_latency_ms": ref_ms,
                              "speedup_factor": ref_ms / latency if ref_ms and latency else 0.0}
        out["log"] += (f"; reference: {ref_name if ref is not None else 'none timed'}; latency: median device time "
                       f"of {row.stats.n} samples ({row.stats.method or 'events'})")
    return out


def _blob(spec: dict, out: Path) -> dict:
    """Write a spec's index tensors beside the .jsonl; the inputs that point at them."""
    if not spec.get("tensors"):
        return {}
    digest = hashlib.sha256(json.dumps(spec["tensors"], sort_keys=True).encode()).hexdigest()[:16]
    folder = out.parent / f"{out.stem}_tensors"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec['definition']}_{digest}.safetensors"
    if not path.exists():
        tensors.write_ints(path, spec["tensors"])
    relative = path.relative_to(out.parent).as_posix()
    return {key: {"type": "safetensors", "path": relative, "tensor_key": key} for key in spec["tensors"]}


def traces_of(result, out: Path, ts: str, scenarios=None) -> tuple[list[dict], list[tuple[str, str]]]:
    """(FlashInfer-Bench traces of one SuiteResult, (scenario, why) for the rows that give none). `scenarios`:
    the suite's shapes, for a run that judged none (a failed build: COMPILE_ERROR on each)."""
    definition = problems.load(result.problem or None)
    to_flashinfer = getattr(definition.module, "to_flashinfer", None)
    if to_flashinfer is None:
        return [], [(result.suite, f"{definition.name} defines no to_flashinfer in its problem.py")]
    main, solution = definition.main_anchor, f"workbench-{definition.name}-{(result.kernel_sha or 'unknown')[:12]}"
    pairs = [(definition.scenario(r.scenario), r) for r in result.rows]
    if not result.rows and result.status in ("build_failed", "forbidden"):
        pairs = [(s, None) for s in scenarios or []]
    traces, skipped = [], []
    for shape, row in pairs:
        if row is not None and row.status in ("skipped", "static_only"):
            skipped.append((shape.name, f"{row.status}: no evaluation ({row.detail or 'not run'})"))
            continue
        if row is not None and row.status == "passed" and row.stats is None:
            skipped.append((shape.name, "verified but not timed (--no-timing): FlashInfer-Bench's PASSED needs a "
                                        "latency"))
            continue
        spec = to_flashinfer(shape)
        status = _status(row.status, row.reason) if row is not None else "COMPILE_ERROR"
        key = f"workbench:{result.eval_id or result.kernel_sha}:{shape.name}"
        trace = {"definition": spec["definition"], "solution": solution,
                 "workload": {"uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, key)), "axes": spec["axes"],
                              "inputs": {**spec["inputs"], **_blob(spec, out)}},
                 "evaluation": _evaluation(row, status, result, main, spec.get("note", ""), ts)}
        problems_found = schema.trace_problems(trace)
        if problems_found:        # our own output: a mapping that breaks the schema is a bug, not bad input
            raise RuntimeError(f"{shape.name}: the exported trace breaks FlashInfer-Bench's schema: {problems_found}")
        traces.append(trace)
    return traces, skipped
