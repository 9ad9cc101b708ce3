"""RayPool on a real local Ray cluster (issue 28), judged by the harness on the CPU stand-ins: the contained worker
runs on the node and its result says what held; the node's trusted parent merges the timings the worker staged
(once: later evaluations on the node find them cached); a Ray worker killed inside a scenario is judged again once
(harness) or reported once (an in-process evaluator), no finished result is lost, and the evolution goes on.

Every wait is on a process state or a file, never on a time threshold (a loaded 2-core machine)."""
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from process_tree import alive, can_see_sleeps, descendants, hanging_descendant, wait_for
from workbench.evaluators.ray_pool import RayPool
from workbench.evaluators.ray_start import init_ray
from workbench.evaluators.standin_timings import KnobEvaluator
from workbench.harness import cache_file
from workbench.harness.result import CheckRequest

SUITE = """name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,category
node_a,1,2,2,64,64,64,0,bf16,A
node_b,1,2,2,96,96,64,1,bf16,B
node_c,1,2,1,80,80,128,0,bf16,C
"""
ROOT = Path(__file__).resolve().parents[1]
contained_here = pytest.mark.skipif(os.geteuid() != 0, reason="the contained worker (a dropped uid) needs root")


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'ray>=2.9'")
    # address="local": a new instance of our own, never a cluster another process started on this machine
    init_ray(ray, address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "node.csv"
    path.write_text(SUITE)
    return str(path)


def request(kernel: str, suite: str, cache: Path, **kw) -> CheckRequest:
    return CheckRequest(kernel, suite=suite, baseline_path="standin:slow_correct", anchors=(), cache_dir=str(cache),
                        **kw)


def judged(pool: RayPool, req: CheckRequest):
    lines: list = []
    return pool.submit(req, progress=lines.append), lines


def contained_uid(result) -> int:
    held = result.versions.get("sandbox", "")
    match = re.match(r"uid (\d+), no network, private /tmp, read-only mounts, private folder \d+ MiB, "
                     r"own PID namespace, socket filter", held)
    assert match, held
    return int(match.group(1))


@contained_here
def test_the_node_contains_the_worker_and_its_parent_merges_the_staged_timings_once(ray_cluster, suite, tmp_path):
    cache = tmp_path / "cache"
    pool = RayPool()
    try:
        first, first_lines = judged(pool, request("standin:correct", suite, cache))
        first = first.result()
        later = [judged(pool, request("standin:correct", suite, cache)) for _ in range(2)]   # both slots at once
        later = [(future.result(), lines) for future, lines in later]
    finally:
        pool.close()
    assert first.status == "evaluated" and first.all_correct and first.versions["pool"] == "ray"
    uids = {contained_uid(r) for r in [first] + [r for r, _ in later]}
    assert 0 not in uids and os.getuid() not in uids                       # an unprivileged uid each time
    # the first evaluation timed the baseline on the node; the staged entries reached the node's cache
    assert any(l.startswith("[ray 0] timing cache: 0 of 3 baseline and anchor timings cached already")
               for l in first_lines), first_lines
    assert any("timing cache: timed now original 3 (" in l for l in first_lines), first_lines
    entries = {k: v for k, v in cache_file.read_entries(cache).items() if k.startswith("original|")}
    assert len(entries) == 3
    assert sorted(e["stats"]["median_us"] for e in entries.values()) == sorted(
        row.reference_stats["original"].median_us for row in first.rows)
    # written by the trusted parent on the node (this user), never by the contained uid (read-only mounts there)
    assert {os.stat(p).st_uid for p in cache.glob("timing_cache*")} == {os.getuid()}
    for result, lines in later:                     # once per node: the later ones time nothing again
        assert result.all_correct and any("timing cache: 3 of 3 baseline and anchor timings cached already" in l
                                          for l in lines), lines
        assert any("timing cache: timed now original 0 (" in l for l in lines), lines
        assert [r.reference_stats["original"] for r in result.rows] == [r.reference_stats["original"]
                                                                          for r in first.rows]
    assert len([k for k in cache_file.read_entries(cache) if k.startswith("original|")]) == 3


def ray_worker_of(pid: int) -> int:
    """The Ray worker process (`ray::...`) that `pid` descends from."""
    while pid > 1:
        if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::"):
            return pid
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    raise AssertionError("no Ray worker above the hanging stand-in")


@pytest.mark.skipif(not can_see_sleeps(), reason="needs root (the PID namespace, /proc/PID/mem) on x86_64/aarch64")
def test_a_ray_worker_killed_inside_a_scenario_is_judged_again_once(ray_cluster, suite, tmp_path):
    cache = tmp_path / "cache"
    pool = RayPool()
    try:
        hung, hung_lines = judged(pool, request("standin:hang", suite, cache, scenario_timeout_s=20.0))
        hang_pid = wait_for(lambda: hanging_descendant(os.getpid()), "standin:hang inside its first scenario")
        worker = ray_worker_of(hang_pid)
        killed_tree = [worker] + descendants(worker)
        beside, beside_lines = judged(pool, request("standin:correct", suite, cache))    # the other slot
        beside = beside.result()
        os.kill(worker, signal.SIGKILL)             # once: the second attempt hangs until its scenario limit
        hung = hung.result()
    finally:
        pool.close()
    assert beside.all_correct and beside.versions["pool"] == "ray"           # the finished result is kept
    assert hung.status == "evaluated" and "WorkerCrashedError" in hung.versions["retried"]
    assert (hung.rows[0].status, hung.rows[0].reason) == ("failed", "timeout")   # the second attempt's own limit
    assert [r.status for r in hung.rows[1:]] == ["skipped", "skipped"] and contained_uid(hung) > 0
    assert sum("judged again (once)" in l for l in hung_lines) == 1
    wait_for(lambda: not any(alive(pid) for pid in killed_tree), f"the killed attempt's processes {killed_tree}")


def gated_knob_evaluator(gate: Path, hang_at: int):
    """A KnobEvaluator whose `hang_at`-th call (counted across Ray workers in `gate`) writes its pid and sleeps
    until killed. Defined in a function, so Ray pickles it by value (the test module is not importable there)."""
    class Gated(KnobEvaluator):
        def __call__(self, req):
            fd = os.open(gate / "calls", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            try:
                os.write(fd, b".")
                calls = os.fstat(fd).st_size
            finally:
                os.close(fd)
            if calls == hang_at:
                (gate / "pid.tmp").write_text(str(os.getpid()))
                os.replace(gate / "pid.tmp", gate / "pid")
                threading.Event().wait()
            return super().__call__(req)
    return Gated()


def test_an_evolution_goes_on_past_a_killed_ray_worker(ray_cluster, tmp_path):
    from workbench.evolve import EvolveConfig, Evolution, lineage_frame
    from workbench.traces.writer import read_table

    gate = tmp_path / "gate"
    gate.mkdir()
    config = EvolveConfig(kernel_path="kernels/attn_fwd/ladder/02_mma.cu", suite="smoke", population=2,
                          generations=2, evaluator="standin", stop_expr="", anchors=[], seed=3,
                          root=str(tmp_path / "runs"), run_id="evo")
    pool = RayPool(evaluator=gated_knob_evaluator(gate, hang_at=3))     # the seed is call 1: a child hangs
    summary: dict = {}
    try:
        run = threading.Thread(target=lambda: summary.update(Evolution.create(config, pool).run()))
        run.start()
        pid = int(wait_for(lambda: (gate / "pid").exists() and (gate / "pid").read_text(), "the gated call"))
        os.kill(pid, signal.SIGKILL)
        run.join(timeout=600)
        assert not run.is_alive()
    finally:
        pool.close()
    frame = lineage_frame(tmp_path / "runs" / "evo" / "traces")
    judged_rows = frame[frame["status"] != "rejected"]
    assert summary["reason"] and len(frame[frame["generation"] == 2])       # generation 2 ran after the kill
    evaluations = read_table(tmp_path / "runs" / "evo" / "traces", "evaluations")     # rows per scenario
    crashed = evaluations[evaluations["reason"] == "crashed"]
    assert crashed["eval_id"].nunique() == 1 and len(crashed) == 1           # reported once, never judged again
    assert "the Ray worker died: WorkerCrashedError" in crashed["detail"].iloc[0]
    others = evaluations[evaluations["eval_id"] != crashed["eval_id"].iloc[0]]
    assert len(others) and others["all_correct"].all()
    runs = evaluations["eval_id"].nunique()
    assert runs == (gate / "calls").stat().st_size == len(judged_rows)        # no result lost, none twice


def test_the_readme_command_reaches_a_cluster_by_its_address(ray_cluster, tmp_path):
    """README, "Evolution over an evaluation pool": `workbench evolve ... --pool ray --ray-address ADDR` from another
    process, the way a head node's cluster is used (the checkout is shipped as the job's working_dir)."""
    address = ray_cluster.get_runtime_context().gcs_address
    argv = [sys.executable, "-m", "workbench.cli", "evolve", "--kernel", "kernels/attn_fwd/ladder/02_mma.cu",
            "--suite", "smoke", "--population", "2", "--generations", "1", "--evaluator", "standin", "--pool", "ray",
            "--ray-address", address, "--root", str(tmp_path / "runs"), "--id", "readme"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"ray pool ({address}): 2 CPU slots" in done.stdout and "stopped: generations_done" in done.stdout
    if os.environ.get("RAY_AUTH_MODE") == "token":      # this Ray made its local instance with token authentication
        env.pop("RAY_AUTH_MODE")
        refused = subprocess.run(argv[:-1] + ["readme-2"], cwd=ROOT, env=env, capture_output=True, text=True,
                                 timeout=900)
        assert refused.returncode == 2 and "set RAY_AUTH_MODE=token here" in refused.stderr, refused.stderr[-2000:]
        assert not (tmp_path / "runs" / "readme-2").exists()
