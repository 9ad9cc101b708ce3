"""Which files the compiler actually read for a build, and whether each lies where a kernel may include from.

build_guard's include scan reads the source as the preprocessor would and gives the early, friendly message;
but the preprocessor accepts more than any re-implementation sees (a form feed or vertical tab around `#`, a lone
CR as a line end, ...). So the build also has nvcc write the dependencies it really read (`-MD -MF kernel.d`:
both the device and the host preprocessing passes, as the lists of dev-only and host-only headers show), and
every one must lie in an allowed root: the build's copy of the sources (the kernel and its local headers) or a
folder on the compiler's own include search path (the system, C++ and CUDA headers, as `nvcc -E -Xcompiler -v`
lists them for this nvcc and these flags). Anything else — /etc/passwd, a file of the user's home — refuses the
build before it is linked, whatever spelling brought it in.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

_roots_cache: dict = {}


def dependency_flags(dep_file: Path) -> list[str]:
    return ["-MD", "-MF", str(dep_file)]


def compiler_roots(nvcc: str, flags: list[str], env: dict) -> list[str]:
    """The folders on nvcc's include search path (both passes) for these flags, normalised; cached."""
    key = (nvcc, tuple(flags))
    if key not in _roots_cache:
        with tempfile.TemporaryDirectory(prefix="workbench-roots-") as folder:
            empty = Path(folder) / "empty.cu"
            empty.write_text("\n")
            proc = subprocess.run([nvcc, *flags, "-E", "-Xcompiler", "-v", str(empty), "-o", os.devnull],
                                  capture_output=True, text=True, timeout=120, env=env, cwd=folder)
        roots, inside = set(), False
        for line in (proc.stdout + proc.stderr).splitlines():
            if line.startswith("#include ") and "search starts here" in line:
                inside = True
            elif line.startswith("End of search list"):
                inside = False
            elif inside and line.startswith(" "):
                roots.add(os.path.normpath(line.strip()))
        _roots_cache[key] = sorted(roots)
    return _roots_cache[key]


def read_dependencies(dep_file: Path, cwd: Path) -> list[str] | None:
    """The prerequisites of a make rule written by -MD, as absolute normalised paths (None: no such file)."""
    try:
        text = dep_file.read_text(errors="surrogateescape")
    except OSError:
        return None
    text = text.replace("\\\n", " ")
    tokens = [t.replace("\\ ", " ").replace("$$", "$").replace("\\#", "#")
              for t in re.findall(r"(?:\\.|[^\s\\])+", text)]
    deps, seen_target = [], False
    for token in tokens:
        if not seen_target:
            if token.endswith(":") or token == ":":
                seen_target = True
            continue
        if token.endswith(":"):               # a phony target (-MP): not a prerequisite
            continue
        deps.append(os.path.normpath(os.path.join(cwd, token)))
    return deps


def _inside(path: str, roots: list[str]) -> bool:
    real = os.path.realpath(path)
    for root in roots:
        for candidate, base in ((path, root), (real, os.path.realpath(root))):
            if candidate == base or candidate.startswith(base.rstrip("/") + "/"):
                return True
    return False


def outside_roots(dep_file: Path, cwd: Path, roots: list[str]) -> list[str]:
    """Reasons to refuse the build: files read from outside `roots`, or no dependency list at all."""
    deps = read_dependencies(dep_file, cwd)
    if deps is None:
        return ["the compiler did not report which files it read; the build is refused"]
    bad = [d for d in dict.fromkeys(deps) if not _inside(d, roots)]
    return [f"the compiler read {path}, which is neither the kernel, its local headers nor a system or CUDA "
            "header (an include spelled so that the early check missed it?)" for path in bad[:3]]
