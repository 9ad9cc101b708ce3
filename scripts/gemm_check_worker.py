"""The GPU side of scripts/gemm_gpu_check.py: one process per job, so a kernel that hangs or kills its CUDA context
takes only its own job down.
    python3 scripts/gemm_check_worker.py JOB.json     (written by gemm_gpu_check.py; the result goes to job["result"])
Jobs: `verify` (one library over one or more suites, each scenario judged by gemm_check_verify.Verifier) and
`time` (every listed library and the anchors on one suite, device time by CUDA-graph replay, L2 flushed).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm_check_timing import load_anchors, time_ms  # noqa: E402
from gemm_check_verify import (Buffers, Failure, GemmLib, Tolerances, Verifier, errors, reference,  # noqa: E402
                               sample_rows)
from make_gemm_suites import read_suite  # noqa: E402


def _save(job: dict, result: dict) -> None:
    """Written after every scenario: what a job that dies later had done is kept."""
    tmp = Path(job["result"] + ".tmp")
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(job["result"])


def verify_job(job: dict) -> None:
    tol = Tolerances.load()
    kernel = GemmLib(job["so"])
    own = set(job["own"])
    result = {"label": job["label"], "fresh_seed": job["fresh_seed"], "scenarios": [], "fatal": None}
    stream = torch.cuda.Stream()   # non-blocking, like the harness worker's: work that escapes it is seen
    for suite_name, path in job["suites"]:
        for g in read_suite(Path(path)):
            start = time.time()
            row = {"suite": suite_name, "name": g.name, "category": g.category, "status": "passed", "reason": "",
                   "detail": ""}
            verifier = None
            try:
                with torch.cuda.stream(stream):
                    verifier = Verifier(g, tol, job["fresh_seed"])
                    verifier.run(kernel)
                    if g.m and g.n:
                        verifier.later_calls(kernel, own)
            except Failure as err:
                row.update(status="unsupported" if err.reason == "unsupported" else "failed", reason=err.reason,
                           detail=err.detail[:300])
            except torch.cuda.OutOfMemoryError as err:   # this shape only; the context is fine
                row.update(status="failed", reason="crash", detail=f"out of memory: {str(err)[:200]}")
            except RuntimeError as err:   # a CUDA error: the context is gone, nothing after this can run
                row.update(status="failed", reason="launch_error", detail=str(err).splitlines()[0][:300])
                result["fatal"] = f"{g.name}: {row['detail']}"
            if verifier is not None:
                row["rel_l2"], row["max_abs"] = verifier.worst
                del verifier
            row["seconds"] = round(time.time() - start, 2)
            result["scenarios"].append(row)
            print(f"{job['label']:<28} {suite_name:<6} {g.name:<26} {row['status']:<11} {row['reason']} "
                  f"{row['detail'][:100]}", flush=True)
            _save(job, result)
            if result["fatal"] or (job["fail_fast"] and row["status"] != "passed"):
                return
            torch.cuda.empty_cache()


def time_job(job: dict) -> None:
    tol = Tolerances.load()
    kernels = {k["label"]: GemmLib(k["so"]) for k in job["kernels"]}
    anchors, missing = load_anchors(job["anchors"])
    result = {"anchors": {n: v for n, (_, v) in anchors.items()}, "missing_anchors": missing, "scenarios": [],
              "fatal": None}
    for g in read_suite(Path(job["suite"])):
        if g.m * g.n * g.k == 0:
            continue
        row = {"name": g.name, "category": g.category, "m": g.m, "n": g.n, "k": g.k, "flops": 2.0 * g.m * g.n * g.k,
               "impls": {}}
        bufs = Buffers(g, tol)
        bufs.fill(job["seed"])
        rows, ref = reference(bufs, sample_rows(g, tol, torch.Generator().manual_seed(job["seed"]),
                                                tol.original_rows))
        rel_tol, max_tol = tol.bounds(g.k)
        impls = [(label, lambda lib=lib: lib(bufs), bufs.c) for label, lib in kernels.items()]
        for name, (run, _) in anchors.items():
            out = torch.empty(g.m, g.n, dtype=torch.bfloat16, device=bufs.device)
            impls.append((name, lambda run=run, out=out: run(bufs.a, bufs.b, out), out))
        for label, call, out in impls:
            entry = {}
            try:
                bufs.poison()
                rc = call() or 0   # anchors return None
                if rc:
                    row["impls"][label] = {"error": f"gemm_bf16 returned error code {rc}"}
                    continue
                ms, method = time_ms(call, job["reps"], job["cap_s"])
                torch.cuda.synchronize()
                rel, mx = errors(out[rows], ref)   # what the last replay wrote
                entry = {"ms": ms, "tflops": row["flops"] / (ms * 1e-3) / 1e12, "method": method, "rel_l2": rel,
                         "ok": rel <= rel_tol and mx <= max_tol}
            except RuntimeError as err:
                entry = {"error": str(err).splitlines()[0][:200]}
                if "CUDA" in str(err) or "illegal" in str(err):
                    result["fatal"] = f"{label} on {g.name}: {entry['error']}"
            row["impls"][label] = entry
            if result["fatal"]:
                break
        result["scenarios"].append(row)
        shown = "  ".join(f"{lab} {e['tflops']:.0f}" if "tflops" in e else f"{lab} ERR"
                          for lab, e in row["impls"].items())
        print(f"time {g.name:<26} TFLOP/s: {shown}", flush=True)
        _save(job, result)
        del bufs, impls
        torch.cuda.empty_cache()
        if result["fatal"]:
            return


def main() -> int:
    job = json.loads(Path(sys.argv[1]).read_text())
    torch.cuda.init()
    torch.matmul(torch.ones(64, 64, device="cuda", dtype=torch.bfloat16),
                 torch.ones(64, 64, device="cuda", dtype=torch.bfloat16))   # cuBLAS loaded, as in the harness worker
    torch.cuda.synchronize()
    {"verify": verify_job, "time": time_job}[job["mode"]](job)
    return 0


if __name__ == "__main__":
    sys.exit(main())
