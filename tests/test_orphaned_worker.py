"""A contained evaluation worker dies with the process that judges it: SIGKILL the harness's process alone (not its
process group, as the OOM killer or a Ray node kills one process) inside a scenario, and no process of its
evaluation is left running (on a GPU it would keep the device busy under the next candidate's timing)."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from process_tree import alive, can_see_sleeps, descendants, hanging_descendant, wait_for

ROOT = Path(__file__).resolve().parents[1]
SUITE = """name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,category
orphan_a,1,2,2,64,64,64,0,bf16,A
"""
JUDGE = """
import json, sys
from workbench.harness.check import check
from workbench.harness.result import CheckRequest
request = CheckRequest("standin:hang", suite=sys.argv[1], baseline_path="standin:slow_correct", anchors=(),
                       cache_dir=sys.argv[2], scenario_timeout_s=3000.0)
print(json.dumps(check(request).to_dict()))
"""


@pytest.mark.skipif(not can_see_sleeps(), reason="needs root (the PID namespace, /proc/PID/mem) on x86_64/aarch64")
@pytest.mark.parametrize("sandbox", ["auto", "off"])        # contained (3 processes) and the plain worker
def test_a_killed_judge_takes_its_worker_with_it(tmp_path, sandbox):
    suite = tmp_path / "orphan.csv"
    suite.write_text(SUITE)
    env = dict(os.environ, PYTHONPATH=str(ROOT), WORKBENCH_SANDBOX=sandbox)
    judge = subprocess.Popen([sys.executable, "-c", JUDGE, str(suite), str(tmp_path / "cache")], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    tree: list = []
    try:
        wait_for(lambda: hanging_descendant(judge.pid), "the stand-in hanging inside its scenario")
        tree = descendants(judge.pid)                # contained: the caller, its namespace's init, the worker
        assert len(tree) == (3 if sandbox == "auto" else 1), tree
        os.kill(judge.pid, signal.SIGKILL)           # this process only: its children get no signal from here
        judge.wait(timeout=60)
        wait_for(lambda: not any(alive(pid) for pid in tree), f"the evaluation's processes {tree} gone")
    finally:
        if judge.poll() is None:
            judge.kill()
            judge.wait(timeout=60)
        assert judge.stdout.read() == b""             # killed before it had a result to print
        judge.stdout.close()
        for pid in tree:                              # left over only when the test failed
            if alive(pid) and b"workbench.harness" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
