"""scripts/gemm_gpu_check.py's judgement, on the CPU: Python stand-ins with each GEMM failure mode get the reason
the harness would give (the same role tests/test_verify.py's stand-ins play for attention), and bad arguments are
refused before any work."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from gemm_check_verify import Failure, Tolerances, Verifier  # noqa: E402
from gemm_gpu_check import REASONS, kernel_base_name  # noqa: E402
from make_gemm_suites import Gemm, read_suite  # noqa: E402

SMOKE = {g.name: g for g in read_suite(ROOT / "kernels" / "gemm_bf16" / "suites" / "smoke.csv")}
EDGE = {g.name: g for g in read_suite(ROOT / "kernels" / "gemm_bf16" / "suites" / "edge.csv")}


def product(bufs, k=None, chunk=0):
    """fp32 A.B over the first k columns; chunk > 0 rounds the running sum to bf16 every `chunk` products."""
    a, b = bufs.a.float(), bufs.b.float()
    k = bufs.g.k if k is None else k
    if not chunk:
        return a[:, :k] @ b[:k]
    acc = torch.zeros(bufs.g.m, bufs.g.n, dtype=torch.bfloat16)
    for k0 in range(0, k, chunk):
        acc = (acc.float() + a[:, k0:k0 + chunk] @ b[k0:k0 + chunk]).bfloat16()
    return acc.float()


def correct(bufs):
    bufs.c.copy_(product(bufs).bfloat16())
    return 0


def drops_k_tail(bufs):
    bufs.c.copy_(product(bufs, bufs.g.k - bufs.g.k % 16).bfloat16())
    return 0


def skips_last_row(bufs):
    bufs.c[:-1].copy_(product(bufs)[:-1].bfloat16())
    return 0


def writes_past_end(bufs):
    correct(bufs)
    bufs.c_buf[bufs.guard + bufs.g.m * bufs.g.ldc] = 0.0
    return 0


def writes_row_padding(bufs):
    correct(bufs)
    bufs.c_buf[bufs.guard + bufs.g.n] = 0.0   # the first padding element of row 0
    return 0


def bf16_running_sum(bufs):
    bufs.c.copy_(product(bufs, chunk=1).bfloat16())
    return 0


def negates_b(bufs):
    bufs.b.neg_()
    bufs.c.copy_((-product(bufs)).bfloat16())
    return 0


def one_inf(bufs):
    correct(bufs)
    bufs.c[0, 0] = float("inf")
    return 0


def fp16_overflow(bufs):
    r = product(bufs)
    r[r.abs() > 65504] = float("inf")
    bufs.c.copy_(r.bfloat16())
    return 0


def refuses(bufs):
    return 1


class Cached:
    def __init__(self):
        self.seen = {}

    def __call__(self, bufs):
        key = bufs.a_buf.data_ptr()
        if key in self.seen:
            bufs.c.copy_(self.seen[key])
        else:
            correct(bufs)
            self.seen[key] = bufs.c.clone()
        return 0


class Jitter:
    """Correct but one element moves by one bf16 step every other call: a race that rarely bites."""

    def __init__(self):
        self.calls = 0

    def __call__(self, bufs):
        correct(bufs)
        self.calls += 1
        if self.calls % 2:
            bufs.c.view(torch.int16)[0, 0] += 1   # the next bf16 value
        return 0


class Lazy:
    """Correct for 5 calls of a shape, then half the K steps."""

    def __init__(self):
        self.calls = 0

    def __call__(self, bufs):
        self.calls += 1
        if self.calls <= 5:
            return correct(bufs)
        bufs.c.copy_(product(bufs, bufs.g.k // 2).bfloat16())
        return 0


def judge(kernel, g) -> str:
    verifier = Verifier(g, Tolerances.load(), fresh_seed=12345, device="cpu")
    try:
        verifier.run(kernel)
        if g.m and g.n:
            verifier.later_calls(kernel, own_names=set())
    except Failure as err:
        return err.reason
    return "passed"


@pytest.mark.parametrize("name", sorted(SMOKE) + ["E_k0_odd", "E_m0", "E_odd_strides", "E_1x1x1", "E_k1"])
def test_a_correct_kernel_passes_every_small_shape(name):
    assert judge(correct, SMOKE.get(name) or EDGE[name]) == "passed"


@pytest.mark.parametrize("kernel,shape,reason", [
    (drops_k_tail, "smoke_ragged", "mismatch"),
    (skips_last_row, "smoke_ragged", "unwritten"),
    (writes_past_end, "smoke_ragged", "out_of_bounds"),
    (writes_row_padding, "smoke_strided", "out_of_bounds"),
    (bf16_running_sum, "smoke_kheavy", "mismatch"),
    (negates_b, "smoke_square", "inputs_modified"),
    (one_inf, "smoke_square", "nonfinite"),
    (fp16_overflow, "smoke_kheavy", "large_scale"),
    (refuses, "smoke_square", "unsupported"),
    (Cached(), "smoke_square", "stale"),
    (Jitter(), "smoke_square", "nondeterministic"),
    (Lazy(), "smoke_llm", "timed_mismatch"),
], ids=lambda x: x if isinstance(x, str) else getattr(x, "__name__", type(x).__name__))
def test_each_failure_mode_gets_the_harness_reason(kernel, shape, reason):
    assert reason in REASONS
    assert judge(kernel, SMOKE[shape]) == reason


def test_a_kernel_that_writes_nothing_for_k0_is_unwritten():
    def nothing_for_k0(bufs):
        return correct(bufs) if bufs.g.k else 0
    assert judge(nothing_for_k0, SMOKE["smoke_k0"]) == "unwritten"
    assert judge(nothing_for_k0, SMOKE["smoke_square"]) == "passed"


def test_a_bf16_accumulator_passes_where_k_is_tiny_and_fails_at_k_1000():
    """The contract's bound: at K = 16 a bf16 running sum is as exact as the output rounding (README.md)."""
    tiny = Gemm("tiny_k", 64, 64, 16, 16, 64, 64, "user")
    assert judge(bf16_running_sum, tiny) == "passed"
    assert judge(bf16_running_sum, SMOKE["smoke_kheavy"]) == "mismatch"


