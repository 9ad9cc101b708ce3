"""What a candidate's source may include, what its own object code may import, and what nvcc may echo back.

Three checks around the build (build.py calls them), each with a message the agent can act on:
  * `check_includes(text, include_root)`: every #include / #include_next / #import / __has_include /
    #pragma GCC dependency names a literal file with no absolute path and no '..'. A name found under the
    include root (the workspace) is a local header: it must be a regular file with one name reached through no
    symlink, and is checked the same way, recursively; any other name can only resolve in the system and CUDA
    include directories. Computed includes (`#include MACRO`), `#embed` and assembler `.incbin`/`.include` are
    refused. The scan follows the preprocessor's own order (line ends, line splices, comments, raw strings,
    digraphs). It is the early, friendly message: what the compiler really read is checked after it ran
    (build_deps.py), and host assembly is refused from the compiler's own output (host_asm.py).
  * `check_object(obj)`: the undefined symbols of the candidate compiled alone (`nvcc -c`, before the CUDA
    runtime is linked in) must be CUDA runtime/driver API, libc memory/string/math/printf, or the C++ runtime;
    `system`, `exec*`, `fork`, `socket`, `open`/`fopen`, `dlopen`/`dlsym`, `syscall`, `mmap`/`mprotect` and the
    rest are refused by name, as are raw syscall instructions in host code. This is a tripwire for the obvious
    escapes, not a wall (code can compute a function address); the wall is the evaluation sandbox
    (sandbox.py).
  * `filter_log(log, own_names)`: nvcc's output keeps only what concerns the candidate and its local headers;
    diagnostics about any other file (whose excerpts could be that file's contents) are left out and counted.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

GUARD_VERSION = 2            # part of the build cache key: a stricter guard re-checks cached builds
MAX_HEADER_BYTES = 1 << 20
MAX_HEADERS = 64

# ---- includes ----------------------------------------------------------------------------------------------
_DIRECTIVE = re.compile(r"^[ \t\f\v]*#[ \t\f\v]*(include_next|include|import|embed|pragma)\b(.*)$", re.M)
_LITERAL = re.compile(r"""^[ \t\f\v]*(?:"([^"\n]*)"|<([^>\n]*)>)[ \t\f\v]*$""")
_HAS_INCLUDE = re.compile(r"__has_include(?:_next)?\s*\(\s*(.*?)\s*\)", re.S)
_DEPENDENCY = re.compile(r"^\s*(?:GCC\s+)?dependency\s+(.*)$")
_ASM_FILE = re.compile(r"\.\s*(incbin|include)\b|\bincbin\b")


@dataclass
class IncludeScan:
    problems: list = field(default_factory=list)     # one line each: "line 3: ..."
    headers: dict = field(default_factory=dict)      # local header name -> text (copied into the build)


def _raw_string_start(text: str, quote: int) -> int | None:
    """Index of '(' if the '"' at `quote` opens a raw string literal (R, u8R, uR, UR, LR as a whole token)."""
    if quote == 0 or text[quote - 1] != "R":
        return None
    start = quote - 1
    for prefix in ("u8", "u", "U", "L"):
        if text[max(0, start - len(prefix)):start] == prefix:
            start -= len(prefix)
            break
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return None                                   # part of an identifier: an ordinary string follows it
    paren = text.find("(", quote + 1, quote + 18)
    if paren < 0 or not re.fullmatch(r"[^ ()\\\t\v\f\n]*", text[quote + 1:paren]):
        return None
    return paren


def splice_lines(text: str) -> str:
    """Backslash-newline splices joined; the newlines they removed are put back after the joined line, so
    every line keeps its number."""
    out, pending = [], 0
    for line in text.split("\n"):
        stripped = line.rstrip(" \t\r")
        if stripped.endswith("\\"):
            out.append(stripped[:-1])
            pending += 1
            continue
        out.append(line + "\n" * pending + "\n")
        pending = 0
    return "".join(out)[:-1] if out else text


