"""Campaigns for an agent of your own, from the shell: `workbench check KERNEL --campaign ID` and `workbench ask`.

    workbench check kernel.cu --campaign c-1 --new --kernel kernels/attn_fwd/original.cu --mode hybrid \
                    --stop "all_correct and geomean_vs_fa3 >= 1.0"      # make campaigns/c-1/, judge its kernel.cu
    workbench check campaigns/c-1/kernel.cu --campaign c-1 [--claim "at the bandwidth limit"] [--notes TEXT]
    workbench ask c-1 "Is the softmax rescale on the critical path?"     # a person's question, for the next check
    workbench ask c-1 --from-bank --trigger stall                        # the agent asks the bank itself

`check` prints what `check_kernel` returns over MCP (campaign_service.py does both): the harness summary, the
question block when the policy fires, the stop condition; exit codes as plain `workbench check` (0 the stop
condition holds, 3 evaluated but not met, 1 the candidate failed, 2 bad input or environment). Creating and
opening a campaign (`open_or_create`) is shared with `workbench mcp`.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from workbench.agent.campaign_service import EXTERNAL_AGENT, CampaignError, CampaignService
from workbench.arguments import Parser
from workbench.campaign.config import (DEFAULT_KERNEL, DEFAULT_STOP, Budget, CampaignConfig, campaign_problem,
                                       default_stop, problem_ceiling)
from workbench.campaign.workspace import (KERNEL_FILE, WorkspaceError, check_campaign_id, enclosing_workspace,
                                         inside_hint)
from workbench.evaluators import make_evaluator
from workbench.harness.result import EXIT_FAILED, EXIT_MET, EXIT_USAGE, exit_code
from workbench.questions.bank import TRIGGERS, load_bank
from workbench.questions.inbox import EmptyQuestion, post_question
from workbench.questions.policy import MODES, PolicyConfig

# an outside agent's campaign may run for days between a person's sessions: no wall-time limit unless asked for
EXTERNAL_BUDGET = Budget(tool_calls=300, wall_s=365 * 24 * 3600.0)
RECORDED = ("suite", "mode", "stop", "evaluator", "budget")     # options a campaign keeps once it exists


def add_campaign_arguments(parser: argparse.ArgumentParser, kernel_flag: bool = True) -> None:
    """The options that make a campaign (recorded in its config.json; given again later, they must agree)."""
    parser.add_argument("--root", default="campaigns", help="where campaign folders live (default %(default)s)")
    if kernel_flag:
        parser.add_argument("--kernel", help=f"starting kernel of a new campaign (e.g. {DEFAULT_KERNEL})")
    parser.add_argument("--problem", help="problem name or folder of a new campaign (default: the kernel's folder's, "
                                          "else attn_fwd)")
    parser.add_argument("--suite", help="suite name or CSV (default: the problem's, dev26 for attention)")
    parser.add_argument("--mode", choices=MODES, help="question mode (default bank)")
    parser.add_argument("--stop", help=f"stop predicate, checked by the harness (default: {DEFAULT_STOP})")
    parser.add_argument("--evaluator", choices=("harness", "standin"),
                        help="standin: made-up CPU timings from the kernel's @knob lines (tests, demos; default "
                             "harness)")
    parser.add_argument("--budget", help="tool_calls=N,wall=2h (default tool_calls=300, no wall-time limit)")
    parser.add_argument("--stall-runs", type=int, default=PolicyConfig.stall_runs,
                        help="a stall: this many harness runs without a new best (default %(default)s)")
    parser.add_argument("--min-gain", type=float, default=PolicyConfig.min_gain,
                        help="a new best must beat the best so far by more than this factor (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0)


def _validate_new(args, campaign_id: str) -> CampaignConfig:
    """The config of a campaign to create, or ValueError/CampaignError with one line, before anything is made."""
    from workbench.harness.scenarios import SuiteError, load_suite
    from workbench.harness.stop import StopExprError, evaluate_stop

    check_campaign_id(campaign_id or "")
    try:
        problem = campaign_problem(getattr(args, "problem", None) or "", args.kernel or DEFAULT_KERNEL)
    except ValueError as err:           # problems.ProblemError
        raise CampaignError(f"--problem: {err}") from None
    kernel = args.kernel or (DEFAULT_KERNEL if problem.name == "attn_fwd" else str(problem.original))
    if not Path(kernel).is_file():
        raise CampaignError(f"kernel {kernel} not found; pass --kernel PATH to the .cu file the campaign starts from")
    stop = default_stop(problem) if args.stop is None else args.stop
    suite = args.suite or problem.default_suite
    try:
        if stop:
            evaluate_stop(stop, {"all_correct": True, "n_passed": 1, "n_failed": 0, "n_unsupported": 0,
                                 "n_scenarios": 1, "min_tflops": 1.0, "min_vs_fa3": 1.0,
                                 **{f"geomean_vs_{n}": 1.0 for n in ("original", "fa3", "fa4", "cudnn", "fa2")},
                                 **{f"{k}_vs_{n}": 1.0 for n in problem.anchors for k in ("geomean", "min")}})
        load_suite(suite, problem=problem)
    except (StopExprError, ZeroDivisionError) as err:
        raise CampaignError(f"--stop {stop!r}: {err}") from None
    except SuiteError as err:
        raise CampaignError(str(err)) from None
    if args.stall_runs < 1:
        raise CampaignError(f"--stall-runs {args.stall_runs}: use 1 or more")
    if not args.min_gain >= 1.0:
        raise CampaignError(f"--min-gain {args.min_gain}: use a factor of at least 1.0 (1.02 = 2 %)")
    budget = Budget.parse(args.budget or "", base=EXTERNAL_BUDGET)
    if budget.tool_calls < 1 or budget.wall_s <= 0:
        raise CampaignError(f"--budget {args.budget}: tool_calls and wall must be positive")
    policy = PolicyConfig(stall_runs=args.stall_runs, min_gain=args.min_gain,
                          **problem_ceiling(problem.folder / "problem.toml"))
    config = CampaignConfig(kernel_path=kernel, suite=suite, mode=args.mode or "bank", stop_expr=stop,
                            agent=EXTERNAL_AGENT, campaign_id=campaign_id, root=args.root, budget=budget,
                            policy=policy, seed=args.seed, anchors=[problem.main_anchor], problem=problem.ref)
    load_bank(config.bank_path)          # BankError (one line) before the folder exists
    return config


def _agree(args, config: dict, campaign_id: str, per_call: tuple = ()) -> None:
    """A campaign keeps the settings it was made with: an option given again must say the same (options in
    `per_call` are for one call only, e.g. `check --suite`)."""
    given = {"kernel": (getattr(args, "kernel", None), config.get("kernel_path")),
             "suite": (args.suite, config.get("suite")), "mode": (args.mode, config.get("mode")),
             "stop": (args.stop, config.get("stop_expr")),
             "evaluator": (args.evaluator, config.get("evaluator", "harness"))}
    for option, (wanted, kept) in given.items():
        if wanted is not None and wanted != kept and option not in per_call:
            raise CampaignError(f"campaign {campaign_id} was made with --{option} {kept!r}, not {wanted!r}; drop "
                                f"--{option} to continue it, or start a new campaign id")
    if args.budget:
        raise CampaignError(f"campaign {campaign_id} exists: its budget is kept from when it was made; drop --budget")


def open_or_create(args, campaign_id: str, create: bool, per_call: tuple = ()) -> CampaignService:
    """The campaign `campaign_id` under --root: opened when it exists (its options must agree), else made when
    `create` (with --kernel), else CampaignError saying how to start it. Nothing is written on bad input."""
    root = Path(args.root)
    exists = (root / check_campaign_id(campaign_id) / "config.json").exists()
    if not exists and not create:
        return CampaignService.open(root, campaign_id)          # raises "no campaign ... start it with ..."
    inside = enclosing_workspace()
    if not exists and inside is not None:     # a campaign made here would nest campaigns/ID/campaigns/ID
        raise CampaignError(inside_hint(inside, args.root, campaign_id))
    if exists:
        service = CampaignService.open(root, campaign_id)
        recorded = service.ws.read_config()
        _agree(args, recorded, campaign_id, per_call)
        service.evaluator = make_evaluator(recorded.get("evaluator", "harness"))
        return service
    config = _validate_new(args, campaign_id)
    evaluator_name = args.evaluator or "harness"
    root.mkdir(parents=True, exist_ok=True)
    try:
        service = CampaignService.create(config, evaluator=make_evaluator(evaluator_name))
    except WorkspaceError:
        if (root / campaign_id / "config.json").exists():   # made a moment ago by a second process: open that
            return open_or_create(args, campaign_id, create=False, per_call=per_call)
        raise
    service.ws.write_config(service.ws.read_config() | {"evaluator": evaluator_name})
    return service


def _check_new(args, kernel: str) -> None:
    """With --new: the campaign must not exist yet, and KERNEL must be the kernel.cu its workspace will hold
    (nothing else is in it yet); checked before the campaign is made."""
    folder = Path(args.root) / check_campaign_id(args.campaign)
    if (folder / "config.json").exists():
        raise CampaignError(f"campaign {args.campaign} already exists under {args.root}/; drop --new to continue it")
    if os.path.normpath(kernel) != KERNEL_FILE and Path(kernel).absolute() != (folder / KERNEL_FILE).absolute():
        raise CampaignError(f"{kernel}: a new campaign's workspace holds only {KERNEL_FILE} (copied from --kernel "
                            f"START); judge that: workbench check {KERNEL_FILE} --campaign {args.campaign} --new "
                            "--kernel START")


# ---- workbench check KERNEL --campaign ID ----------------------------------------------------------------
def check_main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench check KERNEL --campaign ID", description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel", help="the kernel file to judge, inside the campaign's workspace "
                                       "(e.g. campaigns/ID/kernel.cu or just kernel.cu)")
    parser.add_argument("--campaign", required=True, metavar="ID", help="the campaign (campaigns/ID/)")
    parser.add_argument("--new", action="store_true", help="make the campaign first (from --kernel START)")
    parser.add_argument("--kernel", dest="start", metavar="START", help="with --new: the kernel the campaign starts "
                        f"from, copied to its kernel.cu (default {DEFAULT_KERNEL})")
    parser.add_argument("--claim", default="", help="a claim about the kernel (done, optimal, at a limit); the "
                                                   "policy may question it")
    parser.add_argument("--notes", default="", help="what you changed and why (claims in it are noticed too)")
    add_campaign_arguments(parser, kernel_flag=False)
    args = parser.parse_args(argv)
    args.kernel, kernel = args.start, args.kernel
    from workbench.locks import LockHeld

    try:
        if args.new:
            _check_new(args, kernel)
        service = open_or_create(args, args.campaign, create=args.new, per_call=("suite",))
        suite = args.suite if args.suite and not args.new else None
        service.check_inputs(kernel, suite, args.claim, args.notes)     # refused before the session row changes
        with service.session("cli"):
            reply = service.check(kernel, suite=suite, claim=args.claim, notes=args.notes,
                                  progress=lambda line: print(line, flush=True))
    except (CampaignError, WorkspaceError, LockHeld, ValueError) as err:
        print(f"workbench check: {err}", file=sys.stderr)
        return EXIT_USAGE
    if reply.is_error:        # the harness could not run here (recorded as a failed call): an environment error
        print(reply.text, file=sys.stderr)
        return EXIT_USAGE
    print(reply.text)
    result = reply.result
    if result is None:
        return EXIT_FAILED
    return exit_code(result)


# ---- workbench ask ID ... ------------------------------------------------------------------------------
def ask_main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench ask", description="put a question to the agent of a campaign "
                                     "run with `workbench mcp` or `workbench check --campaign`")
    parser.add_argument("campaign", metavar="ID", help="the campaign (campaigns/ID/)")
    parser.add_argument("text", nargs="?", help="your question; it reaches the agent with its next check result")
    parser.add_argument("--from-bank", action="store_true",
                        help="take a question from the question bank now (as the agent's ask_question tool does)")
    parser.add_argument("--trigger", choices=TRIGGERS, default="any", help="with --from-bank: the situation "
                        "the question is for (default %(default)s)")
    parser.add_argument("--question-id", default="", help="a bank question id, when you send a bank question as yours")
    parser.add_argument("--root", default="campaigns", help="where campaign folders live (default %(default)s)")
    args = parser.parse_args(argv)
    from workbench.locks import LockHeld

    try:
        if bool(args.text) == bool(args.from_bank):
            raise CampaignError('give the question\'s text, e.g. workbench ask ID "is this L2-bound?", or '
                                "--from-bank (not both)")
        service = CampaignService.open(args.root, args.campaign)
        if args.from_bank:
            with service.session("cli"):
                reply = service.ask(args.trigger)
            print(reply.text)
            return 0
        if not service.policy.takes_human_questions:
            raise CampaignError(f"campaign {args.campaign} runs in mode {service.config.mode}, which puts no person's "
                                "question to the agent; use a campaign in mode human or hybrid")
        post_question(service.ws.root, args.text, args.question_id, sender="workbench ask")
    except (CampaignError, WorkspaceError, LockHeld, EmptyQuestion) as err:
        print(f"workbench ask: {err}", file=sys.stderr)
        return EXIT_USAGE
    waiting = service.waiting_questions()
    print(f"queued for campaign {args.campaign}: the agent reads it with its next check result "
          f"({waiting} question{'s' if waiting != 1 else ''} waiting)")
    return 0
