"""Every rejection reason fires on a CPU stand-in with that failure mode (the GPU twins live in wrong/)."""
import pytest
import torch

from workbench.harness.scenarios import Scenario, load_suite
from workbench.harness.standins import EXPECTED_REASON, STANDINS
from workbench.harness.verify import REASONS, GuardedOutputs, Tolerances, Verifier

SMOKE = load_suite("smoke")
CAUSAL = next(s for s in SMOKE if s.name == "smoke_causal")
D256 = next(s for s in SMOKE if s.head_dim == 256)


def run(name, scenario, seed=777):
    return Verifier(scenario, "cpu", Tolerances(), fresh_seed=seed).run(STANDINS[name])


@pytest.mark.parametrize("scenario", SMOKE, ids=lambda s: s.name)
def test_correct_standin_passes_every_smoke_shape(scenario):
    outcome = run("correct", scenario)
    assert outcome.passed, outcome.detail
    assert outcome.rel_l2_err < 3e-3          # the bf16 output rounding floor is ~2.2e-3


@pytest.mark.parametrize("name", sorted(EXPECTED_REASON))
def test_each_failure_mode_is_rejected_with_its_reason(name):
    scenario = D256 if name in ("refuses_d256",) else CAUSAL
    if name == "one_head_dim":
        scenario = next(s for s in SMOKE if s.head_dim == 64)
    outcome = run(name, scenario)
    assert not outcome.passed
    assert outcome.reason == EXPECTED_REASON[name], outcome.detail
    assert outcome.reason in REASONS and outcome.detail


def test_empty_rows_must_report_minus_inf_lse():
    s = next(x for x in SMOKE if x.name == "smoke_emptyrows")   # Sq > Sk, causal: leading rows see nothing
    assert s.visible_keys(0) == 0

    def zero_lse(inputs, o, lse, sc):
        STANDINS["correct"](inputs, o, lse, sc)
        lse[torch.isinf(lse)] = 0.0
        return 0

    outcome = Verifier(s, "cpu", Tolerances(), fresh_seed=5).run(zero_lse)
    assert outcome.reason == "lse_mismatch"


def test_reference_matches_torch_sdpa():
    from workbench.harness.reference import Inputs, reference
    s = Scenario("t", 2, 4, 2, 40, 40, 64, True)
    x = Inputs.allocate(s, "cpu")
    x.fill(3)
    ref = reference(s, x, torch.arange(40))
    q, k, v = (t.float().transpose(1, 2) for t in (x.q, x.k, x.v))
    k, v = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)
    assert torch.allclose(ref.o, expected, atol=1e-5)


def test_sampled_rows_cover_edges_and_change_with_the_seed():
    s = Scenario("big", 1, 64, 8, 8192, 8192, 128, True)
    v = Verifier.__new__(Verifier)
    v.s, v.tol = s, Tolerances()
    a, b = v.rows_for(0), v.rows_for(1)
    assert len(a) == Tolerances().sample_rows
    assert {0, 8191} <= set(a.tolist()) and not torch.equal(a, b)
    assert torch.equal(a, v.rows_for(0))       # fixed seeds give fixed rows (the original's rows are cached)


def test_guards_detect_writes_on_either_side():
    s = CAUSAL
    out = GuardedOutputs(s, "cpu", 64)
    assert out.guards_intact() == []
    out.poison()
    assert out.guards_intact() == []
    torch.as_strided(out.lse, (1,), (1,), out.lse.storage_offset() - 1).fill_(0.0)
    assert out.guards_intact() == ["lse"]
