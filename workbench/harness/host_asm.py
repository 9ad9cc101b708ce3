"""Host code may not carry assembly: a check of the assembly the host compiler wrote for the candidate.

Host code of a kernel has no need for assembly (device code's inline PTX goes to ptxas, never to the host
assembler, and stays allowed). Assembly in host code is how a candidate reads a file into its library
(`.incbin`, built by `.irp`/`\\()` macros so no scan of the source sees the word) or hides a raw `syscall`. So
the build keeps the `.s` that gcc wrote for the host half of the candidate (`-Xcompiler -save-temps=obj`; the
device bodies are gone by then, cudafe replaced them) and `check(text)` refuses:

  * every inline-assembly block (`#APP`..`#NO_APP`, gcc marks each `asm` statement so), except the one nvcc
    itself writes to embed the device code (`.section .nv_fatbin` + `fatbinData:` + `.quad` data + `.text`);
    what gcc writes of its own before the `#NO_APP` that closes that block (the rodata of a string literal the
    next function uses, e.g. kernels/gemm_bf16/ladder/02_wgmma_tma.cu's "cuTensorMapEncodeTiled") is checked
    line by line as below, like any of gcc's own lines;
  * any line that is not what gcc writes: a label, an instruction, or a directive of the set gcc uses, with
    operands of plain symbols and numbers — no `;` (a second statement), no `#` (a comment hiding the rest of the
    line), no `.incbin`/`.include`/`.macro`/`.irp`. This catches assembler text smuggled in without `asm` (an
    `__asm__("...")` label or a `section("...")` attribute whose name holds newlines);
  * data directives in an executable section (bytes of an instruction dressed as data);
  * `syscall`, `sysenter` and `int` instructions.

It reads only what gcc emitted; it cannot see code that computes an address and jumps into the middle of an
instruction (an immediate whose bytes are `0f 05`), nor a function of libc reached by arithmetic on an allowed
one. Those are what the sandbox's walls are for (sandbox.py, seccomp.py).
"""
from __future__ import annotations

import re

_SYMBOL = r"[A-Za-z_.$][A-Za-z0-9_.$]*"
# gcc's numeric local labels: Ubuntu's default -fcf-protection writes .note.gnu.property with 0: .. 4: and 1f - 0f
_LABEL = re.compile(rf"^(?:{_SYMBOL}|\d+):$")
_DIRECTIVE = re.compile(r"^\t\.([a-z_0-9]+)(?:[ \t]+(.*))?$")
_INSTRUCTION = re.compile(r"^\t([a-z][a-z0-9]*(?: [a-z][a-z0-9]*)?)(?:\t(.*))?$")
_OPERANDS = re.compile(r"^[A-Za-z0-9_.$@%+\-*/,(): \t]*$")      # no ; # " \ (what gcc writes for operands)
_STRING = r'"(?:[^"\\\n]|\\.)*"'
_STRING_ARGS = re.compile(rf"^(?:\d+[ \t]+)?{_STRING}(?:,[ \t]*{_STRING})*$")
_SECTION_NAME = r"[A-Za-z_.$][A-Za-z0-9_.$\-]*"
_SECTION_ARGS = re.compile(rf'^({_SECTION_NAME})(?:,"[a-zA-Z]*"(?:,[@%][a-z_]+(?:,[A-Za-z0-9_.$@]+)*)?)?$')
STRING_DIRECTIVES = {"string", "ascii", "asciz", "file", "ident"}
DATA_DIRECTIVES = {"byte", "value", "short", "word", "long", "int", "quad", "octa", "zero", "skip", "fill",
                   "string", "ascii", "asciz", "float", "double", "uleb128", "sleb128", "dc"}
OTHER_DIRECTIVES = {"text", "data", "bss", "section", "previous", "p2align", "align", "balign", "globl", "global",
                    "weak", "hidden", "protected", "internal", "local", "comm", "lcomm", "type", "size", "set",
                    "equ", "symver", "loc", "cfi_startproc", "cfi_endproc", "cfi_def_cfa", "cfi_def_cfa_offset",
                    "cfi_def_cfa_register", "cfi_offset", "cfi_rel_offset", "cfi_restore", "cfi_remember_state",
                    "cfi_restore_state", "cfi_personality", "cfi_lsda", "cfi_escape", "cfi_adjust_cfa_offset",
                    "cfi_undefined", "cfi_same_value", "cfi_register", "cfi_sections", "cfi_signal_frame",
                    "cfi_window_save", "cfi_negate_ra_state", "nops"}
