"""Real nvcc builds (CPU machines have nvcc and ptxas): every kernel compiles with a resource report."""
import shutil
from pathlib import Path

import pytest

from workbench.harness.build import build_kernel, forbidden_in_source, parse_diagnostics, parse_resources
from workbench.harness.check import check
from workbench.harness.result import CheckRequest

ROOT = Path(__file__).resolve().parents[1]
# attention's kernels: build_kernel expects its entry point (attn_fwd); the GEMM problem's files are built by
# tests/test_gemm_bf16_files.py until the harness knows problems
KERNELS = sorted((ROOT / "kernels" / "attn_fwd").rglob("*.cu"))
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

MINIMAL = (r'''
#include <cuda_bf16.h>
#include <cuda_runtime.h>
__global__ void touch(float* lse) { __shared__ float s[128]; s[threadIdx.x] = 1.f; __syncthreads(); '''
           r'''lse[threadIdx.x] = s[127 - threadIdx.x]; }
extern "C" int attn_fwd(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o,
                        float* lse, int b, int hq, int hkv, int sq, int sk, int d, int causal, float scale,
                        cudaStream_t stream) { touch<<<1, 128, 0, stream>>>(lse); return (int)cudaGetLastError(); }
''')


def test_kernel_tree_is_not_empty():
    names = {p.relative_to(ROOT / "kernels" / "attn_fwd").as_posix() for p in KERNELS}
    assert "original.cu" in names
    assert sum(n.startswith("wrong/") for n in names) >= 10


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.relative_to(ROOT / "kernels").as_posix())
def test_every_kernel_compiles_for_sm90a_with_a_resource_report(path, tmp_path):
    result = build_kernel(path, arch="sm_90a")
    assert result.ok, result.summary + "\n" + result.log[-2000:]
    assert result.resources and all(r.registers > 0 for r in result.resources)
    assert "built" in result.summary


@needs_nvcc
def test_build_cache_errors_and_arch(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(MINIMAL)
    first = build_kernel(src, cache_dir=tmp_path)
    assert first.ok and not first.cached and first.resources[0].smem_bytes == 512
    assert build_kernel(src, cache_dir=tmp_path).cached
    assert build_kernel(src, arch="sm_100a", cache_dir=tmp_path).ok      # another target compiles too
    broken = tmp_path / "broken.cu"
    broken.write_text(MINIMAL.replace("s[threadIdx.x] = 1.f;", "s[threadIdx.x] = undefined_name;"))
    bad = build_kernel(broken, cache_dir=tmp_path)
    assert not bad.ok
    assert bad.errors[0].line == 4 and "undefined_name" in bad.errors[0].message
    assert bad.summary.startswith("broken.cu: build failed at line 4:") and "\n" not in bad.summary
    no_entry = tmp_path / "noentry.cu"
    no_entry.write_text(MINIMAL.replace('extern "C" int attn_fwd', "int attn_fwd"))
    assert "no exported symbol attn_fwd" in build_kernel(no_entry, cache_dir=tmp_path).summary


@needs_nvcc
def test_a_cached_build_is_found_where_it_lies_not_through_a_removed_link(tmp_path):
    """Two cache folders share one build folder through links (the GPU proof does this); the first is removed.
    A hit from the second must name the library's real path, not the path recorded through the first."""
    src, shared = tmp_path / "k.cu", tmp_path / "shared_build"
    src.write_text(MINIMAL)
    shared.mkdir()
    first, second = tmp_path / "first", tmp_path / "second"
    for cache in (first, second):
        cache.mkdir()
        (cache / "build").symlink_to(shared, target_is_directory=True)
    built = build_kernel(src, cache_dir=first)
    assert built.ok and Path(built.so_path).is_file() and not Path(built.so_path).is_symlink()
    (first / "build").unlink()
    first.rmdir()
    again = build_kernel(src, cache_dir=second)
    assert again.cached and Path(again.so_path).is_file()
    assert Path(again.so_path) == (shared / Path(again.so_path).parent.name / "kernel.so").resolve()


@needs_nvcc
def test_planted_forbidden_include_is_refused(tmp_path):
    src = tmp_path / "cheat.cu"
    src.write_text("#include <cublas_v2.h>\n" + MINIMAL)
    result = build_kernel(src, cache_dir=tmp_path)
    assert not result.ok and result.forbidden and "cublas" in result.summary
    for line, needle in [("#include <cute/tensor.hpp>", "cute"), ('#include "cutlass/gemm.h"', "cutlass"),
                         ("#include <cudnn.h>", "cudnn"), ('void* h = dlopen("libcublas.so", 1);', "dlopen")]:
        assert needle in forbidden_in_source(line)[0]


@needs_nvcc
def test_linked_forbidden_library_is_refused(tmp_path):
    """A library that declares cuBLAS itself (no include) still needs its symbols: caught on the built .so."""
    src = tmp_path / "linked.cu"
    src.write_text(MINIMAL.replace("#include <cuda_runtime.h>",
                                   '#include <cuda_runtime.h>\nextern "C" int cublasCreate_v2(void**);\n'
                                   'extern "C" int use_it() { void* h; return cublasCreate_v2(&h); }'))
    result = build_kernel(src, cache_dir=tmp_path)   # a shared library may leave cublas* undefined
    assert not result.ok and any("cublas" in r.lower() for r in result.forbidden), result.summary


def test_parsers_on_recorded_output():
    log = ("k.cu(12): error: identifier \"x\" is undefined\n"
           "ptxas info    : Compiling entry function '_Z4testPf' for 'sm_90a'\n"
           "ptxas info    : Function properties for _Z4testPf\n"
           "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
           "ptxas info    : Used 255 registers, used 1 barriers, 49152 bytes smem, 400 bytes cmem[0]\n")
    (err,) = parse_diagnostics(log)
    assert (err.line, err.severity) == (12, "error")
    (res,) = parse_resources(log)
    assert (res.registers, res.spill_stores, res.stack_bytes, res.smem_bytes, res.barriers) == (255, 4, 8, 49152, 1)


@needs_nvcc
def test_check_without_gpu_is_static_only(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_NO_GPU", "1")
    src = tmp_path / "k.cu"
    src.write_text(MINIMAL)
    result = check(CheckRequest(kernel_path=str(src), suite="smoke", cache_dir=str(tmp_path)))
    assert result.status == "static_only" and "need a CUDA GPU" in result.error
    assert result.build["resources"] and not result.all_correct
