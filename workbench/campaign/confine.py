"""One rule for every path an agent names: inside the workspace, through no link, onto a file of one name.

    fs = Confined(root)
    fs.read_bytes("notes/plan.md", limit)      fs.write_bytes("kernel.cu", data)
    fs.kind("notes")  -> "file" | "dir" | None  fs.listing(".")  -> [Entry, ...]

The rule, applied to file tools, revert, artifact lookup, suites and builds alike:
  * the path is relative to the workspace and stays inside it lexically (no '..' out, no absolute path, no '~'
    expansion, no NUL, at most 1024 characters, no name over 255 bytes);
  * no component is a symlink — not even one that points back inside: each folder is opened with O_NOFOLLOW
    relative to the one before (openat), so a link swapped in halfway cannot redirect the walk;
  * a file must be a regular file with one name (st_nlink == 1). The workspace writes every file by creating a
    new one and renaming it over the old name, so it never makes a second name; a file with two names is a
    hard link someone else made, possibly to a file outside, and is refused for reading and writing;
  * writes never open an existing file: they create a temp file beside it (O_EXCL) and rename it over the
    name, so even a link planted after the check cannot make the write land outside.
Every refusal is a WorkspaceError whose message the agent can act on.
"""
from __future__ import annotations

import errno
import os
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

from workbench.redaction import replace_surrogates

MAX_PATH_CHARS = 1024
NAME_MAX_BYTES = 255                 # one name in a path (Linux NAME_MAX)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class WorkspaceError(ValueError):
    """A refused path or a bad campaign folder; the message is meant for the agent or the person."""


@dataclass
class Entry:
    path: str            # relative to the workspace, '/'-separated
    kind: str            # file | dir | symlink | hardlink | other
    size: int = 0
    target: str = ""     # for a symlink: what it points at (never followed)


def split_relative(rel: str, root_name: str = "workspace", root: Path | None = None) -> list[str]:
    """The components of a workspace-relative path, or WorkspaceError. '.' and 'a/../b' are normalised; an
    absolute path is accepted only when it lies inside `root` (a person's shell passing a full path)."""
    if not isinstance(rel, str) or not rel.strip():
        raise WorkspaceError("refused: empty path")
    if "\x00" in rel or len(rel) > MAX_PATH_CHARS:
        raise WorkspaceError("refused: malformed path (NUL byte or longer than 1024 characters)")
    if os.path.isabs(rel) and root is not None:
        norm = os.path.normpath(rel)
        for base in {str(root), os.path.realpath(root)}:
            if norm == base or norm.startswith(base.rstrip("/") + "/"):
                rel = os.path.relpath(norm, base)
                break
    if os.path.isabs(rel) or rel.startswith("~"):
        raise WorkspaceError(f"refused: {rel} is outside the campaign workspace ({root_name}/); "
                             "use paths relative to it, e.g. kernel.cu")
    parts: list[str] = []
    for part in rel.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if len(os.fsencode(part)) > NAME_MAX_BYTES:      # the system refuses it with an OSError, not a message
            raise WorkspaceError(f"refused: a name in {rel[:60]!r}... is longer than the {NAME_MAX_BYTES} bytes a "
                                 "file name may have; use a shorter name")
        if part == "..":
            if not parts:
                raise WorkspaceError(f"refused: {rel} is outside the campaign workspace ({root_name}/); "
                                     "use paths relative to it, e.g. kernel.cu")
            parts.pop()
        else:
            parts.append(part)
    return parts


