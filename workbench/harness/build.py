"""Build one candidate .cu into a ctypes-loadable shared library, with its resource report.

The build is cached by a hash of the source, the flags and the nvcc version, so re-checking an unchanged
kernel costs nothing. Compile errors come back as records (file, line, message) plus a one-line summary,
and forbidden libraries (CUTLASS, CuTe, cuBLAS(Lt), cuDNN) are refused on the source and on the result. These
are spellings; the worker's foreign-kernel check (own_kernels.py) does not rely on them, and needs the list of
kernels the library holds, which the build records (kernel_names.py).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from workbench.harness import build_guard, build_tripwires, kernel_names
from workbench.harness import nvcc as nvcc_module
from workbench.harness.foreign import imitates_library
from workbench.harness.nvcc import ContainedBuild

DEFAULT_ARCH = "sm_90a"
ENTRY_POINT = "attn_fwd"
BASE_FLAGS = ["-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v", "-lineinfo"]
COMPILE_FLAGS = [f for f in BASE_FLAGS if f != "-shared"]     # compiled alone (-c), checked, then linked

# What a candidate may not use: the point of the exercise is a kernel written by hand.
FORBIDDEN_INCLUDE = re.compile(r"(cutlass|cute/|cublas|cublasLt|cudnn)", re.IGNORECASE)
FORBIDDEN_LIB = re.compile(r"lib(cublas|cublasLt|cudnn|cutlass)", re.IGNORECASE)
FORBIDDEN_SYMBOL = re.compile(r"^(cublas|cudnn|cutlass)", re.IGNORECASE)
# Dynamic loading and lookup would let a kernel reach the libraries torch has loaded; any mention is refused
# (a call, `&dlopen`, RTLD_DEFAULT as a handle). Run time does not rely on this: see own_kernels.py.
FORBIDDEN_CALLS = re.compile(r"\b(dlopen|dlsym|dlvsym|dlmopen|__libc_dlopen_mode|RTLD_DEFAULT|RTLD_NEXT)\b")
BUILD_FORMAT = 2   # part of the cache key: 2 = BuildResult lists the library's kernels


def default_cache_dir() -> Path:
    return Path(os.environ.get("WORKBENCH_CACHE", Path.home() / ".cache" / "workbench"))


@dataclass
class CompileError:
    file: str
    line: Optional[int]
    severity: str      # error | warning
    message: str


@dataclass
class KernelResources:
    name: str
    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack_bytes: int = 0
    smem_bytes: int = 0
    barriers: int = 0


@dataclass
class BuildResult:
    ok: bool
    source: str
    sha: str                       # sha256 of the source text (the artifact id)
    so_path: str = ""
    arch: str = DEFAULT_ARCH
    cached: bool = False
    seconds: float = 0.0
    resources: list = field(default_factory=list)     # list[KernelResources]
    errors: list = field(default_factory=list)        # list[CompileError] (warnings too)
    forbidden: list = field(default_factory=list)     # reasons, empty when clean
    kernels: list = field(default_factory=list)       # the library's kernels, mangled (the foreign-kernel check)
    summary: str = ""                                 # one readable line
    log: str = ""                                     # full nvcc output

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "BuildResult":
        data = dict(data)
        data["resources"] = [KernelResources(**r) for r in data.get("resources", [])]
        data["errors"] = [CompileError(**e) for e in data.get("errors", [])]
        return cls(**data)

    def resource_table(self) -> str:
        lines = [f"{'kernel':<64} {'regs':>5} {'spill st/ld':>12} {'stack':>6} {'smem':>7}"]
        for r in self.resources:
            lines.append(f"{r.name[:64]:<64} {r.registers:>5} {r.spill_stores:>5}/{r.spill_loads:<6} "
                         f"{r.stack_bytes:>6} {r.smem_bytes:>7}")
        return "\n".join(lines)


def source_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def nvcc_version() -> str:
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return ""
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    return out.strip().splitlines()[-1] if out.strip() else ""


def arch_flags(arch: str) -> list[str]:
    """sm_90a -> -gencode=arch=compute_90a,code=sm_90a (the `a` targets need the gencode form)."""
    match = re.fullmatch(r"sm_(\d+[a-z]?)", arch)
    if not match:
        raise ValueError(f"arch {arch!r} is not of the form sm_90a / sm_100a / sm_80")
    return [f"-gencode=arch=compute_{match.group(1)},code={arch}"]


# ---- parsing nvcc / ptxas output ----------------------------------------------------------------------
_NVCC_DIAG = re.compile(r"^(?P<file>[^\s(][^(]*?)\((?P<line>\d+)\): (?P<sev>error|warning)[^:]*: (?P<msg>.*)$")
_GCC_DIAG = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?:\d+:)? (?P<sev>error|warning|fatal error): (?P<msg>.*)$")
_PTXAS_DIAG = re.compile(r"^ptxas (?P<sev>error|fatal|warning)\s*:\s*(?P<msg>.*)$")
_LINK_DIAG = re.compile(r"^(?:/usr/bin/ld|ld|nvlink)[^:]*: (?P<sev>error|warning)?:?\s*(?P<msg>.*)$")


def parse_diagnostics(log: str) -> list[CompileError]:
    out = []
    for raw in log.splitlines():
        line = raw.strip()
        for pattern in (_NVCC_DIAG, _GCC_DIAG):
            m = pattern.match(line)
            if m:
                sev = "error" if "error" in m.group("sev") else "warning"
                out.append(CompileError(Path(m.group("file")).name, int(m.group("line")), sev, m.group("msg").strip()))
                break
        else:
            m = _PTXAS_DIAG.match(line)
            if m:
                sev = "warning" if m.group("sev") == "warning" else "error"
                out.append(CompileError("ptxas", None, sev, m.group("msg").strip()))
            elif ("undefined reference" in line or "cannot find -l" in line) and not line.startswith("ptxas"):
                out.append(CompileError("link", None, "error", line))
    return out


_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BARRIERS = re.compile(r"used (\d+) barriers")


def _demangle(names: list[str]) -> dict[str, str]:
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def parse_resources(log: str) -> list[KernelResources]:
    """Per-kernel registers, spills, stack and smem from the `-Xptxas -v` report."""
    kernels: list[KernelResources] = []
    current: Optional[KernelResources] = None
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = KernelResources(name=m.group("name"))
            kernels.append(current)
            continue
        if current is None:
            continue
        if (m := _FRAME.search(line)):
            current.stack_bytes, current.spill_stores, current.spill_loads = map(int, m.groups())
        if (m := _USED.search(line)):
            current.registers = int(m.group(1))
            if (s := _SMEM.search(line)):
                current.smem_bytes = int(s.group(1))
            if (b := _BARRIERS.search(line)):
                current.barriers = int(b.group(1))
    names = _demangle([k.name for k in kernels])
    for k in kernels:
        pretty = names.get(k.name, k.name).replace("(anonymous namespace)::", "")
        k.name = pretty[5:] if pretty.startswith("void ") else pretty
    return kernels


# ---- forbidden-library checks -------------------------------------------------------------------------
def forbidden_in_source(text: str) -> list[str]:
    reasons = []
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("#") and "include" in stripped:
            m = FORBIDDEN_INCLUDE.search(stripped)
            if m:
                header = stripped.split('include', 1)[1].strip()
                reasons.append(f"line {n}: includes {header} ({m.group(1)} is not allowed)")
        code = stripped.split("//", 1)[0]
        if FORBIDDEN_CALLS.search(code):
            reasons.append(f"line {n}: uses {FORBIDDEN_CALLS.search(code).group(1)} (dynamic loading could reach "
                           "cuBLAS/cuDNN)")
        if re.search(r"#\s*pragma\s+comment\s*\(\s*lib", stripped):
            reasons.append(f"line {n}: links a library with #pragma comment(lib)")
    return reasons


def forbidden_in_library(so_path: str) -> list[str]:
    """Dynamic dependencies and undefined symbols of the built library."""
    reasons = []
    readelf = shutil.which("readelf")
    if readelf:
        dyn = subprocess.run([readelf, "-d", so_path], capture_output=True, text=True).stdout
        for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn):
            if FORBIDDEN_LIB.search(lib):
                reasons.append(f"links {lib}")
    nm = shutil.which("nm")
    if nm:
        syms = subprocess.run([nm, "-D", "--undefined-only", so_path], capture_output=True, text=True).stdout
        bad = sorted({s.split()[-1] for s in syms.splitlines() if s.split() and FORBIDDEN_SYMBOL.match(s.split()[-1])})
        if bad:
            reasons.append(f"calls {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''}")
    with open(so_path, "rb") as handle:
        blob = handle.read()
    for needle in (b"libcublas", b"libcudnn", b"libcublasLt"):
        if needle in blob:
            reasons.append(f"library contains the string {needle.decode()!r} (dynamic loading?)")
            break
    return reasons


def list_kernels(so_path: str, log: str) -> tuple[list[str], list[str]]:
    """(the library's kernel names, reasons to refuse them), from the cubins in its .nv_fatbin section, or from the
    ptxas report where the fatbin cannot be read here (compressed)."""
    reported = kernel_names.ptxas_kernels(log)
    found = kernel_names.library_kernels(so_path)
    reasons = []
    if found is None:
        found = reported
    elif reported:
        planted = sorted(set(found) - set(reported))
        if planted:
            reasons.append(f"the library holds kernels nvcc did not compile: {', '.join(planted[:3])} "
                           "(data planted in .nv_fatbin?)")
    lookalikes = imitates_library(found)
    if lookalikes:
        reasons.append(f"kernel {lookalikes[0][:120]} is named like a library's kernel (nvjet_, xmma, cutlass, "
                       "cublas, cudnn, at::, c10::): the foreign-kernel check tells kernels apart by name; rename it")
    return found, reasons


def exports_entry_point(so_path: str, entry_point: str = ENTRY_POINT) -> bool:
    nm = shutil.which("nm")
    if not nm:
        return True  # cannot check here; ctypes will say so at load time
    out = subprocess.run([nm, "-D", "--defined-only", so_path], capture_output=True, text=True).stdout
    return any(line.split()[-1] == entry_point for line in out.splitlines() if line.split())


# ---- the build itself ---------------------------------------------------------------------------------
def _summarise(ok: bool, errors: list[CompileError], forbidden: list[str], resources: list[KernelResources],
               source_name: str) -> str:
    if forbidden:
        more = f" (+{len(forbidden) - 1} more)" if len(forbidden) > 1 else ""
        return f"{source_name}: forbidden: {forbidden[0]}{more}"
    if not ok:
        first = next((e for e in errors if e.severity == "error"), None)
        if first is None:
            return f"{source_name}: build failed (see the log)"
        where = f"line {first.line}" if first.line else first.file
        more = sum(e.severity == "error" for e in errors) - 1
        return f"{source_name}: build failed at {where}: {first.message}" + (
            f" (+{more} more errors)" if more > 0 else "")
    regs = max((r.registers for r in resources), default=0)
    spills = sum(r.spill_stores + r.spill_loads for r in resources)
    smem = max((r.smem_bytes for r in resources), default=0)
    return (f"{source_name}: built, {len(resources)} kernel(s), max {regs} registers, {spills} bytes spilled, "
            f"{smem} bytes static smem")


def build_kernel(path: str | Path, arch: str = DEFAULT_ARCH, timeout_s: float = 300.0,
                 cache_dir: str | Path | None = None, extra_flags: tuple = (),
                 include_root: str | Path | None = None, entry_point: str | None = None) -> BuildResult:
    """Build path into a cached kernel.so. `include_root` is the only folder quoted includes may come from
    (default: the source's folder); see build_guard for what the source and its object code may contain.
    `entry_point`: the extern "C" function the library must export (the problem's; default attention's)."""
    entry_point = entry_point or ENTRY_POINT
    path = Path(path)
    try:
        text = _read_source(path)
    except (OSError, ValueError) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        return BuildResult(ok=False, source=str(path), sha="", arch=arch,
                           summary=f"{path}: cannot read the kernel source ({why}); check the path")
    sha = source_sha(text)
    result = BuildResult(ok=False, source=str(path), sha=sha, arch=arch)
    includes = build_guard.check_includes(text, include_root or path.parent)
    result.forbidden = forbidden_in_source(text) + [f"include: {p}" for p in includes.problems]
    if result.forbidden:
        result.summary = _summarise(False, [], result.forbidden, [], path.name)
        return result
    nvcc = shutil.which("nvcc")
    if not nvcc:
        result.summary = f"{path.name}: nvcc not found on PATH; install the CUDA toolkit (13.0) to build kernels"
        return result
    flags = COMPILE_FLAGS + arch_flags(arch) + list(extra_flags)
    headers = {name: source_sha(body) for name, body in sorted(includes.headers.items())}
    # another problem's entry point is part of the key (attention's keys stay what they were)
    entry_key = [] if entry_point == ENTRY_POINT else [entry_point]
    key = hashlib.sha256(json.dumps([sha, headers, flags, nvcc_version(), BUILD_FORMAT,
                                     build_guard.GUARD_VERSION, *entry_key]).encode()).hexdigest()[:24]
    out_dir = Path(cache_dir or default_cache_dir()) / "build" / key
    so_path, meta_path = out_dir / "kernel.so", out_dir / "build.json"
    if so_path.exists() and meta_path.exists():
        cached = BuildResult.from_dict(json.loads(meta_path.read_text()))
        cached.cached, cached.source = True, str(path)
        # where it lies now: the recorded path may run through another cache folder's link to a shared build
        # folder, gone since (and a contained worker binds real folders only)
        cached.so_path = str(so_path.resolve())
        # the same text may have been built under another name first (e.g. artifacts/<sha>.cu)
        cached.summary = _summarise(True, cached.errors, [], cached.resources, path.name)
        return cached

    out_dir.mkdir(parents=True, exist_ok=True)
    with ContainedBuild(nvcc, timeout_s) as work:
        # compile a private copy (the source cannot change under us), alone, then check its object code
        source = work.write_sources(path.name, text, includes.headers)
        run = work.run([nvcc, *flags, *build_tripwires.compile_flags(work.work), "-c", "-I", source.parent, "-o",
                        work.path("kernel.o"), source])
        own = {path.name} | {Path(name).name for name in includes.headers}
        result.seconds = run.seconds
        result.log = build_guard.filter_log(run.log, own) + (f"\nnote: {work.notice}" if work.notice else "")
        result.errors = parse_diagnostics(result.log)
        result.resources = parse_resources(run.log)
        if run.timed_out:
            result.errors = [CompileError(path.name, None, "error", f"build timed out after {timeout_s:.0f} s")]
        elif run.truncated:
            result.errors = [CompileError(path.name, None, "error", "the build printed more than "
                                          f"{nvcc_module.LOG_CAP_BYTES >> 20} MiB and was stopped")]
        if run.returncode == 0 and work.path("kernel.o").exists():
            result.forbidden = build_tripwires.check(work.work, source.parent, nvcc, flags, work.env)
            if not result.forbidden:
                link = work.run([nvcc, "-shared", "-Xcompiler", "-fPIC", *arch_flags(arch), "-o",
                                 work.path("kernel.so"), work.path("kernel.o")])
                result.seconds += link.seconds
                if link.returncode != 0:
                    result.log += "\n" + build_guard.filter_log(link.log, own)
                    result.errors += parse_diagnostics(link.log) or [
                        CompileError("link", None, "error",
                                     (link.log.strip().splitlines() or ["link failed"])[-1][:300])]
                else:
                    result.ok = _finish_library(result, work.path("kernel.so"), out_dir, path.name, run.log,
                                                entry_point)
        elif not any(e.severity == "error" for e in result.errors):
            tail = [line for line in result.log.strip().splitlines() if line.strip()][-1:] or ["nvcc failed"]
            result.errors.append(CompileError(path.name, None, "error", tail[0][:300]))
    result.summary = _summarise(result.ok, result.errors, result.forbidden, result.resources, path.name)
    if result.ok:
        result.so_path = str(so_path.resolve())
        meta_path.write_text(json.dumps(result.to_dict()))
    return result


MAX_SOURCE_BYTES = 4 << 20


def _read_source(path: Path) -> str:
    """The kernel source: a regular file (not a FIFO or device) of at most 4 MiB, UTF-8."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        data = handle.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise ValueError(f"larger than {MAX_SOURCE_BYTES >> 20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"not UTF-8 (byte {err.start})") from None


def _finish_library(result: BuildResult, built: Path, out_dir: Path, name: str, log: str,
                    entry_point: str = ENTRY_POINT) -> bool:
    """Checks on the linked library, then move it into the cache (copied without following links)."""
    if not exports_entry_point(str(built), entry_point):
        result.errors.append(CompileError(name, None, "error",
                                          f'no exported symbol {entry_point}: declare it extern "C"'))
    result.forbidden = forbidden_in_library(str(built))
    result.kernels, refused = list_kernels(str(built), log)
    result.forbidden += refused
    if result.forbidden or any(e.severity == "error" for e in result.errors):
        return False
    fd = os.open(built, os.O_RDONLY | os.O_NOFOLLOW)
    tmp_so = out_dir / f"kernel.{os.getpid()}.{threading.get_ident()}.so"   # threads of one process build too
    with os.fdopen(fd, "rb") as src, open(tmp_so, "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.replace(tmp_so, out_dir / "kernel.so")
    return True
