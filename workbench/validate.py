"""The validation step every command runs before it spends anything: builds, GPU time, API dollars, folders.

Each check either returns what it read (the suite's scenarios, the kernel's text) or raises `UsageError` with
one line: what is wrong, where, and what to do. Nothing here writes: a refused request leaves no campaign
folder, no trace row and no output file behind.

    validate.stop(args.stop)                       # parsed, and tried on a sample result (`1/0` is refused)
    validate.suite(args.suite, warn=print)          # loaded; unknown columns are warned about
    validate.kernel(args.kernel)                    # a UTF-8 file, not a folder
    validate.output_file(args.json, "--json")       # a file in an existing folder, not a folder
    validate.arch(args.arch)                        # a target this nvcc builds for
    validate.output_dir(args.traces, "--traces")    # a folder we can create or write in
    validate.problem(args.problem, args.kernel)     # the problem named, or the one whose folder holds the kernel
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional

from workbench.arguments import UsageError

EXAMPLE_KERNEL = "kernels/attn_fwd/original.cu"
NAME_MAX_BYTES = 255            # one name in a path (Linux NAME_MAX); longer ones fail every system call
PATH_MAX_BYTES = 4095


def shown_path(path) -> str:
    """A path as a one-line message shows it: quoted, and cut in the middle when it is very long."""
    text = str(path)
    return repr(text if len(text) <= 80 else text[:40] + "..." + text[-30:])


def path_name(path, option: str) -> None:
    """A path the system can look up: no NUL, no name longer than 255 bytes, at most 4095 bytes in all. Checked
    before anything stats the path: there the same mistake is an OSError, not a message."""
    text = str(path)
    if "\x00" in text:
        raise UsageError(f"{option}: {shown_path(text)} holds a NUL character; pass a real path")
    data = os.fsencode(text)
    if len(data) > PATH_MAX_BYTES:
        raise UsageError(f"{option}: {shown_path(text)} is {len(data)} bytes long, more than the {PATH_MAX_BYTES} "
                         "a path may have; use a shorter path")
    longest = max((part for part in data.split(b"/")), key=len, default=b"")
    if len(longest) > NAME_MAX_BYTES:
        raise UsageError(f"{option}: {shown_path(text)}: one name in it is {len(longest)} bytes long, more than the "
                         f"{NAME_MAX_BYTES} a file name may have; use a shorter name")


def problem(name: Optional[str], kernel_path: str = "", option: str = "--problem"):
    """The problem's definition (harness/problems.py): the one named, else the one whose folder holds the kernel,
    else attention."""
    from workbench.harness import problems

    try:
        return problems.load(name or problems.infer(kernel_path) or None)
    except problems.ProblemError as err:
        raise UsageError(f"{option}: {err}") from None


def stop(expr: Optional[str], option: str = "--stop", anchors=()) -> None:
    """A stop predicate that parses and evaluates to a condition on a sample result ('' or None: never stop);
    `anchors`: a problem's anchors beyond attention's, whose figures it may name."""
    from workbench.harness.stop import StopExprError, validate_stop

    if not expr or not expr.strip():
        return
    try:
        validate_stop(expr, anchors)
    except StopExprError as err:
        raise UsageError(f"{option}: {err}") from None


def suite(name, option: str = "--suite", warn: Optional[Callable[[str], None]] = None, problem=None) -> list:
    """The scenarios of a suite name or CSV path (of `problem`, a definition; default attention's)."""
    from workbench.harness.scenarios import SuiteError, load_suite

    path_name(name, option)
    try:
        return load_suite(name, warn=warn, problem=problem)
    except SuiteError as err:
        raise UsageError(f"{option}: {err}") from None


def text_file(path, option: str, what: str = "file", example: str = "") -> str:
    """The UTF-8 text of an existing file (not a folder)."""
    from workbench.harness.scenarios import decode_utf8

    path_name(path, option)
    p = Path(path)
    hint = f" (e.g. {example})" if example else ""
    if not p.exists():
        raise UsageError(f"{option}: {what} {str(path)!r} not found; pass the path of an existing {what}{hint}")
    if p.is_dir():
        raise UsageError(f"{option}: {str(path)!r} is a directory; pass the path of a {what} inside it{hint}")
    try:
        data = p.read_bytes()
    except OSError as err:
        raise UsageError(f"{option}: cannot read {str(path)!r}: {err.strerror}; check its permissions") from None
    try:
        return decode_utf8(data, path, what)
    except UnicodeError as err:
        raise UsageError(f"{option}: {err}") from None


def kernel(path, option: str = "--kernel", standin_ok: bool = False, problem=None) -> str:
    """A candidate kernel: a UTF-8 .cu file, or `standin:NAME` (of `problem`'s stand-ins, a definition; default
    attention's) where stand-ins are allowed. Returns its text ('' for a stand-in)."""
    path = str(path)
    if path.startswith("standin:"):
        if not standin_ok:
            raise UsageError(f"{option}: {path!r} is a CPU stand-in, which only `workbench check` runs; pass a .cu "
                             f"file (e.g. {EXAMPLE_KERNEL})")
        if problem is None:
            from workbench.harness.standins import STANDINS
        else:
            STANDINS = problem.standins.STANDINS
        name = path.split(":", 1)[1]
        if name not in STANDINS:
            raise UsageError(f"{option}: no CPU stand-in named {name!r}; choose one of {', '.join(sorted(STANDINS))}")
        return ""
    return text_file(path, option, "kernel file", EXAMPLE_KERNEL)


def arch(name: str, option: str = "--arch") -> None:
    """An nvcc target this machine's nvcc builds for (`nvcc --list-gpu-code`), e.g. sm_90a or sm_100a: a usage
    error, not a failed candidate. Without nvcc only the form is checked (the build then says nvcc is missing)."""
    import re
    import shutil
    import subprocess

    match = re.fullmatch(r"sm_(\d+)([af]?)", name or "")
    if not match:
        raise UsageError(f"{option}: {name!r} is not an nvcc target; use the form sm_90a (H100/H200), sm_100a, sm_80")
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return
    try:
        listed = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return
    if listed and f"sm_{match.group(1)}" not in listed:
        raise UsageError(f"{option}: {name!r} is not a target this nvcc builds for; choose one of "
                         f"{', '.join(listed)} (an a or f suffix where the GPU needs it: sm_90a for H100/H200)")


def _first_existing(p: Path) -> Path:
    p = p.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _writable_parent(p: Path, option: str, shown: str) -> None:
    ancestor = _first_existing(p.parent)
    if not ancestor.is_dir():
        raise UsageError(f"{option}: {shown!r} cannot be created: {str(ancestor)!r} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: {shown!r} cannot be created: {str(ancestor)!r} is not writable; choose a "
                         "path you can write")


def _no_secret_in_name(shown: str, option: str) -> None:
    """An output's name stays on disk unredacted: one that holds a key is refused."""
    from workbench.redaction import redact
    if redact(shown) != shown:
        raise UsageError(f"{option}: the path {redact(shown)!r} holds a secret (an API key or token); "
                         "name the output without it")


def output_file(path, option: str) -> None:
    """A file the command will write: not a directory, and its folder can be created or written in."""
    if path is None or str(path) == "":
        return
    path_name(path, option)
    p, shown = Path(path), str(path)
    _no_secret_in_name(shown, option)
    if p.is_dir():
        raise UsageError(f"{option}: {shown!r} is a directory; pass a file name (e.g. "
                         f"{os.path.join(shown, 'out' + (Path(shown).suffix or '.json'))})")
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{option}: {shown!r} is not writable; choose another file")
    if not p.absolute().parent.is_dir():         # a typo in a folder name is not a request to make folders
        raise UsageError(f"{option}: the folder of {shown!r} does not exist; create it first (mkdir -p "
                         f"{os.path.dirname(shown) or '.'}) or name a file in an existing folder")
    _writable_parent(p, option, shown)


def output_dir(path, option: str) -> None:
    """A folder the command will write in: an existing directory, or one that can be created."""
    if path is None or str(path) == "":
        return
    path_name(path, option)
    p, shown = Path(path), str(path)
    _no_secret_in_name(shown, option)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option}: {shown!r} is a file, not a directory; pass a directory")
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise UsageError(f"{option}: {shown!r} is not writable; choose a directory you can write")
        return
    _writable_parent(p, option, shown)


def input_dirs(paths, option: str, what: str = "trace directory") -> None:
    """Folders the command reads: each one exists and is a folder (a file named there is told apart)."""
    for path in paths:
        path_name(path, option)
        p = Path(path)
        if not p.exists():
            raise UsageError(f"{option}: {str(path)!r}: no such {what}; pass an existing folder")
        if not p.is_dir():
            raise UsageError(f"{option}: {str(path)!r} is a file, not a {what}; pass the folder (e.g. data/traces)")
