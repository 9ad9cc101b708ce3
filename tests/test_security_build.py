"""The build's tripwires (issue 25, items 7-8), with the real nvcc: an outside file the preprocessor read through
a spelling the include scan missed, and host-side assembly (an `.incbin` built by assembler macros, a raw
`syscall` hidden in an immediate) — refused, and no byte of the outside file reaches a library."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from workbench.harness import build_guard

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc (the CUDA toolkit)")
pytestmark = needs_nvcc
MARKER = "OUTSIDE_MARKER_7c1f"
ENTRY = '\nextern "C" int attn_fwd() { return 0; }\n'


@pytest.fixture
def outside():
    """A world-readable folder outside every allowed root (the contained compiler may read it: the wall there
    is the dependency check, not the uid)."""
    folder = Path(tempfile.mkdtemp(prefix="wb-outside-", dir="/tmp"))
    folder.chmod(0o755)
    (folder / "outside.h").write_text(f"int outside_symbol_{MARKER} = 42;\n")
    (folder / "outside.txt").write_text(MARKER + "\n")
    for f in folder.iterdir():
        f.chmod(0o644)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _library_has(result, needle: str) -> bool:
    return bool(result.so_path) and needle.encode() in Path(result.so_path).read_bytes()


# ---- 7: the compiler's own list of what it read -------------------------------------------------------------
FORMS = {   # the preprocessor accepts all of these; the scan saw some of them
    "form feed after #": '#\finclude "{h}"\n',
    "vertical tab before #": '\v#include "{h}"\n',
    "lone CR line end": 'int a;\r#include "{h}"\r',
    "CR LF line ends": 'int a;\r\n#include "{h}"\r\n',
    "comment around include": '# /**/ include "{h}"\n',
    "digraph %:": '%:include "{h}"\n',
    "line continuation": '#inc\\\nlude "{h}"\n',
    "spaces around #": '  #   include "{h}"\n',
}


@pytest.mark.parametrize("form", list(FORMS))
def test_an_outside_include_in_any_spelling_is_refused(tmp_path, outside, form):
    from workbench.harness.build import build_kernel

    (tmp_path / "k.cu").write_bytes((FORMS[form].format(h=outside / "outside.h") + ENTRY).encode())
    result = build_kernel(tmp_path / "k.cu", cache_dir=tmp_path / "cache")
    assert not result.ok and result.forbidden, (form, result.summary)
    assert str(outside / "outside.h") in " ".join(result.forbidden), result.forbidden
    assert not _library_has(result, MARKER)


def _compile_unscanned(tmp_path: Path, text: str) -> list[str]:
    """The build's compile and its tripwires on `text`, without the early scan: the dependency check alone."""
    from workbench.harness import build, build_tripwires
    from workbench.harness.nvcc import ContainedBuild

    nvcc = shutil.which("nvcc")
    flags = build.COMPILE_FLAGS + build.arch_flags(build.DEFAULT_ARCH)
    with ContainedBuild(nvcc, 300) as work:
        source = work.write_sources("kernel.cu", text, {})
        run = work.run([nvcc, *flags, *build_tripwires.compile_flags(work.work), "-c", "-I", source.parent, "-o",
                        work.path("kernel.o"), source])
        assert run.returncode == 0, run.log[-2000:]
        return build_tripwires.check(work.work, source.parent, nvcc, flags, work.env)


@pytest.mark.parametrize("form", ["form feed after #", "vertical tab before #", "lone CR line end",
                                  "line continuation"])
def test_the_compiler_reports_what_it_read_whatever_the_spelling(tmp_path, outside, form):
    reasons = _compile_unscanned(tmp_path, FORMS[form].format(h=outside / "outside.h") + ENTRY)
    assert any(f"the compiler read {outside / 'outside.h'}" in r for r in reasons), reasons


def test_a_kernel_with_local_and_system_headers_passes_the_dependency_check(tmp_path):
    text = "#include <cstdio>\n#include <cuda_runtime.h>\n#include <mutex>\n" + ENTRY
    assert _compile_unscanned(tmp_path, text) == []


def test_the_scan_sees_the_whitespace_forms_first(outside):
    for form in FORMS:
        scan = build_guard.check_includes(FORMS[form].format(h=outside / "outside.h"), outside)
        assert scan.problems and "absolute path" in scan.problems[0], (form, scan.problems)


# ---- 8: no assembly in host code ------------------------------------------------------------------------------
HOST_ASM = {
    "incbin built by .irp": 'asm(".irp x,inc\\n.\\\\x\\\\()bin \\"{t}\\"\\n.endr\\n");',
    "incbin through a section attribute": '__attribute__((section(".data\\n.irp x,inc\\n.\\\\x\\\\()bin \\"{t}\\"\\n'
                                          '.endr\\n#"))) int smuggled = 1;',
    "syscall in an immediate": 'static long hidden() { long r; asm volatile("jmp 1f\\n.byte 0x48, 0xb8\\n'
                               '2: .byte 0x0f, 0x05, 0xc3, 0, 0, 0, 0, 0\\n1: lea 2b(%%rip), %0" : "=r"(r)); '
                               'return r; }\nlong (*entry)() = hidden;',
    "plain host asm": 'static int one() { int r; asm volatile("movl $1, %0" : "=r"(r)); return r; }\n'
                      'int (*use)() = one;',
}


