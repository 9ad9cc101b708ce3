"""A campaign's workspace: campaigns/<id>/ holds everything one campaign reads and writes.

    kernel.cu              the working kernel the agent edits
    artifacts/<sha>.cu     every version that was evaluated (sha256 of the text), never modified
    config.json            suite, stop condition, mode, budgets, model (no secrets)
    traces/<table>/<id>/   the session's parquet parts (workbench.traces.writer layout)
    state/turn-NNNNN.json  loop state after each committed turn (resume), the last two kept
    .lock                  held by the process running the campaign (workbench.locks)

Every path the agent names, and every file the campaign itself reads or writes here, goes through one rule
(workbench.campaign.confine): inside this folder, through no symlink, onto a regular file with one name, written
by rename; the campaign's own records are read-only to the agent. Refusals are messages the agent can read.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from workbench.campaign.confine import Confined, Entry, WorkspaceError, split_relative   # noqa: F401  (re-exported)
from workbench.redaction import redact, redact_json, replace_surrogates

KERNEL_FILE = "kernel.cu"
CONFIG_FILE = "config.json"
PROTECTED = ("artifacts", "traces", "state", CONFIG_FILE)    # read-only to the agent
MAX_READ_BYTES = 1 << 20
MAX_WRITE_BYTES = 512 << 10
SNAPSHOTS_KEPT = 2
CAMPAIGN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,80}$")
ARTIFACT_NAME = re.compile(r"^[0-9a-f]{64}\.cu$")
MAX_STATE_BYTES = 256 << 20          # a snapshot holds the whole conversation
LOCK_FILE = ".lock"


def check_campaign_id(campaign_id: str) -> str:
    """The id itself, or WorkspaceError: an id names one folder under the root, so it holds no path separator
    and no '..', whether the campaign is being made or opened."""
    if not isinstance(campaign_id, str) or not CAMPAIGN_ID.match(campaign_id):
        raise WorkspaceError(f"campaign id {str(campaign_id)[:90]!r}: use letters, digits, '.', '_' or '-' (no '/' "
                             "or '..'; up to 81 characters); for campaigns in another folder pass --root DIR")
    return campaign_id


def enclosing_workspace(start: str | Path = ".") -> Path | None:
    """The campaign folder `start` lies in (a config.json beside artifacts/ and state/), or None: a person who
    runs a command from inside a workspace means that campaign, not a new campaigns/ folder nested in it."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_FILE).is_file() and (folder / "artifacts").is_dir() and (folder / "state").is_dir():
            return folder
    return None