class Confined:
    def __init__(self, root: str | Path):
        self.root = Path(os.path.realpath(root))

    # ---- walking ----------------------------------------------------------------------------------------
    def _symlink_error(self, rel: str, parts: list[str], index: int) -> WorkspaceError:
        where = "/".join(parts[:index + 1])
        try:
            target = os.readlink(self.root.joinpath(*parts[:index + 1]))
            lands = Path(os.path.realpath(self.root.joinpath(*parts[:index], target)))
            outside = not (lands == self.root or self.root in lands.parents)
        except OSError:
            outside = False
        if outside:
            return WorkspaceError(f"refused: {rel} is a symlink that leads outside the campaign workspace "
                                  f"({where}); the file tools follow no links")
        return WorkspaceError(f"refused: {rel} goes through a symlink ({where}); the file tools follow no links, "
                              "use the real path")

    def _open_dirs(self, rel: str, parts: list[str], create: bool = False) -> int:
        """An fd of the folder holding the last component, opened without following any link."""
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for i, name in enumerate(parts):
                try:
                    next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise WorkspaceError(f"{rel}: no such file or folder ({'/'.join(parts[:i + 1])} is missing)")
                    os.mkdir(name, 0o755, dir_fd=fd)
                    next_fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as err:
                    if err.errno == errno.ELOOP or _is_link(fd, name):
                        raise self._symlink_error(rel, parts, i) from None
                    if err.errno == errno.ENOTDIR:
                        raise WorkspaceError(f"{rel}: {'/'.join(parts[:i + 1])} is a file, not a folder") from None
                    raise
                os.close(fd)
                fd = next_fd
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _parent(self, rel: str, create: bool = False) -> tuple[int, str, list[str]]:
        parts = split_relative(rel, self.root.name, self.root)
        if not parts:
            raise WorkspaceError(f"refused: {rel} is the workspace itself, not a file in it")
        return self._open_dirs(rel, parts[:-1], create), parts[-1], parts

    # ---- questions --------------------------------------------------------------------------------------
    def kind(self, rel: str) -> str | None:
        """'file', 'dir' or None (missing); symlinks and hard links anywhere in the path are refused."""
        parts = split_relative(rel, self.root.name, self.root)
        if not parts:
            return "dir"
        fd = self._open_dirs(rel, parts[:-1])
        try:
            try:
                st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None
            if stat.S_ISLNK(st.st_mode):
                raise self._symlink_error(rel, parts, len(parts) - 1)
            if stat.S_ISDIR(st.st_mode):
                return "dir"
            _check_file(rel, st)
            return "file"
        finally:
            os.close(fd)

    def path(self, rel: str) -> Path:
        """The checked absolute path of rel (for programs that need a path: the compiler, the suite loader)."""
        self.kind(rel)
        return self.root.joinpath(*split_relative(rel, self.root.name, self.root))

    # ---- reading ----------------------------------------------------------------------------------------
    def read_bytes(self, rel: str, limit: int) -> bytes:
        dir_fd, name, parts = self._parent(rel)
        try:
            try:
                # O_NONBLOCK: a FIFO planted in the workspace must not hang the read
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
            except FileNotFoundError:
                raise WorkspaceError(f"{rel}: no such file") from None
            except OSError as err:
                if err.errno == errno.ELOOP:
                    raise self._symlink_error(rel, parts, len(parts) - 1) from None
                raise
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(handle.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise WorkspaceError(f"{rel}: no such file (it is a folder)")
            _check_file(rel, st)
            if st.st_size > limit:
                raise WorkspaceError(f"refused: {rel} is {st.st_size} bytes, more than the {limit} a read may return")
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise WorkspaceError(f"refused: {rel} is more than the {limit} bytes a read may return")
        return data

    def read_text(self, rel: str, limit: int) -> str:
        try:
            return self.read_bytes(rel, limit).decode("utf-8")
        except UnicodeDecodeError as err:
            raise WorkspaceError(f"{rel}: not UTF-8 (byte {err.start}); only text files can be read") from None

    # ---- writing ----------------------------------------------------------------------------------------
    def write_bytes(self, rel: str, data: bytes, durable: bool = False) -> None:
        dir_fd, name, parts = self._parent(rel, create=True)
        try:
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if st is not None:
                if stat.S_ISLNK(st.st_mode):
                    raise self._symlink_error(rel, parts, len(parts) - 1)
                if stat.S_ISDIR(st.st_mode):
                    raise WorkspaceError(f"{rel}: is a folder; write a file inside it")
                _check_file(rel, st)
            tmp = f".{name[:64]}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                         dir_fd=dir_fd)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    if durable:
                        handle.flush()
                        os.fsync(handle.fileno())
                os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dir_fd)
                except OSError:
                    pass
                raise
            if durable:
                os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def write_text(self, rel: str, text: str, durable: bool = False) -> None:
        self.write_bytes(rel, replace_surrogates(text).encode("utf-8"), durable)

    # ---- listing ----------------------------------------------------------------------------------------
    def listing(self, rel: str = ".", skip_top: tuple = (), max_entries: int = 400) -> list[Entry]:
        """Entries under rel, depth first and sorted; links are reported, never followed; a dangling link or an
        entry that vanishes meanwhile is one line, not a failure."""
        parts = split_relative(rel, self.root.name, self.root)
        fd = self._open_dirs(rel, parts)
        out: list[Entry] = []
        try:
            self._list_into(fd, parts, out, skip_top, max_entries)
        finally:
            os.close(fd)
        return out

    def _list_into(self, fd: int, prefix: list[str], out: list, skip_top: tuple, max_entries: int) -> None:
        for name in sorted(os.listdir(fd)):
            if len(out) >= max_entries:
                return
            if not prefix and name in skip_top:
                continue
            rel = "/".join(prefix + [name])
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(name, dir_fd=fd)
                except OSError:
                    target = "?"
                out.append(Entry(rel, "symlink", target=target))
            elif stat.S_ISDIR(st.st_mode):
                out.append(Entry(rel, "dir"))
                try:
                    sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    continue
                try:
                    self._list_into(sub, prefix + [name], out, skip_top, max_entries)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode):
                out.append(Entry(rel, "hardlink" if st.st_nlink > 1 else "file", st.st_size))
            else:
                out.append(Entry(rel, "other"))


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _check_file(rel: str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise WorkspaceError(f"refused: {rel} is not a regular file (a device, FIFO or socket)")
    if st.st_nlink > 1:
        raise WorkspaceError(f"refused: {rel} has {st.st_nlink} names (a hard link, possibly to a file outside "
                             "the workspace); the workspace never makes hard links, so it uses no file that has one")
