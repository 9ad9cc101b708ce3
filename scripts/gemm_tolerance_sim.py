"""How far a bf16 GEMM lands from the fp32 reference, by how it accumulates: the evidence for problem.toml's bound.

CPU only (torch), float64 ground truth, A and B from N(0, 1) rounded to bf16, 64 x 64 outputs per K:
  fp32       fp32 accumulation, one rounding to bf16 at the end (what the contract asks for)
  bf16/1     the running sum rounded to bf16 after every product
  bf16/16    rounded after every 16-wide k step (an mma.sync kernel with a bf16 accumulator)
  bf16/64    rounded after every 64-wide k step
Each cell: relative L2 error, then max |error| / max |ref|.
    python scripts/gemm_tolerance_sim.py
"""
import torch


def errors(m: int, n: int, k: int, chunk: int, gen: torch.Generator) -> tuple[float, float]:
    """(rel L2, max abs / max |ref|) of one accumulation scheme; chunk 0 = fp32 accumulation."""
    a = torch.randn(m, k, generator=gen).bfloat16()
    b = torch.randn(k, n, generator=gen).bfloat16()
    ref = a.double() @ b.double()
    if chunk == 0:
        out = (a.float() @ b.float()).bfloat16().double()
    else:
        acc = torch.zeros(m, n, dtype=torch.bfloat16)
        for k0 in range(0, k, chunk):
            acc = (acc.float() + a[:, k0:k0 + chunk].float() @ b[k0:k0 + chunk].float()).bfloat16()
        out = acc.double()
    diff = out - ref
    return float(diff.norm() / ref.norm()), float(diff.abs().max() / ref.abs().max())


def main() -> None:
    gen = torch.Generator().manual_seed(0)
    schemes = {"fp32": 0, "bf16/1": 1, "bf16/16": 16, "bf16/64": 64}
    print(f"{'K':>6} " + " ".join(f"{name:>19}" for name in schemes))
    for k in (1, 16, 32, 64, 256, 512, 1024, 4096):
        cells = []
        for chunk in schemes.values():
            rel, mx = errors(64, 64, k, chunk, gen) if chunk <= k else (float("nan"), float("nan"))
            cells.append(f"{rel:9.2e} {mx:9.2e}")
        print(f"{k:>6} " + " ".join(cells))


if __name__ == "__main__":
    main()