def preprocess_view(text: str) -> tuple[str, str]:
    """(code, strings): the source as the preprocessor sees its lines — trigraph/digraph '#', line splices
    joined, comments replaced by a space, raw string literals emptied (their lines kept) — and the contents of
    all string literals concatenated (what an assembler directive hidden in `asm("." "inc" "bin")` becomes)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")   # gcc ends a line at a lone CR too
    text = text.replace("??=", "#").replace("%:", "#")
    text = splice_lines(text)                               # line splices first, as translation phase 2
    code, strings, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            code.append(" ")
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            end = n if j < 0 else j + 2
            code.append(" " + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"' and (paren := _raw_string_start(text, i)) is not None:
            delim = text[i + 1:paren]
            j = text.find(")" + delim + '"', paren + 1)
            end = n if j < 0 else j + len(delim) + 2
            strings.append(text[paren + 1:j if j >= 0 else n])
            code.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n - 1) if j >= n else j
            if c == '"':
                strings.append(text[i + 1:j])
            code.append(text[i:j + 1] if j < n and text[j] == c else text[i:j])
            i = j + 1 if j < n and text[j] == c else j
        else:
            j = i
            while j < n and text[j] not in "/\"'":
                j += 1
            if j == i:                                  # a lone '/'
                j = i + 1
            code.append(text[i:j])
            i = j
    return "".join(code), "".join(strings)


def _bad_name(name: str) -> str:
    if not name or "\x00" in name:
        return "an empty name"
    if name.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", name) or "\\" in name:
        return "an absolute path"
    if ".." in name.split("/"):
        return "a '..' path"
    return ""


def _local_file(root: Path, name: str) -> tuple[str, bytes | None]:
    """('', bytes) for a header of the include root, ('', None) when it is not there, (problem, None)."""
    current = root
    parts = [p for p in name.split("/") if p not in ("", ".")]
    for k, part in enumerate(parts):
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return "", None
        except OSError as err:
            return f"{name}: {err.strerror}", None
        if stat.S_ISLNK(st.st_mode):
            return f"{name} goes through a symlink ({'/'.join(parts[:k + 1])}); include real files only", None
        last = k == len(parts) - 1
        if not last and not stat.S_ISDIR(st.st_mode):
            return "", None
        if last:
            if not stat.S_ISREG(st.st_mode):
                return f"{name} is not a regular file", None
            if st.st_nlink > 1:
                return f"{name} has {st.st_nlink} names (a hard link); include files of one name only", None
            if st.st_size > MAX_HEADER_BYTES:
                return f"{name} is {st.st_size} bytes, more than {MAX_HEADER_BYTES} a header may have", None
            fd = os.open(current, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                return "", handle.read(MAX_HEADER_BYTES + 1)
    return "", None


def _scan_one(text: str, label: str, root: Path | None, scan: IncludeScan, queue: list) -> None:
    code, strings = preprocess_view(text)

    def refuse(line: int, why: str) -> None:
        scan.problems.append(f"{label}line {line}: {why}")

    def check_name(line: int, operand: str, what: str) -> None:
        literal = _LITERAL.match(operand)
        if not literal:
            refuse(line, f"{what} {operand.strip()[:60]!r} is not a literal \"file\" or <file> (computed "
                         "includes are not allowed: write the file name)")
            return
        name = literal.group(1) if literal.group(1) is not None else literal.group(2)
        bad = _bad_name(name)
        if bad:
            refuse(line, f"{what} {name!r} is {bad}; only headers of the workspace (relative names) and the "
                         "system/CUDA headers (<name>) can be included")
            return
        if root is None:
            return
        problem, data = _local_file(root, name)
        if problem:
            refuse(line, problem)
        elif data is not None and name not in scan.headers:
            try:
                scan.headers[name] = data.decode("utf-8")
            except UnicodeDecodeError as err:
                refuse(line, f"{name}: not UTF-8 (byte {err.start})")
                return
            queue.append(name)

    for m in _DIRECTIVE.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        kind, rest = m.group(1), m.group(2)
        if kind == "embed":
            refuse(line, "#embed is not allowed")
        elif kind == "pragma":
            dep = _DEPENDENCY.match(rest)
            if dep:
                check_name(line, dep.group(1), "#pragma dependency")
        else:
            check_name(line, rest, f"#{kind}")
    for m in _HAS_INCLUDE.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        check_name(line, m.group(1), "__has_include")
    for m in _ASM_FILE.finditer(code):
        refuse(code.count("\n", 0, m.start()) + 1,
               f"assembler directive {m.group(0).strip()!r} is not allowed (it reads a file into the build)")
        break
    else:
        m = _ASM_FILE.search(strings)
        if m:
            scan.problems.append(f"{label}a string literal holds the assembler directive {m.group(0).strip()!r} "
                                 "(it reads a file into the build): not allowed")
    for m in re.finditer(r"_Pragma\s*\(\s*(?:u8|u|U|L)?R?\"[^)]*dependency", code):
        refuse(code.count("\n", 0, m.start()) + 1, "_Pragma(\"GCC dependency ...\") is not allowed")


def check_includes(text: str, include_root: str | Path | None) -> IncludeScan:
    """Problems with the includes of text and its local headers, and the headers' texts (see module doc)."""
    scan = IncludeScan()
    root = Path(include_root) if include_root else None
    queue: list[str] = []
    _scan_one(text, "", root, scan, queue)
    while queue and len(scan.headers) <= MAX_HEADERS:
        name = queue.pop(0)
        _scan_one(scan.headers[name], f"{name}: ", root, scan, queue)
    if len(scan.headers) > MAX_HEADERS:
        scan.problems.append(f"more than {MAX_HEADERS} local headers")
    return scan


