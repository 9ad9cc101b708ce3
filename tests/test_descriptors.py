"""Rung 04's shared-memory descriptors on the CPU: DESC_ADD64's 64-bit add of a k-step's offset gives the very
descriptors the 32-bit add to the low word gives (the knob changes ptxas's register choice, not the GEMMs' operands),
and every k-step's start field is the true address of its 16-byte row, for every tile width and head_dim the rung
instantiates and every 1024-byte-aligned stage that fits in shared memory. The real desc_kmajor, desc_mnmajor and
desc_join are cut out of the .cu and compiled with g++."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from grid_plan import braced  # noqa: E402

KERNEL = ROOT / "kernels" / "attn_fwd" / "ladder" / "04_pingpong.cu"

# issue_qk's and issue_pv's offsets, as the kernel forms them (in 16-byte units): QK's k-step kk is +32 B inside a
# 128-byte chunk, a chunk further every 4 steps (64 rows of Q, BN rows of K); PV's is 2048 B per 16 keys.
DRIVER = r"""
#include <cstdio>
#include <cstdint>
int main() {
    const int dims[] = {64, 128, 256}, widths[] = {80, 112, 128, 176, 192};
    const uint32_t smem = 227 * 1024;
    long checked = 0, bad = 0;
    for (int D : dims) for (int BN : widths) {
        const uint32_t k_bytes = BN * D * 2;
        for (uint32_t base = 0; base + k_bytes <= smem; base += 1024) {
            const uint64_t kd = desc_kmajor(base), vd = desc_mnmajor(base, BN * 128);
            for (int kk = 0; kk < D / 16; ++kk) {
                const uint32_t ko = ((kk >> 2) * (BN * 128) + (kk & 3) * 32) >> 4;
                const uint64_t joined = desc_join((uint32_t)kd + ko, (uint32_t)(kd >> 32));
                bad += joined != kd + ko || ((kd + ko) & 0x3FFF) != ((base >> 4) + ko);
                ++checked;
            }
            for (int kk = 0; kk < BN / 16; ++kk) {
                const uint32_t vo = kk * (2048 >> 4);
                const uint64_t joined = desc_join((uint32_t)vd + vo, (uint32_t)(vd >> 32));
                bad += joined != vd + vo || ((vd + vo) & 0x3FFF) != ((base >> 4) + vo);
                ++checked;
            }
        }
    }
    printf("%ld %ld\n", checked, bad);
    return 0;
}
"""


def descriptor_source(src: str) -> str:
    """The kernel's three descriptor helpers, CUDA's qualifiers dropped."""
    parts = [braced(src, "__device__ __forceinline__ uint64_t desc_kmajor("),
             braced(src, "__device__ __forceinline__ uint64_t desc_mnmajor("),
             braced(src, "__device__ __forceinline__ uint64_t desc_join(")]
    return "\n".join(p.replace("__device__ __forceinline__ ", "inline ") for p in parts)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (host build of the descriptor helpers)")
def test_the_64_bit_add_gives_the_same_descriptors_and_true_start_addresses(tmp_path):
    source = "#include <cstdint>\n" + descriptor_source(KERNEL.read_text()) + DRIVER
    (tmp_path / "desc.cpp").write_text(source)
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-o", "desc", "desc.cpp"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    checked, bad = map(int, subprocess.run([str(tmp_path / "desc")], capture_output=True, text=True,
                                           check=True).stdout.split())
    assert checked > 10_000 and bad == 0
