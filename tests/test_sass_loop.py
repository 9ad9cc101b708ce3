"""scripts/sass_loop.py: the steady-state loop of a kernel in cuobjdump SASS, and its one-line errors; and
launch_one (the process ncu profiles for us and for FA3) refusing a bad argument before any GPU work."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "sass_loop.py"


def _sass(loop_body: list[str]) -> str:
    """A cuobjdump-shaped listing: a prologue HGMMA, then a loop (backward BRA) around the HGMMA cluster."""
    lines, addr = [], 0
    def emit(s):
        nonlocal addr
        lines.append(f"        /*{addr:04x}*/                   {s} ;       /* 0x000000000000000 */")
        addr += 0x10
    emit("HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT")   # outside the loop
    for _ in range(70):
        emit("NOP")
    start = addr
    for s in loop_body:
        emit(s)
    emit(f"@P0 BRA 0x{start:x}")
    emit("EXIT")
    return "\n\tcode for sm_90a\n\t\tFunction : _Z6kernelIL3E\n" + "\n".join(lines) + "\n"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def test_counts_the_loop_around_the_largest_hgmma_cluster(tmp_path):
    body = ["R2UR UR10, R22"] + ["HGMMA.64x176x16.F32.BF16 R24, gdesc[UR8], R24"] * 4 + ["MUFU.EX2 R1, R1"] * 3 \
        + ["@!P1 FSEL R2, R2, RZ, P0"]
    f = tmp_path / "k.sass"
    f.write_text(_sass(body))
    r = run(str(f), "kernel")
    assert r.returncode == 0, r.stderr
    assert f"{len(body) + 1} instructions, HGMMA 4" in r.stdout      # + the branch back
    assert "MUFU:3" in r.stdout and "R2UR:1" in r.stdout and "FSEL:1" in r.stdout and "BRA:1" in r.stdout


def test_bad_inputs_get_one_line_errors(tmp_path):
    r = run(str(tmp_path / "missing.sass"), "kernel")
    assert r.returncode == 2 and "cannot read" in r.stderr and r.stderr.count("\n") == 1
    f = tmp_path / "k.sass"
    f.write_text(_sass(["HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], R24"]))
    r = run(str(f), "other")
    assert r.returncode == 2 and "no function containing 'other'" in r.stderr
    r = run(str(f))
    assert r.returncode == 2 and "usage" in r.stderr


def test_launch_one_refuses_ours_without_a_kernel_before_touching_the_gpu():
    r = subprocess.run([sys.executable, "-m", "workbench.agent.launch_one", "--impl", "ours", "--scenario", "x"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "--impl ours needs --so" in r.stderr


def test_counts_mode_counts_the_whole_function(tmp_path):
    body = ["HGMMA.64x176x16.F32.BF16 R24, gdesc[UR8], R24"] * 2 + ["R2UR UR10, R22", "MUFU.EX2 R1, R1"]
    f = tmp_path / "k.sass"
    f.write_text(_sass(body))
    r = run("--counts", str(f), "kernel")
    assert r.returncode == 0, r.stderr
    # prologue HGMMA + 70 NOPs + body + branch + EXIT
    assert f"instr {1 + 70 + len(body) + 2:5d}" in r.stdout and "HGMMA    3" in r.stdout and "R2UR    1" in r.stdout
