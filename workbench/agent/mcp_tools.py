"""The MCP tools and resources of `workbench mcp`: described arguments, enums, annotations, structured results.

Each tool is a thin call into campaign_service.py. What an outside client sees (tested with the SDK's own client
in tests/test_mcp_conventions.py):
  * every argument has a description, `trigger` is an enum, and every tool says whether it is read-only;
  * check_kernel, ask_question and campaign_status return their text (what an agent reads) and the same facts as
    `structuredContent` under a published output schema;
  * check_kernel sends `notifications/progress` while it runs (the harness's lines) when the call carries a
    progress token: a `full` check takes minutes on a GPU;
  * a call that could not be carried out (bad input, a harness that could not run) is `isError: true` with one
    line; a kernel that fails to build or verify is a result, not an error;
  * no prompts capability is advertised: the server has none.
This module imports the mcp SDK and pydantic at its top, so only `build_server` (mcp_server.py) loads it; it
does not use `from __future__ import annotations`: the SDK reads the tools' annotations as objects.
"""
import sys
from typing import Annotated, Literal, Optional

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from workbench import __version__
from workbench.agent.campaign_inputs import MAX_NOTE_CHARS, CampaignError
from workbench.campaign.main_anchor import LEGACY_MAIN
from workbench.campaign.workspace import WorkspaceError
from workbench.harness.result_line import result_record
from workbench.questions.bank import TRIGGERS

Trigger = Literal[TRIGGERS]     # stall | claim | suspicious | any
BankFilter = Literal[("",) + TRIGGERS]

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
             "suspicion flags, and whether the stop condition holds. The file is saved as artifacts/<sha>.cu. A "
             "question may follow the result. Takes minutes on a GPU; sends progress notifications when asked.")

PathArg = Annotated[str, Field(description="the kernel file, relative to the campaign workspace (default kernel.cu) "
                                           "or absolute inside it; files outside the workspace are refused")]
SuiteArg = Annotated[str, Field(description="a suite name (smoke, dev26, full, edge) or a .csv file inside the "
                                            "workspace; empty: the campaign's own suite")]
ClaimArg = Annotated[str, Field(description="say here if you believe the kernel is done, optimal or at a hardware "
                                            "limit; the question policy may question it", max_length=MAX_NOTE_CHARS)]
NotesArg = Annotated[str, Field(description="what you changed and why (claims in it are noticed too)",
                                max_length=MAX_NOTE_CHARS)]
TriggerArg = Annotated[Trigger, Field(description="the situation the question is for: stall (no progress), claim "
                                                  "(you believe you are done), suspicious (a gain too good to be "
                                                  "true) or any")]
FilterArg = Annotated[BankFilter, Field(description="only the questions for this trigger (and those for any); "
                                                    "empty: all")]
ScenariosSuiteArg = Annotated[str, Field(description="a suite name (smoke, dev26, full, edge) or a .csv file inside "
                                                     "the workspace; empty: the campaign's suite")]


class Question(BaseModel):
    trigger: str = Field(description="stall | claim | suspicious | human | any")
    source: str = Field(description="human (a person's question) or bank (the question bank)")
    question_id: str = Field("", description="the bank question's id, when it came from the bank")
    text: str


class Standing(BaseModel):
    campaign_id: str
    workspace: str
    kernel: str
    mode: str
    suite: str
    stop_expr: Optional[str] = None
    stop_met: bool
    harness_runs: int
    tool_calls: int
    best_vs_original: Optional[float] = None
    best_vs_fa3: Optional[float] = None
    main_anchor: str = Field(LEGACY_MAIN, description="the problem's main anchor (attention: fa3, the GEMM: cublas)")
    best_vs_main: Optional[float] = Field(None, description="the best run's geomean against the main anchor")
    best_sha: str = ""
    budget_left: dict
    last_question: Optional[dict] = None
    questions_waiting: int


class CheckOutput(BaseModel):
    kernel_sha: str = Field(description="sha256 of the judged text (artifacts/<sha>.cu)")
    status: str = Field(description="evaluated | build_failed | static_only | ... (the harness's status)")
    all_correct: bool
    geomean_vs_original: Optional[float] = None
    geomean_vs_fa3: Optional[float] = None
    geomean_vs_main: Optional[float] = Field(None, description="against the main anchor (standing.main_anchor)")
    stop_met: bool = Field(description="whether the campaign's stop condition holds for this result")
    result: dict = Field(description="the harness's `workbench-result` record: counts, failures, flags, geomeans")
    question: Optional[Question] = Field(None, description="the question asked with this result, if any")
    standing: Standing


