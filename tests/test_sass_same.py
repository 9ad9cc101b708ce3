"""scripts/sass_same.py tells a reformatting (same SASS) from a code change, per @knob value, with real nvcc builds."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "sass_same.py"
HAVE_TOOLS = shutil.which("nvcc") and (shutil.which("cuobjdump") or (ROOT / ".tools/cuda/bin/cuobjdump").is_file())
needs_tools = pytest.mark.skipif(not HAVE_TOOLS, reason="needs nvcc and cuobjdump (bash scripts/prep_sass_tools.sh)")

GUARD = "#ifndef SCALE\n#define SCALE 2            // @knob SCALE 2 {2,3}\n#endif\n"
KERNEL = GUARD + """__global__ void scale_kernel(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= SCALE; }
"""
WRAPPED = GUARD + """__global__ void scale_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= SCALE;
}
"""


def sass_same(*args, cwd=ROOT):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, cwd=cwd)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@needs_tools
def test_a_rewrapped_kernel_gives_identical_sass_for_every_knob_value(tmp_path):
    run = sass_same(write(tmp_path, "a.cu", KERNEL), write(tmp_path, "b.cu", WRAPPED), "--every-knob")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "identical  (default)" in run.stdout and "identical  -DSCALE=3" in run.stdout
    assert "2 of 2 configurations give identical SASS" in run.stdout


@needs_tools
def test_a_changed_constant_is_told_apart_only_where_it_compiles_differently(tmp_path):
    changed = WRAPPED.replace("x[i] *= SCALE;", "x[i] *= (SCALE == 3 ? 4 : SCALE);")
    run = sass_same(write(tmp_path, "a.cu", KERNEL), write(tmp_path, "b.cu", changed), "--every-knob")
    assert run.returncode == 1
    assert "identical  (default)" in run.stdout and "DIFFERENT  -DSCALE=3" in run.stdout


@needs_tools
def test_a_knob_without_an_ifndef_guard_is_written_into_its_define_not_passed_as_d(tmp_path):
    """-DSCALE=3 would lose to the file's own #define: every build would be the default and prove nothing."""
    bare_old, bare_new = (text.replace("#ifndef SCALE\n", "").replace("#endif\n", "") for text in (KERNEL, WRAPPED))
    changed = bare_new.replace("x[i] *= SCALE;", "x[i] *= (SCALE == 3 ? 4 : SCALE);")
    run = sass_same(write(tmp_path, "a.cu", bare_old), write(tmp_path, "b.cu", changed), "--every-knob")
    assert run.returncode == 1
    assert "identical  (default)" in run.stdout and "DIFFERENT  SCALE=3 (written into its #define" in run.stdout


@needs_tools
def test_sides_whose_knob_lines_differ_are_refused(tmp_path):
    other = WRAPPED.replace("{2,3}", "{2,4}")
    run = sass_same(write(tmp_path, "a.cu", KERNEL), write(tmp_path, "b.cu", other), "--every-knob")
    assert run.returncode == 2 and "different @knob lines" in run.stderr


def test_bad_input_is_one_line_and_exit_2_before_any_build(tmp_path):
    missing = sass_same(tmp_path / "nope.cu", tmp_path / "nope2.cu")
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0
    assert "nope.cu: no such file" in missing.stderr
    flag = sass_same(write(tmp_path, "a.cu", KERNEL), write(tmp_path, "b.cu", KERNEL), "-O0")
    assert flag.returncode == 2 and "only -DNAME=V" in flag.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.cu", "b.cu"]
