"""FlashInfer-Bench's published schema (the `flashinfer-bench` package's flashinfer_bench/data models, version 0.1.2,
and its docs, flashinfer-trace/{definition,workload,trace}.mdx), as checks that need no pydantic: every file this
workbench reads is checked before it is used and every trace it writes before it is written.

Definition: name, op_type (non-empty strings), axes {name: {"type": "const", "value": int >= 0} | {"type": "var"}},
inputs and outputs {name: {"shape": [axis names] | null, "dtype": string}}, reference (string).
Workload: uuid (non-empty), axes {name: int >= 0}, inputs {name: {"type": "random"} | {"type": "scalar", "value":
int | float | bool} | {"type": "safetensors", "path": non-empty, "tensor_key": non-empty}}.
Trace: definition (non-empty), workload, solution (string or null), evaluation (null, or status, environment
{hardware: non-empty, libs: {string: string}}, timestamp (non-empty), log, correctness {max_relative_error,
max_absolute_error: >= 0 or NaN, extra: object | null}, performance {latency_ms, reference_latency_ms,
speedup_factor: >= 0}); PASSED has correctness and performance, INCORRECT_NUMERICAL correctness only, every other
status neither.
"""
from __future__ import annotations

import math

STATUSES = ("PASSED", "INCORRECT_SHAPE", "INCORRECT_NUMERICAL", "INCORRECT_DTYPE", "RUNTIME_ERROR",
            "COMPILE_ERROR", "TIMEOUT")


def _text(value) -> bool:
    return isinstance(value, str) and bool(value)


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value, nan_ok: bool = False) -> bool:
    if isinstance(value, str) and nan_ok and value in ("NaN", "nan"):
        return True            # pydantic's ser_json_inf_nan="strings" writes NaN so
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    return (nan_ok and math.isnan(value)) or value >= 0


def definition_problems(d) -> list[str]:
    if not isinstance(d, dict):
        return ["a definition is a JSON object"]
    out = [f"{k} must be a non-empty string" for k in ("name", "op_type") if not _text(d.get(k))]
    axes = d.get("axes")
    if not isinstance(axes, dict) or not axes:
        out.append("axes must be an object of axis definitions")
    else:
        for name, axis in axes.items():
            kind = axis.get("type") if isinstance(axis, dict) else None
            if kind == "const" and not _count(axis.get("value")):
                out.append(f"axis {name}: a const axis needs an integer value >= 0")
            elif kind not in ("const", "var"):
                out.append(f"axis {name}: type must be const or var")
    for group in ("inputs", "outputs"):
        specs = d.get(group)
        if not isinstance(specs, dict):
            out.append(f"{group} must be an object of tensor specs")
            continue
        for name, spec in specs.items():
            if not isinstance(spec, dict) or not _text(spec.get("dtype")):
                out.append(f"{group}.{name}: needs a dtype")
            elif spec.get("shape") is not None and not (isinstance(spec["shape"], list)
                                                        and all(isinstance(a, str) for a in spec["shape"])):
                out.append(f"{group}.{name}: shape must be a list of axis names or null")
    if not isinstance(d.get("reference"), str):
        out.append("reference must be a string")
    return out


def workload_problems(w) -> list[str]:
    if not isinstance(w, dict):
        return ["a workload is a JSON object"]
    out = [] if _text(w.get("uuid")) else ["uuid must be a non-empty string"]
    axes, inputs = w.get("axes"), w.get("inputs")
    if not isinstance(axes, dict) or not all(isinstance(k, str) and _count(v) for k, v in axes.items()):
        out.append("axes must map axis names to integers >= 0")
    if not isinstance(inputs, dict):
        return out + ["inputs must be an object of input specs"]
    for name, spec in inputs.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind == "scalar" and not isinstance(spec.get("value"), (int, float, bool)):
            out.append(f"inputs.{name}: a scalar input needs a number or boolean value")
        elif kind == "safetensors" and not (_text(spec.get("path")) and _text(spec.get("tensor_key"))):
            out.append(f"inputs.{name}: a safetensors input needs path and tensor_key")
        elif kind not in ("random", "scalar", "safetensors"):
            out.append(f"inputs.{name}: type must be random, scalar or safetensors")
    return out


def _evaluation_problems(e) -> list[str]:
    if not isinstance(e, dict):
        return ["evaluation must be an object or null"]
    out = []
    status = e.get("status")
    if status not in STATUSES:
        out.append(f"evaluation.status {status!r} is not one of {', '.join(STATUSES)}")
    env = e.get("environment")
    if not isinstance(env, dict) or not _text(env.get("hardware")):
        out.append("evaluation.environment needs a non-empty hardware")
    elif not isinstance(env.get("libs", {}), dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                            for k, v in env.get("libs", {}).items()):
        out.append("evaluation.environment.libs must map names to version strings")
    if not _text(e.get("timestamp")):
        out.append("evaluation.timestamp must be a non-empty string")
    if not isinstance(e.get("log", ""), str):
        out.append("evaluation.log must be a string")
    correctness, performance = e.get("correctness"), e.get("performance")
    if correctness is not None:
        if not isinstance(correctness, dict) or not all(_number(correctness.get(k, 0.0), nan_ok=True)
                                                        for k in ("max_relative_error", "max_absolute_error")):
            out.append("evaluation.correctness: errors must be numbers >= 0 or NaN")
        elif not isinstance(correctness.get("extra"), (dict, type(None))):
            out.append("evaluation.correctness.extra must be an object or null")
    if performance is not None and (not isinstance(performance, dict) or not all(
            _number(performance.get(k, 0.0)) for k in ("latency_ms", "reference_latency_ms", "speedup_factor"))):
        out.append("evaluation.performance: latencies and speedup must be numbers >= 0")
    wants = {"PASSED": (True, True), "INCORRECT_NUMERICAL": (True, False)}.get(status, (False, False))
    if (correctness is not None, performance is not None) != wants:
        out.append(f"evaluation with status {status} must {'' if wants[0] else 'not '}include correctness and "
                   f"must {'' if wants[1] else 'not '}include performance")
    return out


def trace_problems(t) -> list[str]:
    """Why `t` (one line of a traces .jsonl) is not a FlashInfer-Bench Trace; [] when it is one."""
    if not isinstance(t, dict):
        return ["a trace is a JSON object"]
    out = [] if _text(t.get("definition")) else ["definition must be a non-empty string"]
    out += [f"workload: {p}" for p in workload_problems(t.get("workload"))]
    if t.get("solution") is not None and not isinstance(t.get("solution"), str):
        out.append("solution must be a string or null")
    if t.get("evaluation") is not None:
        out += _evaluation_problems(t["evaluation"])
    return out
