"""A non-editable install works outside the repository (issue 27 item 4): the wheel that `pip install .` builds
carries kernels/, the suites, problem.toml and the question bank (setup.py copies them into workbench/_home), and
`workbench check KERNEL --suite smoke`, a suite CSV of one's own and `workbench bank list` work from another folder
in a fresh venv. No network: the wheel is built with this venv's setuptools, installed with --no-deps, and the
fresh venv borrows this one's dependencies through a .pth line (not this venv's editable workbench: a path line
runs no .pth file of that folder). Without torch, the commands that need it say so in one line."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "question_bank.csv", "workbench", "kernels")
SUITE = ("name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,category\n"
         "mine,1,2,2,64,64,64,0,bf16,user\n")


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WORKBENCH_HOME", "VIRTUAL_ENV")}
    return env | extra


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the fresh venv's `workbench` script, a folder outside the repository)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in (n for n in SOURCES if (ROOT / n).exists()):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, src / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                         if (ROOT / name).is_dir() else {}))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                            "--no-index", "-q", "-w", str(tmp / "dist")], capture_output=True, text=True,
                           timeout=300, env=clean_env())
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next((tmp / "dist").glob("workbench-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                           "-q", str(wheel)], capture_output=True, text=True, timeout=300, env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return venv / "bin" / "workbench", elsewhere


def run(script, cwd, *args, **env):
    return subprocess.run([str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, env=clean_env(**env))


def test_the_wheel_ships_the_home_and_imports_from_the_venv(installed):
    script, elsewhere = installed
    python = script.parent / "python"
    where = subprocess.run([str(python), "-c", "import workbench, workbench.harness.paths as p; "
                            "print(workbench.__file__); print(p.HOME); print(p.PROBLEM_FILE.is_file())"],
                           cwd=elsewhere, capture_output=True, text=True, env=clean_env())
    package, home, found = where.stdout.split()
    assert str(ROOT) not in package and package.startswith(str(script.parents[1]))
    assert home.endswith("workbench/_home") and found == "True"


def test_check_and_bank_work_from_another_folder(installed):
    script, elsewhere = installed
    shutil.copy2(ROOT / "kernels" / "attn_fwd" / "original.cu", elsewhere / "mine.cu")
    (elsewhere / "mine.csv").write_text(SUITE)
    kernel = run(script, elsewhere, "check", "mine.cu", "--suite", "smoke")
    # no GPU here: the build and the static checks run, verification needs a GPU (exit 2, said in the result)
    assert "scenarios: 8 static_only" in kernel.stdout, kernel.stdout + kernel.stderr
    assert "Traceback" not in kernel.stderr
    standin = run(script, elsewhere, "check", "standin:correct", "--suite", "mine.csv", "--no-timing")
    assert standin.returncode == 0, standin.stdout + standin.stderr
    assert "all_correct: true" in standin.stdout
    gemm = run(script, elsewhere, "check", "standin:correct", "--problem", "gemm_bf16", "--suite", "smoke",
               "--no-timing")     # a second problem's interface modules ship in the home too
    assert gemm.returncode == 0 and "all_correct: true" in gemm.stdout, gemm.stdout + gemm.stderr
    bank = run(script, elsewhere, "bank", "list")
    assert bank.returncode == 0, bank.stderr
    assert bank.stdout.strip().splitlines()[-1].endswith("questions") and "q001" in bank.stdout
    assert run(script, elsewhere, "check", "--help").returncode == 0
    assert not (elsewhere / "data").exists()          # a stand-in's rows go nowhere unless --traces says


def test_workbench_home_points_elsewhere_and_a_wrong_one_is_one_line(installed, tmp_path):
    script, elsewhere = installed
    home = tmp_path / "home"
    shutil.copytree(ROOT / "kernels", home / "kernels")
    (home / "question_bank.csv").write_text((ROOT / "question_bank.csv").read_text().splitlines()[0] +
                                            "\nq1,Is the L2 flush larger than the L2?,any,measurement,seed,\n")
    bank = run(script, elsewhere, "bank", "list", WORKBENCH_HOME=str(home))
    assert bank.returncode == 0 and "1 of 1 questions" in bank.stdout, bank.stdout + bank.stderr
    wrong = run(script, elsewhere, "check", "standin:correct", "--suite", "smoke", WORKBENCH_HOME=str(tmp_path))
    assert wrong.returncode == 2 and len(wrong.stderr.strip().splitlines()) == 1
    assert "WORKBENCH_HOME" in wrong.stderr and "problem.toml" in wrong.stderr


NO_TORCH = ("import sys; sys.modules['torch'] = None\n"        # as if torch were not installed
            "from workbench.cli import main; sys.exit(main(sys.argv[1:]))")


@pytest.mark.parametrize("args", [
    ["check", "{kernel}", "--suite", "smoke"],
    ["campaign", "--kernel", "{kernel}", "--suite", "smoke", "--agent", "offline", "--root", "{tmp}/campaigns"],
    ["warm", "--suite", "smoke"],
])
def test_without_torch_a_command_that_needs_it_says_so_in_one_line(tmp_path, args):
    kernel = ROOT / "kernels" / "attn_fwd" / "original.cu"
    args = [a.format(kernel=kernel, tmp=tmp_path) for a in args]
    done = subprocess.run([sys.executable, "-c", NO_TORCH, *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=clean_env(PYTHONPATH=str(ROOT), WORKBENCH_NO_GPU="1"))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs the Python package 'torch'" in lines[0], done.stderr
    assert "torch==2.13.0+cpu" in lines[0] and "whl/cpu" in lines[0]       # the CPU build, not PyPI's CUDA wheel
    assert not (tmp_path / "campaigns").exists()


def test_without_torch_help_works(tmp_path):
    for command in ("check", "campaign", "evolve", "mcp", "warm"):
        done = subprocess.run([sys.executable, "-c", NO_TORCH, command, "--help"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env=clean_env(PYTHONPATH=str(ROOT)))
        assert done.returncode == 0, (command, done.stderr)
