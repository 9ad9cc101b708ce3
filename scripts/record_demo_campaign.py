"""Record the demo campaign under data/demo/: the offline scripted agent against a CPU stand-in evaluator.

    PYTHONPATH=. .venv/bin/python scripts/record_demo_campaign.py            # rewrites data/demo/<DEMO_ID>/

No GPU and no API key are needed, and none of its numbers is a measurement: the evaluator below invents
per-scenario timings from the kernel's `@knob` values (a fixed landscape on top of
workbench.evaluators.standin_timings), so the notebook UI and the replay backend have a campaign with some
texture to show (failing rows, a stall, a claim, a suspicious jump, a person's question). Every result carries
the GPU name DEMO_GPU, which the figures and the notebook print, so a reader can never mistake it for an H200
run.

The agent is `workbench.agent.backends.offline.ScriptedAgent` (no LLM); the mode is hybrid, and the script
puts one bank question in the inbox as a person would (turn PERSON_TURN) so both banner kinds appear.
Replay it with `--agent replay:data/demo/<DEMO_ID>` or notebooks/01_campaign.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from workbench import __version__  # noqa: E402
from workbench.agent.backends.offline import ScriptedAgent  # noqa: E402
from workbench.agent.loop import Campaign  # noqa: E402
from workbench.campaign.config import Budget, CampaignConfig, problem_ceiling  # noqa: E402
from workbench.campaign.events import CampaignStopped, TurnStarted  # noqa: E402
from workbench.evaluators.standin_timings import FA3_OVER_ORIGINAL, ORIGINAL_TFLOPS, _stats  # noqa: E402
from workbench.knobs import parse_knobs  # noqa: E402
from workbench.questions.bank import load_bank  # noqa: E402
from workbench.questions.policy import PolicyConfig  # noqa: E402

DEMO_ID = "demo-cpu-standin"
DEMO_GPU = "CPU stand-in (demo recording, not GPU measurements)"
KERNEL = REPO / "kernels" / "attn_fwd" / "original.cu"
SUITE = "dev26"
TURNS = 16
PERSON_TURN = 5                     # the inbox gets a person's question during this turn ...
PERSON_QUESTION = "q002"            # ... this bank question, typed as a person would

# The made-up landscape, relative to the original's knobs (THREADS_PER_BLOCK=256, DIMS_PER_LANE=32, KEY_TILE=8).
KNOB_FACTORS = {
    ("THREADS_PER_BLOCK", "128"): 1.12,
    ("DIMS_PER_LANE", "16"): 0.93, ("DIMS_PER_LANE", "64"): 1.05,
    ("KEY_TILE", "4"): 0.90, ("KEY_TILE", "16"): 1.04,
}
PAIR_BONUS = {("THREADS_PER_BLOCK", "128", "KEY_TILE", "16"): 1.45}     # the jump the policy should question
CUDNN_OVER_FA3 = {64: 1.08, 128: 1.04, 256: 0.93}   # invented anchor ratios (time of FA3 / time of cuDNN)
FA2_OVER_FA3 = 0.72


def _unit(text: str) -> float:
    """A deterministic number in [0, 1) from a string."""
    return hashlib.sha256(text.encode()).digest()[0] / 256


def overall_speedup(knobs: dict) -> float:
    factor = 1.0
    for name, value in knobs.items():
        factor *= KNOB_FACTORS.get((name, value), 1.0)
    for (a, va, b, vb), bonus in PAIR_BONUS.items():
        if knobs.get(a) == va and knobs.get(b) == vb:
            factor *= bonus
    return factor


def failure(scenario, knobs: dict) -> tuple[str, str, str] | None:
    """(status, reason, detail) for the invented bugs of some knob values, or None."""
    if knobs.get("DIMS_PER_LANE") == "64" and scenario.head_dim == 64:
        return "unsupported", "unsupported", "attn_fwd returned cudaErrorInvalidValue: DIMS_PER_LANE 64 > head_dim 64"
    if knobs.get("KEY_TILE") == "4" and scenario.category == "C" and scenario.causal:
        return "failed", "mismatch", "rel L2 error 3.1e-01 > 1.0e-02 on the last key tile (stand-in)"
    return None


class DemoEvaluator:
    """Stand-in harness: invented timings per scenario (see module doc); the same shape as check()'s result."""

    def __init__(self):
        self.requests = []

    def __call__(self, request):
        from workbench.harness.result import ScenarioResult, SuiteResult
        from workbench.harness.scenarios import load_suite
        from workbench.harness.stop import evaluate_stop

        self.requests.append(request)
        text = Path(request.kernel_path).read_text()
        knobs = {n: k["value"] for n, k in parse_knobs(text).items()}
        config = ",".join(f"{n}={v}" for n, v in knobs.items())
        overall = overall_speedup(knobs)
        scenarios = load_suite(request.suite)
        # per-scenario spread around the overall speedup, normalised so the geomean stays `overall`
        spread = [math.exp(0.35 * (_unit(f"{s.name}|{config}") - 0.5)) for s in scenarios]
        norm = math.exp(sum(math.log(x) for x in spread) / len(spread))
        rows = []
        for s, k in zip(scenarios, spread):
            original_us = s.flops() / (ORIGINAL_TFLOPS * 1e12) * 1e6
            fa3_us = original_us / FA3_OVER_ORIGINAL
            refs = {"original": _stats(original_us), "fa3": _stats(fa3_us),
                    "cudnn": _stats(fa3_us / CUDNN_OVER_FA3.get(s.head_dim, 1.0)), "fa2": _stats(fa3_us / FA2_OVER_FA3)}
            broken = failure(s, knobs)
            if broken:
                status, reason, detail = broken
                rows.append(ScenarioResult(scenario=s.to_dict(), status=status, reason=reason, detail=detail,
                                           rel_l2_err=0.31 if status == "failed" else None, reference_stats=refs))
                continue
            stats = _stats(original_us / (overall * k / norm))
            flags = []
            if s.flops() < 2e9:                 # tiny shapes: the timing spread is wide
                stats.p10_us, stats.p90_us = stats.median_us * 0.9, stats.median_us * 1.14
                flags.append("noisy")
            if knobs.get("KEY_TILE") == "4" and knobs.get("THREADS_PER_BLOCK") == "128" and s.seqlen_k % 4:
                stats = _stats(stats.median_us / 6)
                flags.append("below_memory_floor")
            rows.append(ScenarioResult(scenario=s.to_dict(), status="passed", rel_l2_err=2.1e-3 + 4e-4 * k,
                                       max_abs_err=7e-3, stats=stats, reference_stats=refs, flags=flags))
        result = SuiteResult(kernel_path=request.kernel_path, kernel_sha=hashlib.sha256(text.encode()).hexdigest(),
                             suite=request.suite, status="evaluated", rows=rows, gpu=DEMO_GPU,
                             versions={"evaluator": "stand-in (invented timings)", "workbench": __version__},
                             stop_expr=request.stop_expr)
        for flag in ("below_memory_floor", "noisy"):
            n = sum(flag in r.flags for r in rows)
            if n:
                result.flags.append(f"{flag}:{n}")
        current = result.geomean_vs("original")
        if request.previous_best and current == current and current > 1.5 * request.previous_best:
            result.flags.append(f"jump:{current / request.previous_best:.2f}x_over_previous_best")
        result.stop_met = evaluate_stop(request.stop_expr, result.stop_variables()) if request.stop_expr else False
        return result


