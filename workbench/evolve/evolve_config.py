"""What an evolution run is asked to do (evolutions/<id>/config.json), and a member of its population."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from workbench.campaign.config import DEFAULT_KERNEL, DEFAULT_STOP, campaign_problem, default_stop
from workbench.questions.bank import DEFAULT_BANK

STATE_FILE = "state/evolution.json"
EPISODE_HINT = ("This is one short episode of an evolutionary search. kernel.cu is a parent kernel (geomean {score} "
                "against the original). Consider this question before you change anything:\n\n{question}\n\n"
                "Make one focused change that the question suggests, check it with run_harness, and stop.")


@dataclass
class EvolveConfig:
    kernel_path: str = DEFAULT_KERNEL
    suite: str = "dev26"
    population: int = 4
    generations: int = 5
    children: int = 0                   # children per generation (0: the population size)
    tournament: int = 2
    agent: str = "offline"              # offline: knob mutations; claude | fake | ...: agent episodes
    model: str = ""
    evaluator: str = "harness"          # harness | standin (made-up CPU timings from the knobs)
    pool: str = "local"
    ray_address: str = ""
    slots: int = 0
    stop_expr: str = DEFAULT_STOP
    anchors: list = field(default_factory=lambda: ["fa3"])
    max_evaluations: int = 0            # 0: no limit
    wall_s: float = 0.0
    usd: float = 0.0
    min_gain: float = 1.02              # a child beats a geomean only by more than this factor (timing noise:
                                        # see PolicyConfig.min_gain)
    mutation_tries: int = 6             # offline: attempts per child slot before giving it up
    episode_turns: int = 6
    episode_tool_calls: int = 12
    seed: int = 0
    root: str = "evolutions"
    run_id: str = ""
    traces: str = ""                    # trace root (default: <root>/<run_id>/traces)
    bank_path: str = str(DEFAULT_BANK)
    problem: str = ""                   # a problem name or folder; '' = the seed kernel's folder's, else attn_fwd

    @classmethod
    def from_dict(cls, data: dict) -> "EvolveConfig":
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def settle_problem(self, given=()):
        """The run's problem (the one named, else the seed kernel's folder's, else attention), recorded by its
        name; its seed kernel, suite, stop predicate and anchors where `given` does not name them. Returns its
        definition; ProblemError (a ValueError) for a folder that is none."""
        problem = campaign_problem(self.problem, "" if "kernel_path" not in given else self.kernel_path)
        self.problem = problem.ref
        if problem.name != "attn_fwd":
            defaults = {"kernel_path": str(problem.original), "suite": problem.default_suite,
                        "stop_expr": default_stop(problem), "anchors": [problem.main_anchor]}
            for key, value in defaults.items():
                if key not in given:
                    setattr(self, key, value)
        return problem


@dataclass
class Member:
    """An evaluated kernel of the run (the population holds the correct ones)."""
    sha: str
    generation: int
    parent_sha: str = ""
    question_id: str = ""
    score: Optional[float] = None       # geomean vs original when all scenarios passed
    vs_fa3: Optional[float] = None
    deleted: list = field(default_factory=list)   # normalised lines its lineage deleted (novelty filter)
