"""What a notebook runs: a live campaign where this machine allows one, else a recorded campaign replayed.

    settings = Settings(recording="data/demo/demo-cpu-standin")     # agent=None: choose for this machine
    app, note = launch(settings)                                     # a CampaignController, not started yet
    display(app); app.start()

The choice (`plan`): with an API key, Claude; with a GPU and no key, the offline scripted agent; with
neither, the recording is replayed through the same widgets (agent turns and harness results come from the
recording, the file tools run again here). A replay keeps the recorded suite, mode, stop condition, budget
and policy, and puts the recorded persons' questions back into the inbox at the turn they were typed, so the
same questions fire at the same places; you can still type your own (the recorded agent will not react).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from workbench.agent.backends import make_backend
from workbench.agent.backends.replay import ReplayBackend
from workbench.agent.backends.turns import BackendError
from workbench.agent.loop import Campaign
from workbench.campaign.config import DEFAULT_KERNEL, DEFAULT_STOP, Budget, CampaignConfig, problem_ceiling
from workbench.campaign.events import TurnStarted
from workbench.evaluators import make_evaluator
from workbench.harness.paths import REPO_ROOT
from workbench.questions.policy import PolicyConfig
from workbench.ui.controller import CampaignController
from workbench.ui.render import DEMO_LABEL, is_standin

DEMO_RECORDING = REPO_ROOT / "data" / "demo" / "demo-cpu-standin"
DEFAULT_ROOT = REPO_ROOT / "build" / "campaigns"        # build/ is not tracked


@dataclass
class Settings:
    """What the notebook's configuration cell sets (every field has a working default)."""
    recording: str = str(DEMO_RECORDING)    # replayed when no live campaign can run here
    agent: Optional[str] = None             # None: choose; or claude | offline | replay:PATH
    kernel_path: str = DEFAULT_KERNEL
    suite: str = "dev26"
    mode: str = "hybrid"                    # tools_only | bank | human | hybrid
    stop_expr: str = DEFAULT_STOP
    budget: str = "tool_calls=200,wall=2h,usd=20"
    evaluator: str = "harness"              # harness | standin (made-up CPU timings)
    model: str = ""
    root: str = str(DEFAULT_ROOT)
    pace_s: float = 0.01                    # replay: pause per streamed text piece, so a person can follow
    hz: float = 10.0                        # widget updates per second at most


def has_api_key() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))


def plan(settings: Settings) -> tuple[str, str]:
    """(agent spec, one line saying what will run and why)."""
    from workbench.agent.campaign_cli import gpu_here

    if settings.agent:
        return settings.agent, f"agent {settings.agent} (chosen in the settings)"
    gpu = settings.evaluator == "standin" or gpu_here()
    if has_api_key():
        return "claude", "live campaign: Claude" + ("" if gpu else "; no GPU here, so run_harness reports build "
                                                                   "and resource checks only")
    if gpu:
        return "offline", "live campaign: the offline scripted agent (no API key set)"
    return f"replay:{settings.recording}", (f"no API key and no GPU here: replaying the recorded campaign "
                                            f"{_shown(settings.recording)} through the same widgets")


def recording_info(path: str | Path) -> dict:
    """The recorded session row (gpu, stop reason, ...) and its persons' questions by turn."""
    from workbench.traces.writer import read_table

    backend = ReplayBackend.from_spec(str(path))
    interventions = read_table(backend.trace_root, "interventions", backend.session_id)
    people = {}
    for row in interventions[interventions["source"] == "human"].itertuples() if len(interventions) else []:
        people.setdefault(int(row.turn), []).append((row.question_text, row.question_id or ""))
    return {"session": backend.session, "config": backend.config(), "people": people, "backend": backend}


def _shown(path: str | Path) -> str:
    """A path as a person reads it: relative to the repository when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def replay_campaign(recording: str | Path, *, root: str | Path = DEFAULT_ROOT, pace_s: float = 0.01,
                    mode: Optional[str] = None, replay_people: bool = True) -> Campaign:
    """A new campaign whose agent and harness answers come from `recording` (a campaign folder)."""
    info = recording_info(recording)
    backend: ReplayBackend = info["backend"]
    backend.pace_s = pace_s
    recorded = info["config"]
    config = CampaignConfig(
        kernel_path=recorded.get("kernel_path", DEFAULT_KERNEL), suite=recorded.get("suite", "dev26"),
        mode=mode or recorded.get("mode", "hybrid"), stop_expr=recorded.get("stop_expr", DEFAULT_STOP),
        agent=f"replay:{_shown(recording)}",
        campaign_id=f"replay-{backend.session_id}-{time.strftime('%Y%m%d-%H%M%S')}",
        root=str(root), budget=Budget.recorded(recorded.get("budget", {})),
        policy=PolicyConfig(**recorded.get("policy", {})), seed=int(recorded.get("seed", 0)),
        anchors=list(recorded.get("anchors", ["fa3"])))
    Path(root).mkdir(parents=True, exist_ok=True)
    campaign = Campaign.create(config, backend, kernel_text=backend.initial_kernel())
    if replay_people and info["people"] and campaign.policy.takes_human_questions:
        people = info["people"]

        def put_back(event):            # runs on the campaign thread; ask() only fills the inbox
            if isinstance(event, TurnStarted):
                for text, question_id in people.get(event.turn, []):
                    campaign.ask(text, question_id)
        campaign.subscribe(put_back)
    return campaign


def live_campaign(settings: Settings, agent: str) -> Campaign:
    config = CampaignConfig(kernel_path=settings.kernel_path, suite=settings.suite, mode=settings.mode,
                            stop_expr=settings.stop_expr, agent=agent, model=settings.model, root=settings.root,
                            budget=Budget.parse(settings.budget), policy=PolicyConfig(**problem_ceiling()))
    Path(settings.root).mkdir(parents=True, exist_ok=True)
    backend = make_backend(agent, model=settings.model)
    return Campaign.create(config, backend, evaluator=make_evaluator(settings.evaluator))


def launch(settings: Optional[Settings] = None, **overrides) -> tuple[CampaignController, str]:
    """(a controller with its view, not started; the one-line note of what runs). Raises ValueError with a
    readable line when the recording or the settings are unusable."""
    settings = settings or Settings()
    for key, value in overrides.items():
        setattr(settings, key, value)
    agent, note = plan(settings)
    demo_label = ""
    try:
        if agent.startswith("replay:"):
            path = agent[len("replay:"):]
            campaign = replay_campaign(path, root=settings.root, pace_s=settings.pace_s)
            session = recording_info(path)["session"]
            if is_standin(str(session.get("gpu") or "")):
                demo_label = (f"{DEMO_LABEL} · replay of {_shown(path)}: the offline scripted agent (no LLM) "
                              "against timings invented by a stand-in evaluator; nothing here was measured")
                note += f" ({DEMO_LABEL})"
        else:
            campaign = live_campaign(settings, agent)
            if settings.evaluator == "standin":
                demo_label = "CPU stand-in evaluator: made-up timings, not GPU measurements"
    except (BackendError, OSError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot start the campaign ({agent}): {err}") from None
    app = CampaignController(campaign, demo_label=demo_label, hz=settings.hz)
    return app, note
