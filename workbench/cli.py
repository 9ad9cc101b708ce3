"""`workbench` command line: one dispatcher, each subcommand lives beside the code it drives.

Subcommands are imported lazily so `workbench check` works without the agent or notebook extras installed,
and a missing optional dependency is reported in one line instead of a traceback.
"""
from __future__ import annotations

import contextlib
import importlib
import sys
import time
import traceback

from workbench import __version__

# What to install for an optional module a subcommand needs (pyproject.toml's extras; torch is chosen by hand).
INSTALL_HINTS = {
    # a bare `torch==2.13.0` is PyPI's CUDA wheel on Linux: the CPU build is the local version +cpu
    "torch": "pip install 'torch==2.13.0+cpu' --extra-index-url https://download.pytorch.org/whl/cpu for the CPU "
             "build (bash scripts/setup.sh does it), or your CUDA build of torch on a GPU machine",
    "anthropic": "pip install -e '.[agent]'",
    "ipywidgets": "pip install -e '.[notebook]'", "jupyterlab": "pip install -e '.[notebook]'",
    "ray": "pip install -e '.[ray]'", "mcp": "pip install -e '.[mcp]'",
}
DEFAULT_HINT = "bash scripts/setup.sh installs every part the tests use"
launched_at = None          # when this command started: `workbench check` counts its start-up in wall_s

SUBCOMMANDS = {
    "check": ("workbench.check_cli", "build, verify and time one kernel on a suite"),
    "warm": ("workbench.warm_cli", "time the original and the anchors once on this GPU (fills the timing cache)"),
    "new-problem": ("workbench.new_problem", "scaffold a problem folder (contract, problem.toml, interface, stub)"),
    "suite": ("workbench.flashinfer.cli", "make a suite from production shapes (suite from-flashinfer DIR)"),
    "export": ("workbench.flashinfer.cli", "a run's evaluations as FlashInfer-Bench traces (export --flashinfer)"),
    "campaign": ("workbench.agent.campaign_cli", "run an agent campaign on a kernel (question interventions, traces)"),
    "experiment": ("workbench.agent.campaign_cli", "A/B comparison of campaign modes (e.g. tools_only vs bank)"),
    "bank": ("workbench.questions.bank", "list, add and promote questions of the question bank"),
    "import": ("workbench.traces.importers", "import Claude Code / Codex transcripts into trace tables"),
    "report": ("workbench.traces.report", "build the intervention-statistics HTML report from traces"),
    "evolve": ("workbench.evolve", "evolutionary search with questions as mutation hints"),
    "mcp": ("workbench.agent.mcp_server", "serve a campaign to your own agent over MCP (Claude Code, Codex, ...)"),
    "ask": ("workbench.agent.external_cli", "put a question to the agent of a campaign (`workbench mcp`, "
                                            "`check --campaign`)"),
}


UNWRAPPED_OUTPUT = ("mcp",)
# commands that read the problem's files or the question bank (harness/paths.py says where they are found)
NEEDS_HOME = ("check", "warm", "campaign", "experiment", "evolve", "mcp", "bank")
# `workbench check KERNEL --campaign ID` judges a kernel inside an outside agent's campaign: the campaign's own
# command, so plain `workbench check` never imports the agent package
CAMPAIGN_CHECK = "workbench.agent.external_cli"


def missing_package(command: str, err: ModuleNotFoundError) -> int:
    """One line naming the missing package and how to install it; the usage exit code."""
    top = (err.name or "").split(".")[0]
    print(f"workbench {command}: needs the Python package {top!r}, which is not installed; "
          f"{INSTALL_HINTS.get(top, DEFAULT_HINT)}", file=sys.stderr)
    return 2


def usage() -> str:
    lines = [f"workbench {__version__}", "usage: workbench <command> [options]   (workbench --version)", "",
             "commands:"]
    lines += [f"  {name:<11} {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
    lines += ["", "`workbench <command> --help` shows a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    global launched_at
    launched_at = time.monotonic()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] in ("--version", "-V"):
        print(f"workbench {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"workbench: unknown command {name!r}; run `workbench --help` for the list", file=sys.stderr)
        return 2
    if name in NEEDS_HOME and not {"-h", "--help"} & set(rest):
        from workbench.harness.paths import home_problem
        if home_problem():          # kernels/ and the bank are not where the package looks: say where to point it
            print(f"workbench {name}: {home_problem()}", file=sys.stderr)
            return 2
    module_name = SUBCOMMANDS[name][0]
    if name == "check" and any(a == "--campaign" or a.startswith("--campaign=") for a in rest):
        module_name = CAMPAIGN_CHECK
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        return missing_package(name, err)
    entry = getattr(module, f"{name}_main", None) or getattr(module, "main")
    from workbench.redaction import install_redacting_excepthook, redacted_output
    install_redacting_excepthook()          # a traceback printed after the streams are restored is redacted too
    # no key reaches the terminal, whatever a command prints; `mcp` speaks JSON-RPC on stdio, whose tool results
    # the campaign service redacts itself: its stdout is a protocol channel, left as it is
    guard = contextlib.nullcontext() if name in UNWRAPPED_OUTPUT else redacted_output()
    try:
        with guard:
            try:
                return int(entry(rest) or 0)
            except SystemExit as err:       # sys.exit("message"): Python would print it raw after the guard
                if isinstance(err.code, str):
                    print(err.code, file=sys.stderr)
                    return 1
                raise
            except ModuleNotFoundError as err:  # before `Exception`: a lazy import of an optional package (torch)
                if (err.name or "").split(".")[0] in ("", "workbench"):
                    raise
                return missing_package(name, err)
            except Exception as err:        # the traceback goes through the redacting stderr, like all output
                if isinstance(err, BrokenPipeError):
                    raise
                traceback.print_exc()
                return 1
    except BrokenPipeError:   # `workbench bank list | head` closed the pipe: not an error
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"workbench {name}: interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as err:      # an optional package a command imports only once it needs it
        if (err.name or "").split(".")[0] in ("", "workbench"):
            raise                           # our own module missing is a bug: its traceback says where
        return missing_package(name, err)
    finally:
        launched_at = None


if __name__ == "__main__":         # `python -m workbench.cli`: run the module the subcommands import, not this copy
    from workbench import cli
    sys.exit(cli.main())
