"""Launch a built kernel (or FA3) on one scenario a few times: the process `ncu_profile` runs under Nsight Compute.

    python -m workbench.agent.launch_one --so KERNEL.so --suite dev26 --scenario A_d128_c1_s8k
    python -m workbench.agent.launch_one --impl fa3 --suite full --scenario A_d128_c0_s4k   # the same for FA3
    python -m workbench.agent.launch_one --problem gemm_bf16 --so KERNEL.so --suite dev --scenario S_4096

One warm-up launch, then the profiled one (`--calls` in all; ncu profiles every launch, `--launch-skip 1` picks the
second). GPU only; a bad argument is refused before torch is imported.
"""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="launch_one", description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=("ours", "fa3"), default="ours",
                        help="ours: the kernel in --so; fa3: FlashAttention-3 (the fa3_fwd wheel) on the same inputs")
    parser.add_argument("--so", help="the built kernel (--impl ours)")
    parser.add_argument("--suite", default=None, help="default: the problem's (dev26 for attention)")
    parser.add_argument("--problem", default="", help="problem name or folder (default attn_fwd)")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--calls", type=int, default=2)
    args = parser.parse_args(argv)
    if args.impl == "ours" and not args.so:
        print("launch_one: --impl ours needs --so KERNEL.so", file=sys.stderr)
        return 2

    from workbench.harness import problems

    try:
        problem = problems.load(args.problem or None)
    except problems.ProblemError as err:
        print(f"launch_one: --problem: {err}", file=sys.stderr)
        return 2
    if args.impl == "fa3" and problem.name != problems.DEFAULT_PROBLEM:
        print(f"launch_one: --impl fa3 is attention's; {problem.name} has --impl ours only", file=sys.stderr)
        return 2
    args.suite = args.suite or problem.default_suite

    import torch

    from workbench.harness.scenarios import load_suite

    scenarios = {s.name: s for s in load_suite(args.suite, problem=problem)}
    if args.scenario not in scenarios:
        print(f"launch_one: no scenario {args.scenario!r} in {args.suite}; known: {', '.join(scenarios)}",
              file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("launch_one: needs a CUDA GPU", file=sys.stderr)
        return 2
    call = _launcher(problem, args, scenarios[args.scenario])
    for _ in range(args.calls):
        code = call()
        if code != 0:
            print(f"launch_one: {problem.entry_point} returned {code} on {args.scenario}", file=sys.stderr)
            return 1
    torch.cuda.synchronize()
    print(f"launched {args.impl} on {args.scenario} {args.calls} times")
    return 0


def _launcher(problem, args, s):
    """One launch as a callable returning the entry point's code: the problem's judge allocates and calls; FA3
    on attention's inputs for --impl fa3."""
    import torch

    from workbench.harness import problems

    if problem.name != problems.DEFAULT_PROBLEM:
        judge = problem.judge
        inputs, out = judge.Inputs.allocate(s, "cuda"), judge.Outputs(s, "cuda", 0)
        inputs.fill(seed=0)
        kernel = judge.open_library(args.so)
        return lambda: kernel(inputs, *out.tensors, s)
    from workbench.harness.kernel_lib import CudaKernel
    from workbench.harness.reference import Inputs, softmax_scale

    inputs = Inputs.allocate(s, "cuda")
    inputs.fill(seed=0)
    if args.impl == "ours":
        o = torch.empty_like(inputs.q)
        lse = torch.empty(s.batch, s.heads_q, s.seqlen_q, dtype=torch.float32, device="cuda")
        kernel = CudaKernel(args.so)
        return lambda: kernel(inputs, o, lse, s)
    from fa3_fwd_interface import flash_attn_func

    return lambda: (flash_attn_func(inputs.q, inputs.k, inputs.v, softmax_scale=softmax_scale(s),
                                    causal=bool(s.causal)), 0)[1]


if __name__ == "__main__":
    sys.exit(main())
