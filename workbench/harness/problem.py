"""The problem definition as data: kernels/attn_fwd/problem.toml (tolerances, timing, ceilings, flags)."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from workbench.harness.paths import PROBLEM_FILE
from workbench.harness.timing import TimingConfig
from workbench.harness.verify import Tolerances


@dataclass
class Problem:
    tolerances: Tolerances
    timing: TimingConfig
    ceilings: dict
    flags: dict

    @classmethod
    def load(cls, path: Path = PROBLEM_FILE) -> "Problem":
        data = tomllib.loads(Path(path).read_text())
        return cls(tolerances=Tolerances.from_problem(data.get("verify", {})),
                   timing=TimingConfig.from_problem(data.get("timing", {})),
                   ceilings=data.get("ceilings", {}), flags=data.get("flags", {}))
