"""Launch a built kernel once on one scenario: the process `ncu_profile` runs under Nsight Compute.

    python -m workbench.agent.launch_one --so KERNEL.so --suite dev26 --scenario A_d128_c1_s8k

One warm-up launch, then the profiled one (ncu profiles every launch; the report shows both). GPU only.
"""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="launch_one", description=__doc__.splitlines()[0])
    parser.add_argument("--so", required=True)
    parser.add_argument("--suite", default="dev26")
    parser.add_argument("--scenario", required=True)
    args = parser.parse_args(argv)

    import torch

    from workbench.harness.kernel_lib import CudaKernel
    from workbench.harness.reference import Inputs
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
    o = torch.empty_like(inputs.q)
    lse = torch.empty(s.batch, s.heads_q, s.seqlen_q, dtype=torch.float32, device="cuda")
    kernel = CudaKernel(args.so)
    for _ in range(2):
        code = kernel(inputs, o, lse, s)
        if code != 0:
            print(f"launch_one: attn_fwd returned {code} on {s.name}", file=sys.stderr)
            return 1
    torch.cuda.synchronize()
    print(f"launched {s.name} twice")
    return 0


if __name__ == "__main__":
    sys.exit(main())
