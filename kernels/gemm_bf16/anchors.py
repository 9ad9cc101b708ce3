"""The bf16 GEMM's anchors: cuBLAS through torch.matmul on the same strided views, and a Triton matmul where
Triton is installed. Each is `anchor(inputs, scenario) -> (C,)`, loaded behind a guard: a missing one is named with
what to install and the harness goes on without it (workbench/harness/anchors.py is attention's twin). Anchors
only: a candidate that calls cuBLAS is `foreign_kernel`."""
from __future__ import annotations

import torch

from workbench.harness.anchor_loading import load_from

INSTALL_HINTS = {
    "cublas": "needs torch with CUDA (torch.matmul is cuBLAS)",
    "triton": "pip install triton (the version your torch was built with)",
}


def _cublas():
    def run(x, s):
        return (torch.matmul(x.a, x.b),)
    return run, f"torch {torch.__version__} (cuBLAS)"


def _triton():
    """The Triton tutorial's matmul in its H100 configuration (128 x 256 x 64 tiles, 8 warps, 3 stages), masked
    at every tail, strided like the contract."""
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

    def run(x, s):
        out = torch.empty(s.m, s.n, dtype=torch.bfloat16, device=x.a_buf.device)
        if s.m and s.n:
            grid = (triton.cdiv(s.m, 128) * triton.cdiv(s.n, 256),)
            matmul_kernel[grid](x.a, x.b, out, s.m, s.n, s.k, s.lda, s.ldb, out.stride(0),
                                BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
        return (out,)
    return run, f"triton {triton.__version__}"


LOADERS = {"cublas": _cublas, "triton": _triton}


def load_anchors(names) -> tuple[dict, dict, dict]:
    """(anchors by name, versions by name, one-line reasons for the ones that could not be loaded)."""
    return load_from(LOADERS, INSTALL_HINTS, names)
