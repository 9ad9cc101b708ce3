"""GPU acceptance of kernels/gemm_bf16 through the standalone check (run on the H200:
`pytest -m gpu tests/test_gemm_gpu.py -s`; never in CI): every wrong/ kernel rejected with its expected reason,
the original and every rung correct on smoke, edge and dev, the rungs free of spills (and 02 issuing HGMMA)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(os.environ.get("WORKBENCH_GPU_OUT", ROOT / ".cache" / "gpu"))


def _gpu() -> bool:
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="needs a CUDA GPU")
def test_every_gemm_kernel_is_judged_as_expected_on_dev():
    out = OUT / "gemm_dev"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gemm_gpu_check.py"), "--suite", "dev",
                          "--no-timing", "--out", str(out)], capture_output=True, text=True, timeout=900)
    print(run.stdout[-6000:], run.stderr[-2000:])
    summary = json.loads((out / "gemm_gpu_check.json").read_text())
    assert run.returncode == 0 and summary["all_as_expected"], "see the tables above"
