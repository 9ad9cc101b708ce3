"""What an agent may name in a call, checked before a turn is spent: a kernel file, a suite, a claim or notes text.

Every file an agent names is read through the workspace's one rule (campaign/confine.py): inside the campaign's
folder, through no link, a regular file with one name. A suite is a name of the suites folder (smoke, dev26, ...)
or a CSV file of the workspace; a path outside gets the same one line whether or not a file is there, so the
answer tells nothing about the machine, and no outside file is opened, let alone quoted. A FIFO, a device or
/dev/stdin is refused without being read. The suite text the check was given is kept as
`artifacts/suite-<sha>.csv`, which the harness reads: a file swapped in the workspace afterwards changes nothing.
"""
from __future__ import annotations

import errno
import hashlib
import re
from pathlib import Path

from workbench.campaign.workspace import KERNEL_FILE, Workspace, WorkspaceError

MAX_KERNEL_BYTES = 2 << 20              # a single-file kernel; the workspace's file tools write at most 512 KiB
MAX_SUITE_BYTES = 1 << 20
MAX_NOTE_CHARS = 20_000                 # a claim or notes argument (a 2 MB one was stored whole: issue 27)
SUITE_NAME = re.compile(r"[A-Za-z0-9_\-]{1,64}")


class CampaignError(WorkspaceError):
    """Bad input to an external campaign (unknown campaign, path outside it, missing kernel, spent budget);
    the message is one line saying what, where and what to do."""


def _from_cwd(ws: Workspace, path: str) -> str:
    """A relative path that names nothing in the workspace but exists from the current folder (a person's shell
    inside a campaign's folder): its absolute form, which the workspace rule then accepts only inside."""
    here = Path(path)
    try:
        if not here.is_absolute() and not (ws.root / here).exists() and here.exists():
            return str(here.resolve())
    except OSError as err:          # a name longer than the system allows: the workspace rule says so in one line
        if err.errno != errno.ENAMETOOLONG:
            raise CampaignError(f"{path[:80]}: cannot be looked up ({err.strerror}); name a file in the workspace, "
                                f"e.g. {KERNEL_FILE}") from None
    return path


def resolve_kernel(ws: Workspace, path: str | None) -> Path:
    """The kernel file a call names: the campaign's kernel.cu by default; a relative path is read inside the
    workspace (or from the current directory when it exists there and lies inside it); never outside."""
    path = (path or "").strip() or KERNEL_FILE
    real = ws.resolve(_from_cwd(ws, path))
    if not real.is_file():
        raise CampaignError(f"{path}: no such kernel file in campaign {ws.campaign_id}'s workspace "
                            f"({ws.root}); write it there first, or check {KERNEL_FILE}")
    return real


def kernel_text(ws: Workspace, kernel: Path) -> str:
    """The UTF-8 text of a resolved kernel file (read through the workspace rule)."""
    try:
        return ws.fs.read_text(str(kernel), MAX_KERNEL_BYTES)
    except WorkspaceError as err:
        raise CampaignError(f"{err}; save the kernel as UTF-8 text (e.g. iconv -f latin1 -t utf-8)"
                            if "not UTF-8" in str(err) else str(err)) from None


def note(text: str | None, name: str) -> str:
    """A claim or notes text: stored in the trace rows and read by the policy, so it has a size cap."""
    text = text or ""
    if len(text) > MAX_NOTE_CHARS:
        raise CampaignError(f"{name}: {len(text)} characters, more than the {MAX_NOTE_CHARS} a {name} may have; say "
                            "what you changed in a few sentences")
    return text


def suite_names(problem=None) -> str:
    from workbench.harness.scenarios import suite_names as names
    return names(problem)


def named_suite(suite: str, problem=None) -> str:
    """A suite of the problem's suites folder by its name (attention's: smoke, dev26, full, edge), checked by
    loading it. `problem`: a definition (problems.load), default attention's."""
    from workbench.harness.scenarios import SuiteError, load_suite, resolve_suite_path

    path = resolve_suite_path(suite, problem)
    if not path.is_file() or path.is_symlink():
        raise CampaignError(f"no suite {suite!r}; use one of {suite_names(problem)}, or a .csv file of the "
                            "workspace")
    try:
        load_suite(path, problem=problem)
    except SuiteError as err:
        raise CampaignError(str(err)) from None
    return suite


def agent_suite(ws: Workspace, suite: str, problem=None) -> str:
    """The suite an agent names, as the harness should be given it: a suite name, or the path of the kept copy
    of a workspace CSV (artifacts/suite-<sha>.csv). CampaignError (one line) for anything else."""
    from workbench.harness.scenarios import SuiteError, parse_suite

    suite = suite.strip()
    if SUITE_NAME.fullmatch(suite):
        return named_suite(suite, problem)
    outside = CampaignError(f"suite {suite[:80]!r}: use a suite name ({suite_names(problem)}) or a .csv file inside "
                            f"the campaign workspace ({ws.root}); files elsewhere are not read")
    if not suite.endswith(".csv"):
        raise outside
    rel = _from_cwd(ws, suite)
    try:
        data = ws.fs.read_bytes(rel, MAX_SUITE_BYTES)      # inside, no link, a regular file of one name
    except WorkspaceError as err:
        raise (outside if "outside" in str(err) else CampaignError(f"suite {suite[:80]!r}: {err}")) from None
    try:
        text = data.decode("utf-8-sig")
        parse_suite(text, suite, problem=problem)
    except UnicodeDecodeError as err:
        raise CampaignError(f"suite {suite!r}: not UTF-8 (byte {err.start}); save it as UTF-8 text") from None
    except SuiteError as err:
        raise CampaignError(str(err)) from None
    kept = f"artifacts/suite-{hashlib.sha256(data).hexdigest()[:16]}.csv"
    if ws.fs.kind(kept) is None:
        ws.fs.write_bytes(kept, data, durable=True)
    return str(ws.fs.path(kept))


def call_suite(ws: Workspace, given: str | None, configured: str, problem=None) -> str:
    """The suite one call runs: the campaign's own (set by the person who made it) when none is named, else
    what `agent_suite` accepts."""
    from workbench.harness.scenarios import SuiteError, load_suite

    given = (given or "").strip()
    if given and given != configured:
        return agent_suite(ws, given, problem)
    try:
        load_suite(configured, problem=problem)
    except SuiteError as err:
        raise CampaignError(str(err)) from None
    return configured
