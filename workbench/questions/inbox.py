"""The inbox file of an outside agent's campaign: a person's questions, waiting for the agent's next check.

    post_question("campaigns/c-1", "Is the softmax rescale on the critical path?")   # `workbench ask`, the notebook
    read_inbox("campaigns/c-1")        # every complete line, in order; the campaign keeps how many it delivered

One JSON object per line in campaigns/<id>/inbox.jsonl, appended in one write (O_APPEND), so any number of processes
can post while a server or a check reads, without the campaign's lock; a reader takes only lines that end in a
newline, so a line being written is read next time.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from workbench.redaction import redact

INBOX_FILE = "inbox.jsonl"


class EmptyQuestion(ValueError):
    pass


def post_question(campaign_dir: str | Path, text: str, question_id: str = "", sender: str = "cli") -> None:
    """Append a person's question to the campaign's inbox."""
    text = " ".join((text or "").split()) if "\n" not in (text or "").strip() else (text or "").strip()
    if not text:
        raise EmptyQuestion("the question is empty; pass its text, e.g. workbench ask ID \"is this L2-bound?\"")
    line = json.dumps({"text": redact(text), "question_id": question_id, "from": sender, "ts": time.time()}) + "\n"
    fd = os.open(Path(campaign_dir) / INBOX_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_inbox(campaign_dir: str | Path) -> list[dict]:
    """Every complete line of the inbox, in order (a malformed line is kept as an empty item, so positions hold)."""
    path = Path(campaign_dir) / INBOX_FILE
    if not path.exists():
        return []
    items = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
        if not raw.endswith("\n"):
            break                       # a line still being written
        try:
            item = json.loads(raw)
        except ValueError:
            item = {}
        items.append(item if isinstance(item, dict) and item.get("text") else {})
    return items
