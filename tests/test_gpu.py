"""GPU acceptance of the harness (run on the H200: `pytest -m gpu tests/test_gpu.py`; never in CI).

Results are written as JSON under $WORKBENCH_GPU_OUT (default .cache/gpu) so docs/benchmarks.md can cite them.
"""
import csv
import os
from pathlib import Path

import pytest

from workbench.harness.check import check, gpu_available
from workbench.harness.result import CheckRequest

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")]
ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "kernels" / "attn_fwd"
OUT = Path(os.environ.get("WORKBENCH_GPU_OUT", ROOT / ".cache" / "gpu"))
CACHE = os.environ.get("WORKBENCH_CACHE")


def run(kernel, suite, **kw):
    request = CheckRequest(kernel_path=str(kernel), suite=suite, cache_dir=CACHE, **kw)
    result = check(request, progress=lambda line: print(line, flush=True))
    return result


def save(name, result):
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(result.to_json())


def test_original_passes_full_with_anchors():
    # verification only: the original's and the anchors' timings on `full` come from the ladder runs, where
    # the original is the baseline (docs/benchmarks.md); timing it here again would double ~3 GPU-minutes
    result = run(KERNELS / "original.cu", "full", anchors=("fa3", "cudnn", "fa2"), timing=False)
    save("original_full", result)
    failing = [(r.name, r.reason, r.detail) for r in result.rows if r.status != "passed"]
    assert not failing, failing[:5]
    # the anchors ran and are themselves correct with margin under our tolerance
    for anchor in ("fa3", "cudnn"):
        errs = [r.reference_errors.get(anchor) for r in result.rows]
        numeric = [e for e in errs if isinstance(e, float)]
        assert len(numeric) >= 0.9 * len(errs), f"{anchor} ran on too few scenarios"
        assert max(numeric) < 0.5 * 1e-2, f"{anchor} max rel err {max(numeric):.2e}"


@pytest.mark.parametrize("kernel", sorted((KERNELS / "ladder").glob("*.cu")), ids=lambda p: p.name)
def test_ladder_kernel_passes_full_running_only_its_own_kernels(kernel):
    # verification only (the foreign-kernel check records one call of every scenario either way); the original's
    # no-false-positive run is test_original_passes_full_with_anchors
    result = run(kernel, "full", anchors=(), timing=False)
    save(f"ladder_{kernel.stem}_full", result)
    failing = [(r.name, r.reason, r.detail) for r in result.rows if r.status != "passed"]
    assert not failing, failing[:5]
    assert not any(f.startswith("foreign_check") for f in result.flags), result.flags   # the check ran everywhere


def test_the_profiler_window_sees_torch_and_only_what_ran_inside_it():
    import torch

    from workbench.harness.activity import recording
    from workbench.harness.foreign import judge

    x = torch.ones(1 << 20, device="cuda")
    x.mul_(3.0)                                   # before the window: must not be recorded
    torch.cuda.synchronize()
    with recording("cuda") as seen:
        x.add_(1.0)
        torch.cuda.synchronize()
    verdict = judge(seen, [])
    print("seen:", seen, "->", verdict.detail(), flush=True)
    assert len(seen) == 1 and "at::native::" in seen[0], seen      # the add only, not the mul before it
    assert not verdict.ok and "(torch)" in verdict.detail()


@pytest.mark.parametrize("name", ["borrowed_gemm", "borrowed_sdpa"])
def test_borrowed_kernel_is_correct_and_its_foreign_kernels_are_seen(name):
    """In a torch process like the worker's: the trick reaches its library (else it prints why and returns 999),
    the result is right (it would pass verification without the check), and the recording shows what it borrowed."""
    import torch

    from workbench.harness.activity import recording
    from workbench.harness.build import build_kernel
    from workbench.harness.foreign import judge
    from workbench.harness.kernel_lib import CudaKernel
    from workbench.harness.reference import Inputs, reference
    from workbench.harness.scenarios import load_suite
    from workbench.harness.verify import GuardedOutputs, errors_against

    build = build_kernel(KERNELS / "wrong" / f"{name}.cu", cache_dir=CACHE)
    assert build.ok, build.summary
    kernel = CudaKernel(build.so_path)
    s = next(x for x in load_suite("smoke") if x.name == "smoke_gqa")
    x = Inputs.allocate(s, "cuda")
    x.fill(1)
    out = GuardedOutputs(s, "cuda", 16)
    out.poison()
    torch.cuda.synchronize()
    with torch.cuda.stream(torch.cuda.Stream()), recording("cuda") as seen:
        rc = kernel(x, out.o, out.lse, s)
        torch.cuda.synchronize()
    assert rc == 0, f"{name} returned {rc}: the trick did not reach its library (its printed line says why)"
    errs = errors_against(out.o, out.lse, reference(s, x, torch.arange(s.seqlen_q, device="cuda")), s)
    verdict = judge(seen, build.kernels)
    print(f"BORROWED {name}: rel L2 {errs.rel_l2:.1e}, lse err {errs.lse:.1e}; {verdict.detail()[:300]}", flush=True)
    assert errs.rel_l2 < 1e-2 and errs.lse < 2e-2
    assert not verdict.ok and verdict.own          # its own kernel ran too, beside the borrowed ones


def _wrong_kernels():
    """(kernel, its reasons, the suite that shows the fault, the per-scenario limit or the default) per row."""
    with open(KERNELS / "wrong" / "expected.csv") as handle:
        return [(row["kernel"], row["expected_reasons"].split("|"), row["suite"] or "dev26",
                 float(row["scenario_timeout_s"]) if row["scenario_timeout_s"] else None)
                for row in csv.DictReader(handle)]


@pytest.mark.parametrize("kernel,expected,suite,limit_s", _wrong_kernels(),
                         ids=lambda x: x if isinstance(x, str) else "")
def test_wrong_kernel_is_rejected_with_its_reason(kernel, expected, suite, limit_s):
    path = KERNELS / "wrong" / (kernel if kernel.endswith(".cu") else kernel + ".cu")
    result = run(path, suite, anchors=(), fail_fast=True, **({"scenario_timeout_s": limit_s} if limit_s else {}))
    save(f"wrong_{path.stem}", result)
    reasons = [r.reason for r in result.rows if r.status in ("failed", "unsupported")]
    first = next((r for r in result.rows if r.status in ("failed", "unsupported")), None)
    print(f"WRONG {kernel:<24} {first.reason if first else 'NOT REJECTED':<18} {first.name if first else ''}: "
          f"{first.detail[:90] if first else ''}", flush=True)
    assert reasons, f"{kernel} was not rejected"
    assert reasons[0] in expected, f"{kernel}: got {reasons[0]} ({result.rows[0].detail}), expected {expected}"


def test_same_kernel_twice_gives_geomeans_within_2_percent():
    kernel = KERNELS / "ladder" / "02_mma.cu"
    if not kernel.exists():
        kernel = KERNELS / "original.cu"
    first = run(kernel, "dev26", anchors=("fa3",))
    second = run(kernel, "dev26", anchors=("fa3",))
    save("twice_first", first)
    save("twice_second", second)
    a, b = first.geomean_vs("fa3"), second.geomean_vs("fa3")
    assert first.all_correct and second.all_correct
    assert abs(a / b - 1) < 0.02, (a, b)
