"""What runs between two timed samples of a candidate, counted on the CPU: every torch op the harness issues there
is recorded (a TorchDispatchMode; the candidate's own ops are left out), and none may allocate a tensor, move
data between devices, or be other than the in-place / out= kernels of before(i) and the rows kept aside
(timed_rows.py); no cache entry is staged (no `cached` event) while the candidate is timed. On the H200 an
allocation and host-to-device copy there cost the next replay of a 5 us kernel 4-5 us (run 9, 2026-12-01)."""
import pytest
import torch
from torch.utils._pytree import tree_flatten
from torch.utils._python_dispatch import TorchDispatchMode

from workbench.harness.problem import Problem
from workbench.harness.scenarios import Scenario, load_suite
from workbench.harness.standins import STANDINS
from workbench.harness.timed_rows import TimedRows, fixed_rows
from workbench.harness.timing import Timer
from workbench.harness.timing_cache import TimingCache
from workbench.harness.worker import ScenarioRun

# between samples: before(i) (inputs refilled, outputs poisoned), keep(i) (rows drawn, o / lse rows copied),
# and the views these take; nothing else
QUIET_OPS = {"normal_", "fill_", "random_", "index_select", "view", "detach", "slice", "select", "alias"}


class OpRecorder(TorchDispatchMode):
    """Logs (op name, allocated a new tensor, devices of its tensors) of every op issued while not paused."""

    def __init__(self):
        super().__init__()
        self.log: list = []
        self.paused = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self.paused:
            given = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
            storages = {t.untyped_storage().data_ptr() for t in given}
            made = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            allocates = any(t.untyped_storage().data_ptr() not in storages for t in made)
            devices = {str(t.device) for t in given + made}
            self.log.append(("op", func.overloadpacket.__name__, allocates, devices))
        return out


class MarkingTimer(Timer):
    """The real timer, marking in the recorder's log where each time() and each timed replay begins."""

    def __init__(self, recorder: OpRecorder, *a):
        super().__init__(*a)
        self.recorder = recorder

    def time(self, *a, **kw):
        self.recorder.log.append(("time",))
        try:
            return super().time(*a, **kw)
        finally:
            self.recorder.log.append(("time done",))

    def _replay_sample(self, g) -> float:
        self.recorder.log.append(("sample",))
        return super()._replay_sample(g)


def _run_one_scenario(tmp_path, recorder: OpRecorder, name: str = "attn_fwd"):
    problem = Problem.load(name)
    s = load_suite("smoke", problem=problem.definition)[0]
    standins = problem.definition.standins.STANDINS if name != "attn_fwd" else STANDINS
    problem.timing.time_cap_s, problem.timing.max_reps = 20.0, 12     # short calls on any load (rep_count.py)
    job = {"device": "cpu", "request": {"timing": True}, "scenarios": [s.to_dict()],
           "candidate": {"kind": "standin", "path": "correct", "sha": "c" * 64},
           "baseline": {"kind": "standin", "path": "correct", "sha": "b" * 64}}
    cache = TimingCache(tmp_path / "cache", "cpu", {})
    cache.stage_writes(tmp_path / "staged")
    cache.on_stage = lambda: recorder.log.append(("staged",))

    def own(name):
        def kernel(*a):            # the candidate's and baseline's own ops are theirs, not the harness's
            recorder.paused += 1
            try:
                return standins[name](*a)
            finally:
                recorder.paused -= 1
        return kernel

    runner = ScenarioRun(job, problem, MarkingTimer(recorder, "cpu", problem.timing), cache, {}, fresh_seed=11)
    with recorder:
        result = runner.run(s, own("correct"), own("correct"))
    return result


