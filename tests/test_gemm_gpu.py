"""GPU acceptance of kernels/gemm_bf16 through the harness (run on the H200: `pytest -m gpu tests/test_gemm_gpu.py -s`,
or `bash scripts/gpu_run.sh gemmharness`; never in CI): every wrong/ kernel rejected with one of its expected
reasons, the original and every rung correct on `full`, and an offline-agent campaign that records its runs."""
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
def test_every_gemm_kernel_is_judged_as_expected_through_the_harness():
    out = OUT / "gemm_stage"
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gemm_stage.py"), "--out", str(out)],
                         capture_output=True, text=True, timeout=900)
    print(run.stdout[-8000:], run.stderr[-2000:])
    summary = json.loads((out / "gemm_stage.json").read_text())
    assert summary["wrong_as_expected"] and summary["rungs_correct"], "see the tables above"
    assert summary["campaign"]["harness_runs"] >= 2 and run.returncode == 0
