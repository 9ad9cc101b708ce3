"""The edges a newcomer hits (issue 27 items 1, 2, 6, 7, 8, 10, 13; issue 25 item 16): every bad input is one line
and exit 2 before anything is spent, and creates or changes nothing on disk, so a later --resume is never
poisoned. Real files and real subprocesses; the campaigns run on the CPU stand-in evaluator."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.traces.writer import read_table

ROOT = Path(__file__).resolve().parents[1]
ORIGINAL = ROOT / "kernels" / "attn_fwd" / "original.cu"
KERNEL = "// stand-in kernel\n#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\nint x;\n"
NEW = ["--new", "--kernel", "start.cu", "--suite", "smoke", "--evaluator", "standin", "--mode", "hybrid"]


def workbench(cwd, *args, **env):
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")}
    env = base | {"PYTHONPATH": str(ROOT), "WORKBENCH_NO_GPU": "1"} | env
    return subprocess.run([sys.executable, "-m", "workbench.cli", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)


def refused(done, *needles) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def campaign(tmp_path):
    """campaigns/c1/ (an outside agent's campaign, stand-in timings) with one check."""
    (tmp_path / "start.cu").write_text(KERNEL)
    done = workbench(tmp_path, "check", "kernel.cu", "--campaign", "c1", *NEW)
    assert done.returncode == 3, done.stdout + done.stderr
    return tmp_path


# ---- item 1: the bank -------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["", "   ", "\t\n ", "?!"])
def test_bank_add_refuses_an_empty_question_and_changes_nothing(tmp_path, text):
    bank = tmp_path / "bank.csv"
    shutil.copy2(ROOT / "question_bank.csv", bank)
    before = bank.read_bytes()
    refused(workbench(tmp_path, "bank", "--bank", bank, "add", text, "--layer", "memory"), "empty")
    assert bank.read_bytes() == before
    assert workbench(tmp_path, "bank", "--bank", bank, "list").returncode == 0


def test_bank_promote_refuses_a_traces_folder_that_is_not_there(tmp_path):
    refused(workbench(tmp_path, "bank", "promote", "--traces", tmp_path / "nope"), "no such", "existing folder")
    (tmp_path / "file").write_text("x")
    refused(workbench(tmp_path, "bank", "promote", "--traces", tmp_path / "file"), "is a file")


def broken_home(tmp_path) -> Path:
    """A WORKBENCH_HOME whose bank has the row `bank add ""` used to write."""
    home = tmp_path / "home"
    shutil.copytree(ROOT / "kernels", home / "kernels")
    shutil.copy2(ROOT / "question_bank.csv", home / "question_bank.csv")
    with (home / "question_bank.csv").open("a") as f:
        f.write("q999,,any,memory,seed,\n")
    return home


@pytest.mark.parametrize("command", [
    ["campaign", "--kernel", ORIGINAL, "--suite", "smoke", "--agent", "offline", "--evaluator", "standin",
     "--id", "c-bad", "--root", "campaigns"],
    ["check", "start.cu", "--campaign", "c-bad", "--new", "--kernel", "start.cu", "--suite", "smoke",
     "--evaluator", "standin"],
    ["evolve", "--kernel", ORIGINAL, "--suite", "smoke", "--evaluator", "standin", "--id", "c-bad", "--root",
     "campaigns"],
])
def test_a_broken_bank_is_refused_before_a_campaign_folder_exists(tmp_path, command):
    (tmp_path / "start.cu").write_text(KERNEL)
    command = ["kernel.cu" if a == "start.cu" and i == 1 else a for i, a in enumerate(command)]
    done = workbench(tmp_path, *command, WORKBENCH_HOME=str(broken_home(tmp_path)))
    refused(done, "q999: empty text", "fix or remove that row")
    assert not (tmp_path / "campaigns").exists()


# ---- item 2: evolve's agent --------------------------------------------------------------------------------
@pytest.mark.parametrize("args, needles", [
    (["--agent", "bogus"], ("--agent 'bogus'", "offline")),
    (["--agent", "claude"], ("ANTHROPIC_API_KEY", "--agent offline")),
    (["--tournament", "9", "--population", "2"], ("--tournament 9", "at most --tournament 2")),
    (["--id", "../elsewhere"], ("campaign id", "no '/' or '..'")),
])
def test_evolve_checks_its_agent_and_options_before_the_seed_is_judged(tmp_path, args, needles):
    done = workbench(tmp_path, "evolve", "--kernel", ORIGINAL, "--suite", "smoke", "--evaluator", "standin",
                     "--root", tmp_path / "evolutions", *args)
    refused(done, *needles)
    assert "Traceback" not in done.stderr and not (tmp_path / "evolutions").exists()
    if "claude" in args:         # and a --resume of such a run is refused the same way, changing nothing
        run = tmp_path / "evolutions" / "e1"
        assert workbench(tmp_path, "evolve", "--kernel", ORIGINAL, "--suite", "smoke", "--evaluator", "standin",
                         "--generations", "0", "--root", tmp_path / "evolutions", "--id", "e1").returncode == 0
        before = snapshot(run)
        refused(workbench(tmp_path, "evolve", "--resume", "e1", "--agent", "claude", "--root",
                          tmp_path / "evolutions"), "ANTHROPIC_API_KEY")
        assert snapshot(run) == before


def test_the_stand_in_evolution_reports_the_original_as_x1_against_itself(tmp_path):
    done = workbench(tmp_path, "evolve", "--kernel", ORIGINAL, "--suite", "smoke", "--evaluator", "standin",
                     "--generations", "0", "--root", tmp_path / "evolutions", "--id", "e0")
    assert done.returncode == 0, done.stderr
    assert "seed: x1.000 vs original" in done.stdout


# ---- issue 25 item 16: campaign ids are folder names when opening, too ---------------------------------------
def test_campaign_ids_with_dots_or_slashes_are_refused_when_opening(campaign):
    tmp = campaign
    # a real campaign lies at elsewhere/x: a '..' id under the default root would reach it
    shutil.copytree(tmp / "campaigns" / "c1", tmp / "elsewhere" / "x")
    before = snapshot(tmp / "elsewhere")
    for args in (["check", "kernel.cu", "--campaign", "../elsewhere/x"], ["ask", "../elsewhere/x", "a question?"],
                 ["ask", "../elsewhere/x", "--from-bank"], ["mcp", "--campaign", "../elsewhere/x"],
                 ["campaign", "--resume", "../elsewhere/x"], ["evolve", "--resume", "../elsewhere/x"],
                 ["check", "kernel.cu", "--campaign", "c1/../../elsewhere/x"]):
        refused(workbench(tmp, *args), "no '/' or '..'")
    assert snapshot(tmp / "elsewhere") == before


# ---- items 6, 7, 8, 10: an outside agent's campaign from the shell ------------------------------------------
def test_a_status_only_session_keeps_the_stand_in_label(campaign):
    traces = campaign / "campaigns" / "c1" / "traces"
    first = read_table(traces, "sessions").iloc[0]
    assert bool(first.is_standin) and first.gpu == "stand-in (CPU)"
    asked = workbench(campaign, "ask", "c1", "--from-bank")       # a session that runs no harness
    assert asked.returncode == 0, asked.stderr
    after = read_table(traces, "sessions").iloc[0]
    assert bool(after.is_standin) and after.gpu == "stand-in (CPU)" and after.tool_calls == 2


def test_refused_checks_spend_no_turn_and_leave_no_row(campaign):
    ws = campaign / "campaigns" / "c1"
    (ws / "latin1.cu").write_bytes("// caf\xe9\nint x;\n".encode("latin-1"))
    before = snapshot(ws / "traces") | snapshot(ws / "state")
    long_name = "k" * 300 + ".cu"
    for args, needles in (
            (["latin1.cu"], ("not UTF-8", "iconv")),
            ([long_name], ("255",)),
            (["kernel.cu", "--notes", "x" * 30_000], ("notes", "20000")),
            (["kernel.cu", "--suite", str(campaign / "start.cu")], ("files elsewhere are not read",))):
        refused(workbench(campaign, "check", *args, "--campaign", "c1"), *needles)
    assert snapshot(ws / "traces") | snapshot(ws / "state") == before


@pytest.mark.parametrize("where", ["kernel", "--json", "--traces", "--baseline", "--suite"])
def test_plain_check_refuses_a_name_longer_than_the_system_allows(tmp_path, where):
    long_path = str(tmp_path / ("n" * 300)) + (".csv" if where == "--suite" else ".cu")
    args = [long_path] if where == "kernel" else ["standin:correct", where, long_path]
    refused(workbench(tmp_path, "check", *args, "--no-timing"), "255 a file name may have")
    assert not (tmp_path / "data").exists()


def test_from_inside_a_workspace_the_hint_is_root_and_nothing_nests(campaign):
    ws = campaign / "campaigns" / "c1"
    line = refused(workbench(ws, "check", "kernel.cu", "--campaign", "c1"), "--root ..", "inside campaign c1")
    assert "--new" not in line
    refused(workbench(ws, "check", "kernel.cu", "--campaign", "c2", *NEW[:1], "--kernel", "kernel.cu"),
            "inside campaign c1")
    refused(workbench(ws, "ask", "c1", "a question?"), "--root ..")
    assert not (ws / "campaigns").exists()
    assert workbench(ws, "check", "kernel.cu", "--campaign", "c1", "--root", "..").returncode == 3


def test_new_with_a_kernel_the_new_workspace_cannot_hold_creates_nothing(tmp_path):
    (tmp_path / "start.cu").write_text(KERNEL)
    refused(workbench(tmp_path, "check", "start.cu", "--campaign", "c1", *NEW), "holds only kernel.cu")
    assert not (tmp_path / "campaigns").exists()


# ---- item 13: validation gaps ------------------------------------------------------------------------------
@pytest.mark.parametrize("args, needles", [
    (["--arch", "sm_999"], ("--arch", "sm_90")),
    (["--arch", "hopper"], ("sm_90a",)),
    (["--stop", "geomean_vs_fa3 >"], (">=", "geomean_vs_fa3")),
    (["--json", "{tmp}/missing/dir/r.json"], ("does not exist", "mkdir -p")),
])
def test_check_validation_gaps(tmp_path, args, needles):
    args = [a.format(tmp=tmp_path) for a in args]
    refused(workbench(tmp_path, "check", "standin:correct", "--no-timing", *args), *needles)
    assert not (tmp_path / "missing").exists()


def test_report_of_a_file_says_it_is_a_file(tmp_path):
    report = tmp_path / "report.html"
    report.write_text("not a trace root")
    refused(workbench(tmp_path, "report", report, "-o", tmp_path / "out.html"), "is a file")


@pytest.mark.parametrize("args", [["mcp"], ["ask"], ["check", "k.cu", "--campaign"]])
def test_mcp_and_ask_usage_errors_are_one_line(tmp_path, args):
    refused(workbench(tmp_path, *args), "--help")


# ---- item 12: a stand-in check through the CLI imports no harness ------------------------------------------
def test_check_in_a_stand_in_campaign_imports_neither_torch_nor_the_harness(campaign):
    code = ("import sys; from workbench.cli import main; code = main(['check', 'kernel.cu', '--campaign', 'c1']); "
            "print(sorted(m for m in ('torch', 'workbench.harness.check', 'workbench.harness.worker') "
            "if m in sys.modules)); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code], cwd=campaign, capture_output=True, text=True, timeout=300,
                          env=os.environ | {"PYTHONPATH": str(ROOT), "WORKBENCH_NO_GPU": "1"})
    assert done.returncode == 3, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
