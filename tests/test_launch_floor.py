"""scripts/launch_floor.py (q042's measurement): bad input stops before any build, and the empty kernel it times
against builds with nvcc into a library whose launch symbol ctypes can bind."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import launch_floor  # noqa: E402


def test_an_unknown_shape_is_refused_before_any_build(monkeypatch, capsys):
    import workbench.harness.build as build

    monkeypatch.setattr(build, "build_kernel", lambda *a, **k: pytest.fail("built before the input was checked"))
    assert launch_floor.main(["kernels/attn_fwd/ladder/04_pingpong.cu", "C_s9000_d256_c0", "NO_SUCH_SHAPE"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NO_SUCH_SHAPE" in err[0] and "C_s9000_d256_c0" not in err[0]


def test_a_missing_kernel_file_is_refused_before_any_build(monkeypatch, capsys):
    import workbench.harness.build as build

    monkeypatch.setattr(build, "build_kernel", lambda *a, **k: pytest.fail("built a missing file"))
    assert launch_floor.main(["kernels/attn_fwd/ladder/no_such_rung.cu", "C_s9000_d256_c0"]) == 2
    assert "no kernel file" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_the_empty_kernel_builds_and_exports_its_launcher(tmp_path):
    so = launch_floor.compile_empty(tmp_path)
    symbols = subprocess.run(["nm", "-D", str(so)], capture_output=True, text=True, check=True).stdout
    assert " T launch_empty" in symbols
