"""Campaigns speak their problem's main anchor: a GEMM campaign's log, state and sessions row say cuBLAS with
figures; an attention campaign's still say FA3; state files and sessions rows written before the change read as
attention's (FA3)."""
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench.agent import campaign_text
from workbench.agent.backends import make_backend
from workbench.agent.campaign_service import CampaignService
from workbench.agent.loop import Campaign
from workbench.campaign.main_anchor import label, recorded_best
from workbench.evaluators import make_evaluator
from workbench.traces.schema import SESSIONS
from workbench.traces.writer import read_table

FIGURE = r"x\d+\.\d{3}"


class Run:
    def __init__(self, result):
        self.returncode, self.stdout, self.stderr = result


@pytest.fixture
def cli(run_cli):
    return lambda *argv: Run(run_cli(list(argv)))


def _last_state(folder: Path) -> dict:
    return json.loads(sorted((folder / "state").glob("turn-*.json"))[-1].read_text())


def _campaign(cli, root: Path, cid: str, *problem) -> Run:
    run = cli("campaign", *problem, "--agent", "offline", "--evaluator", "standin", "--budget", "tool_calls=6",
              "--root", str(root), "--id", cid)
    assert run.returncode == 0, run.stderr[-2000:]
    return run


def test_a_gemm_campaign_says_cublas_with_figures_and_tracks_its_best(cli, tmp_path):
    run = _campaign(cli, tmp_path, "g1", "--problem", "gemm_bf16")
    evaluated = [line for line in run.stdout.splitlines() if line.lstrip().startswith("= ")]
    assert evaluated and all(re.search(rf"{FIGURE} vs cuBLAS; best {FIGURE} / {FIGURE} cuBLAS", line)
                             for line in evaluated), evaluated
    assert re.search(rf"stopped: .* best {FIGURE} vs original, {FIGURE} vs cuBLAS", run.stdout)
    assert "FA3" not in run.stdout
    state = _last_state(tmp_path / "g1")
    assert state["main_anchor"] == "cublas" and 0 < state["best_vs_main"] < 10 and state["best_vs_fa3"] is None
    session = read_table(tmp_path / "g1" / "traces", "sessions").iloc[0]
    assert session["main_anchor"] == "cublas" and session["best_vs_main"] == pytest.approx(state["best_vs_main"])


def test_an_attention_campaign_still_says_fa3(cli, tmp_path):
    run = _campaign(cli, tmp_path, "a1")
    evaluated = [line for line in run.stdout.splitlines() if line.lstrip().startswith("= ")]
    assert evaluated and all(re.search(rf"{FIGURE} vs FA3; best {FIGURE} / {FIGURE} FA3", line)
                             for line in evaluated), evaluated
    assert re.search(rf"stopped: .* best {FIGURE} vs original, {FIGURE} vs FA3", run.stdout)
    assert "cuBLAS" not in run.stdout
    state = _last_state(tmp_path / "a1")
    assert state["main_anchor"] == "fa3" and state["best_vs_main"] == state["best_vs_fa3"] is not None
    session = read_table(tmp_path / "a1" / "traces", "sessions").iloc[0]
    assert session["main_anchor"] == "fa3" and session["best_vs_main"] == pytest.approx(session["best_vs_fa3"])


def _as_written_before(state_file: Path) -> float:
    """Strip the fields this change added, as a state file of an older workbench has none; returns its FA3 best."""
    state = json.loads(state_file.read_text())
    for key in ("main_anchor", "best_vs_main"):
        state.pop(key)
    state_file.write_text(json.dumps(state))
    return state["best_vs_fa3"]


def test_a_state_file_written_before_the_change_resumes_as_attention(cli, tmp_path):
    _campaign(cli, tmp_path, "a1")
    best_fa3 = _as_written_before(sorted((tmp_path / "a1" / "state").glob("turn-*.json"))[-1])
    campaign = Campaign.resume("a1", make_backend("offline"), root=str(tmp_path), evaluator=make_evaluator("standin"))
    try:
        assert campaign.main_anchor == "fa3" and campaign.best_vs_main == best_fa3 is not None
    finally:
        campaign._lock.release()


def test_an_outside_agents_older_state_and_status_read_as_fa3(cli, tmp_path):
    run = cli("check", "kernel.cu", "--campaign", "c1", "--new", "--evaluator", "standin", "--root", str(tmp_path))
    assert re.search(rf"best {FIGURE} vs original, {FIGURE} vs FA3", run.stdout), run.stdout[-1500:]
    best_fa3 = _as_written_before(sorted((tmp_path / "c1" / "state").glob("turn-*.json"))[-1])
    service = CampaignService.open(tmp_path, "c1", evaluator=make_evaluator("standin"))
    with service.session("test"):
        status = service.status()
    assert status["main_anchor"] == "fa3" and status["best_vs_main"] == best_fa3 is not None
    older = {k: v for k, v in status.items() if k not in ("main_anchor", "best_vs_main")}
    assert recorded_best(older, "fa3") == best_fa3
    assert re.search(rf"{FIGURE} vs FA3 \(kernel", campaign_text.status_line(older))


def test_an_outside_agents_gemm_campaign_says_cublas(cli, tmp_path):
    run = cli("check", "kernel.cu", "--campaign", "c1", "--new", "--problem", "gemm_bf16", "--evaluator", "standin",
              "--root", str(tmp_path))
    assert re.search(rf"geomean: x\d+\.\d\d vs original, x\d+\.\d\d vs cuBLAS", run.stdout), run.stdout[-1500:]
    assert re.search(rf"best {FIGURE} vs original, {FIGURE} vs cuBLAS \(kernel", run.stdout)
    assert _last_state(tmp_path / "c1")["best_vs_main"] is not None


def test_a_sessions_row_written_before_the_change_reads_with_the_new_columns_null(tmp_path):
    directory = tmp_path / "sessions" / "s1"
    directory.mkdir(parents=True)
    older = SESSIONS.remove(SESSIONS.get_field_index("best_vs_main")).remove(SESSIONS.get_field_index("main_anchor"))
    row = {name: None for name in older.names} | {"session_id": "s1", "best_vs_fa3": 0.7}
    pq.write_table(pa.Table.from_pylist([row], schema=older), directory / "part-00000.parquet")
    session = read_table(tmp_path, "sessions").iloc[0]
    assert session["best_vs_fa3"] == 0.7 and session["main_anchor"] != session["main_anchor"]    # null: NaN
    assert recorded_best(session.to_dict(), "fa3") == 0.7 and recorded_best(session.to_dict(), "cublas") is None
    assert label(session["main_anchor"]) == "FA3"


def test_the_arms_table_names_the_main_anchor():
    from workbench.agent.campaign_cli import experiment_table

    row = {"reason": "budget_tool_calls", "turn": 3, "tool_calls": 6, "questions": 0, "best_vs_original": 1.2}
    gemm = experiment_table({"bank": [row | {"main_anchor": "cublas", "best_vs_main": 0.25, "best_vs_fa3": None}]})
    assert "best x cuBLAS" in gemm and re.search(r"bank +1 +0\.250 +1\.200", gemm), gemm
    attention = experiment_table({"bank": [row | {"main_anchor": "fa3", "best_vs_main": 0.5, "best_vs_fa3": 0.5}]})
    assert "best x FA3" in attention and re.search(r"bank +1 +0\.500 +1\.200", attention), attention
