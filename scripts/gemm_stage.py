"""The GEMM problem through the workbench on one GPU (gpu_run.sh stage `gemmharness`; replaces the standalone
scripts/gemm_gpu_check.py): everything goes through the harness (`workbench check`'s check()), as for attention.

    OUT=/tmp/out python3 scripts/gemm_stage.py     # phases 1-5 ~6 min on one H200 (caches empty); 6 untimed
    python3 scripts/gemm_stage.py --suite dev --no-campaign

Phases
  1. build every kernels/gemm_bf16 .cu (threads; nvcc is CPU work)
  2. the original on --suite with the cuBLAS and Triton anchors (alone on the GPU: it is timed; fills the caches)
  3. every wrong/ kernel on dev, verification only, --jobs at a time, until its first rejection, against
     wrong/expected.csv
  4. every ladder rung on --suite with the anchors, one at a time (timed)
  5. an offline-agent campaign on the GEMM (suite smoke, a few harness runs; the real harness, traces recorded)
  6. production shapes in, comparable results out: `workbench suite from-flashinfer data/flashinfer_sample`, the
     last rung timed on that suite against cuBLAS, `workbench export --flashinfer` of its run, every exported line
     checked against FlashInfer-Bench's schema
Prints the wrong-kernel table (expected vs got), per rung the geomean against cuBLAS (and Triton, the original) per
suite category and TFLOP/s as % of the 790 TFLOP/s ceiling on the largest square shape; writes
$OUT/gemm_stage.json and one SuiteResult JSON per kernel. Exit 0: every kernel as expected and every rung correct;
1: something is not; 2: bad arguments.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROBLEM = ROOT / "kernels" / "gemm_bf16"
CEILING_TFLOPS = 790.0


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="full", help="suite for the original and the rungs (default full)")
    ap.add_argument("--jobs", type=int, default=4, help="wrong kernels verified at once (default 4)")
    ap.add_argument("--anchors", default="cublas,triton")
    ap.add_argument("--no-campaign", action="store_true")
    ap.add_argument("--no-flashinfer", action="store_true", help="skip phase 6")
    ap.add_argument("--campaign-calls", type=int, default=8, help="tool calls of the campaign (default 8)")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    args = ap.parse_args(argv)
    if args.jobs < 1 or args.campaign_calls < 2:
        ap.error("--jobs >= 1 and --campaign-calls >= 2")
    if not (PROBLEM / "suites" / f"{args.suite}.csv").is_file():
        ap.error(f"no suite {args.suite!r} under {PROBLEM / 'suites'}")
    return args


def expected() -> dict:
    with open(PROBLEM / "wrong" / "expected.csv", newline="") as handle:
        return {r["kernel"]: r["expected_reasons"].split("|") for r in csv.DictReader(handle)}


def judge(path: Path, suite: str, anchors: tuple, out: Path, timing: bool = True, fail_fast: bool = False):
    from workbench.harness.check import check
    from workbench.harness.result import CheckRequest

    start = time.time()
    result = check(CheckRequest(kernel_path=str(path), suite=suite, anchors=anchors, problem="gemm_bf16",
                                timing=timing, fail_fast=fail_fast))
    result.wall_s = time.time() - start
    (out / f"gemm_{path.parent.name}_{path.stem}_{Path(suite).stem}.json").write_text(result.to_json())
    return result


def first_rejection(result):
    row = next((r for r in result.rows if r.status in ("failed", "unsupported")), None)
    return (row.reason, row.name, row.detail) if row else (result.status if result.status != "evaluated"
                                                           else "passed", "", result.error)


def wrong_table(results: dict, want: dict) -> bool:
    ok = True
    print(f"\n{'wrong kernel':<22} {'expected':<44} {'got':<18} where")
    for name, result in sorted(results.items()):
        reason, where, detail = first_rejection(result)
        good = reason in want[name]
        ok &= good
        print(f"{'OK ' if good else 'BAD'} {name:<18} {'|'.join(want[name])[:44]:<44} {reason:<18} {where} "
              f"{'' if good else detail[:100]}")
    return ok


def rung_table(results: dict, anchors: tuple) -> bool:
    from workbench.harness.problems import load

    ok = True
    categories = [c for c in load("gemm_bf16").category_names if c not in ("edge", "user")]
    for label, result in results.items():
        good = result.all_correct
        ok &= good
        geo = result.geomeans()
        print(f"\n{label}: {'all correct' if good else 'NOT all correct'} ({result.counts()}), "
              f"wall {result.wall_s:.0f} s")
        for name in ("original", *anchors):
            cells = "  ".join(f"{c} {geo.get(c, {}).get(name, float('nan')):.3f}" for c in categories if c in geo)
            print(f"   x {name:<8} overall {geo['overall'].get(name, float('nan')):.3f}   {cells}")
        squares = [r for r in result.rows if r.category == "square" and r.stats is not None]
        if squares:
            big = max(squares, key=lambda r: r.flops())
            cub = big.reference_stats.get("cublas")
            cub_tf = big.flops() / (cub.median_us * 1e-6) / 1e12 if cub else float("nan")
            print(f"   largest square {big.name}: {big.tflops:.0f} TFLOP/s = {100 * big.tflops / CEILING_TFLOPS:.0f} % "
                  f"of {CEILING_TFLOPS:.0f} (cuBLAS {cub_tf:.0f} TFLOP/s = {100 * cub_tf / CEILING_TFLOPS:.0f} %)")
        for r in result.rows:
            if r.status != "passed":
                print(f"   {r.name}: {r.status} {r.reason}: {r.detail[:120]}")
    return ok


def campaign(out: Path, calls: int) -> dict:
    root = out / "gemm_campaigns"
    cmd = [sys.executable, "-m", "workbench.cli", "campaign", "--problem", "gemm_bf16", "--agent", "offline",
           "--suite", "smoke", "--budget", f"tool_calls={calls}", "--root", str(root), "--id", "gemm-offline-1"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=540, cwd=str(ROOT))
    (out / "gemm_campaign.log").write_text(run.stdout + run.stderr)
    print("\n" + "\n".join(line for line in run.stdout.splitlines() if line.startswith(("[turn", "stopped", "     ="))))
    from workbench.traces.writer import read_table

    rows = read_table(root / "gemm-offline-1" / "traces", "evaluations")
    runs = rows["eval_id"].nunique() if len(rows) else 0
    print(f"campaign: exit {run.returncode}, {runs} harness runs, {len(rows)} evaluation rows, problem "
          f"{sorted(set(rows['problem'].dropna())) if len(rows) else '-'}")
    return {"returncode": run.returncode, "harness_runs": int(runs), "rows": int(len(rows))}


def flashinfer_round_trip(out: Path, rung: Path) -> dict:
    """Phase 6: a FlashInfer-Bench folder -> a suite -> a timed run of `rung` -> FlashInfer-Bench traces."""
    from workbench.flashinfer import schema

    suite, traces = out / "fi_gemm.csv", out / "fi_gemm_traces.jsonl"
    cli = [sys.executable, "-m", "workbench.cli"]
    made = subprocess.run([*cli, "suite", "from-flashinfer", str(ROOT / "data" / "flashinfer_sample"), "--problem",
                           "gemm_bf16", "-o", str(suite), "--force"], capture_output=True, text=True, cwd=str(ROOT))
    print("\n" + "\n".join(x for x in (made.stdout.strip(), made.stderr.strip()) if x))
    if made.returncode:
        return {"ok": False, "step": "suite from-flashinfer", "returncode": made.returncode}
    result = judge(rung, str(suite), ("cublas",), out)
    run_json = out / f"gemm_{rung.parent.name}_{rung.stem}_{suite.stem}.json"
    exported = subprocess.run([*cli, "export", "--flashinfer", "--result", str(run_json), "-o", str(traces)],
                              capture_output=True, text=True, cwd=str(ROOT))
    print("\n".join(x for x in (exported.stdout.strip(), exported.stderr.strip()) if x))
    lines = [json.loads(line) for line in traces.read_text().splitlines()] if traces.exists() else []
    invalid = sum(bool(schema.trace_problems(t)) for t in lines)
    statuses = sorted({t["evaluation"]["status"] for t in lines})
    speedups = [t["evaluation"]["performance"]["speedup_factor"] for t in lines
                if t["evaluation"]["status"] == "PASSED"]
    geo = math.exp(sum(math.log(max(s, 1e-9)) for s in speedups) / len(speedups)) if speedups else float("nan")
    print(f"flashinfer: {rung.stem} on {len(result.rows)} serving shapes ({result.counts()}), {len(lines)} traces "
          f"exported, {invalid} invalid, statuses {statuses}, geomean speedup vs cuBLAS {geo:.3f}")
    ok = exported.returncode == 0 and result.all_correct and lines and not invalid
    return {"ok": bool(ok), "traces": len(lines), "invalid": invalid, "statuses": statuses, "geomean_vs_cublas": geo}


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    anchors = tuple(a for a in args.anchors.split(",") if a)
    want = expected()
    from workbench.harness.build import build_kernel

    t0 = time.time()
    sources = [PROBLEM / "original.cu", *sorted((PROBLEM / "ladder").glob("*.cu")),
               *sorted((PROBLEM / "wrong").glob("*.cu"))]
    with ThreadPoolExecutor(8) as pool:
        builds = list(pool.map(lambda p: build_kernel(p, entry_point="gemm_bf16"), sources))
    for b in builds:
        print(b.summary)
    print(f"phase 1 builds: {time.time() - t0:.0f} s")
    original = judge(PROBLEM / "original.cu", args.suite, anchors, out)
    print(f"phase 2 original on {args.suite}: {time.time() - t0:.0f} s")
    wrong_paths = sorted((PROBLEM / "wrong").glob("*.cu"))
    with ThreadPoolExecutor(args.jobs) as pool:
        wrong = dict(zip([p.stem for p in wrong_paths],
                         pool.map(lambda p: judge(p, "dev", (), out, timing=False, fail_fast=True), wrong_paths)))
    print(f"phase 3 wrong kernels: {time.time() - t0:.0f} s")
    rungs = {"original": original}
    for path in sorted((PROBLEM / "ladder").glob("*.cu")):
        rungs[path.stem] = judge(path, args.suite, anchors, out)
    print(f"phase 4 rungs: {time.time() - t0:.0f} s")
    wrong_ok = wrong_table(wrong, want)
    rungs_ok = rung_table(rungs, anchors)
    summary = {"wrong_as_expected": wrong_ok, "rungs_correct": rungs_ok, "suite": args.suite,
               "wrong": {n: first_rejection(r)[:2] for n, r in wrong.items()},
               "rungs": {n: {"all_correct": r.all_correct, "geomeans": r.geomeans(), "gpu": r.gpu}
                         for n, r in rungs.items()}}
    if not args.no_campaign:
        summary["campaign"] = campaign(out, args.campaign_calls)
        print(f"phase 5 campaign: {time.time() - t0:.0f} s")
    if not args.no_flashinfer:
        summary["flashinfer"] = flashinfer_round_trip(out, sorted((PROBLEM / "ladder").glob("*.cu"))[-1])
        print(f"phase 6 flashinfer: {time.time() - t0:.0f} s")
    (out / "gemm_stage.json").write_text(json.dumps(summary, indent=1, default=str, allow_nan=True))
    ok = (wrong_ok and rungs_ok and summary.get("campaign", {}).get("harness_runs", 1) > 0
          and summary.get("flashinfer", {}).get("ok", True))
    print(f"\ngemm stage: {'everything as expected' if ok else 'NOT as expected'} in {time.time() - t0:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
