"""`workbench campaign` and `workbench experiment`.

    workbench campaign --kernel kernels/attn_fwd/original.cu --suite dev26 --mode bank \
                       --agent claude|offline|replay:PATH --stop "all_correct and geomean_vs_fa3 >= 1.0" \
                       --budget tool_calls=200,wall=2h,usd=20
    workbench campaign --resume 20261130-101500-bank-1a2b
    workbench campaign --pool ray --ray-address auto ...      # harness runs as Ray tasks (workbench.evaluators)
    workbench experiment --modes tools_only,bank --repeats 3 --budget tool_calls=60

Every request is validated before a campaign folder exists or a turn is paid for: the kernel, suite, stop
predicate, budget and every numeric option (workbench/validate.py); a refusal is one line and exit 2.
The log is one readable line per event: turns, tool calls, harness results with the best so far,
interventions with their trigger. Without an API key the agent is the offline scripted baseline, which needs
a GPU for the harness; without a GPU either, the sample campaign is replayed instead (replay works anywhere).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Optional, TextIO

from workbench import validate
from workbench.agent.backends import make_backend
from workbench.agent.backends.turns import BackendError
from workbench.agent.loop import Campaign
from workbench.arguments import Parser, count, number, refuse
from workbench.campaign.config import (DEFAULT_KERNEL, DEFAULT_STOP, Budget, CampaignConfig, default_stop,
                                       problem_ceiling)
from workbench.campaign.events import (STOP_REASONS, CampaignStarted, CampaignStopped, EvaluationDone,
                                       InterventionFired, MessageDone, Notice, ToolCallFinished, TriggerDetected)
from workbench.campaign.main_anchor import LEGACY_MAIN
from workbench.campaign.main_anchor import label as anchor_label
from workbench.campaign.workspace import WorkspaceError, check_campaign_id
from workbench.evaluators import make_evaluator
from workbench.harness.paths import REPO_ROOT
from workbench.locks import LockHeld
from workbench.questions.bank import load_bank
from workbench.questions.policy import MODES, PolicyConfig
from workbench.redaction import redacted_output

SAMPLE_TRACES = REPO_ROOT / "data" / "traces"


def gpu_here() -> bool:
    from workbench.harness.check import gpu_available   # one definition of "is there a GPU" for the package
    return gpu_available()


def _x(value) -> str:
    return f"x{value:.3f}" if isinstance(value, (int, float)) and value == value else "-"


def _one_line(text: str, width: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[:width - 3] + "..."


class LogPrinter:
    """The readable campaign log: a subscriber printing one line per interesting event."""

    def __init__(self, out: Optional[TextIO] = None, width: int = 160):
        self.out, self.width = out, width

    def _p(self, line: str) -> None:
        print(line, file=self.out or sys.stdout, flush=True)

    def __call__(self, e) -> None:
        if isinstance(e, CampaignStarted):
            verb = f"resuming after turn {e.turn}" if e.resumed else "starting"
            self._p(f"campaign {e.campaign_id} {verb}: {e.kernel_path} on {e.suite}, mode {e.mode}, agent {e.agent}"
                    f"{' (' + e.model + ')' if e.model else ''}; stop when {e.stop_expr or '(never)'}")
            self._p(f"  workspace {e.workspace}")
        elif isinstance(e, MessageDone) and e.role == "assistant":
            text = " ".join(b["text"] for b in e.content if b.get("type") == "text")
            cost = f" ${e.cost_usd:.4f}" if e.cost_usd else ""
            tokens = f" [{e.usage.total} tok{cost}]" if e.usage and e.usage.total else ""
            self._p(f"[turn {e.turn}] agent: {_one_line(text, self.width - 20) or '(no text)'}{tokens}")
        elif isinstance(e, ToolCallFinished):
            args = _one_line(json.dumps(e.input), 60)
            head = _one_line(e.output.splitlines()[0] if e.output else "", self.width - 60)
            mark = "x" if e.is_error else "->"
            self._p(f"  {mark} #{e.tool_index} {e.name} {args} ({e.duration_s:.1f} s): {head}")
        elif isinstance(e, EvaluationDone):
            star = "  NEW BEST" if e.is_new_best else ""
            flags = f" flags: {', '.join(e.result.flags)}" if e.result.flags else ""
            main = anchor_label(e.main_anchor)
            self._p(f"     = {e.kernel_sha[:10]}: {_x(e.geomean_vs_original)} vs original, {_x(e.geomean_vs_main)} "
                    f"vs {main}; best {_x(e.best_vs_original)} / {_x(e.best_vs_main)} {main}{star}{flags}")
        elif isinstance(e, TriggerDetected):
            self._p(f"  . trigger {e.trigger}: {_one_line(e.reason, self.width - 30)}")
        elif isinstance(e, InterventionFired):
            qid = f" {e.question_id}" if e.question_id else ""
            layer = f", {e.layer}" if e.layer else ""
            self._p(f"  ? question ({e.trigger}, {e.source}{qid}{layer}): {_one_line(e.text, self.width - 40)}")
        elif isinstance(e, Notice):
            self._p(f"  ! {e.text}")
        elif isinstance(e, CampaignStopped):
            cost = f", ${e.cost_usd:.2f}" if e.cost_usd else ""
            said = STOP_REASONS.get(e.reason, "")
            self._p(f"stopped: {e.reason}{' (' + e.detail + ')' if e.detail else ''}{': ' + said if said else ''} "
                    f"after {e.turn} turns, "
                    f"{e.tool_calls} tool calls, {e.wall_s:.0f} s; best {_x(e.best_vs_original)} vs original, "
                    f"{_x(e.best_vs_main)} vs {anchor_label(e.main_anchor)} ({e.best_sha[:12] or 'none'}); "
                    f"{e.tokens} tokens{cost}")


# ---- choosing what to run ----------------------------------------------------------------------------
def sample_replay_spec(root: Optional[Path] = None) -> Optional[str]:
    """The first workbench campaign recorded under data/traces (imported transcripts cannot be replayed)."""
    from workbench.traces.writer import read_table

    root = Path(root or SAMPLE_TRACES)
    sessions = read_table(root, "sessions")
    ours = sorted(sessions[sessions["source"] == "workbench"]["session_id"].unique()) if len(sessions) else []
    return f"replay:{root}#{ours[0]}" if ours else None


def plan_agent(agent: Optional[str], evaluator: str, base_url: Optional[str]) -> tuple[str, str]:
    """(agent spec, one line saying what will happen instead, or '') for this machine."""
    has_key = bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN") or base_url)
    needs_gpu = evaluator == "harness"
    if agent is None:
        if has_key:
            return "claude", ("" if gpu_here() or not needs_gpu else
                              "no GPU here: run_harness will report build and resource checks only")
        if not needs_gpu or gpu_here():
            return "offline", ""
        sample = sample_replay_spec()
        if sample:
            return sample, (f"no ANTHROPIC_API_KEY and no GPU: the offline agent needs a GPU for the harness, so this "
                            f"replays the sample campaign ({sample[7:]}) instead; replay works anywhere")
        return "", ("no ANTHROPIC_API_KEY and no GPU: the offline agent needs a GPU for the harness and there is no "
                    "sample campaign under data/traces to replay; set ANTHROPIC_API_KEY, run on the GPU machine, "
                    "or try --evaluator standin (made-up CPU timings)")
    if agent == "offline" and needs_gpu and not gpu_here():
        return "", ("the offline agent needs a GPU for the harness and there is none here; use --agent replay:PATH "
                    "(works anywhere) or --evaluator standin (made-up CPU timings)")
    if agent == "claude" and needs_gpu and not gpu_here():
        return agent, "no GPU here: run_harness will report build and resource checks only"
    return agent, ""


def _add_common(parser: Parser) -> None:
    parser.add_argument("--kernel", help=f"starting kernel (default {DEFAULT_KERNEL}, or the problem's original.cu)")
    parser.add_argument("--problem", help="problem name under kernels/ or a problem folder (default: the kernel's "
                                          "folder's, else attn_fwd)")
    parser.add_argument("--suite", help="suite name or CSV (default: the problem's, dev26 for attention)")
    parser.add_argument("--agent", help="claude | offline | replay:PATH[#SESSION] (default: claude with an API "
                                        "key, else offline)")
    parser.add_argument("--model", default="", help="model name for --agent claude")
    parser.add_argument("--base-url", help="an Anthropic-compatible server (vLLM, llama.cpp, Ollama)")
    parser.add_argument("--stop", help=f"stop predicate, checked by the harness (default: {DEFAULT_STOP})")
    parser.add_argument("--budget", default="", help="tool_calls=N,tokens=N,wall=2h,usd=X,turns=N,idle=N (turns in a "
                                                     "row without a tool call; default 8)")
    parser.add_argument("--root", default="campaigns", help="where campaign folders live (default %(default)s)")
    parser.add_argument("--evaluator", choices=("harness", "standin"), default="harness",
                        help="standin: made-up CPU timings from the kernel's knobs (demos, no GPU)")
    parser.add_argument("--stall-runs", type=count(1), default=PolicyConfig.stall_runs,
                        help="harness runs without a new best that make a stall (default %(default)s)")
    parser.add_argument("--stall-calls", type=count(1), default=PolicyConfig.stall_calls,
                        help="tool calls without a harness run that make a stall (default %(default)s)")
    parser.add_argument("--min-gain", type=number(at_least=1.0), default=PolicyConfig.min_gain,
                        help="a new best must beat the best so far by more than this factor (default %(default)s: "
                             "timing noise)")
    parser.add_argument("--seed", type=int, default=0)


def _config(args, mode: str, agent: str, campaign_id: str = "", arm: str = "") -> CampaignConfig:
    problem = validate.problem(args.problem, args.kernel or "")
    kernel = args.kernel or (DEFAULT_KERNEL if problem.name == "attn_fwd" else str(problem.original))
    policy = PolicyConfig(stall_runs=args.stall_runs, stall_calls=args.stall_calls, min_gain=args.min_gain,
                          **problem_ceiling(problem.folder / "problem.toml"))
    return CampaignConfig(kernel_path=kernel, suite=args.suite or problem.default_suite, mode=mode,
                          stop_expr=default_stop(problem) if args.stop is None else args.stop, agent=agent,
                          model=args.model, campaign_id=campaign_id, root=args.root,
                          budget=Budget.parse(args.budget), policy=policy, seed=args.seed, arm=arm,
                          anchors=[problem.main_anchor], problem=problem.ref)


def validate_config(config: CampaignConfig, kernel_given: bool = True) -> None:
    """Everything a campaign will read, checked before its folder is made (raises UsageError)."""
    problem = validate.problem(config.problem, config.kernel_path)
    if kernel_given:
        validate.kernel(config.kernel_path)
    validate.suite(config.suite, warn=lambda line: print(f"warning: {line}", file=sys.stderr), problem=problem)
    validate.stop(config.stop_expr, anchors=problem.anchors)
    validate.text_file(config.bank_path, "question bank", "question bank")
    load_bank(config.bank_path)         # every row, as the campaign will read it: a BankError is one line
    validate.output_dir(config.root, "--root")


def _backend(agent: str, args):
    return make_backend(agent, model=args.model, base_url=args.base_url, seed=args.seed)


# ---- workbench campaign --------------------------------------------------------------------------------
def campaign_main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench campaign", description=__doc__.splitlines()[0])
    _add_common(parser)
    parser.add_argument("--mode", choices=MODES, default=None, help="question mode (default bank)")
    parser.add_argument("--id", default="", help="campaign id (default: time-mode-random)")
    parser.add_argument("--resume", metavar="ID", help="continue campaign ID from its last committed turn")
    from workbench.evaluators import add_pool_arguments
    from workbench.evaluators.evaluator import PoolError
    add_pool_arguments(parser)
    args = parser.parse_args(argv)
    with redacted_output():                   # the log echoes tool inputs and outputs: keys never reach it
        try:
            return _campaign(args)
        except (BackendError, WorkspaceError, ValueError, PoolError, LockHeld) as err:   # UsageError: a ValueError
            return refuse("workbench campaign", err)


def _campaign(args) -> int:
    for campaign_id in filter(None, (args.id, args.resume)):
        check_campaign_id(campaign_id)            # a folder name under --root, never a path
    printer = LogPrinter()
    evaluator = make_evaluator(args.evaluator)
    if args.resume:
        config = json.loads((Path(args.root) / args.resume / "config.json").read_text()) if (
            Path(args.root) / args.resume / "config.json").exists() else None
        if config is None:
            print(f"workbench campaign: no campaign {args.resume!r} under {args.root}", file=sys.stderr)
            return 2
        agent = args.agent or config.get("agent", "offline")
        budget = Budget.parse(args.budget, Budget.recorded(config.get("budget", {}))) if args.budget else None
        evaluator, pool = _pooled(args, evaluator, agent)
        campaign = Campaign.resume(args.resume, _backend(agent, args), root=args.root, evaluator=evaluator)
        if budget is not None:
            campaign.config.budget = budget
        return _run(campaign, printer, pool)

    # a Ray cluster brings its own GPUs: whether this machine has one does not matter then
    agent, note = plan_agent(args.agent, args.evaluator if args.pool == "local" else "ray", args.base_url)
    if not agent:
        print(f"workbench campaign: {note}", file=sys.stderr)
        return 2
    kernel_text = None
    backend = _backend(agent, args)          # a missing key is reported here, before any other note
    if note:
        print(note)
    if agent.startswith("replay:"):
        recorded = backend.config()
        for key in ("suite", "mode", "problem"):
            if getattr(args, key) is None and recorded.get(key):
                setattr(args, key, recorded[key])
        if args.stop is None and "stop_expr" in recorded:
            args.stop = recorded["stop_expr"]
        kernel_text = backend.initial_kernel() if args.kernel is None else None
    config = _config(args, args.mode or "bank", agent, campaign_id=args.id)
    if agent.startswith("replay:"):   # the recording's idle-turn rule, unless --budget names another
        recorded_idle = Budget.recorded(recorded.get("budget", {})).idle_turns
        config.budget = Budget.parse(args.budget, base=Budget(idle_turns=recorded_idle))
    validate_config(config, kernel_given=kernel_text is None)
    evaluator, pool = _pooled(args, evaluator, agent)
    campaign = Campaign.create(config, backend, evaluator=evaluator, kernel_text=kernel_text)
    return _run(campaign, printer, pool)


def _pooled(args, evaluator, agent: str):
    """(evaluator, pool): every harness run goes through the chosen pool (--pool local|ray); a replay answers
    from its recording instead."""
    if agent.startswith("replay:"):
        return evaluator, None
    from workbench.evaluators import make_pool
    pool = make_pool(args.pool, ray_address=args.ray_address, slots=args.slots, evaluator=evaluator)
    return pool.evaluator, pool


def _run(campaign: Campaign, printer: LogPrinter, pool=None) -> int:
    campaign.subscribe(printer)
    try:
        stopped = campaign.run()
    finally:
        if pool is not None:
            pool.close()
    if stopped.reason == "interrupted":
        return 130
    return 1 if stopped.reason in ("backend_error", "internal_error") else 0


# ---- workbench experiment ------------------------------------------------------------------------------
def experiment_main(argv: list[str] | None = None) -> int:
    with redacted_output():
        return _experiment_main(argv)


def _experiment_main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench experiment",
                    description="A/B comparison of campaign modes, e.g. tools_only vs bank")
    _add_common(parser)
    parser.add_argument("--modes", default="tools_only,bank", help="comma-separated arms (default %(default)s)")
    parser.add_argument("--repeats", type=count(1), default=3, help="campaigns per arm (default %(default)s)")
    parser.add_argument("--verbose", action="store_true", help="print every campaign's full log")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES or m == "human"]
    if bad or not modes:
        return refuse("workbench experiment", f"--modes: arm(s) {bad or 'none'} cannot run unattended; use "
                                              f"{', '.join(m for m in MODES if m != 'human')}")
    if args.agent and args.agent.startswith("replay:"):
        print("workbench experiment: a replay is one recorded session, not an arm; use claude or offline",
              file=sys.stderr)
        return 2
    agent, note = plan_agent(args.agent, args.evaluator, args.base_url)
    if not agent or agent.startswith("replay:"):
        print(f"workbench experiment: {note}" if not agent else
              "workbench experiment: no API key and no GPU: an experiment needs a live agent; run it on the GPU "
              "machine or pass --evaluator standin for a CPU dry run", file=sys.stderr)
        return 2
    try:
        validate_config(_config(args, modes[0], agent))
    except ValueError as err:
        return refuse("workbench experiment", err)
    if note:
        print(note)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    summaries = {m: [] for m in modes}
    try:
        for repeat in range(args.repeats):
            for mode in modes:
                args_seed = args.seed + repeat
                config = _config(args, mode, agent, campaign_id=f"exp-{stamp}-{mode}-r{repeat}", arm=mode)
                config.seed = args_seed
                campaign = Campaign.create(config, _backend(agent, args), evaluator=make_evaluator(args.evaluator))
                if args.verbose:
                    campaign.subscribe(LogPrinter())
                stopped = campaign.run()
                row = {"campaign": config.campaign_id, "arm": mode, **stopped.to_dict(),
                       "questions": len(campaign.questions)}
                summaries[mode].append(row)
                print(f"{config.campaign_id}: {stopped.reason}, best {_x(stopped.best_vs_main)} "
                      f"{anchor_label(stopped.main_anchor)} / "
                      f"{_x(stopped.best_vs_original)} original, {stopped.turn} turns, "
                      f"{stopped.tool_calls} tool calls, "
                      f"{row['questions']} questions", flush=True)
    except KeyboardInterrupt:
        print("interrupted; the table covers the campaigns that finished")
    print()
    print(experiment_table(summaries))
    out = Path(args.root) / f"experiment-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summaries, indent=2, default=str))
    print(f"\nper-campaign figures: {out}")
    return 0


def _spread(values: list) -> str:
    values = [v for v in values if isinstance(v, (int, float)) and v == v]
    if not values:
        return "-"
    med = statistics.median(values)
    return f"{med:.3f} [{min(values):.3f}-{max(values):.3f}]" if len(values) > 1 else f"{med:.3f}"


def experiment_table(summaries: dict) -> str:
    """The paper-style table: per arm, best x the main anchor (FA3, cuBLAS) and x original (median [min-max]),
    stop met, steps, calls. Rows of campaigns with different main anchors share a column named 'main anchor'."""
    anchors = {r.get("main_anchor") or LEGACY_MAIN for rows in summaries.values() for r in rows}
    main = f"best x {anchor_label(anchors.pop()) if len(anchors) == 1 else 'main anchor'}"
    head = (f"{'arm':<11} {'runs':>4}  {main:<22} {'best x original':<22} {'stop met':>8} "
            f"{'turns':>12} {'tool calls':>12} {'questions':>10}")
    lines = [head, "-" * len(head)]
    for arm, rows in summaries.items():
        if not rows:
            continue
        met = sum(r["reason"] == "stop_condition_met" for r in rows)
        lines.append(f"{arm:<11} {len(rows):>4}  {_spread([r.get('best_vs_main') for r in rows]):<22} "
                     f"{_spread([r['best_vs_original'] for r in rows]):<22} {met:>3}/{len(rows):<4} "
                     f"{_spread_int([r['turn'] for r in rows]):>12} {_spread_int([r['tool_calls'] for r in rows]):>12} "
                     f"{_spread_int([r['questions'] for r in rows]):>10}")
    lines.append("best: the best all-correct geomean per campaign; median [min-max] over runs; turns and tool calls "
                 "are medians")
    return "\n".join(lines)


def _spread_int(values: list) -> str:
    return f"{statistics.median(values):g}" if values else "-"


if __name__ == "__main__":
    sys.exit(campaign_main())
