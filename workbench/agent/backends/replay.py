"""The replay backend: plays back the assistant turns of a recorded session (demos, regression tests).

    ReplayBackend.from_spec("campaigns/c42")                 # a campaign folder (its traces/)
    ReplayBackend.from_spec("data/traces#c42")               # a trace root and a session id

The conversation is rebuilt from the `messages` table (tool_use blocks keep their id, name and JSON input).
Tools run again for real on the replaying workspace, except what needs a GPU: `evaluator` answers
run_harness from the recorded `evaluations` table (by kernel sha, else in recorded order) and `recorded`
gives the recorded outputs of compile/SASS/ncu calls by call id. So a replay works on any machine.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from workbench.agent.backends.turns import AssistantTurn, BackendError, BackendExhausted, TurnRequest
from workbench.campaign.events import Usage
from workbench.traces.rows import result_from_rows


def _session_dirs(root: Path) -> list[str]:
    base = root / "messages"
    return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.exists() else []


def locate(spec: str) -> tuple[Path, str, Path | None]:
    """(trace root, session id, campaign folder or None) for PATH[#SESSION]."""
    path_text, _, session = spec.partition("#")
    path = Path(path_text)
    campaign = path if (path / "config.json").exists() and (path / "traces").exists() else None
    root = path / "traces" if campaign else path
    sessions = _session_dirs(root)
    if not sessions:
        raise BackendError(f"replay: no recorded session under {root} (expected {root}/messages/<session>/)")
    if session and session not in sessions:
        raise BackendError(f"replay: no session {session!r} under {root}; recorded: {', '.join(sessions)}")
    if not session:
        if campaign and campaign.name in sessions:
            session = campaign.name
        elif len(sessions) == 1:
            session = sessions[0]
        else:
            raise BackendError(f"replay: {root} holds {len(sessions)} sessions; pick one with "
                               f"replay:{path_text}#SESSION ({', '.join(sessions[:8])})")
    return root, session, campaign


class ReplayBackend:
    name = "replay"

    def __init__(self, trace_root: str | Path, session_id: str, campaign_dir: Path | None = None,
                 pace_s: float = 0.0):
        from workbench.traces.writer import read_table

        self.trace_root, self.session_id, self.campaign_dir = Path(trace_root), session_id, campaign_dir
        self.pace_s = pace_s
        messages = read_table(self.trace_root, "messages", session_id)
        self.turns = _assistant_turns(messages)
        if not self.turns:
            raise BackendError(f"replay: session {session_id} has no assistant messages")
        self.model = self.turns[0].model or "replay"
        self.position = 0
        sessions = read_table(self.trace_root, "sessions", session_id)
        self.session = sessions.iloc[-1].to_dict() if len(sessions) else {}
        calls = read_table(self.trace_root, "tool_calls", session_id)
        self.recorded = {r.call_id: (r.output_text or "", bool(r.is_error)) for r in calls.itertuples()}
        self.evaluator = ReplayEvaluator(read_table(self.trace_root, "evaluations", session_id))

    @classmethod
    def from_spec(cls, spec: str, pace_s: float = 0.0) -> "ReplayBackend":
        root, session, campaign = locate(spec)
        return cls(root, session, campaign, pace_s)

    def config(self) -> dict:
        """The recorded campaign's settings (suite, stop, mode, kernel), to replay under the same ones."""
        raw = self.session.get("config_json") or ""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {}

    def initial_kernel(self) -> str | None:
        """The source the recorded campaign started from, when its artifacts are at hand."""
        sha = self.config().get("initial_sha", "")
        for folder in filter(None, [self.campaign_dir, self.trace_root.parent]):
            path = Path(folder) / "artifacts" / f"{sha}.cu"
            if sha and path.exists():
                return path.read_text()
        return None

    def next_turn(self, request: TurnRequest, on_text) -> AssistantTurn:
        if self.position >= len(self.turns):
            raise BackendExhausted(f"the recording has {len(self.turns)} assistant turns, all replayed")
        turn = self.turns[self.position]
        self.position += 1
        for index, block in enumerate(turn.content):
            if block["type"] == "text":
                for start in range(0, len(block["text"]), 24):
                    on_text(index, block["text"][start:start + 24])
                    if self.pace_s:
                        time.sleep(self.pace_s)
        return turn

    def snapshot(self) -> dict:
        return {"position": self.position}

    def restore(self, snap: dict) -> None:
        self.position = snap.get("position", 0)


def _assistant_turns(frame) -> list[AssistantTurn]:
    rows = frame[frame["role"] == "assistant"].sort_values(["turn", "ts", "block_index"], kind="stable")
    turns, order = {}, []
    for r in rows.itertuples():
        if r.message_id not in turns:
            usage = Usage(*(int(x) if x == x and x is not None else 0 for x in
                            (r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens)))
            turns[r.message_id] = AssistantTurn([], "end_turn", usage, r.model or "", r.message_id,
                                                r.cost_usd if r.cost_usd == r.cost_usd else None)
            order.append(r.message_id)
        t = turns[r.message_id]
        if r.block_type == "text":
            t.content.append({"type": "text", "text": r.text or ""})
        elif r.block_type == "tool_use":
            try:
                data = json.loads(r.text or "{}")
            except ValueError:
                data = {}
            t.content.append({"type": "tool_use", "id": r.tool_use_id, "name": r.tool_name, "input": data})
            t.stop_reason = "tool_use"
    return [turns[m] for m in order]


class ReplayEvaluator:
    """Answers run_harness from recorded evaluation rows: by kernel sha (the n-th run of a sha gets its n-th
    recorded run), else the next recorded run."""

    def __init__(self, evaluations):
        self.frame = evaluations
        order = evaluations.sort_values("ts", kind="stable")["eval_id"] if len(evaluations) else []
        self.order = list(dict.fromkeys(order))
        self.cursor = 0
        self.runs_of_sha: dict = {}     # a kernel re-timed n times is answered with its n recorded runs, in order

    def __call__(self, request):
        from workbench.campaign.workspace import text_sha

        if not self.order:
            raise BackendError("replay: the recording has no harness runs to answer with")
        sha = text_sha(Path(request.kernel_path).read_text()) if Path(request.kernel_path).exists() else ""
        runs = [e for e in self.order if e in set(self.frame[self.frame["kernel_sha"] == sha]["eval_id"])]
        if runs:
            n = self.runs_of_sha.get(sha, 0)
            eval_id, self.runs_of_sha[sha] = runs[min(n, len(runs) - 1)], n + 1
        else:
            eval_id = self.order[min(self.cursor, len(self.order) - 1)]
        self.cursor += 1
        return result_from_rows(self.frame[self.frame["eval_id"] == eval_id], request)