# ---- the candidate's own object code -----------------------------------------------------------------------
_MATH = (r"(?:sqrt|cbrt|exp|exp2|expm1|exp10|log|log2|log10|log1p|logb|pow|sin|cos|tan|sincos|asin|acos|atan|atan2|"
         r"sinh|cosh|tanh|asinh|acosh|atanh|erf|erfc|erfinv|tgamma|lgamma|fabs|floor|ceil|round|lround|llround|"
         r"trunc|rint|lrint|llrint|nearbyint|fmod|remainder|remquo|fmin|fmax|fdim|fma|ldexp|frexp|modf|scalbn|"
         r"scalbln|ilogb|hypot|copysign|nextafter|nan|__finite|__isinf|__isnan|__fpclassify|__signbit)[fl]?")
ALLOWED_IMPORT = re.compile(r"^(?:" + "|".join([
    r"cuda[A-Z]\w*", r"__cuda\w+", r"cu[A-Z]\w*", r"__nv\w+", r"__fatbinwrap\w*",       # CUDA runtime / driver
    r"mem(?:cpy|move|set|cmp|chr|rchr)", r"__mem(?:cpy|move|set)_chk",                   # libc memory
    r"str(?:len|nlen|cmp|ncmp|cpy|ncpy|cat|ncat|chr|rchr|str|spn|cspn|pbrk|tok|tok_r|dup|ndup|error|"
    r"tol|toul|toll|toull|tod|tof|told|coll|casecmp|ncasecmp)", r"__str\w*_chk", r"ato[ifl]{1,2}",
    r"(?:v?s?n?printf|v?fprintf|puts|fputs|putchar|fputc|_IO_putc|putc|fflush|fwrite|perror)",
    r"__(?:v?s?n?printf|v?fprintf)_chk", r"stdout|stderr",                                # printing
    r"malloc|calloc|realloc|free|aligned_alloc|posix_memalign|memalign",                 # heap
    r"abort|exit|_exit|atexit|__cxa_atexit|__cxa_finalize|__dso_handle|__stack_chk_fail|__stack_chk_guard|"
    r"__assert_fail|__errno_location|getenv|secure_getenv|qsort|bsearch|abs|labs|llabs|div|ldiv|rand|srand|"
    r"time|clock|clock_gettime|gettimeofday|nanosleep|usleep|sched_yield|__libc_single_threaded|"
    r"__tls_get_addr|__sysconf|sysconf|get_nprocs", _MATH,
    r"pthread_(?:mutex|once|key|getspecific|setspecific|self|equal|cond|rwlock|spin|attr|create|join|detach)"
    r"\w*", r"__pthread_key_create",                                                       # threads, std::mutex
    r"_Zn[wa]\w+", r"_Zd[la]\w+", r"_ZSt\w+", r"_ZNSt\w+", r"_ZNKSt\w+", r"_ZTVN10__cxxabiv\w+", r"_ZTI\w+",
    r"_ZTS\w+", r"_ZTV\w+", r"_ZN9__gnu_cxx\w+", r"_ZNK9__gnu_cxx\w+", r"_ZGV\w+", r"__cxa_\w+",
    r"__gxx_personality_v0", r"_Unwind_\w+", r"__dynamic_cast", r"__once_proxy", r"__gmon_start__",
    r"_ITM_\w+", r"_GLOBAL_OFFSET_TABLE_",                                # the C++ runtime, PIC
]) + r")$")
# parts of the C++ library that reach files or processes despite being "std"
REFUSED_STD = re.compile(r"filesystem|basic_filebuf|basic_[io]?fstream|__basic_file|_ZNSt8_Rb_tree_emptyS|"
                         r"system_error.*open|random_device")
