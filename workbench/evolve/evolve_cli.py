"""`workbench evolve`: options, validation before anything is created, and the run."""
from __future__ import annotations

import sys
from dataclasses import asdict

from workbench import validate
from workbench.arguments import Parser, UsageError, budget_count, budget_dollars, budget_seconds, count, number, refuse
from workbench.campaign.config import DEFAULT_KERNEL, DEFAULT_STOP
from workbench.campaign.workspace import Workspace, WorkspaceError, check_campaign_id
from workbench.evaluators import make_evaluator
from workbench.evolve.evolve_config import EvolveConfig
from workbench.evolve.run import Evolution
from workbench.questions.bank import load_bank


DESCRIPTION = "evolutionary search over a population of kernels, with bank questions as mutation hints"


def _parse_budget(text: str) -> dict:
    out = {}
    for item in filter(None, (p.strip() for p in (text or "").split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in ("evaluations", "evals", "wall", "usd"):
            raise UsageError(f"budget item {item!r}: use evaluations=N, wall=2h|30m|90s, usd=X")
        if key in ("evaluations", "evals"):
            out["max_evaluations"] = budget_count(item, key, value)
        elif key == "usd":
            out["usd"] = budget_dollars(item, value)
        else:
            out["wall_s"] = budget_seconds(item, value)
    return out


def validate_config(config: EvolveConfig, resuming: bool) -> None:
    """What the run will read and write, checked before its folder exists (raises UsageError)."""
    if not resuming:
        validate.kernel(config.kernel_path)
    problem = validate.problem(config.problem, config.kernel_path)
    validate.suite(config.suite, warn=lambda line: print(f"warning: {line}", file=sys.stderr), problem=problem)
    validate.stop(config.stop_expr, anchors=problem.anchors)
    validate.text_file(config.bank_path, "question bank", "question bank")
    load_bank(config.bank_path)         # every row, as the campaign will read it: a BankError is one line
    unknown = [a for a in config.anchors if a not in problem.anchors]
    if unknown:
        raise UsageError(f"--anchors: unknown anchor(s) {', '.join(unknown)}; choose from {', '.join(problem.anchors)}")
    validate.output_dir(config.root, "--root")
    validate.output_dir(config.traces, "--traces")
    check_agent(config.agent, config.model)


def check_agent(agent: str, model: str) -> None:
    """The agent that makes the children, checked before the seed is judged (a GPU's time, a run folder)."""
    if agent == "offline":
        return
    if agent != "claude":
        raise UsageError(f"--agent {agent!r}: use offline (knob mutations) or claude (agent episodes)")
    from workbench.agent.backends import make_backend
    from workbench.agent.backends.turns import BackendError

    try:
        make_backend(agent, model=model)
    except BackendError as err:
        reason = str(err).split(", or use")[0].split("; use")[0]
        raise UsageError(f"--agent claude: {reason}; or use --agent offline (knob mutations)") from None


def evolve_main(argv: list[str] | None = None) -> int:
    from workbench.evaluators import add_pool_arguments, make_pool
    from workbench.evaluators.evaluator import PoolError

    parser = Parser(prog="workbench evolve", description=DESCRIPTION)
    parser.add_argument("--kernel", default=None, help=f"seed kernel (default {DEFAULT_KERNEL})")
    parser.add_argument("--problem", default=None, help="problem name or folder (default: the seed kernel's "
                                                         "folder's, else attn_fwd)")
    parser.add_argument("--suite", default=None, help="suite name or CSV (default: the problem's, dev26 for attention)")
    parser.add_argument("--population", type=count(1), default=None, help="population size (default 4)")
    parser.add_argument("--generations", type=count(0), default=None,
                        help="generations after the seed (default 5; 0 judges the seed only)")
    parser.add_argument("--children", type=count(0), default=None,
                        help="children per generation (default 0: the population size)")
    parser.add_argument("--tournament", type=count(1), default=None, help="tournament size for parents (default 2)")
    parser.add_argument("--min-gain", type=number(at_least=1.0), default=None,
                        help="a child is a new best / better than its parent only by more than this factor "
                             "(default 1.02: timing noise)")
    parser.add_argument("--agent", default=None, help="offline (knob mutations, default) | claude (agent episodes)")
    parser.add_argument("--model", default="", help="model for --agent claude")
    parser.add_argument("--evaluator", choices=("harness", "standin"), default=None,
                        help="standin: made-up CPU timings from the kernel's knobs (dry runs, no GPU)")
    parser.add_argument("--stop", default=None, help=f"stop predicate (default: {DEFAULT_STOP})")
    parser.add_argument("--anchors", default=None, help="comma-separated anchors (default fa3)")
    parser.add_argument("--budget", default="", help="evaluations=N,wall=2h,usd=X")
    parser.add_argument("--episode-turns", type=count(1), default=None, help="turns of one agent episode (default 6)")
    parser.add_argument("--root", default="evolutions", help="where run folders live (default %(default)s)")
    parser.add_argument("--traces", default=None, help="trace root (default: the run folder's traces/)")
    parser.add_argument("--id", default="", help="run id (default: time-evolve-random)")
    parser.add_argument("--resume", metavar="ID", help="continue run ID after its last finished generation")
    parser.add_argument("--seed", type=int, default=None)
    add_pool_arguments(parser)
    args = parser.parse_args(argv)
    try:
        for run_id in filter(None, (args.id, args.resume)):
            check_campaign_id(run_id)             # a folder name under --root, never a path
        overrides = {k: v for k, v in {
            "kernel_path": args.kernel, "suite": args.suite, "population": args.population,
            "generations": args.generations, "children": args.children, "tournament": args.tournament,
            "min_gain": args.min_gain,
            "agent": args.agent, "evaluator": args.evaluator, "stop_expr": args.stop, "traces": args.traces,
            "anchors": None if args.anchors is None else [a for a in args.anchors.split(",") if a],
            "episode_turns": args.episode_turns, "seed": args.seed, "problem": args.problem}.items()
            if v is not None}
        overrides.update(_parse_budget(args.budget))
        if args.model:
            overrides["model"] = args.model
        if args.resume:
            stored = EvolveConfig.from_dict(Workspace.open(args.root, args.resume).read_config())
            frozen = [k for k in ("kernel_path", "suite", "evaluator") if k in overrides
                      and overrides[k] != getattr(stored, k)]
            if frozen:
                raise ValueError(f"--resume keeps the run's {', '.join(frozen)}; start a new run to change them")
            config = EvolveConfig.from_dict({**asdict(stored), **overrides})
        else:
            config = EvolveConfig.from_dict({**overrides, "run_id": args.id, "root": args.root})
            config.settle_problem(given=set(overrides))
        config.pool, config.ray_address, config.slots = args.pool, args.ray_address or "", args.slots or 0
        if args.tournament is not None and args.tournament > config.population:
            raise UsageError(f"--tournament {args.tournament}: a tournament picks among the population's "
                             f"{config.population} members; use at most --tournament {config.population}")
        validate_config(config, resuming=bool(args.resume))
        if config.evaluator == "harness" and args.pool == "local":
            from workbench.evaluators.evaluator import local_gpus
            if not local_gpus():
                raise ValueError("the harness needs a CUDA GPU to verify and time kernels and there is none here; "
                                 "use --pool ray --ray-address ADDR for a cluster, or --evaluator standin for a "
                                 "CPU dry run (made-up timings)")
        pool = make_pool(args.pool, ray_address=args.ray_address, slots=args.slots,
                         evaluator=make_evaluator(config.evaluator))
    except (ValueError, WorkspaceError, PoolError) as err:       # UsageError is a ValueError
        return refuse("workbench evolve", err)
    try:
        log = lambda line: print(line, flush=True)
        if args.resume:
            evo = Evolution.resume(args.resume, pool, root=args.root, overrides=asdict(config), log=log)
        else:
            evo = Evolution.create(config, pool, log=log)
        print(f"evolution {config.run_id}: {config.kernel_path} on {config.suite}, population {config.population}, "
              f"{config.generations} generations, agent {config.agent}, evaluator {config.evaluator}; "
              f"{pool.describe()}; records in {evo.ws.root}", flush=True)
        summary = evo.run()
    except (ValueError, WorkspaceError) as err:
        print(f"workbench evolve: {err}", file=sys.stderr)
        return 2
    finally:
        pool.close()
    return 130 if summary["reason"] == "interrupted" else 0


if __name__ == "__main__":
    sys.exit(evolve_main())
