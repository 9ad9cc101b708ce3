"""Every command validates its request before it spends anything: one line (what, where, what to do), exit 2,
and nothing created: no campaign or run folder, no trace row, no output file (issue 16, lists 1, 4 and 7).

The commands run in this process through `workbench.cli.main` (the `run_cli` fixture), with real files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORIGINAL = ROOT / "kernels" / "attn_fwd" / "original.cu"
SUITE_HEADER = "name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,category\n"


def refused(result, *needles):
    code, out, err = result
    lines = err.strip().splitlines()
    assert code == 2, (code, out, err)
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def nothing_in(folder: Path) -> bool:
    return not folder.exists() or not any(folder.iterdir())


@pytest.fixture
def files(tmp_path):
    latin = tmp_path / "latin1.cu"
    latin.write_bytes(ORIGINAL.read_bytes().replace(b"//", "// café: ".encode("latin-1"), 1))
    negative = tmp_path / "negative.csv"
    negative.write_text(SUITE_HEADER + "ok,1,2,2,64,64,64,0,bf16,A\nbad,1,2,2,-64,64,64,0,bf16,A\n")
    latin_suite = tmp_path / "latin1.csv"
    latin_suite.write_bytes((SUITE_HEADER + "caf\xe9,1,2,2,64,64,64,0,bf16,A\n").encode("latin-1"))
    extra = tmp_path / "extra.csv"
    extra.write_text("name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,categroy\n"
                     "one,1,2,2,64,64,64,0,bf16,A\n")
    bank = tmp_path / "bank.csv"
    bank.write_bytes("id,text,trigger,layer,source,notes\nq1,Is the caf\xe9 open?,any,memory,seed,\n".encode("latin-1"))
    return {"latin": latin, "negative": negative, "latin_suite": latin_suite, "extra": extra, "bank": bank,
            "root": tmp_path / "campaigns", "traces": tmp_path / "traces"}


# ---- list 1: invalid requests that used to spend a budget -----------------------------------------------
CAMPAIGN = ["campaign", "--agent", "offline", "--evaluator", "standin", "--suite", "smoke"]


@pytest.mark.parametrize("args,needles", [
    (["--stop", "speed >= 2"], ("--stop", "unknown name 'speed'")),
    (["--stop", "geomean >= "], ("--stop", "not valid")),
    (["--stop", "1/0"], ("--stop", "divides by zero")),
    (["--stop", "geomean_vs_fa3"], ("--stop", "not a condition")),
    (["--suite", "{negative}"], ("--suite", "negative.csv:3", "seqlen_q must be positive")),
    (["--budget", "tool_calls=-5"], ("tool_calls=-5", "whole number >= 1")),
    (["--budget", "wall=0"], ("wall=0", "time > 0")),
    (["--budget", "usd=-1"], ("usd=-1", "> 0")),
    (["--budget", "speed=3"], ("speed=3", "use tool_calls=N")),
    (["--stall-runs", "0"], ("--stall-runs", ">= 1")),
    (["--min-gain", "0.9"], ("--min-gain", ">= 1")),
    (["--kernel", "{latin}"], ("--kernel", "latin1.cu:", "not UTF-8", "iconv")),
    (["--kernel", "kernels"], ("--kernel", "is a directory")),
])
def test_campaign_refuses_before_a_folder_exists(run_cli, files, args, needles):
    args = [a.format(**files) for a in args]
    refused(run_cli([*CAMPAIGN, "--root", files["root"], *args]), *needles)
    assert nothing_in(files["root"])


def test_experiment_refuses_zero_repeats_and_bad_requests(run_cli, files):
    base = ["experiment", "--agent", "offline", "--evaluator", "standin", "--root", files["root"]]
    refused(run_cli([*base, "--repeats", "0"]), "--repeats", "whole number >= 1", "got '0'")
    refused(run_cli([*base, "--stop", "1/0"]), "divides by zero")
    refused(run_cli([*base, "--modes", "human"]), "cannot run unattended")
    assert nothing_in(files["root"])


EVOLVE = ["evolve", "--evaluator", "standin", "--suite", "smoke", "--kernel", "kernels/attn_fwd/ladder/02_mma.cu"]


@pytest.mark.parametrize("args,needles", [
    (["--population", "0"], ("--population", ">= 1")),
    (["--generations", "-1"], ("--generations", ">= 0")),
    (["--tournament", "0"], ("--tournament", ">= 1")),
    (["--budget", "evaluations=0"], ("evaluations=0", ">= 1")),
    (["--budget", "wall=0"], ("wall=0", "time > 0")),
    (["--stop", "geomean >= "], ("--stop", "not valid")),
    (["--anchors", "fa9"], ("--anchors", "fa9")),
    (["--suite", "{latin_suite}"], ("--suite", "latin1.csv: not UTF-8", "at line 2")),
])
def test_evolve_refuses_before_a_run_folder_exists(run_cli, files, args, needles):
    args = [a.format(**files) for a in args]
    refused(run_cli([*EVOLVE, "--root", files["root"], *args]), *needles)
    assert nothing_in(files["root"])


@pytest.mark.parametrize("args,needles", [
    (["--timeout", "-1"], ("--timeout", "> 0 seconds")),
    (["--timeout", "0"], ("--timeout", "> 0 seconds")),
    (["--gpu", "-1"], ("--gpu", ">= 0")),
    (["--previous-best", "-2"], ("--previous-best", "> 0")),
    (["--suite", "{negative}"], ("--suite", "negative.csv:3")),
    (["--anchors", "fa3,nope"], ("--anchors", "nope")),
])
def test_check_refuses_bad_numbers_before_building(run_cli, files, args, needles):
    args = [a.format(**files) for a in args]
    refused(run_cli(["check", "standin:correct", "--traces", files["traces"], *args]), *needles)
    assert not files["traces"].exists()


def test_report_threshold_is_a_fraction(run_cli, imported_fixture_traces, tmp_path):
    for bad in ("-0.5", "5", "0"):
        refused(run_cli(["report", imported_fixture_traces, "-o", tmp_path / "r.html", "--threshold", bad]),
                "--threshold", "between 0 and 1")
    assert not (tmp_path / "r.html").exists()


# ---- list 4: what used to end in a traceback --------------------------------------------------------------
def test_check_stop_that_divides_by_zero_is_refused_before_the_evaluation(run_cli, files, tmp_path):
    out = tmp_path / "r.json"
    refused(run_cli(["check", "standin:correct", "--stop", "1/0", "--json", out, "--traces", files["traces"]]),
            "--stop", "divides by zero")
    assert not out.exists() and not files["traces"].exists()


def test_non_utf8_inputs_name_the_byte(run_cli, files):
    refused(run_cli(["check", files["latin"], "--traces", files["traces"]]), "latin1.cu: not UTF-8", "0xe9", "iconv")
    refused(run_cli(["check", "standin:correct", "--suite", files["latin_suite"]]), "latin1.csv", "at line 2: 0xe9")
    refused(run_cli(["bank", "--bank", files["bank"], "list"]), "bank.csv: not UTF-8", "at line 2: 0xe9")
    refused(run_cli([*CAMPAIGN, "--root", files["root"], "--kernel", files["latin"]]), "0xe9")
    assert nothing_in(files["root"]) and not files["traces"].exists()


def test_output_paths_that_are_directories(run_cli, files, tmp_path, imported_fixture_traces):
    refused(run_cli(["check", "standin:correct", "--json", tmp_path, "--traces", files["traces"]]),
            "--json", "is a directory")
    refused(run_cli(["report", imported_fixture_traces, "-o", tmp_path]), "-o/--out", "is a directory")
    (tmp_path / "file").write_text("x")
    refused(run_cli(["check", "standin:correct", "--traces", tmp_path / "file"]), "--traces", "not a directory")
    refused(run_cli([*CAMPAIGN, "--root", tmp_path / "file" / "sub"]), "--root", "is a file")
    assert not files["traces"].exists()


def test_unknown_standin_is_named(run_cli, files):
    line = refused(run_cli(["check", "standin:nope", "--traces", files["traces"]]), "no CPU stand-in named 'nope'")
    assert "correct" in line and not files["traces"].exists()


def test_a_stand_in_never_lands_in_the_default_traces(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)          # the default --traces is data/traces under the working directory
    code, out, _ = run_cli(["check", "standin:correct", "--suite", "smoke", "--anchors", "",
                            "--cache-dir", tmp_path / "cache"])
    assert code == 0 and "traces: not written: a CPU stand-in" in out
    assert not (tmp_path / "data").exists()


# ---- list 7 -------------------------------------------------------------------------------------------------
def test_version(run_cli):
    from workbench import __version__
    code, out, _ = run_cli(["--version"])
    assert code == 0 and out.strip() == f"workbench {__version__}"


def test_a_directory_as_kernel(run_cli):
    refused(run_cli(["check", "kernels"]), "'kernels' is a directory", ".cu")


def test_unknown_suite_columns_warn(run_cli, files, tmp_path):
    # the suite is read (and warned about) before the output paths are checked, so a refused --json shows both
    code, _, err = run_cli(["check", "standin:correct", "--suite", files["extra"], "--json", tmp_path])
    warning, refusal = err.strip().splitlines()
    assert code == 2 and "warning:" in warning and "unknown column(s) 'categroy' ignored" in warning
    assert "--json" in refusal


def test_forced_format_on_garbage_writes_nothing(run_cli, tmp_path):
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not a transcript\n{broken\n")
    code, _, err = run_cli(["import", garbage, "-o", tmp_path / "out", "--format", "claude_code"])
    assert code == 2 and "no claude_code record in it" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc not installed")
def test_wall_s_is_the_run_as_a_person_times_it(tmp_path):
    """Without a GPU the build is cached after the first run and the check itself takes milliseconds; wall_s
    still counts the command's start-up (torch), which is most of what a person waits for."""
    import os
    import re
    import subprocess
    import sys
    import time

    env = dict(os.environ, WORKBENCH_NO_GPU="1", PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "workbench.cli", "check", str(ORIGINAL), "--suite", "smoke",
               "--cache-dir", str(tmp_path / "cache")]
    subprocess.run(command, env=env, capture_output=True, cwd=tmp_path)           # fills the build cache
    t0 = time.monotonic()
    run = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tmp_path)
    elapsed = time.monotonic() - t0
    wall = float(re.search(r"wall_s: ([0-9.]+)", run.stdout).group(1))
    assert run.returncode == 2 and "static_only" in run.stdout
    assert 0.5 * elapsed <= wall <= elapsed


def test_no_blank_scenarios_line_after_a_build_failure():
    from workbench.check_cli import format_summary
    from workbench.harness.result import SuiteResult

    result = SuiteResult(kernel_path="bad.cu", kernel_sha="ab" * 32, suite="smoke", status="build_failed",
                         error="bad.cu: build failed at line 1: expected an expression")
    lines = format_summary(result).splitlines()
    assert "scenarios: none run (build failed)" in lines
    assert all(line.split(":", 1)[1].strip() for line in lines if ":" in line)


def test_a_check_leaves_no_unclosed_file(tmp_path):
    """The worker's stdout pipe is closed once the worker is gone: no ResourceWarning at exit."""
    import os
    import subprocess
    import sys

    suite = tmp_path / "one.csv"
    suite.write_text(SUITE_HEADER + "one,1,2,2,64,64,64,0,bf16,A\n")
    run = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-m", "workbench.cli", "check",
                          "standin:correct", "--suite", str(suite), "--anchors", "", "--traces", "", "--no-timing",
                          "--cache-dir", str(tmp_path / "cache")], capture_output=True, text=True, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ResourceWarning" not in run.stderr, run.stderr
