"""Load a built kernel library with ctypes and call its `attn_fwd` on torch tensors.

The wrapper passes the *current* torch stream: the worker makes a non-default, non-blocking stream current,
so a kernel that ignores the stream it is given is caught (verify.py, reason `stream`).
"""
from __future__ import annotations

import ctypes

import torch

from workbench.harness.reference import Inputs, softmax_scale
from workbench.harness.scenarios import Scenario

_ARGTYPES = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 7 + [ctypes.c_float, ctypes.c_void_p]


class CudaKernel:
    def __init__(self, so_path: str):
        self.so_path = so_path
        self.lib = ctypes.CDLL(so_path, mode=ctypes.RTLD_LOCAL)
        self.fn = self.lib.attn_fwd
        self.fn.argtypes = _ARGTYPES
        self.fn.restype = ctypes.c_int

    def __call__(self, inputs: Inputs, o: torch.Tensor, lse: torch.Tensor, s: Scenario) -> int:
        stream = torch.cuda.current_stream().cuda_stream
        return int(self.fn(inputs.q.data_ptr(), inputs.k.data_ptr(), inputs.v.data_ptr(), o.data_ptr(),
                           lse.data_ptr(), s.batch, s.heads_q, s.heads_kv, s.seqlen_q, s.seqlen_k, s.head_dim,
                           int(s.causal), softmax_scale(s), stream))
