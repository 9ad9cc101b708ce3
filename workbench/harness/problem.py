"""The problem definition as data: a problem folder's problem.toml (tolerances, timing, ceilings, flags) read into
the harness's records, with the folder's interface modules beside it (problems.py). Default: kernels/attn_fwd."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from workbench.harness import problems
from workbench.harness.timing import TimingConfig


@dataclass
class Problem:
    tolerances: object            # the problem's judge.Tolerances (attention's: verify.Tolerances)
    timing: TimingConfig
    ceilings: dict
    flags: dict
    definition: Optional[problems.Definition] = None

    @classmethod
    def load(cls, problem: str | Path | None = None) -> "Problem":
        """problem: a name under kernels/, a problem folder, or its problem.toml (None: attention)."""
        if problem is not None and str(problem).endswith(".toml"):
            problem = Path(problem).parent
        definition = problems.load(problem)
        data = definition.toml
        return cls(tolerances=definition.judge.Tolerances.from_problem(data.get("verify", {})),
                   timing=TimingConfig.from_problem(data.get("timing", {})),
                   ceilings=data.get("ceilings", {}), flags=data.get("flags", {}), definition=definition)

    def memory_floor_us(self, shape) -> float:
        """The shape's bytes (inputs read once, output written once) at the HBM rate, in microseconds."""
        return shape.min_bytes() / (float(self.ceilings.get("hbm_tb_s", 4.3)) * 1e12) * 1e6

    def floor_us(self, shape) -> float:
        """The shape's physical floor: its FLOPs at the bf16 ceiling or its bytes at the HBM rate, the longer."""
        ceiling = float(self.ceilings.get("bf16_tflops", 790.0)) * 1e12
        return max(self.memory_floor_us(shape), shape.flops() / ceiling * 1e6)

    @property
    def judge(self):
        return self.definition.judge

    @property
    def name(self) -> str:
        return self.definition.name