WHY = [
    (re.compile(r"^(?:system|popen|pclose|wordexp)$"), "runs a shell command"),
    (re.compile(r"^(?:exec\w*|fexecve|posix_spawn\w*|fork|vfork|clone\w*|__clone)$"), "starts a process"),
    (re.compile(r"^(?:socket\w*|connect|bind|listen|accept\w*|send\w*|recv\w*|getaddrinfo|gethostby\w+|"
                r"inet_\w+)$"), "opens a network connection"),
    (re.compile(r"^(?:open|open64|openat\w*|creat\w*|fopen\w*|freopen\w*|fdopen|opendir|fdopendir|unlink\w*|"
                r"rename\w*|remove|mkdir\w*|rmdir|chmod|fchmod\w*|chown|fchown\w*|lchown|link\w*|symlink\w*|"
                r"truncate\w*|ftruncate\w*|stat\w*|lstat\w*|fstat\w*|access|faccessat|readlink\w*|chdir|"
                r"chroot|mknod\w*|mount|umount\w*|read|write|pread\w*|pwrite\w*|close)$"), "touches files"),
    (re.compile(r"^(?:dlopen|dlmopen|dlsym|dlvsym|dladdr\w*|dlinfo|dl_iterate_phdr|_dl_\w+)$"),
     "loads code at run time"),
    (re.compile(r"^(?:syscall|__syscall\w*|ptrace|prctl|seccomp|ioctl|kill|tgkill|raise|signal|sigaction|"
                r"setuid|setgid|setres[ug]id|setgroups|capset|unshare|setns|process_vm_\w+)$"),
     "makes a raw system call"),
    (re.compile(r"^(?:mmap\w*|mprotect|munmap|mremap|madvise|shm_\w+|memfd_create)$"), "maps memory"),
    (re.compile(r"^(?:environ|__environ|setenv|putenv|unsetenv)$"), "reads or changes the environment"),
]
_RAW_SYSCALL = re.compile(r"^\s*[0-9a-f]+:\s.*?\b(syscall|sysenter|int\s+\$0x80|svc\s+#?0x0|svc\s+#?0)\b", re.M)


def why_refused(symbol: str) -> str:
    for pattern, reason in WHY:
        if pattern.match(symbol):
            return reason
    return "is outside the allowlist"


def object_imports(obj_path: str) -> list[str]:
    nm = shutil.which("nm")
    if not nm:
        return []
    out = subprocess.run([nm, "-u", obj_path], capture_output=True, text=True, timeout=60).stdout
    return sorted({line.split()[-1] for line in out.splitlines() if line.split()})


def check_object(obj_path: str) -> list[str]:
    """Reasons to refuse the candidate's host code, from its object compiled alone (empty when clean)."""
    reasons = []
    bad = [s for s in object_imports(obj_path) if not ALLOWED_IMPORT.match(s) or REFUSED_STD.search(s)]
    if bad:
        named = [f"{s} ({why_refused(s)})" if why_refused(s) != "is outside the allowlist" else s for s in bad[:6]]
        reasons.append(f"host code imports {', '.join(named)}{' ...' if len(bad) > 6 else ''}: a kernel's host code "
                       "may call the CUDA runtime, libc memory/string/math/printf and the C++ runtime only")
    objdump = shutil.which("objdump")
    if objdump:
        asm = subprocess.run([objdump, "-d", "--no-show-raw-insn", obj_path], capture_output=True, text=True,
                             timeout=120).stdout
        m = _RAW_SYSCALL.search(asm)
        if m:
            reasons.append(f"host code contains a raw `{m.group(1)}` instruction (system calls go through libc, "
                           "and these are refused)")
    return reasons


# ---- what nvcc may echo ----------------------------------------------------------------------------------
_LEAD_PATH = re.compile(r"^(?:In file included from\s+|\s+from\s+)?([^\s:(]+?)(?:\(\d+\)|:\d+|:)")
_TOOL_LINE = re.compile(r"^(?:ptxas|nvcc|nvlink|fatbinary|cicc|cudafe\+*|/usr/bin/ld|ld|collect2)\b")


def filter_log(log: str, own_names: set) -> str:
    """nvcc's output restricted to the candidate and its local headers (plus ptxas/nvcc/linker lines); text
    about any other file is dropped, with a count, so an included outside file never shows its contents."""
    kept, dropped, keep = [], 0, True
    for line in log.splitlines():
        if _TOOL_LINE.match(line):
            keep = True
        elif line.startswith(("In file included from", "                 from ")):
            dropped += 1                     # paths only, and the diagnostic that follows decides
            continue
        elif (m := _LEAD_PATH.match(line)) and ("/" in m.group(1) or "." in os.path.basename(m.group(1))):
            keep = os.path.basename(m.group(1)) in own_names
        if keep:
            kept.append(line)
        else:
            dropped += 1
    if dropped:
        kept.append(f"[{dropped} line(s) about other files left out]")
    return "\n".join(kept)
