"""With neither --cache-dir nor WORKBENCH_CACHE, the evaluation worker reads the timing cache its parent merges into:
the default folder is the parent's (~/.cache/workbench of the user who runs the harness), never one under the
contained worker's private HOME, so a second check times no baseline again (found under Ray, issue 28)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = """name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,category
home_a,1,2,2,64,64,64,0,bf16,A
home_b,1,2,1,80,80,128,0,bf16,C
"""


def test_the_default_cache_folder_is_the_parents_on_both_sides(tmp_path):
    suite = tmp_path / "home.csv"
    suite.write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_CACHE"}
    env.update(PYTHONPATH=str(ROOT), HOME=str(tmp_path / "home"))
    argv = [sys.executable, "-m", "workbench.cli", "check", "standin:correct", "--suite", str(suite), "--baseline",
            "standin:slow_correct", "--anchors", "", "--traces", ""]
    outputs = []
    for _ in range(2):
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        outputs.append(done.stdout)
    assert "timing cache: timed now original 2 (" in outputs[0]
    assert "timing cache: 2 of 2 baseline and anchor timings cached already" in outputs[1]
    assert "timing cache: timed now original 0 (" in outputs[1], outputs[1]
    assert (tmp_path / "home" / ".cache" / "workbench" / "timing_cache.json").is_file()
