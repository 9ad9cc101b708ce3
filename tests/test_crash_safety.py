"""kill -9 at the dangerous points, deterministically (workbench.crash: WORKBENCH_CRASH_AT names the point where
a child process SIGKILLs itself), and parallel writers: no row is ever lost or duplicated — every table equals
the uninterrupted run — or the operation is refused with a one-line error."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from workbench.traces.integrity import session_warnings
from workbench.traces.schema import TABLES
from workbench.traces.writer import TraceWriter, live_parts, pending_replacements, read_table

ROOT = Path(__file__).resolve().parents[1]
ROLLOUT = (ROOT / "tests" / "fixtures" / "transcripts" / "codex" / "2026" / "01" / "11" /
           "rollout-2026-01-11T09-00-00-cx-1.jsonl")


def child(code: str, crash_at: str | None = None, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("WORKBENCH_CRASH_AT", None)
    if crash_at:
        env["WORKBENCH_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300, **kwargs)


def assert_killed(proc):
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-2000:])


def tables_of(root: Path, session_id: str) -> dict:
    """Every table of a session, sorted into a canonical row order, for equality with another run."""
    out = {}
    for table in TABLES:
        df = read_table(root, table, session_id)
        out[table] = df.astype(str).sort_values(list(df.columns)).reset_index(drop=True)
    return out


def assert_same_tables(a: dict, b: dict, ignore=("config_json",)):
    for table in TABLES:
        left, right = a[table].drop(columns=list(ignore), errors="ignore"), b[table].drop(columns=list(ignore),
                                                                                           errors="ignore")
        pd.testing.assert_frame_equal(left, right, obj=table)


# ---- the end-of-session merge ------------------------------------------------------------------------------
WRITE_PARTS = """
    import sys
    from workbench.traces.writer import TraceWriter
    w = TraceWriter(sys.argv[1], "s1")
    for turn in range(16):
        w.append("messages", [{"message_id": f"m{turn}-{i}", "block_index": i, "turn": turn, "text": f"t{turn}"}
                              for i in range(10)])
    w.append("tool_calls", [{"call_id": "c1", "turn": 1}])
"""
COMPACT = """
    import sys
    from workbench.traces.writer import TraceWriter
    TraceWriter(sys.argv[1], "s1").compact()
"""


@pytest.mark.parametrize("point", ["compact.merged_written", "compact.parts_unlinked"])
def test_a_kill_inside_the_merge_loses_and_duplicates_nothing(tmp_path, point):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(WRITE_PARTS), str(tmp_path)],
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert proc.returncode == 0
    killed = subprocess.run([sys.executable, "-c", textwrap.dedent(COMPACT), str(tmp_path)], timeout=300,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), WORKBENCH_CRASH_AT=point))
    assert_killed(killed)
    # at the instant of the kill, readers see every row exactly once
    messages = read_table(tmp_path, "messages", "s1")
    assert len(messages) == 160 and messages["message_id"].is_unique
    # a resume trims and appends; the next merge finishes the interrupted one
    from workbench.campaign.recorder import committed_turn, trim_uncommitted
    assert committed_turn(tmp_path, "s1") == 15
    assert trim_uncommitted(tmp_path, "s1", 15) == 0
    TraceWriter(tmp_path, "s1").append("messages", [{"message_id": "after", "block_index": 0, "turn": 16}])
    assert len(read_table(tmp_path, "messages", "s1")) == 161
    TraceWriter(tmp_path, "s1").compact()
    messages = read_table(tmp_path, "messages", "s1")
    assert len(messages) == 161 and messages["message_id"].is_unique
    assert [p.name for p in live_parts(tmp_path / "messages" / "s1")] == ["part-00000.parquet"]
    assert sorted(p.name for p in (tmp_path / "messages" / "s1").iterdir()) == ["part-00000.parquet"]


def test_a_torn_temp_file_is_never_the_only_copy(tmp_path):
    w = TraceWriter(tmp_path, "s1")
    for turn in range(3):
        w.append("messages", [{"message_id": f"m{turn}", "block_index": 0, "turn": turn}])
    (tmp_path / "messages" / "s1" / "merged-00002.123.abcd.tmp").write_bytes(b"PAR1 torn")
    from workbench.campaign.recorder import trim_uncommitted
    trim_uncommitted(tmp_path, "s1", 2)           # resume drops the torn temp file: the parts are all there
    assert len(read_table(tmp_path, "messages", "s1")) == 3


def test_parallel_appends_to_one_session_never_overwrite_each_other(tmp_path):
    code = """
        import sys
        from workbench.traces.writer import TraceWriter
        w = TraceWriter(sys.argv[1], "shared")
        for i in range(25):
            w.append("evaluations", [{"eval_id": f"{sys.argv[2]}-{i}"}])
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), str(tmp_path), f"p{n}"], env=env)
             for n in range(3)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0]
    evaluations = read_table(tmp_path, "evaluations", "shared")
    assert len(evaluations) == 75 and evaluations["eval_id"].is_unique


