"""A resumed check reuses the candidate's finished rows of an interrupted run of the same check (issue 24,
resume_rows.py): a SIGKILLed check run again judges only the rest, a completed check leaves nothing to reuse, a
changed key reuses nothing, a half-written or foreign line is skipped, and only the parent's own rows count."""
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.harness import cache_file, resume_rows, worker_events
from workbench.harness.resume_rows import ResumeRecord
from workbench.harness.result import CheckRequest, ScenarioResult, Stats
from workbench.harness.scenarios import Scenario
from test_durable_timings import standin_check_command

ROOT = Path(__file__).resolve().parents[1]
SHAPES = [Scenario("r_a", 1, 2, 2, 64, 64, 64, False), Scenario("r_b", 1, 2, 2, 96, 96, 64, True),
          Scenario("r_c", 1, 2, 1, 80, 80, 128, False), Scenario("r_d", 1, 2, 2, 72, 72, 64, True)]
EVENT = {"gpu": "H200", "versions": {"torch": "2.x", "cuda_runtime": "12.8", "anchor_fa3": "3.0"},
         "missing_anchors": {}, "foreign_check": "all"}


def _job(tmp_path, shapes=SHAPES, anchors=("fa3",), library=b"kernel v1") -> dict:
    so = tmp_path / "kernel.so"
    so.write_bytes(library)
    return {"request": {"anchors": list(anchors), "timing": True}, "device": "cuda",
            "candidate": {"kind": "so", "path": str(so), "sha": "c" * 64},
            "baseline": {"kind": "standin", "path": "slow_correct", "sha": "standin:slow_correct"},
            "scenarios": [s.to_dict() for s in shapes], "problem": str(ROOT / "kernels" / "attn_fwd")}


def _row(s: Scenario, median: float = 10.0, **fields) -> ScenarioResult:
    stats = Stats(median_us=median, p10_us=median, p90_us=median, mean_us=median, stderr_us=0.0, n=5)
    return ScenarioResult(scenario=s.to_dict(), status="passed", rel_l2_err=1e-3, stats=stats,
                          reference_stats={"original": stats}, **fields)


def _interrupted(tmp_path, job, rows, event=EVENT) -> None:
    """A run that recorded `rows` and was then interrupted (its record closed without completing)."""
    record = ResumeRecord(tmp_path / "cache", job, "killedrun01")
    assert record.start(dict(event)) == {}
    for row in rows:
        record.add(row)
    record.close(completed=False)


def _resumed(tmp_path, job, event=EVENT) -> ResumeRecord:
    record = ResumeRecord(tmp_path / "cache", job, "nextrun0002")
    record.start(dict(event))
    return record


def test_an_interrupted_runs_rows_are_reused_as_recorded_and_a_completed_run_leaves_none(tmp_path):
    job = _job(tmp_path)
    _interrupted(tmp_path, job, [_row(SHAPES[0], 11.0), _row(SHAPES[1], 12.0)])
    record = _resumed(tmp_path, job)
    assert sorted(record.reused) == ["r_a", "r_b"]
    for s, median in ((SHAPES[0], 11.0), (SHAPES[1], 12.0)):
        again = record.reused[s.name]
        assert again.resumed_from == "killedrun01" and again.to_dict() == dict(_row(s, median).to_dict(),
                                                                                resumed_from="killedrun01")
    assert record.line().startswith("resume: 2 of 4 scenarios from the interrupted run of ")
    assert record.summary()["resumed_rows"] == 2
    record.add(_row(SHAPES[2]))
    record.add(_row(SHAPES[3]))
    record.close(completed=True)                             # every scenario judged: nothing left to reuse
    assert list((tmp_path / "cache" / resume_rows.FOLDER).iterdir()) == []
    assert _resumed(tmp_path, job).reused == {}


@pytest.mark.parametrize("change", ["library", "anchors", "gpu", "anchor version", "timing versions"])
def test_a_changed_candidate_build_anchors_gpu_or_versions_reuse_nothing(tmp_path, change):
    _interrupted(tmp_path, _job(tmp_path), [_row(SHAPES[0]), _row(SHAPES[1])])
    job, event = _job(tmp_path), json.loads(json.dumps(EVENT))
    if change == "library":
        job = _job(tmp_path, library=b"kernel v2")             # the same source sha, another build artifact
    elif change == "anchors":
        job = _job(tmp_path, anchors=("fa3", "cudnn"))
    elif change == "gpu":
        event["gpu"] = "H100"
    elif change == "anchor version":
        event["versions"]["anchor_fa3"] = "3.1"
    else:
        event["versions"]["torch"] = "2.y"
    assert _resumed(tmp_path, job, event).reused == {}
    assert sorted(_resumed(tmp_path, _job(tmp_path)).reused) == ["r_a", "r_b"]     # the old key still resumes


