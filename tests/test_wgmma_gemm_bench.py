"""scripts/wgmma_gemm_bench.cu (issue 12's wgmma gate): ptxas must report no spills and no C75xx line, in the
release and the watchdog build; on the H200 its correctness mode must pass."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "scripts" / "wgmma_gemm_bench.cu"
FLAGS = ["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a"]
KERNELS = ("gemm_kernel", "rs_probe_kernel")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def ptxas_report(source: Path, out: Path, *defines: str) -> tuple[dict[str, str], list[str]]:
    """Builds with -Xptxas -v; returns each of our kernels' stack/spill line and every C75xx line."""
    run = subprocess.run(["nvcc", *FLAGS, "-Xptxas", "-v", *defines, "-o", str(out), str(source)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    frames, name = {}, None
    for line in run.stderr.splitlines():
        if "Compiling entry function" in line:
            name = next((k for k in KERNELS if k in line), None)
        elif "stack frame" in line and name:
            frames[name] = line.strip()
    return frames, [line for line in run.stderr.splitlines() if re.search(r"C75\d\d", line)]


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("defines", [(), ("-DWGMMA_WATCHDOG",)], ids=["release", "watchdog"])
def test_no_spills_and_no_wgmma_serialization(defines, tmp_path):
    frames, c75 = ptxas_report(SOURCE, tmp_path / "bench", *defines)
    assert set(frames) == set(KERNELS)
    for kernel, line in frames.items():
        assert line == "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", (kernel, line)
    assert c75 == []


@needs_nvcc
@pytest.mark.slow
def test_the_check_sees_a_missing_wgmma_fence(tmp_path):
    stripped = re.sub(r"^(\s*)(fence_regs\(acc\)|wgmma_fence\(\));", r"\1// \2", SOURCE.read_text(), flags=re.M)
    assert stripped != SOURCE.read_text()
    (tmp_path / "nofence.cu").write_text(stripped)
    _, c75 = ptxas_report(tmp_path / "nofence.cu", tmp_path / "nofence")
    assert any("C7519" in line for line in c75)


def test_header_states_the_build_line_prediction_and_measurement():
    head = SOURCE.read_text()[:6000]
    assert "nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/wgmma_gemm" in head
    assert re.search(r"^// Prediction", head, re.M) and re.search(r"^// Measured:", head, re.M)


@pytest.mark.gpu
def test_correctness_mode_passes_on_the_gpu(tmp_path):
    binary = tmp_path / "wgmma_gemm"
    subprocess.run(["nvcc", *FLAGS, "-DWGMMA_WATCHDOG", "-o", str(binary), str(SOURCE)], check=True, timeout=300)
    run = subprocess.run([str(binary), "--check-only"], capture_output=True, text=True, timeout=300)
    print(run.stdout, run.stderr)
    assert run.returncode == 0
    assert "rs_probe" in run.stdout and "correctness: PASS" in run.stdout
