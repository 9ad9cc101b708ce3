"""`workbench` command line: one dispatcher, each subcommand lives beside the code it drives.

Subcommands are imported lazily so `workbench check` works without the agent or notebook extras installed,
and a missing optional dependency is reported in one line instead of a traceback.
"""
from __future__ import annotations

import contextlib
import importlib
import sys

SUBCOMMANDS = {
    "check": ("workbench.check_cli", "build, verify and time one kernel on a suite"),
    "campaign": ("workbench.agent.cli", "run an agent campaign on a kernel (question interventions, traces)"),
    "experiment": ("workbench.agent.cli", "A/B comparison of campaign modes (e.g. tools_only vs bank)"),
    "bank": ("workbench.agent.questions", "list, add and promote questions of the question bank"),
    "import": ("workbench.traces.importers", "import Claude Code / Codex transcripts into trace tables"),
    "report": ("workbench.traces.report", "build the intervention-statistics HTML report from traces"),
    "evolve": ("workbench.evolve", "evolutionary search with questions as mutation hints"),
    "mcp": ("workbench.agent.mcp_server", "serve a campaign to your own agent over MCP (Claude Code, Codex, ...)"),
    "ask": ("workbench.agent.external_cli", "put a question to the agent of a campaign (`workbench mcp`, "
                                            "`check --campaign`)"),
}


UNWRAPPED_OUTPUT = ("mcp",)


def usage() -> str:
    lines = ["usage: workbench <command> [options]", "", "commands:"]
    lines += [f"  {name:<11} {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
    lines += ["", "`workbench <command> --help` shows a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"workbench: unknown command {name!r}; run `workbench --help` for the list", file=sys.stderr)
        return 2
    module_name = SUBCOMMANDS[name][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        print(f"workbench {name}: needs the Python package {err.name!r}, which is not installed "
              f"(pip install -e '.[agent,notebook,ray,mcp]' installs every optional part)", file=sys.stderr)
        return 2
    entry = getattr(module, f"{name}_main", None) or getattr(module, "main")
    from workbench.redaction import redacted_output
    # no key reaches the terminal, whatever a command prints; `mcp` speaks JSON-RPC on stdio, whose tool results
    # the campaign service redacts itself: its stdout is a protocol channel, left as it is
    guard = contextlib.nullcontext() if name in UNWRAPPED_OUTPUT else redacted_output()
    try:
        with guard:
            return int(entry(rest) or 0)
    except BrokenPipeError:   # `workbench bank list | head` closed the pipe: not an error
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"workbench {name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
