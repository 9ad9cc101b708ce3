"""What the agent reads back from a tool: the harness result as one table, SASS opcode counts, ncu metrics.

Pure text in, text out (no tool runs here), so the formats are tested on recorded outputs.
"""
from __future__ import annotations

import json
import re

from workbench.campaign.main_anchor import LEGACY_MAIN, label

SASS_OPCODES = ("HGMMA", "HMMA", "FFMA", "FMUL", "FADD", "MUFU.EX2", "SHFL", "LDG", "STG", "LDS", "STS",
                "LDGSTS", "UTMALDG", "LDL", "STL", "BAR", "F2F", "PRMT")


def unknown_ncu_metrics(output: str, metrics: list) -> set:
    """Metrics ncu said it could not find (its wording varies by version, so match the names themselves)."""
    return {m for line in output.splitlines() if "fail" in line.lower() or "not found" in line.lower()
            or "invalid" in line.lower() for m in metrics if m in line}


# ---- formatting ----------------------------------------------------------------------------------------
def _fmt(x, spec=".2f", none="-"):
    return none if x is None or x != x else format(x, spec)


def _main_anchor(result) -> str:
    """The main anchor of the result's problem (FA3 for attention, cuBLAS for the GEMM)."""
    from workbench.traces.rows import main_anchor

    return main_anchor(getattr(result, "problem", "")) or LEGACY_MAIN


def format_result(result, sha: str) -> str:
    """The harness result as the agent sees it: one table, geomeans, flags, stop, and one JSON line."""
    lines = [f"kernel {sha[:12]} on {result.suite}: {result.status}" + (f" - {result.error}" if result.error else "")]
    if result.build and result.build.get("summary"):
        lines.append(f"build: {result.build['summary']}")
    main = _main_anchor(result)
    if result.rows:
        lines.append(f"{'scenario':<22} {'status':<11} {'rel_err':>8} {'us':>9} {'TFLOP/s':>8} {'x orig':>7} "
                     f"{'x ' + main:>6}  flags/detail")
        for r in result.rows:
            why = ": ".join(x for x in (r.reason, r.detail) if x)
            extra = ",".join(r.flags) + (f" {why}" if r.status != "passed" and why else "")
            lines.append(f"{r.name:<22} {r.status:<11} {_fmt(r.rel_l2_err, '.1e'):>8} "
                         f"{_fmt(r.stats.median_us if r.stats else None, '.1f'):>9} {_fmt(r.tflops, '.1f'):>8} "
                         f"{_fmt(r.speedup('original')):>7} {_fmt(r.speedup(main)):>{max(6, len(main) + 2)}}  "
                         f"{extra.strip()}")
    variables = result.stop_variables() if result.rows else {}
    g_orig, g_fa3 = variables.get("geomean_vs_original"), variables.get("geomean_vs_fa3")
    g_main = variables.get(f"geomean_vs_{main}")
    lines.append(f"geomean: x{_fmt(g_orig)} vs original, x{_fmt(g_main)} vs {label(main)}; "
                 f"all correct: {result.all_correct}")
    if result.flags:
        lines.append(f"suspicion flags: {', '.join(result.flags)}")
    lines.append(f"stop condition ({result.stop_expr or 'none'}): "
                 f"{'HOLDS' if result.stop_met else 'does not hold'}")
    finite = lambda x: x if isinstance(x, (int, float)) and x == x else None      # JSON has no NaN
    summary = {"kernel_sha": sha, "status": result.status, "all_correct": result.all_correct,
               "geomean_vs_original": finite(g_orig), "geomean_vs_fa3": finite(g_fa3),
               "main_anchor": main, "geomean_vs_main": finite(g_main),
               "stop_met": bool(result.stop_met),
               "flags": list(result.flags)}
    lines.append("RESULT_JSON " + json.dumps(summary))
    return "\n".join(lines)


def summarise_sass(sass: str) -> str:
    counts = {op: 0 for op in SASS_OPCODES}
    total = 0
    for line in sass.splitlines():
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if not m:
            continue
        total += 1
        op = m.group(1)
        for key in SASS_OPCODES:
            if op == key or op.startswith(key + "."):
                counts[key] += 1
                break
    body = "  ".join(f"{k}={v}" for k, v in counts.items())
    return f"SASS instructions: {total} (static count, all kernels)\n{body}"


# Kernels the profiled process launches besides the candidate's (PyTorch filling the inputs): not the agent's.
FRAMEWORK_KERNEL = re.compile(r"^(void )?(at|c10|cub|thrust)::")


def summarise_ncu_csv(text: str) -> str:
    """One row per metric of the candidate's kernels in the profiled (second) call of launch_one.

    ncu reports every launch of the process: PyTorch's input fills, then the warm-up call and the profiled call
    (one kernel each, or several for a kernel with a separate combine step). Framework kernels are dropped, and
    when the remaining launches split into two equal calls, only the second call is shown.
    """
    import csv
    import io

    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    header_at = next((i for i, r in enumerate(rows) if "Metric Name" in r), None)
    if header_at is None:
        return "ncu produced no metrics:\n" + text[-1500:]
    header = rows[header_at]
    name_i, unit_i, value_i = header.index("Metric Name"), header.index("Metric Unit"), header.index("Metric Value")
    kernel_i = header.index("Kernel Name") if "Kernel Name" in header else None
    id_i = header.index("ID") if "ID" in header else None
    body = [r for r in rows[header_at + 1:] if len(r) == len(header)]
    kernel_of = (lambda r: r[kernel_i]) if kernel_i is not None else (lambda r: "")
    launch_of = (lambda r: r[id_i]) if id_i is not None else (lambda r: "0")
    launches: dict = {}                       # launch id -> kernel name, in launch order
    for r in body:
        if not FRAMEWORK_KERNEL.search(kernel_of(r)):
            launches.setdefault(launch_of(r), kernel_of(r))
    order = list(launches)
    half = len(order) // 2
    if len(order) % 2 == 0 and half and [launches[i] for i in order[:half]] == [launches[i] for i in order[half:]]:
        order = order[half:]                  # the warm-up call and the profiled call: keep the profiled one
    keep = set(order)
    if not keep:
        return "ncu profiled no kernel of the candidate (only framework kernels):\n" + text[-1500:]
    lines = [f"{kernel_of(r)[:40]:<40} {r[name_i]:<72} {r[value_i]:>14} {r[unit_i]}"
             for r in body if launch_of(r) in keep]
    names = ", ".join(dict.fromkeys(launches[i] for i in order))
    return (f"ncu (clock control none), the profiled call: {len(order)} kernel launch(es) of {names}\n"
            + "\n".join(lines))