@pytest.mark.parametrize("problem", ["attn_fwd", "gemm_bf16"])
def test_between_a_candidates_samples_only_quiet_device_kernels_run_and_nothing_is_staged(tmp_path, problem):
    recorder = OpRecorder()
    result = _run_one_scenario(tmp_path, recorder, problem)
    assert result.status == "passed" and result.stats is not None and "original" in result.reference_stats
    log = recorder.log
    begin = log.index(("time",))
    end = log.index(("time done",), begin)
    candidate = log[begin:end]                           # the candidate is timed first, then the baseline
    marks = [k for k, entry in enumerate(candidate) if entry == ("sample",)]
    assert len(marks) >= result.stats.n + 2              # the uploads and the samples
    gaps = [candidate[a + 1:b] for a, b in zip(marks, marks[1:])]
    for gap in gaps:
        ops = [entry for entry in gap if entry[0] == "op"]
        assert ops, "before(i) and keep(i) run between samples"
        assert not [op for op in ops if op[2]], f"an op allocated a tensor between samples: {ops}"
        assert {op[1] for op in ops} <= QUIET_OPS, {op[1] for op in ops} - QUIET_OPS
        assert all(op[3] == {"cpu"} for op in ops)       # no tensor of another device: no transfer
        assert ("staged",) not in gap
    assert len({len(gap) for gap in gaps[1:]}) == 1      # the same work before every timed sample (and its prime)
    assert ("staged",) not in candidate                  # the baseline's entries are staged after, not during
    assert ("staged",) in log[end:]


def test_kept_rows_are_drawn_per_launch_and_hold_what_the_launch_wrote():
    s = Scenario(name="t", batch=1, heads_q=2, heads_kv=2, seqlen_q=300, seqlen_k=200, head_dim=64, causal=True)
    kept = TimedRows(s, "cpu", count=16, capacity=2, seed=5)
    o = torch.randn(1, 300, 2, 64).to(torch.bfloat16)
    lse = torch.randn(1, 2, 300)
    for seed in (7, 8, 9):                               # the third is past capacity: kept all the same
        kept.keep(seed, o, lse)
    launches = list(kept.launches())
    assert [seed for seed, *_ in launches] == [7, 8, 9] and len(kept) == 3
    assert fixed_rows(s, 16) == [0, 1, 100, 101, 298, 299]
    for _, rows, o_rows, lse_rows in launches:
        assert rows[:6].tolist() == [0, 1, 100, 101, 298, 299] and len(rows) == 16
        assert torch.equal(o_rows, o[:, rows]) and torch.equal(lse_rows, lse[:, :, rows])
    assert launches[0][1][6:].tolist() != launches[1][1][6:].tolist()   # new random rows for every launch
    small = Scenario(name="u", batch=1, heads_q=1, heads_kv=1, seqlen_q=10, seqlen_k=10, head_dim=64, causal=False)
    assert fixed_rows(small, 16) == list(range(10)) and TimedRows(small, "cpu", 16, 1, 0).rows.shape == (1, 10)


def test_a_gemm_launch_keeps_rows_of_c_through_its_row_stride():
    """Any problem's outputs: the judge names the row dimension (C's rows, through a padded ldc) and the fixed
    rows (both sides of the 64/128/256-row tile edges)."""
    problem = Problem.load("gemm_bf16")
    judge = problem.definition.judge
    s = next(x for x in load_suite("dev", problem=problem.definition) if x.m > 300 and x.ldc > x.n)
    out = judge.Outputs(s, "cpu", 16)
    out.tensors[0].copy_(torch.randn(s.m, s.n).to(torch.bfloat16))
    kept = TimedRows(s, "cpu", count=16, capacity=1, seed=3, judge=judge, like=out.tensors)
    kept.keep(7, *out.tensors)
    kept.keep(8, *out.tensors)                           # past capacity: kept all the same
    fixed = [0, 1, 63, 64, 127, 128, 255, 256, s.m - 2, s.m - 1]
    for seed, rows, c_rows in kept.launches():
        assert rows[:10].tolist() == fixed and len(rows) == 16
        assert torch.equal(c_rows, out.tensors[0][rows])
