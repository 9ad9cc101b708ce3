"""Where things are: the repository root and the problem's files, defined once for the whole package."""
from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PROBLEM_DIR = REPO_ROOT / "kernels" / "attn_fwd"      # the default problem (any other: harness/problems.py)
DEFAULT_PROBLEM = PROBLEM_DIR.name
PROBLEM_FILE = PROBLEM_DIR / "problem.toml"
ORIGINAL_KERNEL = PROBLEM_DIR / "original.cu"
SUITES_DIR = PROBLEM_DIR / "suites"
