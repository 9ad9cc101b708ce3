"""The NEWPROB problem's interface, the part without torch: a shape (Scenario), its suite row, its FLOP and byte
counts and its categories (`workbench new-problem` wrote it from kernels/_template/; kernels/attn_fwd/problem.py
lists what a problem.py defines). The harness loads it by path; judge.py beside it is the part with torch."""
from __future__ import annotations

from dataclasses import asdict, dataclass

NAME = "NEWPROB"
COLUMNS = ("name", "n", "dtype")
CATEGORY_NAMES = {"vector": "whole vectors", "ragged": "lengths no multiple of a block", "edge": "corners",
                  "user": "user shapes"}


@dataclass(frozen=True)
class Scenario:
    """y (n elements) = op(x (n elements)), bf16."""
    name: str
    n: int
    dtype: str = "bf16"
    category: str = "user"
    problem: str = NAME

    @property
    def key(self) -> str:
        return f"{NAME}_n{self.n}_{self.dtype}"

    def flops(self) -> float:
        return float(self.n)                      # one multiply per element

    def min_bytes(self) -> float:
        return 4.0 * self.n                       # x read once, y written once (bf16)

    def to_dict(self) -> dict:
        return asdict(self)


def scenario_from_row(row: dict) -> Scenario:
    """One suite row -> Scenario; ValueError saying what is wrong."""
    missing = [c for c in COLUMNS if not str(row.get(c) or "").strip()]
    if missing:
        raise ValueError(f"missing value for {', '.join(missing)}")
    try:
        n = int(str(row["n"]).strip())
    except ValueError:
        raise ValueError(f"column 'n' must be an integer, got {row['n']!r}") from None
    if n < 1:
        raise ValueError(f"n={n} must be positive")
    if str(row["dtype"]).strip() != "bf16":
        raise ValueError(f"unknown dtype {row['dtype']!r} (supported: bf16)")
    return Scenario(name=str(row["name"]).strip(), n=n, category=(row.get("category") or "user").strip() or "user")


def suite_row(s: Scenario) -> list:
    return [s.name, s.n, s.dtype, s.category]
