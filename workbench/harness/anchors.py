"""The anchor kernels every candidate is timed against; INSTALL_HINTS says where each comes from.

Each anchor is imported behind a guard: a missing one is reported by name with what to install, and the
harness goes on with the others. An anchor is a callable `anchor(inputs, scenario) -> (o, lse | None)`.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch

from workbench.harness.anchor_loading import load_from
from workbench.harness.reference import Inputs, softmax_scale
from workbench.harness.scenarios import Scenario

Anchor = Callable[[Inputs, Scenario], tuple]
INSTALL_HINTS = {
    "fa3": "pip install fa3-fwd==0.0.3 (Hopper, bf16)",
    "fa4": "pip install flash-attn-4==4.0.0b36 nvidia-cutlass-dsl==4.8.1",
    "cudnn": "needs torch with cuDNN >= 9 on a GPU",
    "fa2": "needs torch with CUDA (SDPA flash backend)",
}


def _fa3() -> tuple[Anchor, str]:
    from fa3_fwd_interface import flash_attn_func  # type: ignore
    import importlib.metadata as md

    def run(x: Inputs, s: Scenario):
        out = flash_attn_func(x.q, x.k, x.v, softmax_scale=softmax_scale(s), causal=s.causal)
        return (out[0], out[1]) if isinstance(out, tuple) else (out, None)
    return run, md.version("fa3-fwd")


def _fa4() -> tuple[Anchor, str]:
    from flash_attn.cute import flash_attn_func  # type: ignore
    import importlib.metadata as md

    def run(x: Inputs, s: Scenario):
        out = flash_attn_func(x.q, x.k, x.v, softmax_scale=softmax_scale(s), causal=s.causal)
        return (out[0], out[1]) if isinstance(out, tuple) else (out, None)
    return run, md.version("flash-attn-4")


def _sdpa(backend_name: str) -> tuple[Anchor, str]:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right

    backend = getattr(SDPBackend, backend_name)

    def run(x: Inputs, s: Scenario):
        q, k, v = (t.transpose(1, 2) for t in (x.q, x.k, x.v))
        mask, is_causal = None, False
        if s.causal and s.seqlen_q == s.seqlen_k:
            is_causal = True
        elif s.causal:   # SDPA's is_causal is top-left aligned; the contract is bottom-right
            mask = causal_lower_right(s.seqlen_q, s.seqlen_k)
        with sdpa_kernel([backend]):
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                               scale=softmax_scale(s), enable_gqa=s.heads_q != s.heads_kv)
        return o.transpose(1, 2), None
    version = f"torch {torch.__version__}"
    if backend_name == "CUDNN_ATTENTION":
        version += f", cudnn {torch.backends.cudnn.version()}"
        # its first call of a shape builds a cuDNN graph (0.5-1.6 s on the H200) kept in a thread-local cache:
        # the worker builds them in parallel lanes and times each shape in its lane (anchor_plans.py)
        run.plans_per_thread = True
    return run, version


LOADERS = {
    "fa3": _fa3,
    "fa4": _fa4,
    "cudnn": lambda: _sdpa("CUDNN_ATTENTION"),
    "fa2": lambda: _sdpa("FLASH_ATTENTION"),
}


def load_anchors(names) -> tuple[dict, dict, dict]:
    """(anchors by name, versions by name, one-line reasons for the ones that could not be loaded)."""
    return load_from(LOADERS, INSTALL_HINTS, names)


def anchor_output(anchor: Anchor, x: Inputs, s: Scenario) -> tuple[Optional[torch.Tensor], Optional[torch.Tensor]]:
    o, lse = anchor(x, s)
    return o, lse