@pytest.mark.parametrize("case", list(HOST_ASM))
def test_host_side_assembly_is_refused(tmp_path, outside, case):
    from workbench.harness.build import build_kernel

    (tmp_path / "k.cu").write_text(HOST_ASM[case].replace("{t}", str(outside / "outside.txt")) + ENTRY)
    assert not build_guard.check_includes((tmp_path / "k.cu").read_text(), tmp_path).problems   # the scan is blind
    result = build_kernel(tmp_path / "k.cu", cache_dir=tmp_path / "cache")
    assert not result.ok and result.forbidden, (case, result.summary, result.log[-1500:])
    assert "assembly" in " ".join(result.forbidden), result.forbidden
    assert not _library_has(result, MARKER)


def test_device_inline_ptx_stays_allowed(tmp_path):
    from workbench.harness.build import build_kernel

    (tmp_path / "k.cu").write_text(
        "__device__ __forceinline__ unsigned lane() { unsigned r; asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(r)); "
        "return r; }\n__global__ void k(unsigned* p) { p[threadIdx.x] = lane(); }\n"
        "__host__ __device__ inline int both() {\n#ifdef __CUDA_ARCH__\n  int r; asm(\"mov.u32 %0, 7;\" : \"=r\"(r)); "
        "return r;\n#else\n  return 7;\n#endif\n}\n"
        'extern "C" int attn_fwd() { k<<<1, 32>>>(nullptr); return both() - 7; }\n')
    result = build_kernel(tmp_path / "k.cu", cache_dir=tmp_path / "cache")
    assert result.ok, (result.summary, result.forbidden, result.log[-2000:])


def test_the_kernels_of_the_repository_pass_the_assembly_check():
    """What gcc writes for real kernels (the ladder's host code: templates, std::mutex, static initialisers, and
    the GEMM's wgmma rung, whose string literal gcc places before the #NO_APP of nvcc's fatbin block)."""
    from workbench.harness.build import build_kernel

    kernels = Path(__file__).resolve().parents[1] / "kernels"
    with tempfile.TemporaryDirectory() as cache:
        for root, entry in ((kernels / "attn_fwd", "attn_fwd"), (kernels / "gemm_bf16", "gemm_bf16")):
            for kernel in [root / "original.cu", *sorted((root / "ladder").glob("*.cu"))]:
                result = build_kernel(kernel, cache_dir=cache, entry_point=entry)
                assert result.ok, (kernel.name, result.summary, result.forbidden)


NVCC_BLOCK = '#APP\n\t.section .nv_fatbin, "a"\n.align 8\nfatbinData:\n.quad 0x1,0x2\n.text\n'


def test_gccs_own_lines_after_nvccs_fatbin_block_are_checked_as_gccs():
    from workbench.harness import host_asm

    string = '\n\t.section\t.rodata.str1.1,"aMS",@progbits,1\n.LC0:\n\t.string\t"cuTensorMapEncodeTiled"\n#NO_APP\n'
    assert host_asm.check(NVCC_BLOCK + string + "\t.text\n") == []
    smuggled = host_asm.check(NVCC_BLOCK + '\t.incbin\t"/etc/passwd"\n#NO_APP\n')
    assert smuggled and ".incbin" in smuggled[0]


@pytest.mark.skipif(os.geteuid() != 0, reason="the contained build drops to an unprivileged uid as root only")
def test_the_outside_file_is_refused_even_when_the_compiler_may_read_it(tmp_path, outside):
    # the compiler runs as an unprivileged uid: a world-readable outside file is readable to it; the dependency
    # check is what refuses the build
    reasons = _compile_unscanned(tmp_path, f'#\finclude "{outside / "outside.h"}"\n' + ENTRY)
    assert reasons and "include: the compiler read" in reasons[0], reasons


def test_the_property_note_of_cf_protection_passes_the_assembly_check(tmp_path):
    """gcc built with -fcf-protection by default (Ubuntu's, on the GPU machine) ends every file with a
    .note.gnu.property block of numeric local labels (0: .. 4:); the H200 run of 2026-12-01 refused every kernel
    on them ('0:'). Here gcc is asked for the same block explicitly."""
    import subprocess

    from workbench.harness import host_asm

    (tmp_path / "t.c").write_text("int f(int x) { return x + 1; }\n")
    text = subprocess.run(["gcc", "-fcf-protection=full", "-O2", "-S", "-o", "-", str(tmp_path / "t.c")],
                          check=True, capture_output=True, text=True).stdout
    assert "0:" in text.splitlines(), text[-400:]
    assert host_asm.check(text) == []
