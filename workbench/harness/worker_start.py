"""The worker's start, before any candidate code runs: what torch, the profiler and the anchors load lazily, loaded
while the worker can still read it (warm_up), and the GPU and software versions its results carry (environment).
"""
from __future__ import annotations

import torch

from workbench.harness.timing import TIMING_VERSION


def warm_up(device: str, anchors: dict, judge) -> None:
    """Load what torch, the profiler and the anchors load lazily on first use (cuBLAS, cuBLASLt, cuDNN engines,
    CUPTI) while the worker still runs as the user who can read them."""
    from workbench.harness import activity

    for dtype in (torch.float32, torch.bfloat16):
        a = torch.randn(64, 64, device=device, dtype=dtype)
        (a @ a).float().softmax(-1).sum().item()
    small = judge.WARM_UP
    x = judge.Inputs.allocate(small, device)
    x.fill(1)
    for anchor, _ in anchors.values():
        try:
            anchor(x, small)
        except Exception:           # an anchor that refuses the shape is judged later, per scenario
            pass
    torch.cuda.synchronize()
    if not activity.unavailable(device):
        with activity.recording(device):
            torch.zeros(1, device=device).add_(1)
            torch.cuda.synchronize()


def environment(device: str, anchor_versions: dict) -> tuple[str, dict]:
    versions = {"torch": torch.__version__, "timing": TIMING_VERSION,
                **{f"anchor_{k}": v for k, v in anchor_versions.items()}}
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(0)
        versions["cuda_runtime"] = torch.version.cuda
        versions["sms"] = props.multi_processor_count
        return props.name, versions
    return "cpu", versions
