"""Which device work of a call was not the candidate's own: the comparison behind reason `foreign_kernel`.

The rule "one .cu, no cuBLAS/cuDNN/CUTLASS/torch kernels" is checked on spellings at build time; a kernel can
still reach a library torch has loaded (`dlsym(RTLD_DEFAULT, <name built at run time>)`, the Python C API).
So the worker records the device activity of one call (activity.py) and this module compares the names with
the kernels the candidate's library contains (kernel_names.py). Pure logic: no torch, no GPU.

The profiler reports names as Kineto's demangler wrote them (`void foo<128>(Params)`), the library holds them
mangled (`_Z3fooILi128EEv6Params`). Both sides go through the same demangler (libstdc++'s `__cxa_demangle`,
the one Kineto calls; `c++filt` otherwise) and are compared whole, template arguments and all, so a templated
kernel of the candidate matches exactly and a library kernel cannot pass by sharing a base name. Only where no
demangler is available at all do the names fall back to their qualified base identifier.
"""
from __future__ import annotations

import ctypes
import functools
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field

# Kineto's names for device activity that is not a kernel: copies and sets are allowed (listed in the detail),
# synchronisation records carry no work.
TRANSFER = re.compile(r"^(Memcpy \S+ \([^()]*\)|Memset( \([^()]*\))?)$")
SYNC = re.compile(r"^(Event Sync|Stream Sync|Context Sync|Stream Wait Event)$")

# What a foreign kernel looks like, for the detail line only (first match wins).
LIBRARY_LOOKS = [
    ("cuBLAS", re.compile(r"nvjet_|xmma_gemm|cublas|gemv\w*_kernel|gemmk1|gemmSN|splitKreduce", re.I)),
    ("cuDNN", re.compile(r"cudnn|cask_|xmma_(fprop|dgrad|wgrad)", re.I)),
    ("CUTLASS", re.compile(r"cutlass|\bcute::")),
    ("FlashAttention", re.compile(r"pytorch_flash::|\bflash::|fmha", re.I)),
    ("torch", re.compile(r"(^|[^\w])(at|c10|at_cuda_detail)::")),
]
# Names no candidate kernel may take: the check tells kernels apart by name, so a kernel of the candidate named
# like a library's would let that library's kernel pass as its own.
IMITATES_LIBRARY = re.compile(r"nvjet_|xmma|cutlass|\bcute::|cublas|cudnn|cask_|pytorch_flash::"
                              r"|(^|[^\w])(at|c10|at_cuda_detail)::", re.I)
_ANONYMOUS = re.compile(r"\{anonymous\}|<unnamed>|\(anonymous namespace\)")
NO_ACTIVITY = "<no device activity>"


# ---- demangling ----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _cxa_demangle():
    try:
        lib = ctypes.CDLL("libstdc++.so.6")
        fn = lib.__cxa_demangle
        free = ctypes.CDLL(None).free
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                                ctypes.POINTER(ctypes.c_int)]
    free.argtypes = [ctypes.c_void_p]

    def demangle(name: str) -> str:
        status = ctypes.c_int(0)
        out = fn(name.encode(), None, None, ctypes.byref(status))
        if not out:
            return name
        try:
            return ctypes.string_at(out).decode(errors="replace") if status.value == 0 else name
        finally:
            free(out)
    return demangle


def looks_mangled(name: str) -> bool:
    return name.startswith("_Z")


def demangle_all(names) -> dict[str, str]:
    """{name: demangled} with the demangler Kineto uses; names that are not mangled map to themselves."""
    names = [n for n in dict.fromkeys(names) if looks_mangled(n)]
    out: dict[str, str] = {}
    cxa = _cxa_demangle()
    if cxa is not None:
        out = {n: cxa(n) for n in names}
    elif names and shutil.which("c++filt"):
        lines = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                               timeout=60).stdout.splitlines()
        if len(lines) == len(names):
            out = dict(zip(names, lines))
    return {n: out.get(n, n) for n in names}


# ---- comparable forms ----------------------------------------------------------------------------------
def exact_key(demangled: str) -> str:
    """The whole signature, spelled one way: no return type, one spelling of the anonymous namespace, no spaces
    (demanglers differ in `> >` vs `>>` and in spacing, never in the names themselves)."""
    name = _ANONYMOUS.sub("(anonymous namespace)", demangled.strip())
    if name.startswith("void "):
        name = name[5:]
    return re.sub(r"\s+", "", name)


def _strip_group(text: str, open_c: str, close_c: str) -> str:
    out, depth = [], 0
    for c in text:
        if c == open_c:
            depth += 1
        elif c == close_c and depth:
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


