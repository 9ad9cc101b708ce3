"""A campaign's workspace: campaigns/<id>/ holds everything one campaign reads and writes.

    kernel.cu              the working kernel the agent edits
    artifacts/<sha>.cu     every version that was evaluated (sha256 of the text), never modified
    config.json            suite, stop condition, mode, budgets, model (no secrets)
    traces/<table>/<id>/   the session's parquet parts (workbench.traces.writer layout)
    state/turn-NNNNN.json  loop state after each committed turn (resume), the last two kept

The agent's file tools go through `resolve`, which confines them to this folder: paths outside it, symlinks
that lead out of it, and writes into the campaign's own records are refused with a message the agent can read.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from workbench.traces.writer import redact

KERNEL_FILE = "kernel.cu"
CONFIG_FILE = "config.json"
PROTECTED = ("artifacts", "traces", "state", CONFIG_FILE)    # read-only to the agent
MAX_READ_BYTES = 1 << 20
MAX_WRITE_BYTES = 512 << 10
MAX_PATH_CHARS = 1024
SNAPSHOTS_KEPT = 2
CAMPAIGN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,80}$")


class WorkspaceError(ValueError):
    """A refused path or a bad campaign folder; the message is meant for the agent or the person."""


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Workspace:
    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()

    # ---- creation ----------------------------------------------------------------------------------
    @classmethod
    def create(cls, base: str | Path, campaign_id: str, kernel_source: str | Path | None, config: dict,
               kernel_text: str | None = None) -> "Workspace":
        if not CAMPAIGN_ID.match(campaign_id):
            raise WorkspaceError(f"campaign id {campaign_id!r}: use letters, digits, '.', '_' or '-'")
        root = Path(base) / campaign_id
        if root.exists():
            raise WorkspaceError(f"{root} already exists; resume it with --resume {campaign_id} or pick another id")
        text = redact(kernel_text if kernel_text is not None else Path(kernel_source).read_text())
        for sub in ("artifacts", "traces", "state"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        ws = cls(root)
        ws.kernel_path.write_text(text)
        ws.save_artifact(text)
        ws.write_config(config)
        return ws

    def write_config(self, config: dict) -> None:
        self.config_path.write_text(redact(json.dumps(config, indent=2, default=str)))

    @classmethod
    def open(cls, base: str | Path, campaign_id: str) -> "Workspace":
        root = Path(base) / campaign_id
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

    def read_config(self) -> dict:
        return json.loads(self.config_path.read_text())

    # ---- artifacts ---------------------------------------------------------------------------------
    def save_artifact(self, text: str) -> str:
        text = redact(text)
        sha = text_sha(text)
        path = self.artifacts_dir / f"{sha}.cu"
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text)
            os.replace(tmp, path)
        return sha

    def artifact_path(self, sha_prefix: str) -> Path:
        sha_prefix = sha_prefix.strip().lower()
        if not re.fullmatch(r"[0-9a-f]{6,64}", sha_prefix):
            raise WorkspaceError(f"{sha_prefix!r} is not a kernel sha (6 to 64 hex digits)")
        matches = sorted(self.artifacts_dir.glob(f"{sha_prefix}*.cu"))
        if not matches:
            known = ", ".join(p.stem[:12] for p in self.artifacts_dir.glob("*.cu"))
            raise WorkspaceError(f"no evaluated version {sha_prefix}; known: {known or 'none'}")
        if len(matches) > 1:
            raise WorkspaceError(f"sha prefix {sha_prefix} is ambiguous ({len(matches)} versions); give more digits")
        return matches[0]

    # ---- confinement -------------------------------------------------------------------------------
    def resolve(self, rel: str, for_write: bool = False) -> Path:
        """The real path of `rel` inside the workspace, or WorkspaceError saying why not."""
        if not isinstance(rel, str) or not rel.strip():
            raise WorkspaceError("refused: empty path")
        if "\x00" in rel or len(rel) > MAX_PATH_CHARS:
            raise WorkspaceError("refused: malformed path")
        candidate = Path(rel) if os.path.isabs(rel) else self.root / rel
        lexical = Path(os.path.normpath(candidate))
        real = Path(os.path.realpath(candidate))
        if not _inside(lexical, self.root):
            raise WorkspaceError(f"refused: {rel} is outside the campaign workspace ({self.root.name}/); "
                                 "use paths relative to it, e.g. kernel.cu")
        if not _inside(real, self.root):
            raise WorkspaceError(f"refused: {rel} is a symlink that leads outside the campaign workspace")
        if for_write:
            top = real.relative_to(self.root).parts[:1]
            if real == self.root or (top and top[0] in PROTECTED):
                raise WorkspaceError(f"refused: {rel} is kept by the campaign itself and is read-only; "
                                     "write kernel.cu or your own files")
        return real

    # ---- loop state snapshots (resume) -------------------------------------------------------------
    def _snapshot_path(self, turn: int) -> Path:
        return self.root / "state" / f"turn-{turn:05d}.json"

    def write_snapshot(self, turn: int, state: dict) -> None:
        path = self._snapshot_path(turn)
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(redact(json.dumps(state, default=str)))
        os.replace(tmp, path)

    def load_snapshot(self, turn: int) -> dict | None:
        path = self._snapshot_path(turn)
        return json.loads(path.read_text()) if path.exists() else None

    def prune_snapshots(self, committed_turn: int) -> None:
        """Keep the committed turn's snapshot and the one before; drop older ones and any from later turns."""
        for path in (self.root / "state").glob("turn-*.json"):
            turn = int(path.stem.split("-")[1])
            if turn <= committed_turn - SNAPSHOTS_KEPT or turn > committed_turn:
                path.unlink(missing_ok=True)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
