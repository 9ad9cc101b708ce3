"""Reason `foreign_kernel`: the comparison of kernel names seen against kernels built, the kernel list of real nvcc
builds, the refusals around it, and the check end to end through the worker with CPU stand-ins."""
import shutil
import subprocess
from pathlib import Path

import pytest

from workbench.harness import foreign
from workbench.harness.build import build_kernel, forbidden_in_source
from workbench.harness.check import check
from workbench.harness.foreign import NO_ACTIVITY, judge
from workbench.harness.kernel_names import _section_table, library_kernels, ptxas_kernels
from workbench.harness.result import CheckRequest
from workbench.harness.standins import EXPECTED_REASON_IN_WORKER

ROOT = Path(__file__).resolve().parents[1]
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

# mangled as nvcc 13 writes them into the cubin (recorded from real builds of these declarations)
BUILT = {
    "_Z15attn_fwd_kernelILi128EEv10AttnParams": "void attn_fwd_kernel<128>(AttnParams)",
    "_ZN2wb7tkernelIfLi64ELb1EEEvNS_6ParamsET_": "void wb::tkernel<float, 64, true>(wb::Params, float)",
    "_ZN40_GLOBAL__N__f6e80902_8_names_cu_32df9e9711anon_kernelILi7EEEvPf":
        "void (anonymous namespace)::anon_kernel<7>(float*)",
    "_Z14functor_kernelIZ8attn_fwdEUlfE_EvPfT_":
        "void functor_kernel<attn_fwd::{lambda(float)#1}>(float*, attn_fwd::{lambda(float)#1})",
    "_Z13static_kernelPf": "static_kernel(float*)",
    "plain_c_kernel": "plain_c_kernel",
}
# what torch.profiler shows for other libraries' kernels
FOREIGN = {
    "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNN": "cuBLAS",
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
     "__5x_cublas"): "cuBLAS",
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>"
     "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)"): "CUTLASS",
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
     "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"): "torch",
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, "
     "false, true, false, false, false, false, false, false>(pytorch_flash::Flash_fwd_params)"): "FlashAttention",
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0": "cuDNN",
}


# ---- the comparison ------------------------------------------------------------------------------------
def test_the_candidates_kernels_match_whatever_their_spelling():
    seen = list(BUILT.values()) + ["void attn_fwd_kernel<128>( AttnParams )",          # spacing
                                   ("void functor_kernel<attn_fwd::{lambda(float)#1}>"
                                    "(float *, attn_fwd::{lambda(float)#1})"),
                                   "void {anonymous}::anon_kernel<7>(float*)",          # another anonymous spelling
                                   "_Z13static_kernelPf"]                               # left mangled
    verdict = judge(seen, list(BUILT))
    assert verdict.ok and not verdict.foreign and sum(verdict.own.values()) == len(seen), verdict.detail()
    assert not verdict.degraded


@pytest.mark.parametrize("name,library", FOREIGN.items(), ids=list(FOREIGN.values()))
def test_library_kernels_are_foreign_and_named(name, library):
    verdict = judge(["void attn_fwd_kernel<128>(AttnParams)", name, name], list(BUILT))
    assert not verdict.ok and verdict.foreign[name] == 2
    detail = verdict.detail()
    assert f"({library}) x2" in detail and "own: void attn_fwd_kernel<128>(AttnParams)" in detail
    assert "\n" not in detail


def test_a_template_instance_the_library_does_not_hold_is_foreign():
    """Same base name as an own kernel, other template arguments: a look-alike cannot pass on its base name."""
    verdict = judge(["void attn_fwd_kernel<64>(AttnParams)", "void wb::tkernel<float, 64, false>(wb::Params, float)"],
                    list(BUILT))
    assert set(verdict.foreign) == {"void attn_fwd_kernel<64>(AttnParams)",
                                    "void wb::tkernel<float, 64, false>(wb::Params, float)"}