RAW_SYSCALL = re.compile(r"^(?:syscall|sysenter|int|int3?|svc|swi)$")
_FATBIN_BLOCK = [re.compile(r'^\.section \.nv_fatbin, "a"$'), re.compile(r"^\.align 8$"), re.compile(r"^fatbinData:$"),
                 re.compile(r"^\.quad 0x[0-9a-f]+(?:, ?0x[0-9a-f]+)*$"), re.compile(r"^\.text$")]
MAX_REASONS = 3


def _nvcc_fatbin_block(lines: list[str]) -> int:
    """How many of an inline-assembly block's lines are the one block nvcc writes itself (the device code as
    .quad data in .nv_fatbin, up to its closing .text); 0 when the block does not start so."""
    body = [(n, line.strip()) for n, line in enumerate(lines) if line.strip()]
    if len(body) < 4 or not all(_FATBIN_BLOCK[k].match(body[k][1]) for k in range(3)):
        return 0
    for n, line in body[3:]:
        if _FATBIN_BLOCK[4].match(line):
            return n + 1
        if not _FATBIN_BLOCK[3].match(line):
            return 0
    return 0


def _executable(name: str, flags: str) -> bool:
    return name.startswith(".text") or "x" in flags


def _directive_problem(name: str, args: str, section: list) -> str:
    """'' when the directive is one gcc writes, with operands gcc would write; else why not. Tracks the section."""
    if name not in STRING_DIRECTIVES | DATA_DIRECTIVES | OTHER_DIRECTIVES:
        return f"the directive .{name} (not one the host compiler writes)"
    if name in STRING_DIRECTIVES and not _STRING_ARGS.match(args):
        return f".{name} with operands that are not one string"
    if name not in STRING_DIRECTIVES and not _OPERANDS.match(args):
        bad = next(c for c in args if not _OPERANDS.match(c))
        if not (name == "section" and _SECTION_ARGS.match(args)):
            return f".{name} with the character {bad!r} in its operands"
    if name in ("text", "data", "bss"):
        section[:] = [f".{name}", ""]
    elif name == "section":
        match = _SECTION_ARGS.match(args)
        if not match:
            return f".section {args[:60]!r} (not a plain section name)"
        flags = re.search(r',"([a-zA-Z]*)"', args)
        section[:] = [match.group(1), flags.group(1) if flags else ""]
    elif name in DATA_DIRECTIVES and _executable(*section):
        return f"data (.{name}) in the executable section {section[0]}"
    return ""


def check(text: str) -> list[str]:
    """Reasons to refuse the host assembly (empty when it is what gcc writes for plain C++)."""
    reasons: list[str] = []
    lines = text.split("\n")
    section = [".text", ""]
    i = 0
    while i < len(lines) and len(reasons) < MAX_REASONS:
        line, number = lines[i], i + 1
        i += 1
        if line == "#APP":
            end = next((j for j in range(i, len(lines)) if lines[j] == "#NO_APP"), len(lines))
            nvcc = _nvcc_fatbin_block(lines[i:end])
            if nvcc:            # nvcc's own block; gcc's lines after it, up to #NO_APP, are checked as gcc's
                i += nvcc
                continue
            block, i = lines[i:end], end + 1
            first = next((x.strip() for x in block if x.strip() and not x.startswith("#")), "")
            reasons.append(f"host code holds inline assembly (line {number} of its assembly: {first[:80]!r}); "
                           "host code may not use asm (device code's inline PTX stays allowed)")
            continue
        if line == "#NO_APP":   # the end of nvcc's block, after gcc's own lines
            continue
        if not line or _LABEL.match(line):
            continue
        directive = _DIRECTIVE.match(line)
        instruction = None if directive else _INSTRUCTION.match(line)
        if directive:
            problem = _directive_problem(directive.group(1), (directive.group(2) or "").strip(), section)
        elif instruction:
            mnemonic, operands = instruction.group(1), instruction.group(2) or ""
            problem = (f"the instruction {mnemonic!r} (a raw system call)" if RAW_SYSCALL.match(mnemonic.split()[-1])
                       else "" if _OPERANDS.match(operands) else f"an instruction with operands {operands[:60]!r}")
        else:
            problem = "a line the host compiler does not write"
        if problem:
            reasons.append(f"host assembly line {number}: {problem}: {line.strip()[:80]!r} (an asm label or a section "
                           "attribute carrying assembler text?); host code may not use assembly")
    return reasons
