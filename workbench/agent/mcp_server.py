"""`workbench mcp`: one campaign as an MCP server over stdio, for Claude Code, Codex, Cursor or any MCP client.

    workbench mcp --campaign c-1 --kernel kernels/attn_fwd/original.cu --suite dev26 --mode hybrid \
                  --stop "all_correct and geomean_vs_fa3 >= 1.0" [--evaluator standin] [--root campaigns]
    claude mcp add --transport stdio workbench -- workbench mcp --campaign c-1 --kernel ...   # README

The first start makes `campaigns/<id>/` (the layout `workbench campaign` uses); a later start with the same id
continues it. Tools: `check_kernel` (the harness, the question policy, the stop condition), `ask_question`,
`campaign_status`, `list_questions`, `list_scenarios`; the same as resources under `workbench://campaign/`.
Every tool is a thin call into campaign_service.py, which `workbench check --campaign` uses too. The server
holds the campaign's lock while it runs: a second server on the same campaign exits with one line (exit 2).
stdout is the protocol; everything for people goes to stderr.
"""
from __future__ import annotations

import argparse
import sys

from workbench import __version__
from workbench.agent.campaign_service import CampaignError, CampaignService
from workbench.agent.external_cli import add_campaign_arguments, open_or_create
from workbench.campaign.workspace import WorkspaceError

INSTRUCTIONS = """\
This server runs one kernel-optimisation campaign, {campaign_id}, with a trusted harness. The kernel you improve is
{kernel} (a single-file CUDA attention-forward kernel; edit it with your own file tools, inside {workspace}).
Call check_kernel after each change: it builds, verifies and times the file on the suite "{suite}", stores it as
an artifact, and reports per-scenario results, geomean speedups against the original kernel and FA3, and whether
the stop condition holds: {stop_expr}
Only that stop condition ends the campaign; your own judgement that the kernel is finished does not. When a block
marked "=== QUESTION" follows a result, answer it with a measurement before your next change. Pass a claim (done,
optimal, at a hardware limit) in check_kernel's `claim` and what you changed in `notes`.
"""

CHECK_DOC = ("Build, verify and time a kernel file of the campaign workspace on the campaign's suite (or `suite`): "
             "per-scenario status, error, time, TFLOP/s and speedups, geomeans vs the original kernel and FA3, "
             "suspicion flags, and whether the stop condition holds. The file is saved as artifacts/<sha>.cu. "
             "`path`: relative to the workspace (default kernel.cu) or absolute inside it. `claim`: say here if you "
             "believe the kernel is done, optimal or at a hardware limit. `notes`: what you changed and why. A "
             "question may follow the result. Takes minutes on a GPU.")


def build_server(service: CampaignService, progress=None):
    """The MCPServer whose tools call `service` (which must be inside its session)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    s = service.status()
    server = MCPServer("workbench", version=__version__, instructions=INSTRUCTIONS.format(
        campaign_id=s["campaign_id"], kernel=s["kernel"], workspace=s["workspace"], suite=s["suite"],
        stop_expr=s["stop_expr"] or "(none)"))

    def answer(call):
        try:
            return call()
        except (CampaignError, WorkspaceError) as err:      # the agent's bad input: is_error with one line
            raise ToolError(str(err)) from None

    @server.tool(description=CHECK_DOC, structured_output=False)
    def check_kernel(path: str = "kernel.cu", suite: str = "", claim: str = "", notes: str = "") -> str:
        return answer(lambda: service.check(path, suite or None, claim, notes, progress).text)

    @server.tool(description="Ask for a question to think about: a waiting question from the person if there is "
                 "one, else one from the question bank for `trigger` (stall, claim, suspicious or any). Recorded "
                 "like the questions the campaign asks on its own.", structured_output=False)
    def ask_question(trigger: str = "any") -> str:
        return answer(lambda: service.ask(trigger).text)

    @server.tool(description="The campaign's state: best geomean so far, whether the stop condition holds, harness "
                 "runs, budget left, the last question, the workspace and kernel path.", structured_output=False)
    def campaign_status() -> str:
        return answer(service.status_text)

    @server.tool(description="The question bank (id, trigger, layer, text), optionally for one trigger.",
                 structured_output=False)
    def list_questions(trigger: str = "") -> str:
        return answer(lambda: service.bank_text(trigger))

    @server.tool(description="The scenarios (shapes) of the campaign's suite, or of `suite`.", structured_output=False)
    def list_scenarios(suite: str = "") -> str:
        return answer(lambda: service.suite_text(suite or None))

    @server.resource("workbench://campaign/status", mime_type="text/plain", description="campaign_status()")
    def status_resource() -> str:
        return service.status_text()

    @server.resource("workbench://campaign/bank", mime_type="text/plain", description="the question bank")
    def bank_resource() -> str:
        return service.bank_text()

    @server.resource("workbench://campaign/suite", mime_type="text/plain", description="the campaign's suite")
    def suite_resource() -> str:
        return service.suite_text()

    return server


def mcp_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workbench mcp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaign", required=True, metavar="ID", help="the campaign (campaigns/ID/); made on the "
                        "first start (needs --kernel), continued on later ones")
    add_campaign_arguments(parser)
    args = parser.parse_args(argv)

    def say(line: str) -> None:
        print(f"workbench mcp: {line}", file=sys.stderr, flush=True)

    try:
        import mcp  # noqa: F401
    except ModuleNotFoundError:
        say("needs the Python package 'mcp', which is not installed (pip install -e '.[mcp]')")
        return 2
    from workbench.locks import LockHeld

    try:
        service = open_or_create(args, args.campaign, create=bool(args.kernel))
        with service.session("mcp"):
            say(f"campaign {args.campaign} ({service.config.mode}, suite {service.config.suite}) at {service.ws.root}; "
                "serving MCP on stdio")
            build_server(service, progress=lambda line: print(line, file=sys.stderr, flush=True)).run()
    except (CampaignError, WorkspaceError, LockHeld, ValueError) as err:
        say(str(err))
        return 2
    except KeyboardInterrupt:
        return 130
    say(f"campaign {args.campaign}: the client closed the connection; {service.status_line()}")
    return 0
