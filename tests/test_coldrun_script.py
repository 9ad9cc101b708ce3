"""scripts/coldrun.py (issue 24's GPU acceptance) runs its four legs end to end on the CPU with stand-ins, so the
H200 call does not find a broken script: the SIGKILLed leg leaves timings that the resumed leg reuses unchanged."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_cold_warm_killed_and_resumed_legs_on_the_cpu(tmp_path):
    suite = tmp_path / "three.csv"
    suite.write_text("name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,category\n"
                     "c_a,1,2,2,64,64,64,0,bf16,A\nc_b,1,2,2,80,80,64,1,bf16,B\nc_c,1,2,1,48,48,128,0,bf16,C\n")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "scripts/coldrun.py", "--kernel", "standin:correct", "--baseline",
                          "standin:slow_correct", "--anchors", "", "--suite", str(suite), "--kill-at", "2",
                          "--out", str(out), "--budget-s", "500"], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads((out / "coldrun_summary.json").read_text())
    legs = {leg["name"]: leg for leg in summary["legs"]}
    assert list(legs) == ["cold", "warm", "killed", "resumed"]
    assert legs["killed"]["killed"] == "SIGKILL after 2 scenarios" and legs["resumed"]["scenarios_done"] == 3
    assert legs["warm"]["timed"] == "original 0 (0.0 s)" and legs["cold"]["timed"].startswith("original 3 (")
    again = summary["resumed_vs_kept"]
    assert again["kept"] >= 2 and again["compared"] == again["kept"] and again["timed_again"] == []
    assert again["changed_in_cache"] == 0 and again["json_reports_other_figures"] == 0
    assert again["kept_rows"] >= 2 and again["rows_reused"] == again["kept_rows"] == legs["resumed"]["resumed_rows"]
    assert again["rows_judged_again"] == [] and again["rows_changed_in_json"] == 0   # the candidate's rows reused
    assert summary["checks"]["resumed re-timed nothing kept"]
    assert "check: resumed re-timed nothing kept: PASS" in (out / "coldrun_table.txt").read_text()
    # every leg's rows are on disk: the check's JSON where it finished, the progress lines' where it was killed
    assert legs["cold"]["json"].endswith("coldrun_cold.json") and legs["killed"]["json"].endswith(".partial.json")
    partial = json.loads(Path(legs["killed"]["json"]).read_text())
    assert partial["partial"] and [r["name"] for r in partial["rows"]] == ["c_a", "c_b"]
    assert all(r["wall_s"] is not None and "original" in r["timed_now_s"] for r in partial["rows"])
    assert summary["cold_vs_warm_scenarios"] == 3 and summary["cold_vs_warm_geomean_difference"] >= 0.0


def _script():
    spec = importlib.util.spec_from_file_location("coldrun", ROOT / "scripts" / "coldrun.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_resumed_leg_cut_by_its_time_limit_is_still_compared_with_what_the_kill_left():
    """The first H200 attempt's summary said '0 of them, -1 with other figures': its resumed leg hit the time limit
    and wrote no JSON, so nothing was compared. The comparison now reads the cache and the progress lines."""
    from workbench.harness.scenarios import load_suite

    coldrun, scenarios = _script(), load_suite("smoke")[:3]
    env = "cpu|torch t|cuda c|timing device-time-4"
    kept = {f"original|{'b' * 16}|{s.key}|{env}": {"stats": {"median_us": 100.0 + k}} for k, s in enumerate(scenarios)}
    kept[f"fa3|0.0.3|{scenarios[0].key}|{env}"] = {"stats": {"median_us": 7.0}}
    lines = [f"[  1/8] {scenarios[0].name}  passed  5.0 us  1.0 TFLOP/s  x20.00 original  eta 9s  (1.2 s)",
             f"[  2/8] {scenarios[1].name}  passed  5.0 us  1.0 TFLOP/s  x20.20 original  eta 8s  "
             "(3.4 s; timed now original 2.9 s, cudnn 0.1 s)"]
    resumed = {"rows": [coldrun.parse_row(line) for line in lines], "result": None}
    assert resumed["rows"][1]["timed_now_s"] == {"original": 2.9, "cudnn": 0.1} and resumed["rows"][0]["wall_s"] == 1.2
    after = dict(kept, **{k: {"stats": {"median_us": 1.0}} for k in list(kept)[1:2]})
    again = coldrun.retimed(kept, after, resumed, scenarios)
    assert again["kept"] == 4 and again["compared"] == 3                 # scenario 3 was not reached
    assert again["timed_again"] == [f"original {scenarios[1].name}"] and again["changed_in_cache"] == 1
    assert again["json_reports_other_figures"] is None
    assert coldrun.retimed(kept, kept, {"rows": resumed["rows"][:1], "result": None}, scenarios)["timed_again"] == []


def test_a_recorded_row_of_the_candidate_judged_again_fails_the_resumed_check():
    """The H200 run of 2026-12-01 passed 'resumed re-timed nothing kept' while its resumed leg verified and timed the
    candidate again on the 91 scenarios the kill had finished: the check now counts the candidate's rows too."""
    from workbench.harness.scenarios import load_suite

    coldrun, scenarios = _script(), load_suite("smoke")[:2]
    kept_rows = {s.name: {"scenario": s.to_dict(), "status": "passed", "flags": []} for s in scenarios}
    judged = [coldrun.parse_row(f"[  {i + 1}/2] {s.name}  passed  5.0 us  (1.0 s)") for i, s in enumerate(scenarios)]
    rows = [dict(row, resumed_from="") for row in kept_rows.values()]
    leg = {"rows": judged, "result": {"rows": rows}, "resumed_rows": 0}
    again = coldrun.retimed({}, {}, leg, scenarios, kept_rows)
    assert again["rows_reused"] == 0 and again["rows_judged_again"] == sorted(kept_rows)
    whole = {"killed": False, "scenarios_done": 2, "wall_s": 1.0}
    assert not coldrun.acceptance([whole] * 4, 2, dict(again, compared=1), 10.0, 0.0)["resumed re-timed nothing kept"]
    marked = [dict(r, resumed_from="abc", flags=["noisy"]) for r in kept_rows.values()]    # flags: apply_flags'
    reused = {"rows": [], "result": {"rows": marked}, "resumed_rows": 2}
    again = coldrun.retimed({}, {}, reused, scenarios, kept_rows)
    assert again["rows_reused"] == 2 and again["rows_judged_again"] == [] and again["rows_changed_in_json"] == 0
    assert coldrun.acceptance([whole] * 4, 2, dict(again, compared=1), 10.0, 0.0)["resumed re-timed nothing kept"]


def test_an_anchor_the_legs_cannot_load_stops_the_script_before_any_run(tmp_path):
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "scripts/coldrun.py", "--kernel", "standin:correct", "--anchors", "fa3",
                          "--suite", "smoke", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and "anchor fa3 is unavailable" in run.stderr
    assert not out.exists()


def test_a_leg_that_judged_nothing_passes_no_time_check():
    """A worker that crashed at once makes a fast leg that was not killed: its time says nothing."""
    acceptance = _script().acceptance
    crashed = {"killed": False, "scenarios_done": 0, "wall_s": 17.0}
    whole = {"killed": False, "scenarios_done": 182, "wall_s": 17.0}
    again = {"compared": 0, "timed_again": [], "changed_in_cache": 0, "json_reports_other_figures": None}
    checks = acceptance([crashed, crashed, crashed, crashed], 182, again, 17.0, None)
    assert not any(checks.values()), checks
    checks = acceptance([whole, whole, crashed, whole], 182, again, 30.0, 0.0)
    assert checks["cold <= 240 s"] and checks["warm <= 60 s"] and checks["resumed < remaining share of cold"]
