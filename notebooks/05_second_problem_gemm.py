# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A second problem: bf16 GEMM through the workbench
#
# The workbench judges any **problem folder** under `kernels/`, not only attention. A problem folder holds the
# contract (`README.md`: the C entry point and what it must compute), `problem.toml` (tolerances, timing, anchors,
# ceilings), `original.cu` (the baseline every speedup is against), `suites/*.csv` (the shapes, one row per
# scenario with a category), known-bad kernels in `wrong/`, and three Python modules the harness loads by path:
# `problem.py` (scenarios, FLOP and byte counts), `judge.py` (buffers, fp32 reference, error bounds, the call) and
# `standins.py` (a CPU twin of every `wrong/` kernel). `kernels/gemm_bf16/` is the second problem: `C = A·B`, bf16
# in, fp32 accumulate, bf16 out, row-major with strides, judged against cuBLAS (torch.matmul) and Triton.
#
# **What runs here depends on the machine.** With a GPU, kernels are verified and timed and the campaign uses the
# real harness. Without one, `check` on a `.cu` file builds it and reports static checks only (`static_only`);
# the **CPU stand-ins** (`standin:NAME`, Python twins run through the real verification on the CPU) give timed
# rows, but their times are of the CPU, not measurements of a kernel; the campaign uses the **stand-in
# evaluator** (made-up timings from the kernel's `@knob` values). Each cell says which one it ran.

# %%
import tempfile
from pathlib import Path

import pandas as pd

from workbench.check_cli import write_traces
from workbench.cli import main as workbench
from workbench.flashinfer.workloads import Reader
from workbench.harness import problems
from workbench.harness.check import check, gpu_available
from workbench.harness.paths import REPO_ROOT
from workbench.harness.result import CheckRequest
from workbench.harness.scenarios import load_suite, write_suite
from workbench.traces.report import build_report
from workbench.traces.writer import read_table

GPU = gpu_available()
WORK = Path(tempfile.mkdtemp(prefix="gemm-notebook-"))      # campaigns, traces and the report of this notebook
gemm = problems.load("gemm_bf16")
print(f"machine: {'a CUDA GPU: kernels are verified and timed' if GPU else 'no GPU: static checks and CPU stand-ins'}")
print(f"problem {gemm.name}: entry point {gemm.entry_point}, anchors {', '.join(gemm.anchors)} "
      f"(main: {gemm.main_anchor}), default suite {gemm.default_suite}")
print("folder:", ", ".join(sorted(p.name for p in gemm.folder.iterdir() if not p.name.startswith(("_", ".")))))
print("suites:", ", ".join(f"{p.stem} ({len(load_suite(p.stem, problem=gemm))})"
                           for p in sorted(gemm.suites_dir.glob("*.csv"))))
SMOKE = pd.DataFrame([s.to_dict() for s in load_suite("smoke", problem=gemm)])
SMOKE[["name", "m", "n", "k", "lda", "ldb", "ldc", "category"]]

# %% [markdown]
# ## `workbench check` on a GEMM kernel
# The problem is inferred from the kernel's folder (`--problem` names it otherwise). The command line is
# `workbench check kernels/gemm_bf16/ladder/01_mma_sync.cu --suite smoke`. On a GPU each scenario is verified
# against the fp32 reference and timed against cuBLAS and Triton; here without one, the kernel is built and its
# resources and forbidden-library checks reported, every row `static_only`.

# %%
RUNG = gemm.folder / "ladder" / "01_mma_sync.cu"
if not GPU:
    print(f"no GPU: on a GPU this cell verifies and times {RUNG.name} on smoke against {', '.join(gemm.anchors)}")
rung = check(CheckRequest(kernel_path=str(RUNG), suite="smoke", anchors=gemm.anchors), progress=print)
print(f"{RUNG.name}: {rung.status}, problem {rung.problem}, {len(rung.rows)} rows: {rung.counts()}")
rung.to_frame()[["scenario", "category", "status", "reason", "us", "tflops"]
                + [c for c in rung.to_frame().columns if c.startswith("x_")]]

# %% [markdown]
# ## Timed rows on the CPU: a stand-in of a `wrong/` kernel
# `standin:wrong_tail` is the CPU twin of `wrong/wrong_tail.cu`: its K loop drops the last `K % 16` products. The
# harness's own verification runs on it (on the CPU, on a GPU machine too), so it is **rejected with its reason**
# (`mismatch`, as `wrong/expected.csv` says) on the shapes whose K is no multiple of 16, and timed on the rest.
# Times are the CPU's, never a kernel measurement. Its rows go to this notebook's trace folder for the report.

# %%
TRACES = WORK / "traces"
twin = check(CheckRequest(kernel_path="standin:wrong_tail", suite="smoke", problem="gemm_bf16", anchors=()))
print(f"standin:wrong_tail on {twin.gpu}: {twin.counts()['passed']} passed, {twin.counts()['failed']} failed")
for row in twin.rows:
    if row.status != "passed":
        print(f"  {row.name}: {row.reason} (k = {row.scenario['k']})")
print("traces: session", write_traces(twin, str(TRACES)))
twin.to_frame()[["scenario", "k", "status", "reason", "rel_l2_err", "us", "x_original"]]

