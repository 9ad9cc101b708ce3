"""The tripwires on what the compiler read and wrote for a candidate, after it compiled alone (`nvcc -c`):

  * build_deps: every file the compiler read lies in the build's sources or on its own include path;
  * host_asm: the host half carries no assembly (the `.s` gcc wrote, kept with -save-temps);
  * build_guard.check_object: the host object imports only the allowlisted symbols, and holds no raw syscall.

`compile_flags(work)` are the flags the compile needs for these checks; `check(...)` returns the reasons to refuse
(empty when clean). Tripwires, not walls: what each cannot see is said in its module, and the evaluation
sandbox (sandbox.py) is what holds against what passes them.
"""
from __future__ import annotations

from pathlib import Path

from workbench.harness import build_deps, build_guard, host_asm

MAX_ASSEMBLY_BYTES = 256 << 20


def compile_flags(work: Path) -> list[str]:
    return [*build_deps.dependency_flags(work / "kernel.d"), "-Xcompiler", "-save-temps=obj"]


def check(work: Path, sources: Path, nvcc: str, flags: list[str], env: dict) -> list[str]:
    """Reasons to refuse the object work/kernel.o compiled from `sources` (the build's copies) with `flags`."""
    roots = [str(sources), *build_deps.compiler_roots(nvcc, flags, env)]
    reasons = [f"include: {r}" for r in build_deps.outside_roots(work / "kernel.d", work, roots)]
    assembly = work / "kernel.s"
    if not assembly.is_file() or assembly.stat().st_size > MAX_ASSEMBLY_BYTES:
        reasons.append("the host compiler's assembly (kernel.s) is missing or too large to check; refused")
    else:
        reasons += host_asm.check(assembly.read_text(errors="replace"))
    return reasons + build_guard.check_object(str(work / "kernel.o"))
