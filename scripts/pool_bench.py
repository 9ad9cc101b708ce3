"""Throughput of an evaluation pool on one GPU against several (docs/benchmarks.md).

    python scripts/pool_bench.py --kernel kernels/attn_fwd/ladder/02_mma.cu --candidates 8 --pools ray --gpus 1,2
    python scripts/pool_bench.py --standin correct --candidates 4 --suite smoke --pools local   # CPU dry run

The batch is single-knob variants of one kernel; all of them are built and the baseline's timings cached
before the clock starts, so the figure is judging throughput only.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.evaluators.evaluator import BUILD_WORKERS, group_by_gpu, prebuild  # noqa: E402
from workbench.evaluators.local_pool import LocalPool  # noqa: E402
from workbench.evaluators.ray_pool import RayPool  # noqa: E402
from workbench.harness.result import CheckRequest  # noqa: E402
from workbench.knobs import parse_knobs  # noqa: E402


def knob_variants(source: str, count: int) -> list[tuple[str, str]]:
    """Up to `count` single-knob variants of a kernel, in file order: [(label, source)]."""
    out = []
    for name, knob in parse_knobs(source).items():
        for value in knob["choices"]:
            if value == knob["value"] or len(out) >= count:
                continue
            old = f"{knob['prefix']}{knob['value']}{knob['rest']}"
            out.append((f"{name}={value}", source.replace(old, f"{knob['prefix']}{value}{knob['rest']}", 1)))
    return out


def _batch(pool, requests: list) -> tuple[list, float]:
    t0 = time.monotonic()
    futures = [pool.submit(r) for r in requests]
    results = [f.result() for f in futures]
    return results, time.monotonic() - t0


def bench_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/pool_bench.py",
                                     description="throughput of a pool on one GPU against several")
    parser.add_argument("--kernel", default="kernels/attn_fwd/ladder/02_mma.cu", help="seed of the variants")
    parser.add_argument("--candidates", type=int, default=8, help="single-knob variants in the batch")
    parser.add_argument("--suite", default="dev26")
    parser.add_argument("--anchors", default="", help="comma-separated anchors (default none: candidates only)")
    parser.add_argument("--pools", default="ray", help="comma-separated: ray,local")
    parser.add_argument("--gpus", default="1,2", help="GPU counts to compare, comma-separated")
    parser.add_argument("--standin", default="", help="CPU dry run: judge `standin:NAME` instead of the variants")
    parser.add_argument("--json", default="", help="write the figures here")
    args = parser.parse_args(argv)
    anchors = tuple(a for a in args.anchors.split(",") if a)
    workdir = Path(tempfile.mkdtemp(prefix="pool-bench-"))
    if args.standin:
        paths = [f"standin:{args.standin}"] * args.candidates
    else:
        variants = knob_variants(Path(args.kernel).read_text(), args.candidates)
        paths = []
        for i, (label, text) in enumerate(variants):
            path = workdir / f"v{i:02d}_{label.replace('=', '_')}.cu"
            path.write_text(text)
            paths.append(str(path))
    requests = [CheckRequest(kernel_path=p, suite=args.suite, anchors=anchors) for p in paths]
    print(f"{len(requests)} candidates on {args.suite}; building them and warming the baseline timings", flush=True)
    t0 = time.monotonic()
    with ThreadPoolExecutor(BUILD_WORKERS) as builders:
        list(builders.map(prebuild, requests))
    with LocalPool(1) as warm:             # fills the original's (and anchors') timing cache: not part of the figure
        first = warm.submit(requests[0]).result()
    print(f"  ready in {time.monotonic() - t0:.1f} s; warm-up run: {first.status}, gpu {first.gpu}", flush=True)
    figures = {"candidates": len(requests), "suite": args.suite, "kernel": args.kernel, "runs": []}
    for kind in [k for k in args.pools.split(",") if k]:
        for n in [int(g) for g in args.gpus.split(",") if g]:
            pool = (LocalPool(gpus=list(range(n))) if kind == "local" else RayPool(num_gpus=n))
            try:
                results, wall = _batch(pool, requests)
            finally:
                pool.close()
            devices = sorted({r.versions.get("device", "") for r in results})
            ok = sum(r.all_correct for r in results)
            run = {"pool": kind, "gpus": n, "wall_s": round(wall, 2), "per_min": round(60 * len(results) / wall, 2),
                   "all_correct": ok, "statuses": sorted({r.status for r in results}), "devices": devices,
                   "gpu_models": sorted(group_by_gpu(results))}
            figures["runs"].append(run)
            print(f"  {kind} x{n} GPU: {len(results)} candidates in {wall:.1f} s ({run['per_min']:.1f}/min), "
                  f"{ok} all correct, devices {devices}", flush=True)
    for kind in {r["pool"] for r in figures["runs"]}:
        runs = sorted((r for r in figures["runs"] if r["pool"] == kind), key=lambda r: r["gpus"])
        if len(runs) > 1:
            speedup = runs[0]["wall_s"] / runs[-1]["wall_s"]
            figures[f"{kind}_speedup"] = round(speedup, 3)
            print(f"{kind}: {runs[-1]['gpus']} GPUs vs {runs[0]['gpus']}: {speedup:.2f}x throughput", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(bench_main())