# %% [markdown]
# ## A tiny GEMM campaign with the offline agent
# The offline scripted agent (no LLM) changes the `@knob` lines of `kernels/gemm_bf16/original.cu` (tile sizes)
# and runs the harness after each change; the stop predicate is the problem's, `geomean_vs_cublas >= 1.0`. Eight
# tool calls. On a GPU the harness judges each candidate; without one the stand-in evaluator makes timings up from
# the knobs (seconds). The log names the problem's main anchor
# ("vs cuBLAS"); the trace rows below carry it too, as the GEMM's
# main anchor, cuBLAS (`geomean_vs_main`).

# %%
EVALUATOR = "harness" if GPU else "standin"
print(f"evaluator: {EVALUATOR}" + ("" if GPU else "  (CPU stand-in: made-up timings, not a measurement; on a GPU "
                                                  "this runs the harness on every candidate)"))
code = workbench(["campaign", "--problem", "gemm_bf16", "--agent", "offline", "--evaluator", EVALUATOR,
                  "--suite", "smoke", "--budget", "tool_calls=8", "--root", str(WORK / "campaigns"), "--id", "gemm-1"])
runs = read_table(WORK / "campaigns" / "gemm-1" / "traces", "evaluations")
print(f"exit {code}: {runs['eval_id'].nunique()} harness runs, {len(runs)} scenario rows, "
      f"problem {', '.join(sorted(set(runs['problem'])))}, main anchor {', '.join(sorted(set(runs['main_anchor'])))}")
runs.groupby("eval_id", sort=False)[["kernel_sha", "geomean_vs_original", "geomean_vs_main"]].first()

# %% [markdown]
# ## The report, split by problem
# Every trace row names its problem (rows written before problems read as attention). `workbench report` gives each
# data source a section per problem, so GEMM figures are never pooled with attention's. Here: this notebook's
# campaign and stand-in check (GEMM) beside the sample traces shipped in `data/traces` (attention).

# %%
ROOTS = [WORK / "campaigns" / "gemm-1" / "traces", TRACES, REPO_ROOT / "data" / "traces"]
frames = [read_table(root, "evaluations") for root in ROOTS]
rows = pd.concat([f for f in frames if len(f)], ignore_index=True)
rows["problem"] = rows["problem"].fillna("attn_fwd")
for problem, group in rows.groupby("problem"):
    print(f"{problem}: {group['eval_id'].nunique()} evaluations, {len(group)} scenario rows, "
          f"{group['session_id'].nunique()} sessions")
page = build_report(ROOTS, WORK / "report.html").read_text()
sections = [h.split("</h2>")[0] for h in page.split("<h2>")[1:]]
print("report sections:", *sections, sep="\n  ")
print("report:", WORK / "report.html")

# %% [markdown]
# ## Production shapes in: a FlashInfer workload folder becomes a suite
# FlashInfer's `fi_trace` and FlashInfer-Bench write Definitions (`*.json`) and Workloads (`*.jsonl`) per operation
# and shape of a serving run. `data/flashinfer_sample/` is a small made-up example (Llama-3-8B-like projections and a
# ragged prefill). The reader keeps the operations the problem covers (`gemm` here), lists every file it skipped and
# why, and the scenarios become a suite CSV (category `serving`). The command line is
# `workbench suite from-flashinfer data/flashinfer_sample --problem gemm_bf16`, then
# `workbench check KERNEL --suite flashinfer`.

# %%
imported = Reader(REPO_ROOT / "data" / "flashinfer_sample", gemm).read()
print(f"{len(imported.scenarios)} gemm_bf16 scenarios from {imported.workloads} workloads of "
      f"{imported.definitions} definitions; {len(imported.skipped)} skipped")
for where, why in imported.skipped:
    print(f"  skipped {Path(where).relative_to(REPO_ROOT)}: {why}")
SERVING = WORK / "flashinfer.csv"
write_suite(SERVING, imported.scenarios, problem=gemm)
serving = pd.DataFrame([s.to_dict() for s in load_suite(str(SERVING), problem=gemm)])
serving[["name", "m", "n", "k", "category"]].head(8)

# %% [markdown]
# The suite runs like any other. On a GPU this verifies and times the ladder's wgmma + TMA rung on all of its
# shapes (up to 16384 x 28672 x 4096) against the original and cuBLAS; without one it is the build and the static
# checks.

# %%
BEST = gemm.folder / "ladder" / "02_wgmma_tma.cu"
if not GPU:
    print(f"no GPU: on a GPU this cell verifies and times {BEST.name} on the {len(serving)} serving shapes "
          f"against the original and {gemm.main_anchor}")
served = check(CheckRequest(kernel_path=str(BEST), suite=str(SERVING), anchors=(gemm.main_anchor,)))
print(f"{BEST.name} on the serving suite: {served.status}, {served.counts()}")
if served.status == "evaluated":
    print(f"geomean vs {gemm.main_anchor}: {served.geomean_vs(gemm.main_anchor):.3f}, "
          f"vs the original: {served.geomean_vs('original'):.3f}")
