"""The candidate's finished rows of an interrupted check, recorded by the trusted parent as they arrive, so that the
same check run again judges only the scenarios the interrupted run did not finish (issue 24).

A record is one file per run key under <cache>/resume/. The key is everything that makes a row valid: the
candidate's build artifact (its source sha and the bytes of the library built from it: flags, headers and the
compiler are in those), the baseline's, the problem's definition files, the requested anchors and the timing
switch, the timing-proof switches, and what the worker reported in its start event, before any candidate code
ran: the GPU, the software and timing versions (timing_cache.cache_env, as the timing cache's keys), the anchors'
versions and which were missing, the foreign-kernel check applied. The seed is not: each row was verified on its
own fresh inputs. Each accepted result event (worker_events.Protocol checked it) is appended as one checksummed
line (cache_file.encode_line) and fsynced before its progress line is printed. A line's key also covers its
scenario's every field, so a line of another record, a half-written line (a kill mid-write) or a damaged one
matches no scenario of this run and is ignored.

Only an interrupted run's rows are reused: a run whose worker reached `done` (every scenario judged) removes its
record, so checking the same file twice still measures twice. A row failed by a CUDA error (launch_error), a
crash or a timeout is never recorded: the next run judges that scenario again. A run holds its record under an
exclusive lock while it runs; another run of the same key meanwhile neither reuses nor records. Rows come only
from the parent's own appends: nothing a worker writes (its staging folder included) is read here.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Optional

from workbench.harness import cache_file, rep_count
from workbench.harness.result import FAILED, PASSED, UNSUPPORTED, ScenarioResult
from workbench.harness.timing_cache import cache_env
from workbench.harness.timing_proof import profile_samples_from_env

FOLDER = "resume"
FORMAT = 1
NO_RESUME_ENV = "WORKBENCH_NO_RESUME"
PROBLEM_FILES = ("problem.toml", "problem.py", "judge.py", "standins.py")
NOT_RECORDED = ("launch_error", "crash", "timeout")     # the scenario is judged again by the next run
STALE_S = 14 * 86400                                     # a record nobody resumed for two weeks is removed


def resume_wanted(request: dict, environ=os.environ) -> bool:
    """False under --no-resume (request.resume) or WORKBENCH_NO_RESUME=1: the run judges every scenario."""
    return bool(request.get("resume", True)) and (environ.get(NO_RESUME_ENV) or "0").strip() in ("", "0")


def judged_by_parent(job: dict, stdin) -> set:
    """The worker's side: the scenarios the parent says an interrupted run judged (one line after the start
    event, when the job says one comes). End of input or anything but {"judged": [names]} is none."""
    if not job.get("judged_after_start"):
        return set()
    try:
        names = json.loads(stdin.readline() or "{}").get("judged", [])
    except (ValueError, AttributeError):
        return set()
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()


def _file_sha(path) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def _artifact(spec: Optional[dict]) -> Optional[dict]:
    if not spec:
        return None
    return {"kind": spec["kind"], "sha": spec["sha"], "library": _file_sha(spec["path"]) if spec["kind"] == "so"
            else ""}


def prestart_key(job: dict, environ=os.environ) -> dict:
    """The key's parts the parent knows before its worker starts."""
    request, folder = job.get("request", {}), Path(job.get("problem") or ".")
    return {"format": FORMAT, "candidate": _artifact(job.get("candidate")), "baseline": _artifact(job.get("baseline")),
            "problem": {name: _file_sha(folder / name) for name in PROBLEM_FILES},
            "anchors": sorted(request.get("anchors", ())), "timing": bool(request.get("timing", True)),
            "device": job.get("device", ""), "profile_samples": profile_samples_from_env(environ),
            "rules": rep_count.rules_from_env(environ)}


def started_key(event: dict, anchors) -> dict:
    """The key's parts from the worker's start event (sent before any candidate code ran)."""
    versions = event.get("versions", {})
    return {"env": cache_env(event.get("gpu", ""), versions), "sms": versions.get("sms"),
            "timing_rules": versions.get("timing_rules"), "foreign_check": event.get("foreign_check"),
            "anchor_versions": {name: versions.get(f"anchor_{name}") for name in sorted(anchors)},
            "missing": sorted(event.get("missing_anchors", {}))}