def record(out: Path, turns: int = TURNS) -> CampaignStopped:
    bank = {q.id: q for q in load_bank()}
    with tempfile.TemporaryDirectory() as tmp:
        config = CampaignConfig(kernel_path=str(KERNEL.relative_to(REPO)), suite=SUITE, mode="hybrid",
                                campaign_id=DEMO_ID, root=tmp, agent="offline", budget=Budget(turns=turns),
                                policy=PolicyConfig(stall_runs=3, **problem_ceiling()))
        campaign = Campaign.create(config, ScriptedAgent(), evaluator=DemoEvaluator(),
                                   kernel_text=KERNEL.read_text())

        def person(event):
            if isinstance(event, TurnStarted) and event.turn == PERSON_TURN:
                q = bank[PERSON_QUESTION]
                campaign.ask(q.text, q.id)
        campaign.subscribe(person)
        stopped = campaign.run()
        target = out / DEMO_ID
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        source = Path(tmp) / DEMO_ID
        for name in ("config.json", "traces", "artifacts"):
            item = source / name
            (shutil.copytree if item.is_dir() else shutil.copy2)(item, target / name)
        (target / "README.md").write_text(README.format(id=DEMO_ID, gpu=DEMO_GPU, turns=stopped.turn,
                                                        calls=stopped.tool_calls, reason=stopped.reason))
    return stopped


README = """# Demo recording: CPU stand-in evaluator, not GPU measurements

`{id}` is a campaign recorded on a CPU machine by `scripts/record_demo_campaign.py`: the offline scripted agent
(no LLM) edits the `@knob` lines of `kernels/attn_fwd/original.cu`, and a stand-in evaluator invents the
per-scenario timings from those knobs. Every evaluation row says GPU = "{gpu}".
It exists so the notebook UI (`notebooks/01_campaign`) and the replay backend can be shown and tested without a
GPU or an API key. It says nothing about kernels or agents.

{turns} turns, {calls} tool calls, stopped by {reason}. One question was put in the inbox by the recording
script in a person's place (turn 5), the others came from the question bank.

Replay: `workbench campaign --agent replay:data/demo/{id} --root build/campaigns`, or run notebooks/01_campaign.
Regenerate: `PYTHONPATH=. .venv/bin/python scripts/record_demo_campaign.py`.
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "data" / "demo"), help="folder for the recording (%(default)s)")
    parser.add_argument("--turns", type=int, default=TURNS)
    args = parser.parse_args(argv)
    stopped = record(Path(args.out), args.turns)
    print(json.dumps({k: v for k, v in stopped.to_dict().items() if k != "ts"}, default=str))
    print(f"recorded {DEMO_ID} under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