# ---- re-importing a session ----------------------------------------------------------------------------------
IMPORT = """
    import sys
    from workbench.traces.importers import import_main
    sys.exit(import_main([sys.argv[1], "-o", sys.argv[2]]))
"""


def _import(transcript: Path, out: Path, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if crash_at:
        env["WORKBENCH_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-c", textwrap.dedent(IMPORT), str(transcript), str(out)], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def grown_transcript(tmp_path):
    """The rollout cut after 18 lines (what a first import saw), and the whole rollout."""
    lines = ROLLOUT.read_text().splitlines(keepends=True)
    short, full = tmp_path / "short" / ROLLOUT.name, tmp_path / "full" / ROLLOUT.name
    short.parent.mkdir()
    full.parent.mkdir()
    short.write_text("".join(lines[:18]))
    full.write_text("".join(lines))
    return short, full


@pytest.mark.parametrize("point", ["replace.table_staged", "replace.first_table_swapped"])
def test_a_kill_during_a_reimport_leaves_a_whole_copy_and_the_next_import_finishes(tmp_path, grown_transcript,
                                                                                    point):
    short, full = grown_transcript
    reference, out = tmp_path / "reference", tmp_path / "out"
    assert _import(full, reference).returncode == 0
    assert _import(short, out).returncode == 0
    before = tables_of(out, "cx-1")
    assert_killed(_import(full, out, crash_at=point))
    after_kill = tables_of(out, "cx-1")
    if point == "replace.table_staged":            # nothing swapped yet: the old copy, untouched
        assert_same_tables(after_kill, before, ignore=())
        assert not session_warnings([out])
    else:                                          # sessions swapped, the rest not: said, not shown as zeros
        assert pending_replacements(out) == ["cx-1"]
        warnings = session_warnings([out])
        assert any("cx-1" in w and "cut short" in w for w in warnings), warnings
    assert _import(full, out).returncode == 0      # the same import again finishes and replaces
    assert_same_tables(tables_of(out, "cx-1"), tables_of(reference, "cx-1"))
    assert not pending_replacements(out) and not session_warnings([out])
    assert not [p for p in out.rglob(".cx-1.*")]   # no staging left behind


def test_a_session_with_fewer_rows_than_its_import_wrote_is_reported(tmp_path, grown_transcript):
    _, full = grown_transcript
    assert _import(full, tmp_path / "out").returncode == 0
    shutil.rmtree(tmp_path / "out" / "messages" / "cx-1")
    warnings = session_warnings([tmp_path / "out"])
    assert any("cx-1: messages has 0 rows, its import wrote" in w for w in warnings), warnings


def test_parallel_imports_of_one_session_never_duplicate(tmp_path, grown_transcript):
    _, full = grown_transcript
    reference, out = tmp_path / "reference", tmp_path / "out"
    assert _import(full, reference).returncode == 0
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(IMPORT), str(full), str(out)], env=env,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    for code, err in results:
        assert code in (0, 2), err
        if code == 2:                               # refused while another import held the session
            # "by pid N", or "by another process" when the holder had its flock but not yet its pid written (a
            # loaded 2-core machine: CI pass 2 of session 8)
            assert re.search(r"import of session cx-1 is in use by (pid \d+|another process)", err), err
            assert err.count("\n") == 1, err
    assert any(code == 0 for code, _ in results)
    assert_same_tables(tables_of(out, "cx-1"), tables_of(reference, "cx-1"))


def test_the_same_import_twice_in_a_row_is_idempotent(tmp_path, grown_transcript):
    _, full = grown_transcript
    assert _import(full, tmp_path / "a").returncode == 0
    assert _import(full, tmp_path / "b").returncode == 0
    assert _import(full, tmp_path / "b").returncode == 0
    assert_same_tables(tables_of(tmp_path / "b", "cx-1"), tables_of(tmp_path / "a", "cx-1"))


