"""LocalPool and RayPool on the CPU stand-in evaluator: the real worker path, crashes, timeouts, where each result
ran, and the same verdicts from both pools. One local Ray instance serves the whole module (it takes seconds)."""
import hashlib
import os
import threading
import time

import pytest

from workbench.evaluators import make_pool
from workbench.evaluators.evaluator import MixedGpuError, failed_result, group_by_gpu, one_gpu_model, PoolError
from workbench.evaluators.local_pool import LocalPool
from workbench.evaluators.ray_pool import RayPool
from workbench.evaluators.ray_start import init_ray
from workbench.evaluators.standin_timings import KnobEvaluator
from workbench.harness.result import CheckRequest, SuiteResult
from workbench.harness.scenarios import SuiteError

SMOKE_ROWS = """name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,category
smoke_basic,1,2,2,64,64,64,0,bf16,A
smoke_d256,1,2,1,40,40,256,0,bf16,C
smoke_cross,2,2,2,50,77,64,0,bf16,D
"""
# stand-in -> (status, all_correct, first row's status and reason); every one runs in the real worker process
EXPECTED = {
    "correct": ("evaluated", True, "passed", ""),
    "wrong_scale": ("evaluated", False, "failed", "mismatch"),
    "refuses_d256": ("evaluated", False, "passed", ""),
    "crash": ("evaluated", False, "failed", "crash"),
    "hang": ("evaluated", False, "failed", "timeout"),
}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    path = tmp_path_factory.mktemp("suite") / "tiny.csv"
    path.write_text(SMOKE_ROWS)
    return str(path)


# The no-progress limit per scenario: short only for the stand-in that never returns (any limit proves it is cut
# off, and it must be longer than loading its library on a loaded machine); the others must never meet theirs,
# or a slow 2-core CI machine turns a verdict into a timeout.
HANG_LIMIT_S, LIMIT_S = 10.0, 120.0


def standin_requests(suite, cache):
    return [CheckRequest(kernel_path=f"standin:{name}", suite=suite, anchors=(), timing=False, cache_dir=cache,
                         scenario_timeout_s=HANG_LIMIT_S if name == "hang" else LIMIT_S) for name in EXPECTED]


def by_name(results) -> dict:
    return dict(zip(EXPECTED, results))


def verdicts(results):
    """What must agree between pools: statuses and verification outcomes, never timings."""
    return [(r.kernel_sha, r.status, r.all_correct, [(row.name, row.status, row.reason) for row in r.rows])
            for r in results]


def check_standin_results(results):
    for r, (name, (status, correct, first_status, first_reason)) in zip(results, EXPECTED.items()):
        assert (r.kernel_sha, r.status, r.all_correct) == (f"standin:{name}", status, correct), name
        assert (r.rows[0].status, r.rows[0].reason) == (first_status, first_reason), name
        assert r.versions["pool"] in ("local", "ray") and r.versions["host"]
    by_name = dict(zip(EXPECTED, results))
    assert f"no progress for {HANG_LIMIT_S:.0f} s" in by_name["hang"].rows[0].detail       # cut off by its limit
    assert [row.status for row in by_name["crash"].rows[1:]] == ["skipped", "skipped"]      # isolation
    assert [row.status for row in by_name["refuses_d256"].rows] == ["passed", "unsupported", "passed"]


# ---- LocalPool ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_results(suite, tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("cache"))
    with LocalPool(2) as pool:
        assert pool.slots == 2 and "2 CPU slots" in pool.describe()
        t0 = time.monotonic()
        results = [f.result() for f in [pool.submit(r) for r in standin_requests(suite, cache)]]
        return results, time.monotonic() - t0


def test_local_pool_crash_hang_and_verdicts(local_results):
    results, wall = local_results
    check_standin_results(results)
    assert {r.versions["device"] for r in results} == {"cpu:0", "cpu:1"}     # two candidates at a time
    # the hang costs its limit, not the worker's start limit (240 s) or more: a bound no load reaches
    assert by_name(results)["hang"].wall_s < 200 and wall < 600


def test_local_pool_pins_one_gpu_per_candidate():
    seen, lock, running = [], threading.Lock(), []

    def fake_harness(request):          # records the GPU each candidate was given, and overlap
        with lock:
            running.append(request.gpu_index)
            seen.append((request.gpu_index, len(running)))
        time.sleep(0.2)
        with lock:
            running.remove(request.gpu_index)
        return SuiteResult(kernel_path=request.kernel_path, kernel_sha="x", suite="s", status="evaluated", gpu="H200")

    with LocalPool(evaluator=fake_harness, gpus=[0, 1]) as pool:
        assert pool.slots == 2
        results = [f.result() for f in [pool.submit(CheckRequest("standin:correct")) for _ in range(4)]]
        assert {g for g, _ in seen} == {0, 1} and max(n for _, n in seen) == 2
        assert sorted(r.versions["device"] for r in results) == ["cuda:0", "cuda:0", "cuda:1", "cuda:1"]
        seen.clear()
        for _ in range(3):                  # one candidate at a time (a campaign) always lands on the first GPU
            pool.evaluator(CheckRequest("standin:correct"))
        assert [g for g, _ in seen] == [0, 0, 0]


def test_local_pool_passes_evaluator_errors_on():
    with LocalPool(1) as pool:
        with pytest.raises(SuiteError, match="suite not found"):
            pool.submit(CheckRequest("standin:correct", suite="no_such_suite")).result()


