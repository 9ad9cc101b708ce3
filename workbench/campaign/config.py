"""What a campaign is asked to do: its configuration and budget, as recorded in campaigns/<id>/config.json.

    config = CampaignConfig(kernel_path="kernels/attn_fwd/original.cu", suite="dev26", mode="bank",
                            budget=Budget.parse("tool_calls=200,wall=2h"))

A campaign judges one problem (harness/problems.py): `problem` names it; a config without one (every config
recorded before problems) judges the problem whose folder holds its kernel, else attention.
"""
from __future__ import annotations

import json
import time
import tomllib
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.arguments import UsageError, budget_count, budget_dollars, budget_seconds
from workbench.harness.paths import ORIGINAL_KERNEL, PROBLEM_FILE
from workbench.questions.bank import DEFAULT_BANK
from workbench.questions.policy import PolicyConfig

# as a person types it in a checkout; the home's own copy from anywhere else (an installed wheel, another folder)
DEFAULT_KERNEL = ("kernels/attn_fwd/original.cu" if Path("kernels/attn_fwd/original.cu").is_file()
                  else str(ORIGINAL_KERNEL))
DEFAULT_STOP = "all_correct and geomean_vs_fa3 >= 1.0"      # a campaign's or an evolution's, unless told otherwise

NO_IDLE_LIMIT = 1_000_000
BUDGET_KEYS = {"calls": "tool_calls", "tool_calls": "tool_calls", "tokens": "tokens", "wall": "wall_s",
               "wall_s": "wall_s", "time": "wall_s", "usd": "usd", "dollars": "usd", "turns": "turns",
               "idle": "idle_turns", "idle_turns": "idle_turns"}


@dataclass
class Budget:
    tool_calls: int = 300
    tokens: int = 20_000_000
    wall_s: float = 8 * 3600.0
    usd: float = 100.0
    turns: int = 400
    # consecutive turns in which the agent calls no tool, each answered with a question or "continue": an agent
    # that only talks (a scripted baseline with nothing left to try, an LLM that keeps declining) ends here
    idle_turns: int = 8

    @classmethod
    def recorded(cls, data: dict) -> "Budget":
        """The budget of a recorded or resumed campaign. One recorded before the idle-turn limit existed ran
        without it, and is replayed and resumed without it."""
        return cls(**{"idle_turns": NO_IDLE_LIMIT, **(data or {})})

    @classmethod
    def parse(cls, text: str, base: "Budget | None" = None) -> "Budget":
        """'tool_calls=200,tokens=5e6,wall=2h,usd=20,turns=100' (any subset) over `base`. Raises UsageError
        (a ValueError) naming the item, for an unknown key or a value that is not > 0."""
        budget = Budget(**asdict(base)) if base else cls()
        for item in filter(None, (p.strip() for p in (text or "").split(","))):
            key, sep, value = item.partition("=")
            if not sep or key.strip() not in BUDGET_KEYS:
                raise UsageError(f"budget item {item!r}: use tool_calls=N, tokens=N, wall=2h|30m|90s, usd=X, "
                                 f"turns=N, idle=N")
            field_name = BUDGET_KEYS[key.strip()]
            if field_name == "wall_s":
                budget.wall_s = budget_seconds(item, value)
            elif field_name == "usd":
                budget.usd = budget_dollars(item, value)
            else:
                setattr(budget, field_name, budget_count(item, key.strip(), value))
        return budget


@dataclass
class CampaignConfig:
    kernel_path: str = DEFAULT_KERNEL
    suite: str = "dev26"
    mode: str = "bank"                  # tools_only | bank | human | hybrid
    stop_expr: str = DEFAULT_STOP
    agent: str = ""                     # claude | offline | replay:PATH | fake (default: the backend's name)
    model: str = ""
    campaign_id: str = ""
    root: str = "campaigns"
    anchors: list = field(default_factory=lambda: ["fa3"])
    budget: Budget = field(default_factory=Budget)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    bank_path: str = str(DEFAULT_BANK)
    seed: int = 0
    arm: str = ""                       # experiment arm label (default: the mode)
    initial_sha: str = ""
    problem: str = ""                   # a problem name or folder; '' = the kernel's folder's, else attn_fwd

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "CampaignConfig":
        data = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        data["budget"] = Budget.recorded(data.get("budget", {}))
        data["policy"] = PolicyConfig(**data.get("policy", {}))
        return cls(**data)


def campaign_problem(problem: str, kernel_path: str = ""):
    """The problem's definition (problems.load): the one named, else the kernel's folder's, else attention.
    Raises problems.ProblemError (a ValueError) naming the folder."""
    from workbench.harness import problems

    return problems.load(problem or problems.infer(kernel_path) or None)


def config_problem(config: "CampaignConfig"):
    """The problem a campaign's config judges (campaign_problem of its problem and kernel)."""
    return campaign_problem(config.problem, config.kernel_path)


def default_stop(definition) -> str:
    """A campaign's stop predicate unless told otherwise: correct and as fast as the problem's main anchor."""
    return f"all_correct and geomean_vs_{definition.main_anchor} >= 1.0"


def problem_ceiling(path: Path = PROBLEM_FILE) -> dict:
    """Ceiling and flag thresholds of the problem (read directly: the harness modules pull in torch)."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    out = {}
    if "bf16_tflops" in data.get("ceilings", {}):
        out["ceiling_tflops"] = float(data["ceilings"]["bf16_tflops"])
    flags = data.get("flags", {})
    if "near_ceiling_fraction" in flags:
        out["near_ceiling_fraction"] = float(flags["near_ceiling_fraction"])
    if "jump_over_previous_best" in flags:
        out["jump_ratio"] = float(flags["jump_over_previous_best"])
    return out


def new_campaign_id(mode: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{mode}-{uuid.uuid4().hex[:4]}"


def _config_json(config: CampaignConfig) -> str:
    return json.dumps(config.to_dict(), default=str)