# ---- the report ------------------------------------------------------------------------------------------------
def test_a_kill_while_the_report_is_written_keeps_the_previous_report(tmp_path):
    traces, report = tmp_path / "traces", tmp_path / "report.html"
    assert _workbench(CAMPAIGN + ["--root", str(tmp_path / "campaigns"), "--id", "c1"]).returncode == 0
    traces = tmp_path / "campaigns" / "c1" / "traces"
    report.write_text("<html>previous report</html>")
    code = f"""
        import os, signal
        from pathlib import Path
        import workbench.traces.writer as w
        real = w.os.replace
        def die_mid_write(src, dst):      # the new page is fully written to its temp file: die before the rename
            if str(dst).endswith("report.html"):
                os.kill(os.getpid(), signal.SIGKILL)
            return real(src, dst)
        w.os.replace = die_mid_write
        from workbench.traces.report import build_report
        build_report([{str(traces)!r}], {str(report)!r})
    """
    assert_killed(child(code))
    assert report.read_text() == "<html>previous report</html>"
    from workbench.traces.report import build_report
    build_report([traces], report)
    assert report.read_text().startswith("<!doctype html>")
    assert not [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]     # the killed writer's temp is gone


# ---- campaigns ---------------------------------------------------------------------------------------------------
CAMPAIGN = ["campaign", "--agent", "offline", "--evaluator", "standin", "--suite", "smoke", "--budget", "turns=4",
            "--seed", "3"]


def _workbench(args: list, crash_at: str | None = None) -> subprocess.CompletedProcess:
    code = "import sys; from workbench.cli import main; sys.exit(main(sys.argv[1:]))"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("WORKBENCH_CRASH_AT", None)
    if crash_at:
        env["WORKBENCH_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=600,
                          cwd=str(ROOT))


def _campaign_rows(root: Path, cid: str) -> dict:
    traces = root / cid / "traces"
    keys = {"messages": ["turn", "role", "block_index", "block_type", "text"],
            "tool_calls": ["turn", "tool_index", "tool_name", "input_json", "is_error"],
            "evaluations": ["turn", "kernel_sha", "scenario", "status"]}
    out = {}
    for table, columns in keys.items():
        df = read_table(traces, table, cid)[columns].astype(str)
        out[table] = sorted(map(tuple, df.values.tolist()))
    return out


def test_a_kill_in_a_campaigns_final_merge_then_resume_equals_the_uninterrupted_run(tmp_path):
    root = tmp_path / "campaigns"
    assert _workbench(CAMPAIGN + ["--root", str(root), "--id", "ref"]).returncode == 0
    killed = _workbench(CAMPAIGN + ["--root", str(root), "--id", "c1"], crash_at="compact.parts_unlinked")
    assert_killed(killed)
    resumed = _workbench(["campaign", "--resume", "c1", "--root", str(root), "--evaluator", "standin"])
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    got, want = _campaign_rows(root, "c1"), _campaign_rows(root, "ref")
    assert {t: len(v) for t, v in got.items()} == {t: len(v) for t, v in want.items()}
    assert got == want
    assert sorted(p.name for p in (root / "c1" / "traces" / "messages" / "c1").iterdir()) == ["part-00000.parquet"]


def test_a_second_resume_of_a_running_campaign_is_refused_and_touches_nothing(tmp_path):
    root = tmp_path / "campaigns"
    assert _workbench(CAMPAIGN + ["--root", str(root), "--id", "c1"]).returncode == 0
    before = _campaign_rows(root, "c1")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sys, time
        from workbench.locks import hold_lock
        with hold_lock(sys.argv[1], what="campaign c1"):
            print("held", flush=True)
            time.sleep(60)
    """), str(root / "c1" / ".lock")], stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert holder.stdout.readline().strip() == "held"
        second = _workbench(["campaign", "--resume", "c1", "--root", str(root), "--evaluator", "standin",
                             "--budget", "turns=8"])
    finally:
        holder.kill()
        holder.wait()
    assert second.returncode == 2
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"campaign c1 is in use by pid {holder.pid}" in lines[0], second.stderr
    assert _campaign_rows(root, "c1") == before