def test_kernel_base_names_match_across_profiler_and_cxxfilt_spellings():
    assert kernel_base_name("void gemm_mma<true>(Params)") == "gemm_mma"
    assert kernel_base_name("gemm_tiled(__nv_bfloat16 const*, int)") == "gemm_tiled"
    assert kernel_base_name("void cutlass::Kernel2<cutlass_80_gemm<a<b>>>(Params)") == "cutlass::Kernel2"
    assert kernel_base_name("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT") == "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"


@pytest.mark.parametrize("argv,needle", [
    (["--suite", "nope"], "suite 'nope' not found"),
    (["--jobs", "0"], "--jobs >= 1"),
    (["--kernels", "no_such_kernel", "--no-timing"], "matches no kernel"),
])
def test_bad_arguments_are_refused_before_any_work(argv, needle, tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "gemm_gpu_check.py"), *argv, "--out",
                          str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert needle in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_report_judges_wrong_kernels_by_their_first_rejection_and_rates_rungs_against_cublas(capsys):
    from gemm_gpu_check import report

    def build(regs=64, spills=0, sass=None):
        return {"ok": True, "resources": [{"regs": regs, "spills": spills}], "sass": sass or {}}

    def rows(*statuses):
        return {"scenarios": [{"suite": "dev", "name": f"s{i}", "status": s, "reason": r, "detail": "d"}
                              for i, (s, r) in enumerate(statuses)], "fatal": None}
    kernels = [
        {"label": "wrong/a", "role": "wrong", "expected": ["mismatch"], "build": build(),
         "verify": rows(("passed", ""), ("failed", "mismatch"))},
        {"label": "wrong/b", "role": "wrong", "expected": ["stale"], "build": build(),
         "verify": rows(("failed", "mismatch"))},
        {"label": "02_x", "role": "ladder", "build": build(168, 0, {"HGMMA": 4}), "verify": rows(("passed", ""))},
    ]
    impl = lambda ms: {"ms": ms, "tflops": 2.0 / ms, "ok": True}   # noqa: E731
    timing = {"suite": "full", "anchors": {}, "scenarios": [
        {"name": "S_1", "category": "square", "flops": 2e12, "impls": {"02_x": impl(2.0), "cublas": impl(1.0)}},
        {"name": "S_2", "category": "square", "flops": 1e12, "impls": {"02_x": impl(1.0), "cublas": impl(0.5)}}]}
    assert report(kernels, timing, None) is False            # wrong/b got another reason than expected
    out = capsys.readouterr().out
    assert "OK  a" in out and "BAD b" in out and "got mismatch on s0" in out
    assert re.search(r"square\s+2\s+\S+\s+\S+\s+0\.500", out)  # x cuBLAS: both shapes at half cuBLAS's speed
    kernels.pop(1)
    assert report(kernels, timing, None) is True
