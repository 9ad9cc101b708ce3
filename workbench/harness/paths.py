"""Where things are: the source tree, the workbench's home (the problem's files, the question bank), defined once.

The home holds kernels/ (each problem's original.cu, problem.toml and suites/) and question_bank.csv. It is, in
this order:
  * $WORKBENCH_HOME, when set (a folder of your own with that layout, e.g. a checkout of the repository);
  * the source tree this package was imported from, when it holds them (a clone, or `pip install -e .`);
  * the copy a wheel ships inside the package (workbench/_home, made by setup.py), so `pip install .` works
    from any folder.
REPO_ROOT is the source tree itself: what a worker needs on its import path, wherever the data lives.
"""
from __future__ import annotations

import os
from pathlib import Path

HOME_VARIABLE = "WORKBENCH_HOME"
REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_HOME = Path(__file__).resolve().parents[1] / "_home"
PROBLEM_MARK = Path("kernels") / "attn_fwd" / "problem.toml"


def find_home() -> Path:
    """The folder that holds kernels/ and question_bank.csv (see the module's docstring)."""
    given = os.environ.get(HOME_VARIABLE, "").strip()
    if given:
        return Path(given).expanduser().resolve()
    if (REPO_ROOT / PROBLEM_MARK).is_file() or not (SHIPPED_HOME / PROBLEM_MARK).is_file():
        return REPO_ROOT
    return SHIPPED_HOME


HOME = find_home()
PROBLEM_DIR = HOME / "kernels" / "attn_fwd"      # the default problem (any other: harness/problems.py)
DEFAULT_PROBLEM = PROBLEM_DIR.name
PROBLEM_FILE = PROBLEM_DIR / "problem.toml"
ORIGINAL_KERNEL = PROBLEM_DIR / "original.cu"
SUITES_DIR = PROBLEM_DIR / "suites"
QUESTION_BANK = HOME / "question_bank.csv"


def home_problem() -> str:
    """'' when the home holds the problem's files, else one line saying what is missing and what to do."""
    if PROBLEM_FILE.is_file():
        return ""
    where = f"${HOME_VARIABLE} ({HOME})" if os.environ.get(HOME_VARIABLE, "").strip() else str(HOME)
    return (f"{where} holds no kernels/attn_fwd/problem.toml; set {HOME_VARIABLE} to a folder with the repository's "
            "kernels/ and question_bank.csv (e.g. a clone), or reinstall the wheel")
