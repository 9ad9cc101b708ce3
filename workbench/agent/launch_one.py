"""Launch a built kernel (or FA3) on one scenario a few times: the process `ncu_profile` runs under Nsight Compute.

    python -m workbench.agent.launch_one --so KERNEL.so --suite dev26 --scenario A_d128_c1_s8k
    python -m workbench.agent.launch_one --impl fa3 --suite full --scenario A_d128_c0_s4k   # the same for FA3

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
    parser.add_argument("--suite", default="dev26")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--calls", type=int, default=2)
    args = parser.parse_args(argv)
    if args.impl == "ours" and not args.so:
        print("launch_one: --impl ours needs --so KERNEL.so", file=sys.stderr)
        return 2

    import torch

    from workbench.harness.kernel_lib import CudaKernel
    from workbench.harness.reference import Inputs, softmax_scale
    from workbench.harness.scenarios import load_suite

    scenarios = {s.name: s for s in load_suite(args.suite)}
    if args.scenario not in scenarios:
        print(f"launch_one: no scenario {args.scenario!r} in {args.suite}; known: {', '.join(scenarios)}",
              file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("launch_one: needs a CUDA GPU", file=sys.stderr)
        return 2
    s = scenarios[args.scenario]
    inputs = Inputs.allocate(s, "cuda")
    inputs.fill(seed=0)
    if args.impl == "ours":
        o = torch.empty_like(inputs.q)
        lse = torch.empty(s.batch, s.heads_q, s.seqlen_q, dtype=torch.float32, device="cuda")
        kernel = CudaKernel(args.so)
        call = lambda: kernel(inputs, o, lse, s)  # noqa: E731
    else:
        from fa3_fwd_interface import flash_attn_func

        call = lambda: (flash_attn_func(inputs.q, inputs.k, inputs.v, softmax_scale=softmax_scale(s),  # noqa: E731
                                        causal=bool(s.causal)), 0)[1]
    for _ in range(args.calls):
        code = call()
        if code != 0:
            print(f"launch_one: attn_fwd returned {code} on {s.name}", file=sys.stderr)
            return 1
    torch.cuda.synchronize()
    print(f"launched {args.impl} on {s.name} {args.calls} times")
    return 0


if __name__ == "__main__":
    sys.exit(main())
