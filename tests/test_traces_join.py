"""An outside agent's campaign and the agent's own Claude Code transcript, imported separately, are one session in
the analysis: the agent's messages, the bank's and the person's questions and the gains on one timeline, every
harness run counted once."""
from __future__ import annotations

import json
import time
import uuid
from datetime import datetime, timezone

import pytest

from workbench.agent.campaign_service import CampaignService
from workbench.campaign.config import CampaignConfig
from workbench.evaluators.standin_timings import KnobEvaluator
from workbench.questions.inbox import post_question
from workbench.questions.policy import PolicyConfig
from workbench.traces import analysis as an
from workbench.traces.importers import import_paths
from workbench.traces.report import build_report
from workbench.traces.writer import read_table

KERNEL_A = "// stand-in kernel\n#define KEY_TILE 8          // @knob KEY_TILE 8 {4,8,16}\nint x;\n"
KERNEL_B = KERNEL_A.replace("KEY_TILE 8 ", "KEY_TILE 16 ")        # x1.42 on the stand-in landscape (A: x1.06)
PERSON_IN_CLAUDE = "Look at the key tile size before anything else."
PERSON_VIA_ASK = "Why not try a larger key tile?"


def now_iso() -> str:
    time.sleep(0.002)                   # distinct, ordered timestamps on a fast machine
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Transcript:
    """Claude Code JSONL lines, written as the agent works (so its timestamps interleave with the campaign's)."""

    def __init__(self, session_id="cc-session-1"):
        self.session_id, self.lines, self.parent, self.n = session_id, [], None, 0

    def _line(self, kind, message, **extra):
        line = {"type": kind, "uuid": str(uuid.uuid4()), "parentUuid": self.parent, "sessionId": self.session_id,
                "timestamp": now_iso(), "isSidechain": False, "message": message, **extra}
        self.parent = line["uuid"]
        self.lines.append(line)

    def person(self, text):
        self._line("user", {"role": "user", "content": text})

    def agent(self, text, tool=None, tool_input=None):
        self.n += 1
        content = [{"type": "text", "text": text}]
        if tool:
            content.append({"type": "tool_use", "id": f"toolu_{self.n}", "name": tool, "input": tool_input or {}})
        self._line("assistant", {"id": f"msg_{self.n}", "role": "assistant", "model": "claude-sonnet-4-5",
                                 "content": content, "usage": {"input_tokens": 100, "output_tokens": 20}},
                   requestId=f"req_{self.n}")

    def result(self, text):
        self._line("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{self.n}",
                                                         "content": [{"type": "text", "text": text}]}]})

    def write(self, path):
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


@pytest.fixture
def agent_and_campaign(tmp_path):
    """Six check_kernel calls through the campaign service, with the agent's transcript written alongside: a
    person's `workbench ask` rides on the third result, the fourth (a new kernel) is a gain, a person types in
    Claude Code, and the sixth result carries the bank's stall question."""
    config = CampaignConfig(suite="smoke", mode="hybrid", stop_expr="all_correct and geomean_vs_original >= 50",
                            root=str(tmp_path / "campaigns"), campaign_id="c-join", policy=PolicyConfig(stall_runs=2))
    service = CampaignService.create(config, evaluator=KnobEvaluator(), kernel_text=KERNEL_A)
    log = Transcript()
    log.person("Make the kernel in campaigns/c-join faster; check it with the workbench tools.")
    check = "mcp__workbench__check_kernel"
    with service.session("mcp"):
        for n, text in enumerate(("Measuring the starting point.", "Checking the timing again.", "Once more.")):
            if n == 2:
                post_question(service.ws.root, PERSON_VIA_ASK)
            log.agent(text, check)
            log.result(service.check().text)
        log.agent("The tile is 8 keys; trying 16.", "Edit", {"file_path": str(service.ws.kernel_path),
                                                            "old_string": "KEY_TILE 8 ", "new_string": "KEY_TILE 16 "})
        service.ws.kernel_path.write_text(KERNEL_B)
        log.result("The file has been updated.")
        log.agent("Checking the 16-key tile.", check, {"notes": "KEY_TILE 8 -> 16"})
        log.result(service.check(notes="KEY_TILE 8 -> 16").text)    # a gain
        log.person(PERSON_IN_CLAUDE)
        for text in ("Re-timing the 16-key tile.", "And again."):
            log.agent(text, check)
            log.result(service.check().text)           # the second carries the bank's stall question
        log.agent("x1.42 against the original; the stop condition does not hold yet.")
    return tmp_path, log.write(tmp_path / "cc-session-1.jsonl"), service


@pytest.mark.parametrize("named", [True, False], ids=["by campaign id", "by shared runs"])
def test_the_transcript_and_the_campaign_are_one_timeline(agent_and_campaign, named):
    tmp_path, transcript, service = agent_and_campaign
    traces = tmp_path / "traces"
    import_paths([service.ws.root], traces)
    import_paths([transcript], traces, arm="hybrid", campaign_id="c-join" if named else None)
    # the transcript's copies of the runs carry the campaign's eval ids (the result line in every check reply)
    transcript_runs = set(read_table(traces, "evaluations", "cc-session-1")["eval_id"])
    assert transcript_runs == set(read_table(traces, "evaluations", "c-join")["eval_id"]) and len(transcript_runs) == 6
    a = an.analyze([traces])

    assert list(a.sessions["session_id"]) == ["c-join"]               # one session, not two
    row = a.sessions.iloc[0]
    assert row.model == "claude-sonnet-4-5" and row.harness_runs == 6  # every run once
    assert row.tool_calls == 7                                         # the transcript's calls: 6 checks and an Edit
    steering = a.steering.sort_values("ts_us")
    assert list(steering["origin"]) == ["human", "human", "human", "bank"]
    texts = list(steering["text"])
    assert texts[0].startswith("Make the kernel") and texts[1:3] == [PERSON_VIA_ASK, PERSON_IN_CLAUDE]
    # the agent's own words before the person's question ("Checking the timing again.") are on the same timeline
    assert steering.iloc[1]["agent_layer"] == "measurement"
    gains = a.gains
    assert len(gains) == 1 and gains.iloc[0]["metric"] == "geomean_vs_fa3"      # the stand-in's FA3 is 8x
    assert gains.iloc[0]["geomean"] == pytest.approx(1.4217647 / 8, rel=1e-6)
    assert gains.iloc[0]["message_text"] == PERSON_VIA_ASK and gains.iloc[0]["preceded_by"] == "question"
    assert gains.iloc[0]["tool_index"] == 5                             # the agent's 5th call (after the Edit)
    page = build_report([traces], tmp_path / "report.html").read_text()
    # every section's sessions table (the campaign ran on stand-in timings: it is in the fixtures' section)
    sessions = "".join(part.split("</table>")[0] for part in page.split("<h3>Sessions</h3>")[1:])
    assert "c-join" in sessions and "cc-session-1" not in sessions


def test_without_a_transcript_the_campaign_stands_alone(agent_and_campaign):
    tmp_path, _, service = agent_and_campaign
    traces = tmp_path / "traces"
    import_paths([service.ws.root], traces)
    a = an.analyze([traces])
    row = a.sessions.iloc[0]
    assert row.session_id == "c-join" and row.harness_runs == 6 and row.tool_calls == 6
    assert list(a.steering.sort_values("ts_us")["origin"]) == ["human", "bank"]
    assert a.gains.iloc[0]["message_text"] == PERSON_VIA_ASK