def test_copies_and_sets_are_allowed_and_listed_syncs_ignored():
    seen = ["Memcpy DtoD (Device -> Device)", "Memset (Device)", "Memcpy HtoD (Pinned -> Device)", "Stream Sync",
            "void attn_fwd_kernel<128>(AttnParams)"]
    verdict = judge(seen, list(BUILT))
    assert verdict.ok and len(verdict.transfers) == 3
    assert "copies/sets (allowed): Memcpy DtoD (Device -> Device)" in verdict.detail()
    # a kernel named like a copy is still a kernel
    assert not judge(["Memcpy_kernel(float*)"], list(BUILT)).ok


def test_a_call_that_wrote_outputs_with_nothing_recorded_hid_its_work():
    verdict = judge([], list(BUILT))
    assert not verdict.ok and NO_ACTIVITY in verdict.foreign and "no device activity" in verdict.detail()
    assert not judge(["Stream Sync"], list(BUILT)).ok
    assert judge([], list(BUILT), wrote_output=False).ok        # nothing to write, nothing to launch
    assert judge(["Memset (Device)"], []).ok                     # a copy-only call did device work


def test_without_any_demangler_names_compare_on_base_identifiers(monkeypatch):
    monkeypatch.setattr(foreign, "_cxa_demangle", lambda: None)
    monkeypatch.setattr(foreign.shutil, "which", lambda name: None)
    verdict = judge(list(BUILT.values()), list(BUILT))
    assert verdict.degraded and verdict.ok, verdict.detail()
    assert not judge(list(FOREIGN), list(BUILT)).own


def test_base_identifiers():
    assert foreign.base_identifier(BUILT["_ZN2wb7tkernelIfLi64ELb1EEEvNS_6ParamsET_"]) == "wb::tkernel"
    assert foreign.mangled_base("_ZN2wb7tkernelIfLi64ELb1EEEvNS_6ParamsET_") == "wb::tkernel"
    anon = "_ZN40_GLOBAL__N__f6e80902_8_names_cu_32df9e9711anon_kernelILi7EEEvPf"
    assert foreign.mangled_base(anon) == foreign.base_identifier(BUILT[anon])
    assert foreign.base_identifier(BUILT["_Z14functor_kernelIZ8attn_fwdEUlfE_EvPfT_"]) == "functor_kernel"


# ---- kernel names of real builds -----------------------------------------------------------------------
NAMES_CU = r'''
#include <cuda_runtime.h>
namespace { template <int N> __global__ void anon_kernel(float* x) { x[threadIdx.x] = N; } }
static __global__ void static_kernel(float* x) { x[0] = 2; }
extern "C" __global__ void plain_c_kernel(float* x) { x[0] = 3; }
namespace wb { struct Params { float* x; int n; };
  template <typename T, int D, bool C> __global__ void tkernel(Params p, T s) { if (C) p.x[D] = s; } }
template <typename F> __global__ void functor_kernel(float* x, F f) { x[0] = f(1.0f); }
namespace { struct Twice { __device__ float operator()(float v) const { return 2 * v; } }; }
__device__ __noinline__ float helper(float v) { return v * 3; }
__global__ void calls_helper(float* x) { x[0] = helper(x[1]); }
extern "C" int attn_fwd(const void* q, const void* k, const void* v, void* o, float* lse, int b, int hq, int hkv,
                        int sq, int sk, int d, int causal, float scale, cudaStream_t s) {
  float* x = lse;
  anon_kernel<7><<<1, 1, 0, s>>>(x); static_kernel<<<1, 1, 0, s>>>(x); plain_c_kernel<<<1, 1, 0, s>>>(x);
  wb::tkernel<float, 64, true><<<1, 1, 0, s>>>(wb::Params{x, 1}, 1.f);
  functor_kernel<<<1, 1, 0, s>>>(x, Twice{});
  functor_kernel<<<1, 1, 0, s>>>(x, [] __device__ (float v) { return v + 1; });
  calls_helper<<<1, 1, 0, s>>>(x);
  return (int)cudaGetLastError(); }
'''


