"""Which process-level state makes a ctypes kernel 1.5x slower on a tiny shape? (issue 11, item 4; GPU machine)

Measured on the H200 (2026-12-01): the original kernel on C_s100_d64_c0 read 68 us (torch.profiler and the
harness timer alike) in the proof test's own process, and 99-101 us (profiler and timer alike) in the evaluation
worker and in a fresh process; 02_mma 4-5 us against 9-11. FA3 on the same inputs, in the same worker, moved by
under 0.5 us. So the kernel itself runs slower there, whatever measures it. This changes one thing at a time in
one process and reads the original and 02_mma each time (timer median, profiler sum, SM clock from a
torch.cuda._sleep of known cycles):
  1 new inputs (seed 1000)   2 same buffers, seed 0   3 FA3/FA2 loaded and run   4 after 2 s of matmul load
  5 fresh buffers            6 after 5 s idle

    source scripts/gpu_wheels.sh && python3 scripts/devtime_probe.py      # table on stdout, JSON in $OUT
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHAPE = os.environ.get("PROBE_SHAPE", "C_s100_d64_c0")


def main() -> int:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from workbench.harness.build import build_kernel
    from workbench.harness.kernel_lib import CudaKernel
    from workbench.harness.problem import Problem
    from workbench.harness.reference import Inputs
    from workbench.harness.scenarios import load_suite
    from workbench.harness.timing import Timer
    from workbench.harness.verify import GuardedOutputs

    kernels = {}
    for name, rel in (("original", "kernels/attn_fwd/original.cu"), ("02_mma", "kernels/attn_fwd/ladder/02_mma.cu")):
        b = build_kernel(ROOT / rel)
        assert b.ok, b.summary
        kernels[name] = CudaKernel(b.so_path)
    s = next(x for x in load_suite("full") if x.name == SHAPE)
    timer = Timer("cuda", Problem.load().timing)
    stream = torch.cuda.Stream()
    rows = []

    clock_mhz = timer.clock_mhz

    def fresh(seed: int):
        x = Inputs.allocate(s, "cuda")
        x.fill(seed)
        return x, GuardedOutputs(s, "cuda", 16)

    def read(label: str, x, out) -> None:
        for name, k in kernels.items():
            call = lambda: k(x, out.o, out.lse, s)
            for _ in range(3):
                call()
            before = clock_mhz()
            prof = []
            for _ in range(3):
                timer._flush_l2()
                torch.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as p:
                    call()
                    torch.cuda.synchronize()
                prof.append(sum(e.duration_ns() / 1e3 for e in p.profiler.kineto_results.events()
                                if str(e.device_type()).endswith("CUDA")))
            st = timer.time(lambda i: call(), n_sets=1)
            after = clock_mhz()
            rows.append(dict(step=label, kernel=name, timer_us=st.median_us, p10=st.p10_us, p90=st.p90_us,
                             profiler_us=statistics.median(prof), mhz_before=before, mhz_after=after))
            print(f"{label:<34} {name:<9} timer {st.median_us:7.1f} us ({st.p10_us:.1f}-{st.p90_us:.1f})  "
                  f"profiler {statistics.median(prof):7.1f} us  clock {before:6.0f} -> {after:6.0f} MHz", flush=True)

    if os.environ.get("PROBE_PATTERN_ONLY"):
        with torch.cuda.stream(stream):
            worker_pattern(kernels["02_mma"], timer)
        return 0
    with torch.cuda.stream(stream):
        x, out = fresh(1000)
        read("1 new inputs (seed 1000)", x, out)
        x.fill(0)
        read("2 same buffers, seed 0", x, out)
        from workbench.harness.anchors import load_anchors
        anchors, _, missing = load_anchors(("fa3", "fa2"))
        for fn in anchors.values():
            fn(x, s)
        torch.cuda.synchronize()
        read(f"3 anchors loaded and run {sorted(anchors)}", x, out)
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        t0 = time.time()
        while time.time() - t0 < 2.0:
            for _ in range(20):
                a @ a
            torch.cuda.synchronize()
        read("4 after 2 s of matmul load", x, out)
        y, out2 = fresh(1000)
        read("5 fresh buffers (seed 1000)", y, out2)
        time.sleep(5)
        read("6 after 5 s idle", y, out2)
        pattern_rows = worker_pattern(kernels["02_mma"], timer)
    out_dir = Path(os.environ.get("OUT") or ROOT / ".cache")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "devtime_probe.json").write_text(
        json.dumps({"shape": SHAPE, "rows": rows, "pattern": pattern_rows}, indent=1))
    return 0


def worker_pattern(kernel, timer) -> list[dict]:
    """02_mma timed the way the worker times a candidate, one ingredient at a time (ScenarioRun.time_kernel:
    two input sets, new contents and poisoned outputs before every sample, the output checked after)."""
    import torch
    from workbench.harness.problem import Problem
    from workbench.harness.reference import Inputs, reference, sample_rows
    from workbench.harness.scenarios import load_suite
    from workbench.harness.verify import GuardedOutputs, errors_against

    tol = Problem.load().tolerances
    rows = []
    for name in ("C_s100_d128_c1", "D_cross_q1k_k77_d64"):
        s = next(x for x in load_suite("full") if x.name == name)
        sets = [Inputs.allocate(s, "cuda") for _ in range(2)]
        for j, x in enumerate(sets):
            x.fill(7 + j)
        outs = [GuardedOutputs(s, "cuda", 16) for _ in sets]
        rng = torch.Generator().manual_seed(3)
        counter = iter(range(10**6))
        refill = lambda i: sets[i].fill(100 + next(counter))

        def check(i):
            rows_ = sample_rows(s, tol.original_rows, 0, rng)
            errors_against(outs[i].o, outs[i].lse, reference(s, sets[i], rows_), s)

        launch = lambda i: kernel(sets[i], outs[i].o, outs[i].lse, s)
        spin = lambda us: torch.cuda._sleep(int(us * 1800))     # ~1.8 GHz: a busy GPU, not an exact delay
        worker_before = lambda i: (refill(i), outs[i].poison())
        variants = [("A 1 set, nothing around", 1, None, None),
                    ("E 2 sets, refill + poison, check after (worker)", 2, worker_before, check, False),
                    ("P E primed (the harness since device-time-3)", 2, worker_before, check, True),
                    ("S E primed + 300 us spin before the flush", 2,
                     lambda i: (worker_before(i), spin(300)), check, True),
                    ("T E + 2 ms spin before the flush, not primed", 2,
                     lambda i: (worker_before(i), spin(2000)), check, False),
                    ("A2 1 set, nothing around (again)", 1, None, None)]
        if os.environ.get("PROBE_PATTERN_ONLY"):
            variants = [v if len(v) == 5 else (*v, False) for v in variants]
        else:
            variants = [("A 1 set, nothing around", 1, None, None),
                    ("B 2 sets, nothing around", 2, None, None),
                    ("C 2 sets, poison before", 2, lambda i: outs[i].poison(), None),
                    ("D 2 sets, refill + poison before", 2, lambda i: (refill(i), outs[i].poison()), None),
                    ("E 2 sets, refill + poison, check after (worker)", 2,
                     lambda i: (refill(i), outs[i].poison()), check),
                    ("F 1 set, check after", 1, None, check),
                    ("G 1 set, nothing around (again)", 1, None, None)]
        for label, n, before, after, *primed in variants:
            st = timer.time(launch, before=before, after=after, n_sets=n, prime=bool(primed and primed[0]))
            rows.append(dict(shape=name, variant=label, us=st.median_us, p10=st.p10_us, p90=st.p90_us, n=st.n))
            print(f"{name:<20} {label:<50} {st.median_us:6.1f} us ({st.p10_us:.1f}-{st.p90_us:.1f}, n {st.n})",
                  flush=True)
    return rows


if __name__ == "__main__":
    sys.exit(main())