def base_identifier(demangled: str) -> str:
    """`void ns::foo<128, (anonymous namespace)::T>(Params)` -> `ns::foo` (in exact_key's spelling)."""
    name = exact_key(demangled)
    if name.endswith(")"):            # the parameter list: the last balanced (...) group
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    return _strip_group(name, "<", ">")


def mangled_base(name: str) -> str:
    """The qualified identifier of a mangled name without a demangler (`_ZN2wb7tkernelI...` -> `wb::tkernel`)."""
    if not looks_mangled(name):
        return base_identifier(name)
    at, parts = 2, []
    if name[at:at + 1] == "L":
        at += 1
    nested = name[at:at + 1] == "N"
    at += nested
    while at < len(name) and name[at] in "KVr":
        at += 1
    while at < len(name) and name[at].isdigit():
        digits = re.match(r"\d+", name[at:]).group()
        at += len(digits)
        ident = name[at:at + int(digits)]
        at += int(digits)
        parts.append("(anonymous namespace)" if ident.startswith("_GLOBAL__N") else ident)
        if not nested:
            break
    return exact_key("::".join(parts)) if parts else name


def library_of(name: str) -> str:
    """Which library a kernel name looks like ('' if none): its base identifier decides, then the whole name."""
    for text in (base_identifier(name), name):
        label = next((label for label, pattern in LIBRARY_LOOKS if pattern.search(text)), "")
        if label:
            return label
    return ""


def imitates_library(names) -> list[str]:
    """The candidate's kernel names (demangled) that look like a library's kernel."""
    demangled = demangle_all(names)
    return [demangled.get(n, n) for n in names if IMITATES_LIBRARY.search(demangled.get(n, n))]


# ---- the verdict ---------------------------------------------------------------------------------------
@dataclass
class Verdict:
    foreign: Counter = field(default_factory=Counter)     # kernels not in the library, with launch counts
    own: Counter = field(default_factory=Counter)
    transfers: Counter = field(default_factory=Counter)   # memcpy / memset: allowed
    degraded: bool = False                                # compared on base identifiers (no demangler)

    @property
    def ok(self) -> bool:
        return not self.foreign

    def detail(self) -> str:
        """One line: the foreign kernels (named, with the library they look like), then what else ran."""
        def listing(counts: Counter, limit: int, label: bool = False) -> str:
            items = []
            for name, n in counts.most_common(limit):
                shown = name if len(name) <= 110 else name[:107] + "..."
                look = library_of(name) if label else ""
                items.append(shown + (f" ({look})" if look else "") + (f" x{n}" if n > 1 else ""))
            more = len(counts) - limit
            return ", ".join(items) + (f" (+{more} more)" if more > 0 else "")

        parts = []
        if NO_ACTIVITY in self.foreign:
            parts.append("no device activity was recorded during a call that wrote o and lse "
                         "(work hidden from the profiler?)")
        elif self.foreign:
            parts.append(f"{len(self.foreign)} kernel(s) not in its own library ran during the call: "
                         + listing(self.foreign, 3, label=True))
        if self.own:
            parts.append(f"own: {listing(self.own, 2)}")
        if self.transfers:
            parts.append(f"copies/sets (allowed): {listing(self.transfers, 3)}")
        return "; ".join(parts)


def judge(seen: list[str], library_kernels: list[str], wrote_output: bool = True) -> Verdict:
    """Sort the device activity `seen` during one call into own kernels, foreign kernels and transfers.

    library_kernels: the names the candidate's library holds (mangled or not). wrote_output: the call had
    outputs to write, so it must have done some device work; a call with none recorded hid its work."""
    built = demangle_all(library_kernels)
    own_exact = {exact_key(built.get(n, n)) for n in library_kernels}
    unresolved = {mangled_base(n) for n in library_kernels if looks_mangled(built.get(n, n))}
    verdict = Verdict(degraded=bool(unresolved))
    seen_demangled = demangle_all(seen)
    for raw in seen:
        name = seen_demangled.get(raw, raw)
        if TRANSFER.match(name):
            verdict.transfers[name] += 1
        elif SYNC.match(name):
            continue
        elif exact_key(name) in own_exact or (unresolved and mangled_base(name) in unresolved):
            verdict.own[name] += 1
        else:
            verdict.foreign[name] += 1
    if wrote_output and not (verdict.own or verdict.foreign or verdict.transfers):
        verdict.foreign[NO_ACTIVITY] += 1
    return verdict