class AskOutput(BaseModel):
    question: Optional[Question] = None
    standing: Standing


def _question(inquiry) -> Optional[dict]:
    if inquiry is None:
        return None
    return {"trigger": inquiry.trigger, "source": inquiry.source, "question_id": inquiry.question_id or "",
            "text": inquiry.text}


def _overall(result, name: str) -> Optional[float]:
    value = result_record(result)["geomeans"].get("overall", {}).get(name)
    return value if isinstance(value, (int, float)) else None


def check_output(reply, standing: dict) -> dict:
    result = reply.result
    return {"kernel_sha": reply.kernel_sha, "status": result.status, "all_correct": bool(result.all_correct),
            "geomean_vs_original": _overall(result, "original"), "geomean_vs_fa3": _overall(result, "fa3"),
            "geomean_vs_main": _overall(result, standing.get("main_anchor") or LEGACY_MAIN),
            "stop_met": bool(result.stop_met), "result": result_record(result), "question": _question(reply.inquiry),
            "standing": standing}


def build_server(service, progress=None) -> MCPServer:
    """The MCPServer whose tools call `service` (which must be inside its session). `progress(line)` is also told
    every line of a check (the person's terminal)."""
    s = service.status()
    server = MCPServer("workbench", version=__version__, instructions=INSTRUCTIONS.format(
        campaign_id=s["campaign_id"], kernel=s["kernel"], workspace=s["workspace"], suite=s["suite"],
        stop_expr=s["stop_expr"] or "(none)"))
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    # a check adds an artifact, trace rows and a turn, and spends budget: not read-only, never destructive
    records = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                              open_world_hint=False)

    def answer(call):
        try:
            reply = call()
        except (CampaignError, WorkspaceError) as err:      # the agent's bad input: isError with one line
            raise ToolError(str(err)) from None
        if getattr(reply, "is_error", False):             # the call was recorded, but could not be carried out
            raise ToolError(reply.text)
        return reply

    def result(text: str, structured: dict) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)

    @server.tool(description=CHECK_DOC, annotations=records)
    async def check_kernel(ctx: Context, path: PathArg = "kernel.cu", suite: SuiteArg = "", claim: ClaimArg = "",
                           notes: NotesArg = "") -> Annotated[CallToolResult, CheckOutput]:
        lines = []

        def told(line: str) -> None:          # on the worker thread: hand the line to the event loop
            lines.append(line)
            if progress:
                progress(line)
            anyio.from_thread.run(ctx.report_progress, float(len(lines)), None, line[:500])

        reply = await anyio.to_thread.run_sync(lambda: answer(lambda: service.check(path, suite or None, claim,
                                                                                    notes, told)))
        return result(reply.text, check_output(reply, service.status()))

    @server.tool(description="Ask for a question to think about: a waiting question from the person if there is "
                 "one, else one from the question bank for `trigger`. Recorded like the questions the campaign asks "
                 "on its own.", annotations=records)
    def ask_question(trigger: TriggerArg = "any") -> Annotated[CallToolResult, AskOutput]:
        reply = answer(lambda: service.ask(trigger))
        return result(reply.text, {"question": _question(reply.inquiry), "standing": service.status()})

    @server.tool(description="The campaign's state: best geomean so far, whether the stop condition holds, harness "
                 "runs, budget left, the last question, the workspace and kernel path.", annotations=read_only)
    def campaign_status() -> Annotated[CallToolResult, Standing]:
        text = answer(service.status_text)
        return result(text, service.status())

    @server.tool(description="The question bank (id, trigger, layer, text), optionally for one trigger.",
                 annotations=read_only, structured_output=False)
    def list_questions(trigger: FilterArg = "") -> str:
        return answer(lambda: service.bank_text(trigger))

    @server.tool(description="The scenarios (shapes) of the campaign's suite, or of `suite`.", annotations=read_only,
                 structured_output=False)
    def list_scenarios(suite: ScenariosSuiteArg = "") -> str:
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

    _drop_prompts(server)
    return server


def _drop_prompts(server: MCPServer) -> None:
    """The server has no prompts: without their handlers no prompts capability is advertised. MCPServer always
    registers them; removing them reaches into its low-level server (a test checks the capability is gone)."""
    handlers = getattr(getattr(server, "_lowlevel_server", None), "_request_handlers", None)
    if isinstance(handlers, dict):
        for method in ("prompts/list", "prompts/get"):
            handlers.pop(method, None)
    else:                   # the SDK changed shape: say so rather than fail to serve
        print("workbench mcp: note: could not drop the empty prompts capability", file=sys.stderr)