def _digest(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def recordable(row: ScenarioResult) -> bool:
    return row.status in (PASSED, FAILED, UNSUPPORTED) and row.reason not in NOT_RECORDED


class ResumeRecord:
    """One run's record: `start` (at the worker's start event) opens and locks it and returns the rows to reuse,
    `add` appends each accepted row, `close(completed)` removes it when the run completed, else keeps it."""

    def __init__(self, cache_dir: Path, job: dict, eval_id: str):
        self.folder, self.job, self.eval_id = Path(cache_dir) / FOLDER, job, eval_id
        self.active = bool(job.get("candidate"))         # `workbench warm` has no candidate rows
        self.reuse = resume_wanted(job.get("request", {}))
        self.prestart = prestart_key(job) if self.active else {}
        self.started = time.strftime("%Y-%m-%d %H:%M")
        self.fd: Optional[int] = None
        self.path: Optional[Path] = None
        self.line_keys: dict[str, str] = {}       # scenario name -> its line key in this record
        self.reused: dict[str, ScenarioResult] = {}
        self.runs: dict[str, str] = {}            # interrupted run's eval id -> when it started
        self.busy = False

    def at_start(self, event: dict, stdin, progress) -> dict[str, ScenarioResult]:
        """The worker's start event came: the rows to reuse, told to the worker on its stdin (it skips them; the
        job's judged_after_start says a line comes), which is then closed, and the progress line saying so."""
        reused = self.start(event) if self.active else {}
        try:
            if self.active:
                stdin.write(json.dumps({"judged": sorted(reused)}) + "\n")
            stdin.close()
        except OSError:
            pass                  # the worker is gone already: its exit says why
        if self.line():
            progress(self.line())
        return reused

    def summary(self) -> dict:
        """For the result: how many rows were reused, and when the interrupted run(s) started."""
        return {"resumed_rows": len(self.reused), "resumed_from": ", ".join(sorted(set(self.runs.values())))}

    def start(self, event: dict) -> dict[str, ScenarioResult]:
        """Open this key's record (locked) and return the rows of its interrupted runs, by scenario name."""
        key = _digest(self.prestart, started_key(event, self.job.get("request", {}).get("anchors", ())))
        self.line_keys = {s["name"]: _digest(key, s) for s in self.job.get("scenarios", [])}
        self.path = self.folder / f"{key}.rows"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            _prune(self.folder)
            self.fd = _open_locked(self.path)
            self.busy = self.fd is None
        except OSError:
            self.fd = None        # a cache folder that cannot be written: the run is only not resumable
        if self.fd is None:
            return {}
        try:
            data = _read_all(self.fd)
            end = data.rfind(b"\n") + 1 if self.reuse else 0     # --no-resume: a new record, nothing old kept
            if end < len(data):
                os.ftruncate(self.fd, end)    # a line cut short by a kill: the next append (O_APPEND) starts a line
        except OSError:
            self.close(completed=False)       # unreadable: this run is only not resumable
            return {}
        by_line = {k: name for name, k in self.line_keys.items()}
        for line_key, entry in cache_file.decode_lines(data[:end])[0]:
            name = by_line.get(line_key)
            row = _row(entry, name, self.job["scenarios"]) if name else None
            if row is not None:
                self.reused[name] = row
                self.runs[row.resumed_from] = entry["started"]
        return dict(self.reused)

    def line(self) -> str:
        """The progress line saying what was reused ('' when nothing was)."""
        if self.busy:
            return "resume: another run of this check holds its record; every scenario is judged"
        if not self.reused:
            return ""
        plural = "s" if len(set(self.runs.values())) > 1 else ""
        return (f"resume: {len(self.reused)} of {len(self.line_keys)} scenarios from the interrupted run{plural} of "
                f"{self.summary()['resumed_from']}, not judged again (--no-resume or {NO_RESUME_ENV}=1 judges "
                "them again)")

    def add(self, row: ScenarioResult) -> None:
        """Make an accepted row durable now (before its progress line), unless it is not to be reused."""
        if self.fd is None or row.name not in self.line_keys or not recordable(row):
            return
        entry = {"row": row.to_dict(), "run": self.eval_id, "started": self.started}
        try:
            os.write(self.fd, cache_file.encode_line(self.line_keys[row.name], entry))
            os.fsync(self.fd)
        except OSError:
            pass                  # a full disk: that row is judged again next time

    def close(self, completed: bool) -> None:
        if self.fd is None:
            return
        if completed and self.path is not None:
            try:
                os.unlink(self.path)          # under our lock: a run waiting for it finds a new file
            except OSError:
                pass
        os.close(self.fd)
        self.fd = None


def _row(entry: dict, name: str, scenarios: list) -> Optional[ScenarioResult]:
    """The recorded row of `name`, marked as resumed, or None when the entry is not one."""
    if not (isinstance(entry.get("row"), dict) and isinstance(entry.get("run"), str)
            and isinstance(entry.get("started"), str)):
        return None
    try:
        row = ScenarioResult.from_dict(entry["row"])
    except (TypeError, ValueError, KeyError):
        return None               # a record of an older row format
    scenario = next((s for s in scenarios if s["name"] == name), None)
    if row.scenario != scenario or not recordable(row):
        return None
    row.resumed_from = entry["run"]
    return row


def _open_locked(path: Path) -> Optional[int]:
    """An fd of `path` under an exclusive lock, or None when another run holds it. The file is checked to still
    be the one at `path` after the lock: a run that completed meanwhile removed it."""
    for _ in range(5):
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            here = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            here = None
        mine = os.fstat(fd)
        if here is not None and (here.st_ino, here.st_dev) == (mine.st_ino, mine.st_dev):
            os.lseek(fd, 0, os.SEEK_END)
            return fd
        os.close(fd)
    return None


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    os.lseek(fd, 0, os.SEEK_END)
    return b"".join(chunks)


def _prune(folder: Path) -> None:
    """Remove records nobody resumed for STALE_S (only unlocked ones: a running check keeps its own)."""
    now = time.time()
    for path in folder.glob("*.rows"):
        try:
            if now - path.stat().st_mtime < STALE_S:
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink()
        except OSError:
            pass
        finally:
            os.close(fd)


def recorded_rows(cache_dir: Path) -> dict[str, dict]:
    """Scenario name -> row of every record under cache_dir, whatever its key (for tools that look at what an
    interrupted run left, e.g. scripts/coldrun.py; a check reuses only its own key's, through ResumeRecord)."""
    rows: dict[str, dict] = {}
    for path in sorted((Path(cache_dir) / FOLDER).glob("*.rows")):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        for _, entry in cache_file.decode_lines(data)[0]:
            row = entry.get("row")
            if isinstance(row, dict) and isinstance(row.get("scenario"), dict):
                rows[row["scenario"].get("name", "")] = row
    return rows
