"""Run one implementation on one scenario a few times: the process `scripts/gpu_run.sh ncucmp` profiles.

    python3 scripts/ncu_driver.py --impl ours --so build/04.so --scenario A_d128_c0_s4k
    python3 scripts/ncu_driver.py --impl fa3 --scenario A_d128_c0_s4k

Inputs are filled first (torch kernels), then `--calls` calls of the implementation, synchronized; ncu picks the
attention kernel out by name (ours: attn_wgmma, FA3: FlashAttnFwd) and skips the first call. GPU only.
"""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="ncu_driver", description=__doc__.splitlines()[0])
    ap.add_argument("--impl", choices=("ours", "fa3"), required=True)
    ap.add_argument("--so", help="the built kernel (--impl ours)")
    ap.add_argument("--suite", default="full")
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--calls", type=int, default=2)
    args = ap.parse_args(argv)
    if args.impl == "ours" and not args.so:
        print("ncu_driver: --impl ours needs --so KERNEL.so", file=sys.stderr)
        return 2

    import torch

    from workbench.harness.kernel_lib import CudaKernel
    from workbench.harness.reference import Inputs
    from workbench.harness.scenarios import load_suite

    scenarios = {s.name: s for s in load_suite(args.suite)}
    if args.scenario not in scenarios:
        print(f"ncu_driver: no scenario {args.scenario!r} in {args.suite}", file=sys.stderr)
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

        scale = s.head_dim ** -0.5
        call = lambda: (flash_attn_func(inputs.q, inputs.k, inputs.v, softmax_scale=scale,  # noqa: E731
                                        causal=bool(s.causal)), 0)[1]
    torch.cuda.synchronize()
    for _ in range(args.calls):
        code = call()
        if code != 0:
            print(f"ncu_driver: {args.impl} returned {code} on {s.name}", file=sys.stderr)
            return 1
    torch.cuda.synchronize()
    print(f"ncu_driver: {args.impl} ran {s.name} {args.calls} times")
    return 0


if __name__ == "__main__":
    sys.exit(main())
