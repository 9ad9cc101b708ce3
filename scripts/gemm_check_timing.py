"""Device time of one GEMM implementation on one shape, and the anchors (cuBLAS through torch.matmul, Triton).

The method of scripts/ladder_bench.py and the harness: warm-up on the capture stream, one call captured into a CUDA
graph, then samples of (L2 flush of 256 MB, graph replay between two events), median; a call that cannot be
captured is timed with events behind a GPU spin that hides its host side. Used by scripts/gemm_gpu_check.py.
"""
from __future__ import annotations

import torch

L2_FLUSH_BYTES = 256 << 20   # problem.toml [timing] l2_flush_bytes: > 4x the H200's 60 MB L2
_flush = None


def time_ms(fn, reps: int = 20, cap_s: float = 0.15) -> tuple[float, str]:
    """(median ms of up to `reps` samples within about `cap_s` of GPU time, method)."""
    global _flush
    if _flush is None:
        _flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):   # warm-up where the capture runs: first-call setup, Triton compiles
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph, captured = torch.cuda.CUDAGraph(), True
    try:
        with torch.cuda.graph(graph):
            fn()
    except Exception:  # noqa: BLE001 - not capturable: time plain calls instead
        captured = False
        torch.cuda.synchronize()

    def sample() -> float:
        _flush.zero_()
        if not captured:
            torch.cuda._sleep(2_000_000)   # ~1 ms of GPU time: the host side of the call overlaps it
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay() if captured else fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    first = sample()
    n = max(3, min(reps, int(cap_s * 1e3 / max(first, 1e-3))))
    samples = sorted(sample() for _ in range(n))
    del graph
    return samples[len(samples) // 2], "graph_replay" if captured else "events_delayed"


# ---- anchors ---------------------------------------------------------------------------------------------------
def cublas_anchor():
    """torch.matmul on the strided views into a preallocated C (cuBLAS with lda/ldb as they are)."""
    def run(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
        torch.matmul(a, b, out=out)
    return run, f"torch {torch.__version__} (cuBLAS)"


def triton_anchor():
    """A Triton matmul (the tutorial's H100 configuration, masks for every tail), or raises ImportError."""
    import triton
    import triton.language as tl

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        pid = tl.program_id(0)
        num_m, num_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
        group = pid // (GROUP_M * num_n)
        first_m = group * GROUP_M
        group_rows = min(num_m - first_m, GROUP_M)
        pid_m = first_m + (pid % (GROUP_M * num_n)) % group_rows
        pid_n = (pid % (GROUP_M * num_n)) // group_rows
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rk = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
        b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, tl.cdiv(K, BLOCK_K)):
            k_left = K - k0 * BLOCK_K
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
            b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K * stride_bk
        c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
        tl.store(c_ptrs, acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    def run(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
        m, k = a.shape
        n = b.shape[1]
        bm, bn = 128, 256
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        matmul_kernel[grid](a, b, out, m, n, k, a.stride(0), b.stride(0), out.stride(0),
                            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
    return run, f"triton {triton.__version__}"


def load_anchors(names) -> tuple[dict, dict]:
    """({name: (run, version)}, {name: why it is missing})."""
    loaders = {"cublas": cublas_anchor, "triton": triton_anchor}
    found, missing = {}, {}
    for name in names:
        try:
            found[name] = loaders[name]()
        except Exception as err:  # noqa: BLE001 - a missing anchor is reported, never fatal
            missing[name] = f"{type(err).__name__}: {str(err)[:120]}"
    return found, missing
