"""The GPU call scripts (scripts/gpu_*.sh) are checked here before device time is spent on them: each parses as bash,
and each compute-sanitizer kernel filter uses a key the tool knows (run 63 lost its sanitizer step to `regex:`)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "scripts").glob("gpu_*.sh"))
# compute-sanitizer's --kernel-name / --filter keys: kernel name (exact) or kernel name substring
SANITIZER_FILTER = re.compile(r"compute-sanitizer\b[^\n]*?--(?:kernel-name|filter)[ =](\S+)")
KNOWN_KEYS = ("kne=", "kns=", "kernel_name=", "kernel_substring=")


def test_there_are_call_scripts_to_check():
    assert len(SCRIPTS) > 10


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_call_script_parses_as_bash(script):
    r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_sanitizer_kernel_filters_use_a_known_key(script):
    for spec in SANITIZER_FILTER.findall(script.read_text()):
        assert spec.startswith(KNOWN_KEYS), f"{script.name}: compute-sanitizer filter {spec!r} (use kns=<substring>)"


def test_the_filter_check_catches_the_run_63_mistake():
    bad = "compute-sanitizer --tool racecheck --kernel-name regex:attn_wgmma --error-exitcode 9 python3 x.py"
    assert SANITIZER_FILTER.findall(bad) == ["regex:attn_wgmma"]
    assert not "regex:attn_wgmma".startswith(KNOWN_KEYS)
