"""The trace recorder: a subscriber that turns campaign events into rows of the five trace tables.

Rows of a turn are buffered and written when the turn is committed, one part file per table, `messages`
last: a turn is in the record exactly when its messages are, and a kill -9 loses at most the turn in flight.
`trim_uncommitted` removes rows of a turn whose messages never landed, so a resumed campaign neither loses
nor duplicates rows. The `sessions` row is rewritten in place (one row per session). Every string goes
through the writer's redaction.
"""
from __future__ import annotations

import json
import socket
from datetime import datetime, timezone
from pathlib import Path

from workbench.campaign.events import (CampaignStarted, CampaignStopped, EvaluationDone, InterventionFired,
                                       MessageDone, ToolCallFinished, TurnCommitted)
from workbench.redaction import redact_pieces
from workbench.traces.rows import rows_from_result
from workbench.traces.sources import is_standin_result
from workbench.traces.writer import (TraceWriter, read_table, redact_free_text, to_table, trim_parts,
                                     write_parquet_durable)

OUTPUT_TEXT_CHARS = 30_000
TURN_TABLES = ("tool_calls", "evaluations", "interventions", "messages")   # write order; messages commits
FREE_TEXT = ("text", "input_json", "output_text", "error", "question_text", "detail")   # ids are never joined


def utc(ts: float | None):
    return datetime.fromtimestamp(ts, tz=timezone.utc) if ts else None


def block_text(block: dict) -> str:
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "tool_use":
        return json.dumps(block.get("input", {}))
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, list):
            return "\n".join(c.get("text", "") for c in content if isinstance(c, dict))
        return str(content)
    if kind == "thinking":
        return block.get("thinking", "")
    return json.dumps(block)