def inside_hint(inside: Path, root, campaign_id: str) -> str:
    """What to do when a command runs from inside campaign `inside`'s workspace and finds no `campaign_id` under
    `root` there (a new campaign would nest campaigns/ID/campaigns/ID)."""
    parent = os.path.relpath(inside.parent)
    return (f"no campaign {campaign_id!r} under {root}/ here: this folder is inside campaign {inside.name}'s "
            f"workspace ({inside}); pass --root {parent} (the folder that holds the campaigns), or run the command "
            "from the folder that holds campaigns/")


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Workspace:
    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self.fs = Confined(self.root)

    # ---- creation ----------------------------------------------------------------------------------
    @classmethod
    def create(cls, base: str | Path, campaign_id: str, kernel_source: str | Path | None, config: dict,
               kernel_text: str | None = None) -> "Workspace":
        check_campaign_id(campaign_id)
        root = Path(base) / campaign_id
        text = redact(kernel_text if kernel_text is not None else Path(kernel_source).read_text())
        Path(base).mkdir(parents=True, exist_ok=True)
        try:
            root.mkdir()               # exclusive: two campaigns started with one id cannot share the folder
        except FileExistsError:
            raise WorkspaceError(f"{root} already exists; resume it with --resume {campaign_id} or pick another "
                                 "id") from None
        for sub in ("artifacts", "traces", "state"):
            (root / sub).mkdir()
        ws = cls(root)
        ws.write_kernel(text)
        ws.save_artifact(text)
        ws.write_config(config)
        return ws

    def write_config(self, config: dict) -> None:
        self.fs.write_text(CONFIG_FILE, json.dumps(redact_json(config), indent=2, default=str), durable=True)

    @classmethod
    def open(cls, base: str | Path, campaign_id: str) -> "Workspace":
        root = Path(base) / check_campaign_id(campaign_id)
        if not (root / CONFIG_FILE).exists():
            raise WorkspaceError(f"no campaign {campaign_id!r} under {base} (missing {root / CONFIG_FILE})")
        return cls(root)

    # ---- fixed paths -------------------------------------------------------------------------------
    @property
    def campaign_id(self) -> str:
        return self.root.name

    @property
    def kernel_path(self) -> Path:
        return self.root / KERNEL_FILE

    @property
    def config_path(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def traces_dir(self) -> Path:
        return self.root / "traces"

    @property
    def artifacts_dir(self) -> Path:
        return self.root / "artifacts"

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_FILE

    def read_config(self) -> dict:
        return json.loads(self.fs.read_text(CONFIG_FILE, MAX_STATE_BYTES))

    def read_kernel(self) -> str:
        return self.fs.read_text(KERNEL_FILE, MAX_WRITE_BYTES * 4)

    def write_kernel(self, text: str) -> None:
        self.fs.write_text(KERNEL_FILE, text)

    # ---- artifacts ---------------------------------------------------------------------------------
    def save_artifact(self, text: str) -> str:
        text = redact(replace_surrogates(text))
        sha = text_sha(text)
        if self.fs.kind(f"artifacts/{sha}.cu") is None:
            self.fs.write_text(f"artifacts/{sha}.cu", text, durable=True)
        return sha

    def artifact_name(self, sha_prefix: str) -> str:
        """'artifacts/<sha>.cu' of the one evaluated version whose sha starts with sha_prefix. Looked up by
        listing the folder (no glob, no link followed); a symlink or hard link there is not a version."""
        sha_prefix = sha_prefix.strip().lower()
        if not re.fullmatch(r"[0-9a-f]{6,64}", sha_prefix):
            raise WorkspaceError(f"{sha_prefix!r} is not a kernel sha (6 to 64 hex digits)")
        versions = [e.path.split("/")[-1] for e in self.fs.listing("artifacts", max_entries=100_000)
                    if e.kind == "file" and ARTIFACT_NAME.match(e.path.split("/")[-1])]
        matches = [name for name in versions if name.startswith(sha_prefix)]
        if not matches:
            known = ", ".join(name[:12] for name in sorted(versions)[:20])
            raise WorkspaceError(f"no evaluated version {sha_prefix}; known: {known or 'none'}")
        if len(matches) > 1:
            raise WorkspaceError(f"sha prefix {sha_prefix} is ambiguous ({len(matches)} versions); give more digits")
        return f"artifacts/{matches[0]}"

    def artifact_path(self, sha_prefix: str) -> Path:
        return self.fs.path(self.artifact_name(sha_prefix))

    def read_artifact(self, sha_prefix: str) -> str:
        return self.fs.read_text(self.artifact_name(sha_prefix), MAX_WRITE_BYTES * 4)

    # ---- confinement -------------------------------------------------------------------------------
    def check_writable(self, rel: str) -> None:
        parts = split_relative(rel, self.root.name, self.root)
        if not parts or parts[0] in PROTECTED or parts[0] == LOCK_FILE:
            raise WorkspaceError(f"refused: {rel} is kept by the campaign itself and is read-only; "
                                 "write kernel.cu or your own files")
        if redact(rel) != rel:      # the file's name would keep on disk what every record of it redacts
            raise WorkspaceError(f"refused: the path {redact(rel)} holds a secret (an API key or token); "
                                 "name the file without it")

    def resolve(self, rel: str, for_write: bool = False) -> Path:
        """The checked path of `rel` inside the workspace (no symlink on the way, a file of one name), or
        WorkspaceError saying why not."""
        if for_write:
            self.check_writable(rel)
        return self.fs.path(rel)

    # ---- loop state snapshots (resume) -------------------------------------------------------------
    def _snapshot_path(self, turn: int) -> Path:
        return self.root / "state" / f"turn-{turn:05d}.json"

    def write_snapshot(self, turn: int, state: dict) -> None:
        self.fs.write_text(f"state/turn-{turn:05d}.json", json.dumps(redact_json(state), default=str), durable=True)

    def load_snapshot(self, turn: int) -> dict | None:
        rel = f"state/turn-{turn:05d}.json"
        return json.loads(self.fs.read_text(rel, MAX_STATE_BYTES)) if self.fs.kind(rel) == "file" else None

    def prune_snapshots(self, committed_turn: int) -> None:
        """Keep the committed turn's snapshot and the one before; drop older ones and any from later turns."""
        for entry in self.fs.listing("state"):
            name = entry.path.split("/")[-1]
            if not re.fullmatch(r"turn-\d{5,}\.json", name):
                continue
            turn = int(name[5:-5])
            if turn <= committed_turn - SNAPSHOTS_KEPT or turn > committed_turn:
                (self.root / "state" / name).unlink(missing_ok=True)