def test_gpu_models_are_never_mixed():
    a = SuiteResult("k", "1", "s", "evaluated", gpu="NVIDIA H200")
    b = SuiteResult("k", "2", "s", "evaluated", gpu="NVIDIA H100 80GB HBM3")
    c = SuiteResult("k", "3", "s", "evaluated", gpu="NVIDIA H200")
    assert one_gpu_model([a, c]) == "NVIDIA H200"
    assert one_gpu_model([a, failed_result(CheckRequest("k"), "timeout", "late")]) == "NVIDIA H200"
    with pytest.raises(MixedGpuError, match="cannot be compared"):
        one_gpu_model([a, b, c])
    assert {k: len(v) for k, v in group_by_gpu([a, b, c]).items()} == {"NVIDIA H200": 2, "NVIDIA H100 80GB HBM3": 1}


def test_make_pool_rejects_bad_choices():
    with pytest.raises(PoolError, match="unknown pool"):
        make_pool("slurm")
    with pytest.raises(PoolError, match="needs --pool ray"):
        make_pool("local", ray_address="auto")


# ---- RayPool (one local Ray instance for the module) ---------------------------------------------------------
@pytest.fixture(scope="module")
def ray_instance():
    ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'ray>=2.9'")
    init_ray(ray, num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def ray_pool(ray_instance):
    pool = RayPool()
    yield pool
    pool.close()


def test_ray_pool_gives_the_same_verdicts_as_the_local_pool(ray_pool, local_results, suite, tmp_path):
    assert ray_pool.slots == 2 and not ray_pool.use_gpus
    results = [f.result() for f in [ray_pool.submit(r) for r in standin_requests(suite, str(tmp_path))]]
    check_standin_results(results)
    assert {r.versions["pool"] for r in results} == {"ray"} and {r.versions["device"] for r in results} == {"cpu"}
    assert verdicts(results) == verdicts(local_results[0])


def test_ray_pool_cancels_a_task_past_its_time_limit(ray_instance, suite):
    pool = RayPool(timeout_s=4.0)            # the harness's own scenario limit (60 s) would come much later
    try:
        t0 = time.monotonic()
        result = pool.submit(CheckRequest("standin:hang", suite=suite, anchors=(), timing=False,
                                          scenario_timeout_s=60.0)).result()
        assert result.status == "timeout" and "cancelled" in result.error and not result.all_correct
        assert time.monotonic() - t0 < 30
    finally:
        pool.close()
    assert ray_instance.is_initialized()      # a pool that did not start Ray leaves it running


def test_ray_pool_reports_a_dead_worker_and_evaluator_errors(ray_pool):
    dead = RayPool(evaluator=lambda request: os._exit(7))
    try:
        result = dead.submit(CheckRequest("standin:correct")).result()
        assert result.status == "crashed" and "died" in result.error
    finally:
        dead.close()
    with pytest.raises(SuiteError, match="suite not found"):
        ray_pool.submit(CheckRequest("standin:correct", suite="no_such_suite")).result()


def test_ray_pool_ships_the_kernel_source(ray_instance, tmp_path):
    kernel = tmp_path / "variant.cu"
    kernel.write_text(open("kernels/attn_fwd/original.cu").read().replace("KEY_TILE 8 ", "KEY_TILE 16 ", 1))
    pool = RayPool(evaluator=KnobEvaluator())
    try:
        result = pool.submit(CheckRequest(str(kernel), suite="smoke", anchors=())).result()
    finally:
        pool.close()
    assert result.kernel_path == str(kernel) and result.all_correct
    assert result.kernel_sha == hashlib.sha256(kernel.read_text().encode()).hexdigest()
    local = KnobEvaluator()(CheckRequest(str(kernel), suite="smoke", anchors=()))
    assert result.geomean_vs("original") == pytest.approx(local.geomean_vs("original"))


def test_evolution_is_the_same_on_both_pools(ray_instance, tmp_path):
    from workbench.evolve import EvolveConfig, Evolution, lineage_frame

    def run(pool, name):
        config = EvolveConfig(kernel_path="kernels/attn_fwd/ladder/02_mma.cu", suite="smoke", population=2,
                              generations=2, evaluator="standin", stop_expr="", anchors=[], seed=3,
                              root=str(tmp_path / name), run_id="evo")
        try:
            Evolution.create(config, pool).run()
        finally:
            pool.close()
        frame = lineage_frame(tmp_path / name / "evo" / "traces")
        return frame[["generation", "slot", "child_sha", "parent_sha", "question_id", "status",
                      "geomean_vs_original", "survived"]].to_dict("records"), set(frame["device"].dropna())

    local, local_devices = run(LocalPool(2, evaluator=KnobEvaluator()), "local")
    remote, remote_devices = run(RayPool(evaluator=KnobEvaluator()), "ray")
    assert local == remote and len(local) >= 5
    assert local_devices <= {"cpu:0", "cpu:1"} and remote_devices == {"cpu"}


def test_campaign_command_takes_the_ray_pool(ray_instance, tmp_path, capsys):
    from workbench.agent.campaign_cli import campaign_main
    from workbench.traces.writer import read_table

    code = campaign_main(["--root", str(tmp_path), "--id", "on-ray", "--suite", "smoke", "--agent", "offline",
                          "--evaluator", "standin", "--budget", "turns=3", "--pool", "ray"])
    assert code == 0 and "stopped: budget_turns" in capsys.readouterr().out
    evaluations = read_table(tmp_path / "on-ray" / "traces", "evaluations")
    assert len(evaluations) and all('"pool": "ray"' in v for v in evaluations["versions_json"])