def test_another_suite_reuses_only_scenarios_whose_every_field_is_the_same(tmp_path):
    _interrupted(tmp_path, _job(tmp_path), [_row(SHAPES[0]), _row(SHAPES[1])])
    moved = Scenario("r_b", 1, 2, 2, 128, 128, 64, True)      # the same name, another shape
    record = _resumed(tmp_path, _job(tmp_path, shapes=[SHAPES[0], moved, SHAPES[3]]))
    assert sorted(record.reused) == ["r_a"] and record.line().startswith("resume: 1 of 3 scenarios")


def test_a_half_written_or_damaged_line_is_skipped_and_the_next_append_starts_a_line(tmp_path):
    job = _job(tmp_path)
    _interrupted(tmp_path, job, [_row(SHAPES[0]), _row(SHAPES[1])])
    path = next((tmp_path / "cache" / resume_rows.FOLDER).iterdir())
    lines = path.read_bytes().splitlines(keepends=True)
    forged = json.loads(lines[1])
    forged["e"]["row"]["stats"]["median_us"] = 1.0             # edited after its checksum was taken
    other = cache_file.encode_line("0" * 32, {"row": _row(SHAPES[2]).to_dict(), "run": "x", "started": "y"})
    path.write_bytes(lines[0] + (json.dumps(forged) + "\n").encode() + other + lines[1][:40])   # a kill mid-write
    record = _resumed(tmp_path, job)
    assert sorted(record.reused) == ["r_a"]                  # the forged, the foreign and the cut lines are not
    record.add(_row(SHAPES[3], 14.0))
    record.close(completed=False)
    again = _resumed(tmp_path, job)
    assert sorted(again.reused) == ["r_a", "r_d"] and again.reused["r_d"].stats.median_us == 14.0


def test_a_record_held_by_a_running_check_is_neither_reused_nor_written_by_another(tmp_path):
    job = _job(tmp_path)
    _interrupted(tmp_path, job, [_row(SHAPES[0])])
    running = _resumed(tmp_path, job)
    assert sorted(running.reused) == ["r_a"]
    other = _resumed(tmp_path, job)
    assert other.reused == {} and other.line().startswith("resume: another run of this check holds its record")
    other.add(_row(SHAPES[1]))
    other.close(completed=True)                              # removes nothing of the running check's
    running.close(completed=False)
    assert sorted(_resumed(tmp_path, job).reused) == ["r_a"]


def test_no_resume_judges_everything_and_starts_a_new_record(tmp_path, monkeypatch):
    job = _job(tmp_path)
    _interrupted(tmp_path, job, [_row(SHAPES[0]), _row(SHAPES[1])])
    fresh = ResumeRecord(tmp_path / "cache", dict(job, request=dict(job["request"], resume=False)), "fresh000001")
    assert fresh.start(dict(EVENT)) == {}
    fresh.add(_row(SHAPES[2]))
    fresh.close(completed=False)                             # interrupted too: only its own row is kept
    assert sorted(_resumed(tmp_path, job).reused) == ["r_c"]
    monkeypatch.setenv(resume_rows.NO_RESUME_ENV, "1")
    assert not resume_rows.resume_wanted({"resume": True}) and _resumed(tmp_path, job).reused == {}
    monkeypatch.setenv(resume_rows.NO_RESUME_ENV, "0")
    assert resume_rows.resume_wanted({}) and not resume_rows.resume_wanted({"resume": False})


def test_rows_lost_to_a_cuda_error_a_crash_or_a_timeout_are_never_recorded(tmp_path):
    job = _job(tmp_path)
    lost = [ScenarioResult(scenario=s.to_dict(), status="failed", reason=why, detail="x")
            for s, why in zip(SHAPES, ("launch_error", "crash", "timeout"))]
    _interrupted(tmp_path, job, lost + [_row(SHAPES[3])])
    assert sorted(_resumed(tmp_path, job).reused) == ["r_d"]


def test_only_the_parent_marks_a_row_resumed_and_excludes_scenarios():
    protocol = worker_events.Protocol([s.to_dict() for s in SHAPES])
    protocol.accept(json.dumps({"event": "start", **EVENT, "fresh_seed": 7, "notices": []}))
    protocol.exclude(["r_a", "r_b"])
    with pytest.raises(worker_events.MalformedEvent, match="expected 'r_c'"):
        protocol.accept(json.dumps({"event": "begin", "scenario": "r_a"}))
    protocol = worker_events.Protocol([s.to_dict() for s in SHAPES])
    protocol.accept(json.dumps({"event": "start", **EVENT, "fresh_seed": 7, "notices": []}))
    protocol.accept(json.dumps({"event": "begin", "scenario": "r_a"}))
    with pytest.raises(worker_events.MalformedEvent, match="resumed_from is the parent's"):
        protocol.accept(json.dumps({"event": "result", "result": _row(SHAPES[0], resumed_from="old").to_dict()}))
    with pytest.raises(ValueError):
        protocol.exclude(["r_b"])                            # too late: a scenario has begun


