"""scripts/coldrun.py (issue 24's GPU acceptance) runs its four legs end to end on the CPU with stand-ins, so the
H200 call does not find a broken script: the SIGKILLed leg leaves timings that the resumed leg reuses unchanged."""
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
    assert summary["kept_after_kill"] >= 2 and summary["kept_compared"] == summary["kept_after_kill"]
    assert summary["kept_retimed"] == 0 and summary["checks"]["resumed re-timed nothing kept"]
    assert "check: resumed re-timed nothing kept: PASS" in (out / "coldrun_table.txt").read_text()