class TraceRecorder:
    def __init__(self, root: str | Path, session_id: str, session_info: dict):
        self.writer = TraceWriter(root, session_id)
        self.session_id = session_id
        self.info = dict(session_info)        # static columns of the sessions row
        self.buffer = {t: [] for t in TURN_TABLES}
        self._tails = {t: {} for t in TURN_TABLES}      # raw end of each table's text streams (never written)

    def __call__(self, event) -> None:
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler:
            handler(event)

    # ---- sessions ----------------------------------------------------------------------------------
    def _write_session(self, row: dict) -> None:
        directory = self.writer.root / "sessions" / self.session_id
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("part-*.parquet"):
            if stale.name != "part-00000.parquet":
                stale.unlink()
        write_parquet_durable(to_table("sessions", [dict(row, session_id=self.session_id)]),
                              directory / "part-00000.parquet")

    def _on_campaign_started(self, e: CampaignStarted) -> None:
        previous = read_table(self.writer.root, "sessions", self.session_id)
        started = previous["started_at"].iloc[0].to_pydatetime() if len(previous) else utc(e.ts)
        self.info.update(started_at=started, host=socket.gethostname())
        if len(previous):      # a later session that runs no harness keeps what the earlier runs established
            before = previous.iloc[0]
            if isinstance(before.get("gpu"), str) and before["gpu"] and not self.info.get("gpu"):
                self.info["gpu"] = before["gpu"]
            if before.get("is_standin") is True or before.get("is_standin") == 1:
                self.info["is_standin"] = True
        self._write_session(self.info)

    def _on_campaign_stopped(self, e: CampaignStopped) -> None:
        self.buffer = {t: [] for t in TURN_TABLES}       # an uncommitted turn is not part of the record
        self._write_session(dict(self.info, ended_at=utc(e.ts), stop_reason=f"{e.reason}: {e.detail}".strip(": "),
                                 turns=e.turn, tool_calls=e.tool_calls, total_tokens=e.tokens,
                                 cost_usd=e.cost_usd, best_sha=e.best_sha, best_vs_original=e.best_vs_original,
                                 best_vs_fa3=e.best_vs_fa3, main_anchor=e.main_anchor, best_vs_main=e.best_vs_main))
        if e.reason != "interrupted":
            try:                         # one file per table per session; parts stay if this fails
                self.writer.compact()
            except OSError:
                pass

    # ---- per-turn rows -----------------------------------------------------------------------------
    def _on_message_done(self, e: MessageDone) -> None:
        for i, block in enumerate(e.content):
            row = {"message_id": e.message_id, "block_index": i, "parent_id": e.parent_id or None, "turn": e.turn,
                   "role": e.role, "block_type": block.get("type"), "is_human": e.human_block == i,
                   "is_sidechain": False, "text": block_text(block), "ts": utc(e.ts), "model": e.model or None,
                   "tool_use_id": block.get("id") or block.get("tool_use_id"), "tool_name": block.get("name")}
            if i == 0 and e.usage is not None:
                row.update(input_tokens=e.usage.input_tokens, output_tokens=e.usage.output_tokens,
                           cache_read_tokens=e.usage.cache_read_tokens, cache_write_tokens=e.usage.cache_write_tokens,
                           cost_usd=e.cost_usd)
            self.buffer["messages"].append(row)

    def _on_tool_call_finished(self, e: ToolCallFinished) -> None:
        self.buffer["tool_calls"].append({
            "call_id": e.call_id, "turn": e.turn, "tool_index": e.tool_index, "tool_name": e.name,
            "input_json": json.dumps(e.input), "output_text": e.output[:OUTPUT_TEXT_CHARS], "is_error": e.is_error,
            "error": e.output.splitlines()[0][:500] if e.is_error and e.output else None,
            "started_at": utc(e.started_at), "ended_at": utc(e.started_at + e.duration_s), "duration_s": e.duration_s})

    def _on_evaluation_done(self, e: EvaluationDone) -> None:
        r = e.result
        if r.gpu:
            self.info["gpu"] = r.gpu
        standin = is_standin_result(r.kernel_path, r.gpu, r.versions)
        if standin:
            self.info["is_standin"] = True       # one made-up number makes the session a stand-in session
        self.buffer["evaluations"] += rows_from_result(r, eval_id=e.eval_id, call_id=e.call_id, turn=e.turn,
                                                       kernel_sha=e.kernel_sha, ts=utc(e.ts), is_standin=standin)

    def _on_intervention_fired(self, e: InterventionFired) -> None:
        self.buffer["interventions"].append({
            "intervention_id": e.intervention_id, "turn": e.turn, "tool_index": e.tool_index, "trigger": e.trigger,
            "source": e.source, "question_id": e.question_id or None, "question_text": e.text, "layer": e.layer or None,
            "best_speedup_before": e.best_before, "ts": utc(e.ts)})

    def _on_turn_committed(self, e: TurnCommitted) -> None:
        self._redact_turn()
        for table in TURN_TABLES:
            if self.buffer[table]:
                self.writer.append(table, self.buffer[table])
            self.buffer[table] = []


    def _redact_turn(self) -> None:
        """Each table's free text of the turn redacted as one text, so a secret split over two rows (a key printed
        by two tool calls) leaves no piece behind, read after the end of the turn before (a key split over two
        turns); the writer still redacts every string on its own."""
        for table, rows in self.buffer.items():
            for (i, key), clean in redact_free_text(rows, FREE_TEXT, self._tails[table], row_order=True).items():
                rows[i][key] = clean


def committed_turn(root: str | Path, session_id: str) -> int:
    messages = read_table(root, "messages", session_id)
    return int(messages["turn"].max()) if len(messages) else 0


def trim_uncommitted(root: str | Path, session_id: str, committed: int) -> int:
    """Drop rows of turns after `committed` (written before a crash cut their turn short). Returns rows dropped."""
    dropped = sum(trim_parts(root, table, session_id, "turn", committed) for table in TURN_TABLES)
    for stray in Path(root).glob(f"*/{session_id}/*.tmp"):
        stray.unlink()
    return dropped