def test_the_worker_skips_what_the_parent_names_after_its_start_event():
    judged = resume_rows.judged_by_parent
    assert judged({"judged_after_start": True}, io.StringIO('{"judged": ["r_a", 3]}\n')) == {"r_a"}
    assert judged({"judged_after_start": True}, io.StringIO("")) == set()            # the parent went away
    assert judged({"judged_after_start": True}, io.StringIO("[1]\n")) == set()
    assert judged({}, io.StringIO('{"judged": ["r_a"]}\n')) == set()                  # not asked to read one


# ---- real checks with the CPU stand-ins ----------------------------------------------------------------------
def _suite(tmp_path, shapes) -> Path:
    path = tmp_path / "resume.csv"
    rows = ["name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,category"]
    rows += [f"{s.name},{s.batch},{s.heads_q},{s.heads_kv},{s.seqlen_q},{s.seqlen_k},{s.head_dim},{int(s.causal)},"
             "bf16,A" for s in shapes]
    path.write_text("\n".join(rows) + "\n")
    return path


def _judged(stdout: str) -> list[str]:
    return [line.split()[2] for line in stdout.splitlines() if line.startswith("[")]


def _without_flags(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in ("flags", "floor_us", "resumed_from")}   # apply_flags' own


def test_a_sigkilled_check_run_again_judges_only_the_rest_and_a_completed_one_everything(tmp_path):
    shapes = SHAPES + [Scenario("r_e", 1, 4, 2, 64, 96, 128, True)]
    suite, cache = _suite(tmp_path, shapes), tmp_path / "cache"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    killed = subprocess.Popen(standin_check_command(suite, cache, tmp_path / "killed.json"), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT, start_new_session=True)
    seen = []
    try:
        for line in killed.stdout:
            seen.append(line.rstrip())
            if line.startswith("[  2/5]"):
                break
    finally:
        os.killpg(killed.pid, signal.SIGKILL)                # the CLI and its worker, no clean-up at all
        killed.wait(timeout=60)
        killed.stdout.close()
    kept = resume_rows.recorded_rows(cache)
    assert {"r_a", "r_b"} <= set(kept) and len(kept) <= 3, (sorted(kept), seen)
    again = subprocess.run(standin_check_command(suite, cache, tmp_path / "again.json"), capture_output=True, text=True,
                           env=env, cwd=ROOT, timeout=600)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert f"resume: {len(kept)} of 5 scenarios from the interrupted run of " in again.stdout
    assert _judged(again.stdout) == [s.name for s in shapes if s.name not in kept]    # nothing judged twice
    assert f"resumed: {len(kept)} of 5 scenarios from the interrupted run of " in again.stdout
    result = json.loads((tmp_path / "again.json").read_text())
    assert result["resumed_rows"] == len(kept) and [r["scenario"]["name"] for r in result["rows"]] == \
        [s.name for s in shapes]
    for row in result["rows"]:
        name = row["scenario"]["name"]
        assert bool(row["resumed_from"]) == (name in kept)
        if name in kept:
            assert _without_flags(row) == _without_flags(kept[name])
    assert resume_rows.recorded_rows(cache) == {}            # completed: nothing left to reuse
    third = subprocess.run(standin_check_command(suite, cache, tmp_path / "third.json"), capture_output=True, text=True,
                           env=env, cwd=ROOT, timeout=600)
    assert third.returncode == 0 and "resume:" not in third.stdout
    assert _judged(third.stdout) == [s.name for s in shapes]


@pytest.mark.parametrize("sandbox", ["auto", "off"])   # the judged line reaches a contained worker and a plain one
def test_a_cuda_error_keeps_the_rows_before_it_and_the_next_run_judges_the_failing_scenario_again(tmp_path, sandbox,
                                                                                                  monkeypatch):
    from workbench.harness.check import check

    monkeypatch.setenv("WORKBENCH_SANDBOX", sandbox)

    request = CheckRequest(kernel_path="standin:cuda_error_on_d128", suite=str(_suite(tmp_path, SHAPES)),
                           baseline_path="standin:slow_correct", anchors=(), cache_dir=str(tmp_path / "cache"))
    lines: list[str] = []
    first = check(request, progress=lines.append, device="cpu")
    assert [r.status for r in first.rows] == ["passed", "passed", "failed", "skipped"]    # the worker stopped
    assert first.rows[2].reason == "launch_error" and sorted(resume_rows.recorded_rows(tmp_path / "cache")) == \
        ["r_a", "r_b"]
    lines.clear()
    second = check(request, progress=lines.append, device="cpu")
    assert second.resumed_rows == 2 and [r.resumed_from for r in second.rows[:2]] == [first.eval_id] * 2
    assert [line.split()[2] for line in lines if line.startswith("[")] == ["r_c"]       # judged again, failed again
    assert second.rows[2].reason == "launch_error" and second.rows[3].status == "skipped"
    assert [r.stats.median_us for r in second.rows[:2]] == [r.stats.median_us for r in first.rows[:2]]
