"""GPU check of every kernel under kernels/gemm_bf16 (original, ladder, wrong), standalone: nvcc, torch, ctypes.

    OUT=/tmp/out python3 scripts/gemm_gpu_check.py            # everything, about 3 minutes on one H200
    python3 scripts/gemm_gpu_check.py --suite dev --no-timing  # quicker: correctness only, dev for the ladder
Phases
  1. build every .cu with nvcc (sm_90a, -Xptxas -v: registers and spills; SASS counts where cuobjdump is found),
     plus a -DGEMM_WATCHDOG build of every rung that has that knob (a stuck mbarrier wait traps instead of hanging)
  2. verify, one worker process per job (scripts/gemm_check_worker.py), --jobs at a time: each wrong/ kernel on
     `dev` until its first rejection, compared with wrong/expected.csv; the original and each rung on smoke, edge
     and --suite, every scenario (a rung's watchdog build goes first, on smoke, edge and dev)
  3. time the rungs that verified, cuBLAS (torch.matmul) and Triton on --suite: CUDA-graph replay, L2 flushed
Prints the tables (wrong kernels: expected vs got; rungs: TFLOP/s and x cuBLAS per category, % of the 790 TFLOP/s
ceiling on the largest square shape) and writes $OUT/gemm_gpu_check.json (OUT defaults to /tmp/out), worker logs
in $OUT/gemm_logs.tgz. Exit status 0: every kernel as expected; 1: something is not; 2: bad arguments.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEM_DIR = ROOT / "kernels" / "gemm_bf16"
SUITES = PROBLEM_DIR / "suites"
WORKER = Path(__file__).resolve().parent / "gemm_check_worker.py"
NVCC_FLAGS = ["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-shared", "-Xcompiler", "-fPIC",
              "-Xptxas", "-v", "-lineinfo"]
REASONS = ("unwritten", "nonfinite", "mismatch", "lse_mismatch", "mismatch_original", "large_scale",
           "inputs_modified", "stream", "stale", "out_of_bounds", "nondeterministic", "timed_mismatch",
           "foreign_kernel", "unsupported", "launch_error", "crash", "timeout")   # workbench/harness/verify.py
CEILING_TFLOPS = 790.0


def fail(message: str) -> None:
    print(f"gemm_gpu_check: {message}", file=sys.stderr)
    sys.exit(2)


def suite_path(name: str) -> Path:
    path = Path(name) if name.endswith(".csv") else SUITES / f"{name}.csv"
    if not path.is_file():
        fail(f"suite {name!r} not found ({path}); pass a CSV or one of "
             f"{', '.join(sorted(p.stem for p in SUITES.glob('*.csv')))}")
    return path


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="full", help="suite for the original and the rungs (default full)")
    ap.add_argument("--kernels", default="", help="only kernels whose label contains one of these (comma-separated)")
    ap.add_argument("--no-timing", action="store_true", help="skip phase 3")
    ap.add_argument("--jobs", type=int, default=4, help="verify workers at once on the GPU (default 4)")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per worker before it is killed")
    ap.add_argument("--reps", type=int, default=20, help="timed samples per implementation and shape (max)")
    ap.add_argument("--cap", type=float, default=0.15, help="GPU seconds per implementation and shape (about)")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"), help="output folder (default $OUT)")
    args = ap.parse_args(argv)
    if args.jobs < 1 or args.timeout <= 0 or args.reps < 3 or args.cap <= 0:
        fail("--jobs >= 1, --timeout > 0, --reps >= 3 and --cap > 0 are required")
    args.suite_path = suite_path(args.suite)
    for tool in ("nvcc", "c++filt"):
        if shutil.which(tool) is None:
            fail(f"{tool} not found on PATH (the CUDA toolkit and binutils are needed)")
    return args


# ---- what there is to check --------------------------------------------------------------------------------
def discover(filters: list[str]) -> list[dict]:
    """Every kernel: role original / ladder / wrong, the wrong ones with their expected reasons."""
    with open(PROBLEM_DIR / "wrong" / "expected.csv", newline="") as handle:
        expected = {r["kernel"]: r["expected_reasons"].split("|") for r in csv.DictReader(handle)}
    files = {p.stem for p in (PROBLEM_DIR / "wrong").glob("*.cu")}
    if set(expected) != files:
        fail(f"wrong/expected.csv and wrong/*.cu differ: {sorted(set(expected) ^ files)}")
    unknown = sorted({r for rs in expected.values() for r in rs} - set(REASONS))
    if unknown:
        fail(f"wrong/expected.csv names unknown reasons {unknown}")
    kernels = [{"label": "original", "role": "original", "path": PROBLEM_DIR / "original.cu"}]
    kernels += [{"label": p.stem, "role": "ladder", "path": p} for p in sorted((PROBLEM_DIR / "ladder").glob("*.cu"))]
    kernels += [{"label": f"wrong/{n}", "role": "wrong", "path": PROBLEM_DIR / "wrong" / f"{n}.cu",
                 "expected": expected[n]} for n in sorted(expected)]
    if filters:
        kernels = [k for k in kernels if any(f in k["label"] for f in filters)]
        if not kernels:
            fail(f"--kernels {','.join(filters)} matches no kernel")
    return kernels


# ---- phase 1: builds -------------------------------------------------------------------------------------------
def demangle(names: list[str]) -> list[str]:
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return out if len(out) == len(names) else names


def kernel_base_name(name: str) -> str:
    """`void ns::gemm_mma<true>(Params)` -> `ns::gemm_mma` (the profiler's and c++filt's spellings alike)."""
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    name = name.split("(", 1)[0]
    while "<" in name:   # drop template arguments, the outermost pair first
        start, depth = name.index("<"), 0
        for end in range(start, len(name)):
            depth += {"<": 1, ">": -1}.get(name[end], 0)
            if depth == 0:
                break
        name = name[:start] + name[end + 1:]
    return name.strip()


def build(kernel: dict, build_dir: Path, defines: tuple = ()) -> dict:
    tag = re.sub(r"[^A-Za-z0-9_.-]", "_", kernel["label"] + "".join(defines))
    so = build_dir / f"{tag}.so"
    start = time.time()
    run = subprocess.run(["nvcc", *NVCC_FLAGS, *defines, "-o", str(so), str(kernel["path"])], capture_output=True,
                         text=True, timeout=600)
    info = {"so": str(so), "ok": run.returncode == 0, "seconds": round(time.time() - start, 1), "defines": defines}
    if not info["ok"]:
        info["error"] = run.stderr.strip()[-1500:]
        return info
    entries, resources, current = [], [], None
    for line in run.stderr.splitlines():
        if (m := re.search(r"Compiling entry function '(\S+)'", line)):
            current = {"entry": m.group(1)}
            entries.append(m.group(1))
        elif current and (m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes", line)):
            current.update(stack=int(m.group(1)), spills=int(m.group(2)) + int(m.group(3)))
        elif current and (m := re.search(r"Used (\d+) registers", line)):
            current["regs"] = int(m.group(1))
            resources.append(current)
            current = None
    info["resources"] = resources
    info["own"] = sorted({kernel_base_name(n) for n in demangle(entries)})
    info["sass"] = sass_counts(so)
    return info


def sass_counts(so: Path) -> dict:
    tool = shutil.which("cuobjdump")
    if not tool:
        return {}
    sass = subprocess.run([tool, "-sass", str(so)], capture_output=True, text=True, timeout=300).stdout
    ops = ("HGMMA", "HMMA", "UTMALDG", "LDGSTS", "LDSM", "LDL", "STL")
    return {op: len(re.findall(rf"\b{op}\b", sass)) for op in ops}


# ---- phase 2 and 3: workers --------------------------------------------------------------------------------------
def run_worker(job: dict, out: Path, timeout: float) -> dict:
    """Run one job in its own process; its result (partial if it died), with `fatal` set when it did not finish."""
    logs = out / "gemm_logs"
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", job["label"])
    job_file, result_file = logs / f"{name}.job.json", logs / f"{name}.result.json"
    job["result"] = str(result_file)
    job_file.write_text(json.dumps(job))
    result_file.unlink(missing_ok=True)
    with open(logs / f"{name}.log", "w") as log:
        try:
            proc = subprocess.run([sys.executable, str(WORKER), str(job_file)], stdout=log, stderr=subprocess.STDOUT,
                                  timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
    result = json.loads(result_file.read_text()) if result_file.exists() else {"scenarios": [], "fatal": None}
    if rc is None:
        result["fatal"] = result.get("fatal") or f"timeout: killed after {timeout:.0f} s"
    elif rc != 0:
        tail = (logs / f"{name}.log").read_text().strip().splitlines()[-1:] or [""]
        result["fatal"] = result.get("fatal") or f"crash: worker exit status {rc}: {tail[0][:200]}"
    job_file.unlink(missing_ok=True)
    return result


def verify_kernel(kernel: dict, args, fresh_seed: int) -> dict:
    """Phase 2 for one kernel: the watchdog pass (rungs that have one), then the release build."""
    suites = [("dev", str(SUITES / "dev.csv"))] if kernel["role"] == "wrong" else \
        [("smoke", str(SUITES / "smoke.csv")), ("edge", str(SUITES / "edge.csv")), (args.suite, str(args.suite_path))]
    if "watchdog" in kernel:
        wd = run_worker({"mode": "verify", "label": kernel["label"] + "[watchdog]", "so": kernel["watchdog"]["so"],
                         "own": kernel["watchdog"]["own"], "fresh_seed": fresh_seed, "fail_fast": False,
                         "suites": suites[:2] + [("dev", str(SUITES / "dev.csv"))]}, args.out, args.timeout)
        kernel["watchdog_result"] = wd
        if wd["fatal"]:
            return {"scenarios": [], "fatal": f"skipped: the watchdog build failed first ({wd['fatal']})"}
    return run_worker({"mode": "verify", "label": kernel["label"], "so": kernel["build"]["so"],
                       "own": kernel["build"]["own"], "fresh_seed": fresh_seed, "fail_fast": kernel["role"] == "wrong",
                       "suites": suites}, args.out, args.timeout)


# ---- the report ------------------------------------------------------------------------------------------------
def geomean(values) -> float:
    values = [v for v in values if v and math.isfinite(v) and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def wrong_verdict(kernel: dict) -> tuple[bool, str]:
    res = kernel.get("verify", {})
    first = next((r for r in res.get("scenarios", []) if r["status"] != "passed"), None)
    if first is None:
        return False, f"NOT REJECTED{' (' + res['fatal'] + ')' if res.get('fatal') else ''}"
    ok = first["reason"] in kernel["expected"]
    return ok, f"{first['reason']} on {first['name']}: {first['detail'][:70]}"


def report(kernels: list[dict], timing: dict | None, args) -> bool:
    all_ok = True
    print("\n== builds (nvcc sm_90a): max registers, spill bytes, SASS counts")
    for k in kernels:
        b = k["build"]
        if not b["ok"]:
            all_ok = False
            print(f"  {k['label']:<28} BUILD FAILED: {b['error'].splitlines()[-1][:90]}")
            continue
        spills = sum(r.get("spills", 0) for r in b["resources"])
        sass = " ".join(f"{op} {n}" for op, n in b["sass"].items() if n)
        bad = k["role"] == "ladder" and (spills or (k["label"].startswith("02") and b["sass"].get("HGMMA") == 0))
        all_ok &= not bad
        regs = max((r["regs"] for r in b["resources"]), default=0)
        print(f"  {k['label']:<28} regs {regs:>3}  spills {spills:>3} B  "
              f"{sass}{'  <-- ladder rungs need 0 spills (and 02 HGMMA)' if bad else ''}")
    print("\n== wrong kernels on dev (first rejection vs wrong/expected.csv)")
    for k in (k for k in kernels if k["role"] == "wrong" and k["build"]["ok"]):
        ok, got = wrong_verdict(k)
        all_ok &= ok
        print(f"  {'OK ' if ok else 'BAD'} {k['label'][6:]:<20} expected {'|'.join(k['expected']):<34} got {got}")
    print("\n== original and ladder: correctness (every scenario of smoke, edge and the suite)")
    for k in (k for k in kernels if k["role"] != "wrong" and k["build"]["ok"]):
        for tag, res in ((" [watchdog]", k.get("watchdog_result")), ("", k.get("verify"))):
            if res is None:
                continue
            rows = res.get("scenarios", [])
            bad = [r for r in rows if r["status"] != "passed"]
            all_ok &= not bad and not res.get("fatal")
            by_suite = {}
            for r in rows:
                by_suite.setdefault(r["suite"], [0, 0])[r["status"] == "passed"] += 1
            counts = "  ".join(f"{s} {p}/{f + p}" for s, (f, p) in by_suite.items())
            worst = max((r.get("rel_l2") or 0.0 for r in rows), default=0.0)
            print(f"  {k['label'] + tag:<30} {counts}  worst rel L2 {worst:.2e}"
                  f"{'  FATAL ' + res['fatal'][:100] if res.get('fatal') else ''}")
            for r in bad[:5]:
                print(f"      FAIL {r['suite']}/{r['name']}: {r['reason']}: {r['detail'][:100]}")
    if timing:
        all_ok &= timing_report(timing)
    return all_ok


def timing_report(timing: dict) -> bool:
    rows = timing.get("scenarios", [])
    labels = sorted({lab for r in rows for lab in r["impls"]} - {"cublas", "triton"})
    print(f"\n== timing on {timing['suite']} (device time, CUDA-graph replay, L2 flushed; anchors "
          f"{timing.get('anchors')}, missing {timing.get('missing_anchors') or 'none'})")
    cats = list(dict.fromkeys(r["category"] for r in rows))
    head = f"  {'category':<10} {'n':>3} {'cuBLAS TF/s':>11} " + " ".join(f"{lab[:14] + ' TF/s':>19} {'x cuBLAS':>8}"
                                                                        for lab in labels + ["triton"])
    print(head)
    for cat in cats + ["all"]:
        sel = [r for r in rows if cat == "all" or r["category"] == cat]
        tf = lambda lab: geomean(r["impls"].get(lab, {}).get("tflops") for r in sel)   # noqa: E731
        ratio = lambda lab: geomean(r["impls"]["cublas"]["ms"] / r["impls"][lab]["ms"] for r in sel   # noqa: E731
                                    if "ms" in r["impls"].get(lab, {}) and "ms" in r["impls"].get("cublas", {}))
        print(f"  {cat:<10} {len(sel):>3} {tf('cublas'):>11.1f} " +
              " ".join(f"{tf(lab):>19.1f} {ratio(lab):>8.3f}" for lab in labels + ["triton"]))
    square = max((r for r in rows if r["category"] == "square"), key=lambda r: r["flops"], default=None)
    if square:
        print(f"  largest square {square['name']}: " + ", ".join(
            f"{lab} {e['tflops']:.1f} TFLOP/s ({100 * e['tflops'] / CEILING_TFLOPS:.1f} % of {CEILING_TFLOPS:.0f})"
            for lab, e in square["impls"].items() if "tflops" in e))
    wrong = [(r["name"], lab, e) for r in rows for lab, e in r["impls"].items() if e.get("ok") is False or "error" in e]
    for name, lab, e in wrong[:8]:
        print(f"  TIMED OUTPUT WRONG OR ERROR: {lab} on {name}: {e.get('error') or 'rel L2 %.2e' % e['rel_l2']}")
    if timing.get("fatal"):
        print(f"  FATAL {timing['fatal']}")
    return not timing.get("fatal") and not [w for w in wrong if w[1] != "triton"]   # Triton: reported only


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out = Path(args.out)
    kernels = discover([f for f in args.kernels.split(",") if f])
    (args.out / "gemm_logs").mkdir(parents=True, exist_ok=True)
    build_dir = Path(os.environ.get("GEMM_BUILD", "/tmp/gemm_build"))
    build_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        builds = {k["label"]: pool.submit(build, k, build_dir) for k in kernels}
        watchdogs = {k["label"]: pool.submit(build, k, build_dir, ("-DGEMM_WATCHDOG",)) for k in kernels
                     if k["role"] == "ladder" and "GEMM_WATCHDOG" in k["path"].read_text()}
        for k in kernels:
            k["build"] = builds[k["label"]].result()
            if k["label"] in watchdogs and watchdogs[k["label"]].result()["ok"]:
                k["watchdog"] = watchdogs[k["label"]].result()
    print(f"built {sum(k['build']['ok'] for k in kernels)}/{len(kernels)} in {time.time() - started:.0f} s", flush=True)
    fresh_seed = random.SystemRandom().randrange(2, 2**31)
    todo = [k for k in kernels if k["build"]["ok"]]
    todo.sort(key=lambda k: k["role"] == "wrong")   # the long jobs (original, rungs) start first
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {k["label"]: pool.submit(verify_kernel, k, args, fresh_seed) for k in todo}
        for k in todo:
            k["verify"] = futures[k["label"]].result()
    print(f"verified in {time.time() - started:.0f} s", flush=True)
    timing = None
    rungs = [k for k in todo if k["role"] == "ladder" and not k["verify"].get("fatal")]
    if not args.no_timing and rungs:
        timing = run_worker({"mode": "time", "label": "timing", "suite": str(args.suite_path), "seed": fresh_seed,
                             "kernels": [{"label": k["label"], "so": k["build"]["so"]} for k in rungs],
                             "anchors": ["cublas", "triton"], "reps": args.reps, "cap_s": args.cap},
                            args.out, args.timeout * 2)
        timing["suite"] = args.suite
    all_ok = report(kernels, timing, args)
    summary = {"suite": args.suite, "fresh_seed": fresh_seed, "seconds": round(time.time() - started, 1),
               "all_as_expected": all_ok, "timing": timing,
               "kernels": [{k2: (str(v) if isinstance(v, Path) else v) for k2, v in k.items()} for k in kernels]}
    (args.out / "gemm_gpu_check.json").write_text(json.dumps(summary, indent=1))
    with tarfile.open(args.out / "gemm_logs.tgz", "w:gz") as tar:   # one file back instead of one per job
        tar.add(args.out / "gemm_logs", arcname="gemm_logs")
    shutil.rmtree(args.out / "gemm_logs")
    print(f"\n{'ALL AS EXPECTED' if all_ok else 'NOT ALL AS EXPECTED'} in {summary['seconds']:.0f} s; "
          f"details in {args.out / 'gemm_gpu_check.json'}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
