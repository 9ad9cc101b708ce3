"""The kernels a built library contains, read from the library itself (no cuobjdump: CPU machines lack it).

nvcc embeds the device code of a .cu in the host library's `.nv_fatbin` section: one or more fatbins, each a
list of entries, an entry being a cubin (an ELF file) or PTX text. A kernel is a function symbol of a cubin
that has its own `.text.<name>` section (device helpers live inside their caller's section), or a `.entry` of
the PTX. Names come back as the compiler wrote them (mangled); foreign.py demangles them for comparison.

The `-Xptxas -v` report names each entry too ("Compiling entry function '...'"), but a source can print that
line itself (`#pragma message` with a newline), so the report is only the fallback and a cross-check.
"""
from __future__ import annotations

import re
import struct
from typing import Optional

FATBIN_MAGIC = 0xBA55ED50
ENTRY_ELF, ENTRY_PTX = 2, 1
FLAG_COMPRESSED = 0x2000
STT_FUNC = 2
SHT_SYMTAB = 2

_PTXAS_ENTRY = re.compile(r"^ptxas info\s*: Compiling entry function '(?P<name>[^']+)'", re.MULTILINE)
_PTX_ENTRY = re.compile(rb"\.entry\s+([\w$.]+)")


class UnreadableFatbin(Exception):
    """The section is there but cannot be read here (compressed entries, unknown layout)."""


def _section_table(elf: bytes) -> list[tuple[str, int, int, int, int]]:
    """(name, type, offset, size, link) of each section of a little-endian ELF64 file; [] for anything else."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    raw = [struct.unpack_from("<IIQQQQI", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = raw[shstrndx][4] if shstrndx < len(raw) else 0
    return [(_c_string(elf, names_at + name), kind, offset, size, link)
            for name, kind, _flags, _addr, offset, size, link in raw]


def _c_string(data: bytes, at: int) -> str:
    return data[at:data.index(b"\0", at)].decode(errors="replace")


def cubin_kernels(cubin: bytes) -> list[str]:
    """Function symbols of a cubin that own a `.text.<name>` section: its kernels."""
    table = _section_table(cubin)
    symtab = next((s for s in table if s[1] == SHT_SYMTAB), None)
    if symtab is None:
        return []
    _, _, offset, size, link = symtab
    strings_at = table[link][2]
    names = []
    for at in range(offset, offset + size, 24):            # Elf64_Sym is 24 bytes
        st_name, st_info, _other, st_shndx = struct.unpack_from("<IBBH", cubin, at)
        if st_info & 0xF != STT_FUNC or not st_name or st_shndx >= len(table):
            continue
        name = _c_string(cubin, strings_at + st_name)
        if table[st_shndx][0] == f".text.{name}":
            names.append(name)
    return names


def fatbin_kernels(blob: bytes) -> list[str]:
    """Kernels of every fatbin in a `.nv_fatbin` section's bytes. Raises UnreadableFatbin."""
    names: list[str] = []
    at = 0
    while at + 16 <= len(blob):
        magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", blob, at)
        if magic != FATBIN_MAGIC:
            at += 8            # fatbins are 8-byte aligned; padding sits between them
            continue
        entry, end = at + header_size, at + header_size + fat_size
        while entry < end:
            kind, _ver, entry_header, payload = struct.unpack_from("<HHIQ", blob, entry)
            compressed_size, = struct.unpack_from("<I", blob, entry + 16)
            flags, = struct.unpack_from("<Q", blob, entry + 40)
            data = blob[entry + entry_header:entry + entry_header + payload]
            if compressed_size or flags & FLAG_COMPRESSED:
                raise UnreadableFatbin("compressed fatbin entry")
            if kind == ENTRY_ELF:
                names += cubin_kernels(data)
            elif kind == ENTRY_PTX:
                names += [m.decode() for m in _PTX_ENTRY.findall(data)]
            else:
                raise UnreadableFatbin(f"fatbin entry of unknown kind {kind}")
            entry += entry_header + payload
        at = end
    return names


def library_kernels(so_path: str) -> Optional[list[str]]:
    """Sorted kernel names of a built library, or None when its device code cannot be read here."""
    with open(so_path, "rb") as handle:
        elf = handle.read()
    try:
        section = next((s for s in _section_table(elf) if s[0] == ".nv_fatbin"), None)
        if section is None:
            return None
        _, _, offset, size, _ = section
        return sorted(set(fatbin_kernels(elf[offset:offset + size])))
    except (UnreadableFatbin, struct.error, ValueError, IndexError):
        return None


def ptxas_kernels(log: str) -> list[str]:
    """Entry names from nvcc's `-Xptxas -v` report (the fallback when the fatbin cannot be read)."""
    return sorted({m.group("name") for m in _PTXAS_ENTRY.finditer(log)})
