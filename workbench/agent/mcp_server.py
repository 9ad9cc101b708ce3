"""`workbench mcp`: one campaign as an MCP server over stdio, for Claude Code, Codex, Cursor or any MCP client.

    workbench mcp --campaign c-1 --kernel kernels/attn_fwd/original.cu --suite dev26 --mode hybrid \
                  --stop "all_correct and geomean_vs_fa3 >= 1.0" [--evaluator standin] [--root campaigns]
    claude mcp add --transport stdio workbench -- workbench mcp --campaign c-1 --kernel ...   # README

The first start makes `campaigns/<id>/` (the layout `workbench campaign` uses); a later start with the same id
continues it. Tools: `check_kernel` (the harness, the question policy, the stop condition), `ask_question`,
`campaign_status`, `list_questions`, `list_scenarios`; the same as resources under `workbench://campaign/`.
Every tool is a thin call into campaign_service.py, which `workbench check --campaign` uses too; the tools'
schemas, annotations, structured results and progress notifications are in mcp_tools.py. The server holds the
campaign's lock while it runs: a second server on the same campaign exits with one line (exit 2). stdout is
the protocol; everything for people goes to stderr; a line that is not JSON-RPC gets a JSON-RPC error reply.
"""
from __future__ import annotations

import sys

from workbench.agent.campaign_service import CampaignError
from workbench.agent.external_cli import add_campaign_arguments, open_or_create
from workbench.arguments import Parser
from workbench.campaign.workspace import WorkspaceError


def build_server(service, progress=None):
    """The MCPServer whose tools call `service` (which must be inside its session): mcp_tools.py."""
    from workbench.agent.mcp_tools import build_server as build

    return build(service, progress)


def serve_stdio(server) -> None:
    """Serve `server` on stdin/stdout (the SDK's stdio transport: while serving, fd 0 reads /dev/null and fd 1
    writes to stderr, so nothing run by a tool touches the protocol), answering every line that is not a JSON-RPC
    message with a JSON-RPC error instead of dropping it, so a client never waits for a reply that cannot come."""
    import anyio
    from mcp.server.stdio import stdio_server

    from workbench.agent.mcp_transport import answer_malformed_lines

    # MCPServer.run() would serve the SDK's streams as they are: its low-level server runs on the checked one
    # (a private attribute; tests/test_mcp_conventions.py fails if it moves)
    lowlevel = server._lowlevel_server

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            async with answer_malformed_lines(read_stream, write_stream) as checked:
                await lowlevel.run(checked, write_stream, lowlevel.create_initialization_options())

    anyio.run(run)


def mcp_main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench mcp", description=__doc__.split("\n\n")[0])
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
            serve_stdio(build_server(service, progress=lambda line: print(line, file=sys.stderr, flush=True)))
    except (CampaignError, WorkspaceError, LockHeld, ValueError) as err:
        say(str(err))
        return 2
    except KeyboardInterrupt:
        return 130
    say(f"campaign {args.campaign}: the client closed the connection; {service.status_line()}")
    return 0