def _profiler_spelling(mangled: list[str]) -> list[str]:
    """Names as another demangler writes them (binutils' c++filt; Kineto uses libstdc++'s)."""
    out = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True, text=True).stdout.splitlines()
    assert len(out) == len(mangled)
    return out


@needs_nvcc
@pytest.mark.skipif(shutil.which("c++filt") is None, reason="c++filt not installed")
def test_templates_lambdas_and_anonymous_namespaces_of_a_real_build(tmp_path):
    src = tmp_path / "names.cu"
    src.write_text(NAMES_CU)
    build = build_kernel(src, cache_dir=tmp_path, extra_flags=("--extended-lambda",))
    assert build.ok, build.summary
    assert build.kernels == ptxas_kernels(build.log) == library_kernels(build.so_path)
    seen = _profiler_spelling(build.kernels)
    assert len(seen) == 7 and not any(s.startswith("_Z") for s in seen)
    assert {"void wb::tkernel<float, 64, true>(wb::Params, float)", "plain_c_kernel",
            "void (anonymous namespace)::anon_kernel<7>(float*)", "calls_helper(float*)"} <= set(seen)
    assert not any("helper(float)" in s and "calls" not in s for s in seen)      # a device function is no kernel
    verdict = judge(seen, build.kernels)
    assert verdict.ok and sum(verdict.own.values()) == 7
    assert build_kernel(src, cache_dir=tmp_path, extra_flags=("--extended-lambda",)).kernels == build.kernels  # cached


@needs_nvcc
@pytest.mark.parametrize("kernel,expected", [
    ("original.cu", ["void attn_fwd_kernel<64>(AttnParams)", "void attn_fwd_kernel<128>(AttnParams)",
                     "void attn_fwd_kernel<256>(AttnParams)"]),
    ("ladder/02_mma.cu", ["void (anonymous namespace)::combine_kernel<128>((anonymous namespace)::Params)"]),
])
def test_the_kernel_list_of_original_and_ladder_builds(kernel, expected):
    build = build_kernel(ROOT / "kernels" / "attn_fwd" / kernel)     # the shared build cache: fast when warm
    assert build.ok and not build.forbidden, build.summary
    assert build.kernels == ptxas_kernels(build.log) and len(build.kernels) == len(build.resources)
    seen = _profiler_spelling(build.kernels) if shutil.which("c++filt") else list(build.kernels)
    assert set(expected) <= set(seen)
    assert judge(seen, build.kernels).ok
    assert not judge(seen + ["nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNN"], build.kernels).ok


@needs_nvcc
def test_a_kernel_planted_in_the_fatbin_section_is_refused(tmp_path):
    """Bytes of another build placed in .nv_fatbin would add their kernel names to the library's own."""
    donor = tmp_path / "donor.cu"
    donor.write_text('extern "C" __global__ void planted_kernel(float* x) { x[0] = 1; }\n'
                     'extern "C" int attn_fwd() { return 0; }\n')
    donor_build = build_kernel(donor, cache_dir=tmp_path)
    assert donor_build.ok and donor_build.kernels == ["planted_kernel"]
    elf = Path(donor_build.so_path).read_bytes()
    _, _, offset, size, _ = next(s for s in _section_table(elf) if s[0] == ".nv_fatbin")
    data = ", ".join(str(b) for b in elf[offset:offset + size])
    host = tmp_path / "host.cu"
    host.write_text(f'__attribute__((section(".nv_fatbin"), used, aligned(8))) static const unsigned char fake[] = '
                    f'{{{data}}};\n__global__ void real_kernel(float* x) {{ x[0] = 2; }}\n'
                    'extern "C" int attn_fwd() { real_kernel<<<1, 1>>>(nullptr); return 0; }\n')
    result = build_kernel(host, cache_dir=tmp_path)
    assert not result.ok and "planted_kernel" in result.summary and "did not compile" in result.summary


