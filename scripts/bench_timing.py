"""Device-time sampling for the scripts' A/B benchmarks: each implementation warmed up and captured as one CUDA
graph, sampled after an L2 flush, and several implementations of one shape sampled round-robin.

Why round-robin: the large shapes run power-limited, so the SM clock drifts within a shape's timing. Timed one
after another, a kernel timed in a low-clock stretch loses up to 25 % against an identical build (run 26 of
docs/kernel_ladder.md: B_h64x8_d128_c0_s1k 1098 vs 874 us for the same code). Interleaved, every implementation
sees the same stretch of clock states.
"""
import torch

L2_FLUSH_BYTES = 256 << 20       # > 4x the H200's 60 MB L2

_flush = None


class _Timed:
    """One implementation's call, warmed up and captured as a CUDA graph (or, where capture fails, run plainly
    after a GPU-side delay that hides its host work); sample() is one device-time measurement after an L2 flush."""

    def __init__(self, fn):
        global _flush
        if _flush is None:
            _flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        self.fn = fn
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):   # warm-up on the capture stream: workspaces, first-call setup
            fn()
            fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.graph, self.captured = torch.cuda.CUDAGraph(), True
        try:
            with torch.cuda.graph(self.graph):
                fn()
        except Exception:  # noqa: BLE001
            self.captured = False
            torch.cuda.synchronize()

    def sample(self):
        _flush.zero_()
        if not self.captured:
            torch.cuda._sleep(2_000_000)   # ~1 ms of GPU time: the host side of the call overlaps it
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        self.graph.replay() if self.captured else self.fn()
        e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e)


def time_interleaved(fns, reps, cap_s, make=None):
    """Median ms per name of fns ({name: call}), sampled round-robin: sample i times every implementation once,
    in an order rotated by i, so a clock or power drift during the shape (large shapes run power-limited) lands on
    all of them alike instead of on whichever was timed last. One timed call per sample, as time_ms."""
    make = make or _Timed   # tests pass a CPU stand-in with the same sample()
    timed = {name: make(fn) for name, fn in fns.items()}
    names = list(timed)
    longest = max((timed[n].sample() for n in names), default=0.0) * 1e-3
    n = max(3, min(reps, int(cap_s / max(longest, 1e-6))))
    samples = {name: [] for name in names}
    for i in range(n):
        for j in range(len(names)):
            name = names[(i + j) % len(names)]
            samples[name].append(timed[name].sample())
    del timed
    return {name: sorted(ts)[len(ts) // 2] for name, ts in samples.items()}


def time_ms(fn, reps, cap_s):
    """Median ms of `reps` samples, each one CUDA-graph replay of fn after an L2 flush: device time, no host
    overhead in it (the harness's method, docs/benchmarks.md "Timing method")."""
    return time_interleaved({"fn": fn}, reps, cap_s)["fn"]
