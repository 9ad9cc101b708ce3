"""The bf16 GEMM through the harness on the CPU: its problem folder loads through the problem interface, its CPU
stand-ins are each rejected with their reason (so CI proves every rejection of kernels/gemm_bf16/wrong/ without a
GPU, as tests/test_verify.py does for attention), a correct kernel passes every small shape, and `check` runs it
end to end in its worker."""
import csv
from pathlib import Path

import pytest
import torch

from workbench.harness import problems
from workbench.harness.check import check
from workbench.harness.problem import Problem
from workbench.harness.result import CheckRequest
from workbench.harness.scenarios import SuiteError, load_suite
from workbench.harness.verify import REASONS, Verifier

ROOT = Path(__file__).resolve().parents[1]
GEMM = problems.load("gemm_bf16")
PROBLEM = Problem.load("gemm_bf16")
JUDGE, STANDINS = GEMM.judge, GEMM.standins
SMOKE = load_suite("smoke", problem=GEMM)
EDGE = load_suite("edge", problem=GEMM)
BY_NAME = {s.name: s for s in SMOKE + EDGE}


def judge(kernel, shapes, seed=4242) -> tuple[str, str]:
    """(reason or 'passed', the shape it was found on): the shapes in order until the first rejection."""
    for s in shapes:
        outcome = Verifier(s, "cpu", PROBLEM.tolerances, seed, JUDGE).run(kernel)
        if not outcome.passed:
            return outcome.reason, s.name
    return "passed", ""


def expected_rows() -> dict:
    with open(GEMM.folder / "wrong" / "expected.csv", newline="") as handle:
        return {r["kernel"]: r["expected_reasons"].split("|") for r in csv.DictReader(handle)}


def test_the_problem_folder_loads_and_names_itself_in_its_scenarios():
    assert GEMM.name == "gemm_bf16" and GEMM.entry_point == "gemm_bf16" and GEMM.default_suite == "dev"
    assert GEMM.anchors == ("cublas", "triton") and GEMM.main_anchor == "cublas"
    s = BY_NAME["smoke_ragged"]
    assert s.to_dict()["problem"] == "gemm_bf16" and problems.scenario_from_dict(s.to_dict()) == s
    assert s.flops() == 2 * 77 * 33 * 45 and s.min_bytes() == 2 * (77 * 45 + 45 * 33 + 77 * 33)
    assert problems.infer(str(GEMM.folder / "ladder" / "01_mma_sync.cu")) == str(GEMM.folder)
    assert problems.infer(str(ROOT / "kernels" / "attn_fwd" / "original.cu")).endswith("attn_fwd")
    assert problems.infer("standin:correct") is None
    assert PROBLEM.tolerances.sqrt_k_slack == 1e-6 and PROBLEM.tolerances.seeds == (0, 1)


def test_an_unknown_problem_and_a_bad_suite_row_are_one_line_each(tmp_path):
    with pytest.raises(SuiteError, match="no problem.toml") as err:
        problems.load("no_such_problem")
    assert "\n" not in str(err.value) and "gemm_bf16" in str(err.value)
    bad = tmp_path / "bad.csv"
    bad.write_text("name,m,n,k,lda,ldb,ldc,dtype\nshort,4,8,16,8,8,8,bf16\n")
    with pytest.raises(SuiteError, match=r"bad.csv:2: lda=8 is shorter than a row \(16 elements\)"):
        load_suite(str(bad), problem=GEMM)


@pytest.mark.parametrize("shape", [s.name for s in SMOKE + EDGE])
def test_a_correct_kernel_passes_every_small_shape(shape):
    assert judge(STANDINS.correct, [BY_NAME[shape]]) == ("passed", "")


@pytest.mark.parametrize("name", sorted(STANDINS.EXPECTED_REASON))
def test_each_failure_mode_is_rejected_with_its_reason(name):
    reason, where = judge(STANDINS.STANDINS[name], SMOKE)
    assert reason == STANDINS.EXPECTED_REASON[name], where
    assert reason in REASONS


def test_every_wrong_kernel_has_a_standin_twin_with_one_of_its_expected_reasons():
    expected = expected_rows()
    twins = set(STANDINS.EXPECTED_REASON) | set(STANDINS.EXPECTED_REASON_IN_WORKER)
    assert set(expected) <= twins
    reasons = {**STANDINS.EXPECTED_REASON, **STANDINS.EXPECTED_REASON_IN_WORKER}
    assert all(reasons[name] in expected[name] for name in expected), {n: (reasons[n], expected[n]) for n in expected}


def test_the_missing_barrier_twin_is_a_product_less_its_last_k_tile():
    s = BY_NAME["smoke_kheavy"]
    x = JUDGE.Inputs.allocate(s, "cpu")
    x.fill(3)
    out = JUDGE.Outputs(s, "cpu", 16)
    STANDINS.missing_barrier(x, out.c, s)
    last = (s.k - 1) // 16 * 16
    expected = (x.a.float()[:, :last] @ x.b.float()[:last]).bfloat16()
    assert torch.equal(out.c, expected)



def test_writes_into_c_row_padding_or_nothing_for_k0_are_caught():
    def writes_row_padding(x, c, s):
        STANDINS.correct(x, c, s)
        torch.as_strided(c, (1,), (1,), c.storage_offset() + s.n).fill_(0.0)   # row 0's first padding element
        return 0

    def nothing_for_k0(x, c, s):
        return STANDINS.correct(x, c, s) if s.k else 0

    assert judge(writes_row_padding, [BY_NAME["smoke_strided"]]) == ("out_of_bounds", "smoke_strided")
    assert judge(nothing_for_k0, [BY_NAME["smoke_k0"]]) == ("unwritten", "smoke_k0")
    assert judge(nothing_for_k0, [BY_NAME["smoke_square"]]) == ("passed", "")


def test_a_bf16_accumulator_passes_where_k_is_tiny_and_fails_at_k_1000():
    """The contract's bound (README.md): at K = 16 a bf16 running sum is as exact as the output rounding."""
    tiny = GEMM.Scenario(name="tiny_k", m=64, n=64, k=16, lda=16, ldb=64, ldc=64)
    assert judge(STANDINS.bf16_accumulate, [tiny]) == ("passed", "")
    assert judge(STANDINS.bf16_accumulate, [BY_NAME["smoke_kheavy"]]) == ("mismatch", "smoke_kheavy")


def _check(name, **kw):
    return check(CheckRequest(kernel_path=f"standin:{name}", suite="smoke", anchors=(), problem="gemm_bf16",
                              fail_fast=True, **kw))


@pytest.mark.slow
def test_check_runs_the_gemm_problem_in_its_worker_with_its_baseline(tmp_path):
    result = _check("correct", cache_dir=str(tmp_path))
    assert result.status == "evaluated" and result.all_correct and result.problem == "gemm_bf16"
    assert all(r.scenario["problem"] == "gemm_bf16" and r.stats is not None for r in result.rows)
    assert set(result.geomeans()) >= {"overall", "square", "ragged", "k_heavy", "llm"}   # its own categories
    assert result.rows[0].tflops == pytest.approx(2 * 64 ** 3 / (result.rows[0].stats.median_us * 1e-6) / 1e12)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lazy_after_verify", "borrowed_cublas"])
def test_the_worker_only_rejections_fire_in_the_worker(name, tmp_path):
    expected = {**STANDINS.EXPECTED_REASON, **STANDINS.EXPECTED_REASON_IN_WORKER}[name]
    first = next(r for r in _check(name, cache_dir=str(tmp_path)).rows if r.status == "failed")
    assert first.reason == expected, first.detail