@needs_nvcc
def test_a_kernel_named_like_a_librarys_is_refused(tmp_path):
    src = tmp_path / "lookalike.cu"
    src.write_text('extern "C" __global__ void nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNN(float* x) { x[0] = 1; }\n'
                   'extern "C" int attn_fwd() { return 0; }\n')
    result = build_kernel(src, cache_dir=tmp_path)
    assert not result.ok and "named like a library's kernel" in result.summary


@pytest.mark.parametrize("line", ["void* (*f)(const char*, int) = &dlopen;", "void* f = dlsym(h, name);",
                                  "dlvsym(h, name, v);", "dlmopen(0, name, 1);", "lookup(RTLD_DEFAULT, name);",
                                  "lookup(RTLD_NEXT, name);", "__libc_dlopen_mode(name, 2);"])
def test_every_dynamic_loading_spelling_is_refused_in_the_source(line):
    (reason,) = forbidden_in_source(line)
    assert "line 1: uses" in reason and "dynamic loading" in reason


def test_mentions_in_comments_and_longer_identifiers_are_not_refused():
    assert forbidden_in_source("int dlopen_count = 0;  // no dlopen here\nint dlsymbols;") == []


# ---- end to end through the worker (CPU stand-ins) -----------------------------------------------------
def smoke(tmp_path, kernel, **kw):
    lines = []
    request = CheckRequest(kernel_path=kernel, suite="smoke", anchors=(), cache_dir=str(tmp_path / "cache"), **kw)
    return check(request, progress=lines.append), lines


@pytest.mark.parametrize("name", sorted(EXPECTED_REASON_IN_WORKER))
def test_a_standin_that_runs_foreign_work_is_rejected(tmp_path, name, monkeypatch):
    monkeypatch.setenv("WORKBENCH_FOREIGN_CHECK", "all")     # set: check prints what the check cost
    result, lines = smoke(tmp_path, f"standin:{name}", fail_fast=True)
    first = result.rows[0]
    assert first.status == "failed" and first.reason == EXPECTED_REASON_IN_WORKER[name], first.detail
    if name == "foreign_gemm":
        assert "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNN (cuBLAS) x2" in first.detail
        assert "own: void standin::attention<64>(float const*)" in first.detail
    assert any(line.startswith("foreign-kernel check: ") and "call(s) recorded" in line for line in lines)


def test_correct_work_with_a_copy_passes_and_the_copy_is_listed(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_FOREIGN_CHECK", "all")
    result, lines = smoke(tmp_path, "standin:copies_result")
    assert result.all_correct and not any(f.startswith("foreign_check") for f in result.flags)
    assert all("copies/sets (allowed): Memcpy DtoD (Device -> Device)" in r.detail for r in result.rows)
    assert any("foreign-kernel check: 16 call(s) recorded" in line for line in lines)   # 8 candidate + 8 baseline


def test_a_baseline_that_runs_foreign_work_fails_the_scenario(tmp_path):
    result, _ = smoke(tmp_path, "standin:correct", baseline_path="standin:foreign_gemm", fail_fast=True)
    assert result.rows[0].reason == "foreign_kernel" and result.rows[0].detail.startswith("the baseline: ")


def test_the_switch_turns_the_check_off_or_down_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_FOREIGN_CHECK", "off")
    result, lines = smoke(tmp_path, "standin:foreign_gemm")
    assert result.all_correct and "foreign_check:off" in result.flags      # correct without the check
    assert "foreign-kernel check: off" in lines
    monkeypatch.setenv("WORKBENCH_FOREIGN_CHECK", "sampled")                 # the first and the largest shape
    result, lines = smoke(tmp_path, "standin:foreign_gemm", timing=False)
    rejected = [r.name for r in result.rows if r.reason == "foreign_kernel"]
    assert rejected[0] == "smoke_basic" and len(rejected) == 2 and "foreign_check:sampled" in result.flags
    monkeypatch.setenv("WORKBENCH_FOREIGN_CHECK", "maybe")                  # unknown: stays on
    result, lines = smoke(tmp_path, "standin:foreign_gemm", fail_fast=True, timing=False)
    assert result.rows[0].reason == "foreign_kernel" and any("is not one of all" in line for line in lines)
