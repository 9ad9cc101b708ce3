"""Where does a ctypes kernel's extra device time come from? (issue 11, item 4; run on the GPU machine)

On 2026-12-01 the proof test read the original kernel, timed as the harness's *baseline*, 37 us (55 %) above
torch.profiler on C_s100_d64_c0, while the same timer in the test's own process read 70 us against the
profiler's 68. This times the original on the proof's small shapes in every role and path, each with a fresh
timing cache, and prints one table:
  check: original as candidate | 02_mma with the original as baseline | the same, foreign check off |
         the same, sandbox off
  in-process Timer: plain (the test's way) | baseline-like (poison before each sample) |
         candidate-like (new contents + poison before, output check after) | after a profiler recording
and the in-graph event pair's tare, and a one-kernel graph (a 1-element fill) against the profiler, which is
what is left of the pair's cost once the tare is off.

    source scripts/gpu_wheels.sh && python3 scripts/devtime_diag.py     # table on stdout, JSON in $OUT
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KERNELS = ROOT / "kernels" / "attn_fwd"
ORIGINAL, MMA = KERNELS / "original.cu", KERNELS / "ladder" / "02_mma.cu"
SHAPES = ("C_s100_d64_c0", "C_s100_d128_c1", "D_cross_q1k_k77_d64")


def suite_file(tmp: Path) -> str:
    lines = (KERNELS / "suites" / "full.csv").read_text().splitlines()
    rows = [lines[0]] + [l for l in lines if l.split(",", 1)[0] in SHAPES]
    path = tmp / "diag_shapes.csv"
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def fresh_cache(tmp: Path, name: str) -> str:
    from workbench.harness.build import default_cache_dir
    shared = Path(os.environ.get("WORKBENCH_CACHE") or default_cache_dir()) / "build"
    shared.mkdir(parents=True, exist_ok=True)
    cache = tmp / name
    cache.mkdir()
    (cache / "build").symlink_to(shared, target_is_directory=True)
    return str(cache)


def harness_roles(tmp: Path, suite: str) -> list[dict]:
    """Each role in its own `workbench check` process (env differs per role)."""
    roles = [("check: original as candidate", ORIGINAL, {}),
             ("check: 02_mma, original as baseline", MMA, {}),
             ("check: 02_mma, original as baseline, foreign check off", MMA, {"WORKBENCH_FOREIGN_CHECK": "off"}),
             ("check: 02_mma, original as baseline, sandbox off", MMA, {"WORKBENCH_SANDBOX": "off"}),
             ("check: 02_mma, original as baseline, foreign check and sandbox off", MMA,
              {"WORKBENCH_FOREIGN_CHECK": "off", "WORKBENCH_SANDBOX": "off"})]
    rows = []
    for i, (label, kernel, env) in enumerate(roles):
        out = tmp / f"role{i}.json"
        cmd = [sys.executable, "-m", "workbench.cli", "check", str(kernel), "--suite", suite, "--anchors", "",
               "--cache-dir", fresh_cache(tmp, f"cache{i}"), "--json", str(out), "--traces", ""]
        env = {"WORKBENCH_TIMING_PROFILE": "3", **env}    # profiled replays + the pattern diagnosis in the worker
        proc = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, cwd=ROOT)
        if not out.exists():
            rows.append({"path": label, "error": (proc.stdout + proc.stderr)[-600:]})
            continue
        res = json.loads(out.read_text())
        for r in res["rows"]:
            name = r["scenario"]["name"]
            cand = r.get("stats") or {}
            base = (r.get("reference_stats") or {}).get("original") or {}
            rows.append({"path": label, "shape": name, "candidate_us": cand.get("median_us"),
                         "original_us": base.get("median_us"), "profiler_us": cand.get("profiled_us"),
                         "original_profiler_us": base.get("profiled_us"),
                         "candidate_patterns": cand.get("profile_detail"),
                         "original_patterns": base.get("profile_detail"),
                         "clock_mhz": cand.get("clock_mhz"), "tare_us": res.get("versions", {}).get("timing_tare_us")})
        print(f"  {label}: done (exit {proc.returncode})", flush=True)
    return rows


def in_process(suite: str) -> tuple[list[dict], dict]:
    import torch
    from workbench.harness import activity
    from workbench.harness.build import build_kernel
    from workbench.harness.kernel_lib import CudaKernel
    from workbench.harness.problem import Problem
    from workbench.harness.reference import Inputs
    from workbench.harness.scenarios import load_suite
    from workbench.harness.timing import Timer
    from workbench.harness.verify import GuardedOutputs

    build = build_kernel(ORIGINAL)
    assert build.ok, build.summary
    kernel = CudaKernel(build.so_path)
    problem = Problem.load()
    rows, extra = [], {}
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        timer = Timer("cuda", problem.timing)
        for s in load_suite(suite):
            sets = [Inputs.allocate(s, "cuda") for _ in range(2)]
            for j, x in enumerate(sets):
                x.fill(1000 + j)
            outs = [GuardedOutputs(s, "cuda", 16) for _ in sets]
            launch = lambda i: kernel(sets[i], outs[i].o, outs[i].lse, s)
            for _ in range(3):
                launch(0)
            torch.cuda.synchronize()
            prof = []
            for _ in range(3):
                timer._flush_l2()
                torch.cuda.synchronize()
                with activity.recording("cuda"):
                    launch(0)
                    torch.cuda.synchronize()
            from torch.profiler import ProfilerActivity, profile
            for _ in range(3):
                timer._flush_l2()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as p:
                    launch(0)
                    torch.cuda.synchronize()
                prof.append(sum(e.duration_ns() / 1e3 for e in p.profiler.kineto_results.events()
                                if str(e.device_type()).endswith("CUDA")))
            counter = iter(range(10**6))
            variants = {
                "in-process: plain": dict(),
                "in-process: baseline-like (poison before)": dict(before=lambda i: outs[i].poison()),
                "in-process: candidate-like (refill + poison, check after)": dict(
                    before=lambda i: (sets[i].fill(5000 + next(counter)), outs[i].poison()),
                    after=lambda i: float(outs[i].o.float().abs().sum())),
            }
            for label, kw in variants.items():
                st = timer.time(launch, n_sets=2, **kw)
                rows.append({"path": label, "shape": s.name, "original_us": st.median_us, "method": st.method,
                             "profiler_us": statistics.median(prof), "tare_us": timer.tare_us})
        # one tiny kernel in a graph vs the profiler: what the pair costs beyond its tare
        t = torch.zeros(1, device="cuda")
        st = timer.time(lambda i: t.fill_(1.0), n_sets=1)
        prof = []
        for _ in range(5):
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                t.fill_(1.0)
                torch.cuda.synchronize()
            prof.append(sum(e.duration_ns() / 1e3 for e in p.profiler.kineto_results.events()
                            if str(e.device_type()).endswith("CUDA")))
        extra = {"tare_us": timer.tare_us, "fill1_tared_us": st.median_us, "fill1_profiler_us": statistics.median(prof)}
    return rows, extra


def main() -> int:
    out = Path(os.environ.get("OUT") or ROOT / ".cache" / "devtime_diag")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        suite = suite_file(tmp)
        rows, extra = (([], {"tare_us": float("nan"), "fill1_tared_us": float("nan"),
                             "fill1_profiler_us": float("nan")})
                       if os.environ.get("DIAG_SKIP_INPROCESS") else in_process(suite))
        print(f"tare {extra['tare_us']:.2f} us; 1-element fill: tared {extra['fill1_tared_us']:.2f} us, "
              f"profiler {extra['fill1_profiler_us']:.2f} us", flush=True)
        rows += harness_roles(tmp, suite)
    print(f"{'path':<62} {'shape':<22} {'original us':>11} {'cand us':>8} {'profiler':>8}")
    for r in rows:
        if "error" in r:
            print(f"{r['path']:<62} ERROR {r['error']}")
            continue
        fmt = lambda v: f"{v:.1f}" if isinstance(v, (int, float)) else "-"
        print(f"{r['path']:<62} {r['shape']:<22} {fmt(r.get('original_us')):>11} {fmt(r.get('candidate_us')):>8} "
              f"{fmt(r.get('profiler_us')):>8}  orig prof {fmt(r.get('original_profiler_us'))} "
              f"clock {fmt(r.get('clock_mhz'))}")
        for who in ("candidate", "original"):
            if r.get(f"{who}_patterns"):
                print(f"{'':<62}   {who} patterns: {r[f'{who}_patterns']}")
    (out / "devtime_diag.json").write_text(json.dumps({"rows": rows, "extra": extra}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
