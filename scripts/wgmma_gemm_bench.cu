// wgmma_gemm_bench.cu: the Hopper operand path (TMA -> 128B-swizzled smem -> wgmma) as a plain GEMM, the gate
// (>= 600 TFLOP/s on the H200) before the attention rungs depend on it. Issue 12, "Rung A".
//
//   C[M,N] (bf16) = A[M,K] (bf16, K-major) * B[N,K]^T (bf16, K-major), fp32 accumulate: QK^T's operand case.
//   Raw PTX only (no CUTLASS/CuTe/cuBLAS); links only cudart (the tensor-map encoder comes through
//   cudaGetDriverEntryPointByVersion, so no -lcuda).
//
// Build and run (H200; the wrapper scripts/wgmma_gemm_bench.sh does both and logs to $OUT):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o /tmp/wgmma_gemm scripts/wgmma_gemm_bench.cu
//   /tmp/wgmma_gemm                 # probe + correctness + timing + gate
//   /tmp/wgmma_gemm --check-only    # probe + correctness only
//   add -DWGMMA_WATCHDOG to the build: an mbarrier wait longer than ~2 s records who waited (role, stage, parity)
//   in host-mapped memory and traps, so a parity bug reports instead of hanging.
//
// Design (pranjalssh/fast.cu kernels 2->11 are the model):
//   - 384 threads: warpgroup 0 is the producer (setmaxnreg 24; one thread issues TMA), warpgroups 1-2 are
//     consumers (setmaxnreg 240), each owning 64 of the block's 128 rows with one m64n256k16 accumulator (128 fp32).
//   - Block tile 128x256x64; 4 smem stages of 48 KB (A 16 KB + B 32 KB) on full/empty mbarriers; 5 stages would
//     need 240 KB > 227 KB. 2-D tensor maps, box {64 cols, rows}, 128B swizzle: one 64-column box is exactly the
//     K-major SW128 wgmma layout (8-row atoms of 1024 B, SBO 1024, +32 B per k16 step).
//   - Consumers keep one wgmma batch in flight (wait_group 1) and release the previous stage; the epilogue
//     stores bf16 pairs straight from registers while the producer already fills the next tile's stages.
//   - Persistent grid (one CTA per SM), tiles in groups of 16 m-blocks so a wave shares A and B in L2.
//   - Mode "rs_probe": one warpgroup, one ragged tile, the attention chain S = X Y^T (SS, K-major),
//     P = bf16(S) repacked from the accumulator into RS A-fragments, O = P V (RS, V MN-major, trans-b 1;
//     LBO = kv_rows*128 B between 64-column chunks, SBO = 1024, +2048 B per k16 step), against a float64 host
//     reference, and the TMA zero fill checked on the padding.
//
// ptxas (nvcc 13.0 V13.0.88, -Xptxas -v, sm_90a), 2026-12-01, identical for the release and -DWGMMA_WATCHDOG builds:
//   gemm_kernel      168 registers (launch bound 384 x 168 = 64,512; setmaxnreg 24/240 inside), 0 bytes stack
//                    frame, 0 bytes spill stores, 0 bytes spill loads
//   rs_probe_kernel  186 registers, 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   no C75xx line (without the fence_regs/wgmma_fence calls ptxas prints C7519 for both kernels: they are needed)
//   SASS (HGMMA.64x256x16.F32.BF16, UTMALDG.2D, USETMAXREG, no LDL/STL) is counted by the wrapper on the H200.
// Prediction (before any run): 8192^3 about 680 TFLOP/s (range 620-740), 4096^3 about 650, 512x8192x8192 about
//   640 (one wave: 128 tiles on 128 of 132 SMs), 8192x8192x128 far lower, ~250-350 (two k-blocks per tile: the
//   128 MB of bf16 stores, ~30 us at 4.3 TB/s, and each tile's pipeline fill dominate). Reasoning: fast.cu's
//   kernels 6-7 (persistent, producer warpgroup, mbarrier parity; 7 adds 128x256 with 2 consumers and 2-CTA
//   multicast) measured 777-799 TFLOP/s at 8192^3 on an H100 SXM; this one has no multicast and no TMA-store
//   epilogue (its register-to-global epilogue is not overlapped with the same warpgroups' next mainloop: ~1-2 us
//   per ~75 us tile at K=8192, ~3% at 4096), 2048 tiles = 15.5 waves of 132 (97% wave efficiency), and the
//   H200's sustained cuBLAS figure is 790 TFLOP/s; so 85-90% of cuBLAS.
// Measured: H200, 2026-12-01, `bash scripts/wgmma_gemm_bench.sh`, CUDA events, median of 30: 8192^3 749.5
// TFLOP/s (94.9 % of the 790 TFLOP/s cuBLAS ceiling; predicted ~680), 4096^3 652.5, 512x8192x8192 676.7,
// 8192x8192x128 112.1; rel L2 1.66e-3 everywhere; RS/MN-major probe S 6.7e-8, O 8.8e-8 against float64.
// Gate (>= 600): PASS. SASS: HGMMA.64x256x16 x4, UTMALDG, USETMAXREG, no LDL/STL.

#include <cuda.h>          // CUtensorMap and its enums only: no -lcuda
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

typedef __nv_bfloat16 bf16;

namespace cfg {
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, CONSUMERS = 2;
constexpr int THREADS = 128 * (CONSUMERS + 1);
constexpr int A_STAGE_BYTES = BM * BK * 2;                      // 16384: TMA box {64, 128}
constexpr int B_STAGE_BYTES = BN * BK * 2;                      // 32768: TMA box {64, 256}
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;      // 49152: expect_tx per stage (full boxes, OOB too)
constexpr int SMEM_BYTES = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;  // align slack + tiles + full/empty
constexpr int GROUP_M = 16;        // m-blocks per L2 group of the tile order
constexpr double GATE_TFLOPS = 600.0, CUBLAS_TFLOPS = 790.0;    // gate; cuBLAS sustained on this H200
static_assert(SMEM_BYTES <= 227 * 1024, "smem over the sm_90 limit");
static_assert(BK * 2 == 128, "one 64-column box is one 128B swizzle row");
}  // namespace cfg

#define CUDA_CHECK(x)                                                                                  \
  do {                                                                                                 \
    cudaError_t err_ = (x);                                                                            \
    if (err_ != cudaSuccess) {                                                                         \
      std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_), __FILE__, __LINE__, \
                   cudaGetErrorString(err_));                                                          \
      report_watchdog();                                                                               \
      std::exit(3);                                                                                    \
    }                                                                                                  \
  } while (0)

// ------------------------------------------------------------------------------------------------ watchdog
struct WatchdogReport {
  volatile int fired, block, thread, role, stage;
  volatile unsigned parity;
};
static WatchdogReport* h_watchdog = nullptr;  // host-mapped, still readable after the trap kills the context

static void report_watchdog() {
  if (h_watchdog && h_watchdog->fired) {
    static const char* roles[] = {"producer waiting on empty", "consumer waiting on full", "rs_probe waiting on load"};
    const int role = h_watchdog->role;
    std::fprintf(stderr, "watchdog: block %d thread %d (%s) stage %d parity %u did not complete in ~2 s\n",
                 h_watchdog->block, h_watchdog->thread, (role >= 0 && role < 3) ? roles[role] : "?",
                 h_watchdog->stage, h_watchdog->parity);
  }
}

#ifdef WGMMA_WATCHDOG
__device__ WatchdogReport* g_watchdog;
constexpr long long kWatchdogCycles = 4000000000LL;  // ~2 s at 1.98 GHz
#endif

// ------------------------------------------------------------------------------------------------ PTX wrappers
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {  // release.cta by default
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {  // acquire.cta by default
  uint32_t done;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
// Waits until the phase with this parity has completed. A fresh barrier is in phase 0, so waiting on parity 1
// returns at once: that is how the producer's first pass over the empty barriers goes through.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity, int role, int stage) {
#ifdef WGMMA_WATCHDOG
  if (mbar_try_wait(bar, parity)) return;
  const long long start = clock64();
  while (!mbar_try_wait(bar, parity)) {
    if (clock64() - start > kWatchdogCycles) {
      WatchdogReport* r = g_watchdog;
      r->block = blockIdx.x;
      r->thread = threadIdx.x;
      r->role = role;
      r->stage = stage;
      r->parity = parity;
      __threadfence_system();
      r->fired = 1;
      __threadfence_system();
      asm volatile("trap;");
    }
  }
#else
  (void)role;
  (void)stage;
  while (!mbar_try_wait(bar, parity)) {
  }
#endif
}

// 2-D tile load: box {64 columns, box rows} at element coordinates (c0 = column, c1 = row); rows and columns
// outside the tensor arrive as zeros and still count in the transaction bytes.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}
// Code-motion fences (CUTLASS warpgroup_fence_operand): no instruction, but the compiler may not move reads or
// writes of these registers across it, so nothing touches an accumulator while its wgmma is in flight (C7515).
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ void fence_regs(uint32_t (&r)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// Shared-memory matrix descriptor (PTX "Matrix Descriptor Format"): bits 0-13 start address >> 4, 16-29 leading
// byte offset >> 4, 32-45 stride byte offset >> 4, 49-51 base offset (0: every 1024-B swizzle atom is 1024-B
// aligned), 62-63 swizzle mode (1 = 128B).
//   K-major SW128 (A and B here, Q and K in attention): LBO unused (16), SBO = 1024 (8 rows x 128 B);
//     k16 step = +32 B inside the 128-B row, next 64-column chunk = + rows*128 B.
//   MN-major SW128 (V as B of P.V, trans-b 1): LBO = rows*128 B (next 64-column N chunk), SBO = 1024 (next 8
//     K-rows); k16 step = +2048 B.
__device__ __forceinline__ uint64_t make_desc(uint32_t saddr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  return static_cast<uint64_t>((saddr & 0x3FFFFu) >> 4) | static_cast<uint64_t>((lbo_bytes & 0x3FFFFu) >> 4) << 16 |
         static_cast<uint64_t>((sbo_bytes & 0x3FFFFu) >> 4) << 32 | static_cast<uint64_t>(1) << 62;
}

#define ACC8(d, i) "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
  "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define ACC64(d) ACC8(d, 0), ACC8(d, 8), ACC8(d, 16), ACC8(d, 24), ACC8(d, 32), ACC8(d, 40), ACC8(d, 48), ACC8(d, 56)
#define ACC128(d)                                                                                         \
  ACC64(d), ACC8(d, 64), ACC8(d, 72), ACC8(d, 80), ACC8(d, 88), ACC8(d, 96), ACC8(d, 104), ACC8(d, 112), \
      ACC8(d, 120)
#define REGS64                                                                      \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "          \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define REGS128                                                                                      \
  REGS64 ", "                                                                                        \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                 \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                 \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "     \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

// D[64x256] (+)= A[64x16] * B[256x16]^T, both from smem, both K-major; scale_d 0 zero-initializes D.
__device__ __forceinline__ void wgmma_m64n256k16_ss(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                                    uint32_t scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" REGS128 "}, %128, %129, p, 1, 1, 0, 0;\n\t}"
      : ACC128(d)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
// D[64x128] (+)= A[64x16] * B[128x16]^T, both from smem, both K-major (S = Q K^T).
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                                    uint32_t scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" REGS64 "}, %64, %65, p, 1, 1, 0, 0;\n\t}"
      : ACC64(d)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
// D[64x128] (+)= A[64x16] (registers) * B[16x128] (smem, MN-major: trans-b 1) (O += P V).
__device__ __forceinline__ void wgmma_m64n128k16_rs_tb(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b,
                                                       uint32_t scale_d) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %69, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" REGS64 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n\t}"
      : ACC64(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {  // low half = lower column
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// ------------------------------------------------------------------------------------------------ GEMM kernel
struct GemmShape {
  int M, N, K, m_tiles, n_tiles, k_blocks, num_tiles;
};

// Grouped order: GROUP_M m-blocks by all n-blocks, m fastest, so 132 concurrent tiles touch ~16 A and ~8 B panels.
__device__ __forceinline__ void tile_coords(int tile, const GemmShape& s, int& mb, int& nb) {
  const int per_group = cfg::GROUP_M * s.n_tiles;
  const int group = tile / per_group;
  const int first_m = group * cfg::GROUP_M;
  const int group_m = min(s.m_tiles - first_m, cfg::GROUP_M);
  const int in_group = tile - group * per_group;
  mb = first_m + in_group % group_m;
  nb = in_group / group_m;
}

// Accumulator layout of m64nN (thread t of the warpgroup, warp w = t/32, lane l): d[4j+{0,1}] sits at
// (16w + l/4, 8j + 2(l%4) + {0,1}); d[4j+{2,3}] at row + 8.
__device__ __forceinline__ void store_tile_bf16(const float (&acc)[128], bf16* __restrict__ C, int M, int N, int row0,
                                                int col0, int t) {
  const int r = row0 + (t / 32) * 16 + (t % 32) / 4;
  const int c = col0 + 2 * (t % 4);
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    const int col = c + 8 * j;  // even, and N is even, so col < N covers col + 1
    if (col < N) {
      if (r < M)
        *reinterpret_cast<__nv_bfloat162*>(C + static_cast<size_t>(r) * N + col) =
            __floats2bfloat162_rn(acc[4 * j], acc[4 * j + 1]);
      if (r + 8 < M)
        *reinterpret_cast<__nv_bfloat162*>(C + static_cast<size_t>(r + 8) * N + col) =
            __floats2bfloat162_rn(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
}

__global__ void __launch_bounds__(cfg::THREADS, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                bf16* __restrict__ C, const GemmShape shape) {
  using namespace cfg;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;  // SW128 atoms must be 1024-B aligned
  const uint32_t sA = base;                                     // STAGES x [128 rows][128 B]
  const uint32_t sB = base + STAGES * A_STAGE_BYTES;            // STAGES x [256 rows][128 B]
  const uint32_t full = base + STAGES * STAGE_BYTES;            // STAGES x 8 B: TMA landed
  const uint32_t empty = full + STAGES * 8;                     // STAGES x 8 B: both consumers done

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + 8 * s, 1);           // the producer's arrive.expect_tx (+ the tx bytes)
      mbar_init(empty + 8 * s, CONSUMERS);  // one elected thread per consumer warpgroup
    }
    fence_mbar_init();
  }
  __syncthreads();  // the last CTA-wide barrier: the producer's idle threads exit below

  const int wg = threadIdx.x / 128;
  if (wg == 0) {  // ---------------------------------------------------------------- producer warpgroup
    setmaxnreg_dec<24>();
    if (threadIdx.x == 0) {
      prefetch_tensormap(&map_a);
      prefetch_tensormap(&map_b);
      int stage = 0;
      uint32_t phase = 0;
      for (int tile = blockIdx.x; tile < shape.num_tiles; tile += gridDim.x) {
        int mb, nb;
        tile_coords(tile, shape, mb, nb);
        for (int kb = 0; kb < shape.k_blocks; ++kb) {
          mbar_wait(empty + 8 * stage, phase ^ 1, 0, stage);  // round r waits for the consumers' round r-1
          mbar_arrive_expect_tx(full + 8 * stage, STAGE_BYTES);
          tma_load_2d(sA + stage * A_STAGE_BYTES, &map_a, full + 8 * stage, kb * BK, mb * BM);
          tma_load_2d(sB + stage * B_STAGE_BYTES, &map_b, full + 8 * stage, kb * BK, nb * BN);
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {  // --------------------------------------------------------------------- consumer warpgroups
    setmaxnreg_inc<240>();
    const int consumer = wg - 1;  // rows [64*consumer, 64*consumer + 64) of the block tile
    const int t = threadIdx.x % 128;
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    const uint64_t desc_a0 = make_desc(sA + consumer * 64 * 128, 16, 1024);
    const uint64_t desc_b0 = make_desc(sB, 16, 1024);
    int stage = 0;
    uint32_t phase = 0;
    for (int tile = blockIdx.x; tile < shape.num_tiles; tile += gridDim.x) {
      int mb, nb;
      tile_coords(tile, shape, mb, nb);
      int prev_stage = 0;
      for (int kb = 0; kb < shape.k_blocks; ++kb) {
        mbar_wait(full + 8 * stage, phase, 1, stage);
        // stage offsets are multiples of 1024 B, k16 steps +32 B: both go into the start-address field (>> 4)
        const uint64_t desc_a = desc_a0 + static_cast<uint64_t>((stage * A_STAGE_BYTES) >> 4);
        const uint64_t desc_b = desc_b0 + static_cast<uint64_t>((stage * B_STAGE_BYTES) >> 4);
        fence_regs(acc);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
          wgmma_m64n256k16_ss(acc, desc_a + 2 * kk, desc_b + 2 * kk, (kb | kk) != 0);
        wgmma_commit();
        fence_regs(acc);
        wgmma_wait<1>();  // all but this batch retired: the previous stage's smem is free
        fence_regs(acc);
        if (kb > 0 && t == 0) mbar_arrive(empty + 8 * prev_stage);
        prev_stage = stage;
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
      wgmma_wait<0>();
      fence_regs(acc);
      if (t == 0) mbar_arrive(empty + 8 * prev_stage);
      store_tile_bf16(acc, C, shape.M, shape.N, mb * BM + consumer * 64, nb * BN, t);
    }
  }
}

// ------------------------------------------------------------------------------------------------ RS probe kernel
// One warpgroup, one tile: S[64x128] = X[64 x 128] Y[128 x 128]^T (SS, K-major, two 64-column chunks each),
// P = bf16(S) repacked in registers, O[64x128] = P[64 x 128] V[128 x 128] (RS, V MN-major). The host makes the
// real extents ragged (50 q rows, 100 kv rows, head dims 80 and 96) so TMA zero-fills the rest of every box.
namespace probe {
constexpr int QROWS = 64, KVROWS = 128, DCOLS = 128;          // smem box extents
constexpr int X_CHUNK = QROWS * 128, KV_CHUNK = KVROWS * 128;  // bytes per 64-column chunk
constexpr int X_OFF = 0, Y_OFF = 2 * X_CHUNK, V_OFF = Y_OFF + 2 * KV_CHUNK, BAR_OFF = V_OFF + 2 * KV_CHUNK;
constexpr int TX_BYTES = BAR_OFF;                                 // 81920: every box byte, zero-filled ones too
constexpr int SMEM_BYTES = 1024 + BAR_OFF + 8;
}  // namespace probe

__device__ __forceinline__ void store_acc64_f32(const float (&acc)[64], float* out, int ld, int t) {
  const int r = (t / 32) * 16 + (t % 32) / 4, c = 2 * (t % 4);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    out[r * ld + c + 8 * j] = acc[4 * j];
    out[r * ld + c + 8 * j + 1] = acc[4 * j + 1];
    out[(r + 8) * ld + c + 8 * j] = acc[4 * j + 2];
    out[(r + 8) * ld + c + 8 * j + 1] = acc[4 * j + 3];
  }
}

__global__ void __launch_bounds__(128, 1)
    rs_probe_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_y,
                    const __grid_constant__ CUtensorMap map_v, float* __restrict__ S, float* __restrict__ O) {
  using namespace probe;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sX = base + X_OFF, sY = base + Y_OFF, sV = base + V_OFF, bar = base + BAR_OFF;
  const int t = threadIdx.x;
  if (t == 0) {
    mbar_init(bar, 1);
    fence_mbar_init();
  }
  __syncthreads();
  if (t == 0) {
    mbar_arrive_expect_tx(bar, TX_BYTES);
    for (int c = 0; c < 2; ++c) {
      tma_load_2d(sX + c * X_CHUNK, &map_x, bar, 64 * c, 0);
      tma_load_2d(sY + c * KV_CHUNK, &map_y, bar, 64 * c, 0);
      tma_load_2d(sV + c * KV_CHUNK, &map_v, bar, 64 * c, 0);
    }
  }
  mbar_wait(bar, 0, 2, 0);

  float s[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) s[i] = 0.f;
  fence_regs(s);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {  // head dim 128 = 2 chunks x 4 k16 steps
    const uint32_t koff = (kk % 4) * 32;  // k16 step inside the 128-B row
    wgmma_m64n128k16_ss(s, make_desc(sX + (kk / 4) * X_CHUNK + koff, 16, 1024),
                        make_desc(sY + (kk / 4) * KV_CHUNK + koff, 16, 1024), kk > 0);
  }
  wgmma_commit();
  wgmma_wait<0>();
  fence_regs(s);
  store_acc64_f32(s, S, KVROWS, t);

  // The RS A-fragment of k-step kk is the accumulator's columns [16kk, 16kk+16): no shuffles.
  uint32_t p[8][4];
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
#pragma unroll
    for (int q = 0; q < 4; ++q) p[kk][q] = pack_bf16x2(s[8 * kk + 2 * q], s[8 * kk + 2 * q + 1]);
    fence_regs(p[kk]);  // the packs happen before the wgmma.fence below, never between it and the wgmma
  }
  float o[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.f;
  fence_regs(o);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 8; ++kk)  // kv 128 = 8 k16 steps of 16 rows = 2048 B each
    wgmma_m64n128k16_rs_tb(o, p[kk], make_desc(sV + kk * 2048, KVROWS * 128, 1024), kk > 0);
  wgmma_commit();
  wgmma_wait<0>();
  fence_regs(o);
  store_acc64_f32(o, O, DCOLS, t);
}

// ------------------------------------------------------------------------------------------------ reference side
__device__ __forceinline__ uint32_t mix(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<uint32_t>(x);
}

// Uniform in [-1, 1): never zeros (zeros run faster and hide layout bugs).
__global__ void fill_random(bf16* p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float u = (mix(i + seed * 0x9E3779B97F4A7C15ull) >> 8) * (1.0f / 16777216.0f);
    p[i] = __float2bfloat16(2.f * u - 1.f);
  }
}

// Plain smem-tiled fp32 GEMM: C[m][n] = sum_k A[m][k] * B[n][k].
__global__ void reference_gemm(const bf16* __restrict__ A, const bf16* __restrict__ B, float* __restrict__ C, int M,
                               int N, int K) {
  __shared__ float As[16][17], Bs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx, brow = blockIdx.x * 16 + ty;
  float sum = 0.f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    As[ty][tx] = (row < M && k0 + tx < K) ? __bfloat162float(A[static_cast<size_t>(row) * K + k0 + tx]) : 0.f;
    Bs[ty][tx] = (brow < N && k0 + tx < K) ? __bfloat162float(B[static_cast<size_t>(brow) * K + k0 + tx]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) sum += As[ty][k] * Bs[tx][k];
    __syncthreads();
  }
  if (row < M && col < N) C[static_cast<size_t>(row) * N + col] = sum;
}

// sums[0] += (out - ref)^2, sums[1] += ref^2 over finite outputs; *nonfinite counts NaN/Inf (the poison).
__global__ void error_sums(const bf16* __restrict__ out, const float* __restrict__ ref, size_t n, double* sums,
                           unsigned long long* nonfinite) {
  double e = 0.0, r = 0.0;
  unsigned long long bad = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float o = __bfloat162float(out[i]), f = ref[i];
    if (!isfinite(o)) {
      ++bad;
    } else {
      const double d = static_cast<double>(o) - f;
      e += d * d;
    }
    r += static_cast<double>(f) * f;
  }
  for (int off = 16; off > 0; off >>= 1) {
    e += __shfl_down_sync(0xffffffffu, e, off);
    r += __shfl_down_sync(0xffffffffu, r, off);
    bad += __shfl_down_sync(0xffffffffu, bad, off);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&sums[0], e);
    atomicAdd(&sums[1], r);
    atomicAdd(nonfinite, bad);
  }
}

// ------------------------------------------------------------------------------------------------ host
static PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  if (!fn) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &status));
    if (status != cudaDriverEntryPointSuccess || p == nullptr) {
      std::fprintf(stderr, "cuTensorMapEncodeTiled not found in the driver (status %d): needs driver >= 12.0\n",
                   static_cast<int>(status));
      std::exit(3);
    }
    fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }
  return fn;
}

// Row-major bf16 [rows, cols], box {64 columns, box_rows}, 128B swizzle, out-of-range elements read as zero.
static CUtensorMap make_map_2d(const void* ptr, uint64_t rows, uint64_t cols, uint32_t box_rows) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * sizeof(bf16)};  // must be a multiple of 16 B: cols % 8 == 0
  const cuuint32_t box[2] = {64, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(ptr), dims,
                                          strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuTensorMapEncodeTiled failed (%d) for rows=%llu cols=%llu box_rows=%u\n",
                 static_cast<int>(r), static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols),
                 box_rows);
    std::exit(3);
  }
  return map;
}

static int g_sm_count = 0;

struct Gemm {
  int M, N, K;
  bf16 *A, *B, *C;
  CUtensorMap map_a, map_b;
  GemmShape shape;
  int grid;
};

static Gemm make_gemm(int M, int N, int K, uint64_t seed) {
  if (M < 1 || N < 2 || N % 2 != 0 || K < 8 || K % 8 != 0) {
    std::fprintf(stderr, "bad GEMM shape %dx%dx%d: needs M >= 1, N even, K a multiple of 8 (TMA 16-B row stride)\n",
                 M, N, K);
    std::exit(2);
  }
  Gemm g{M, N, K};
  CUDA_CHECK(cudaMalloc(&g.A, sizeof(bf16) * M * K));
  CUDA_CHECK(cudaMalloc(&g.B, sizeof(bf16) * static_cast<size_t>(N) * K));
  CUDA_CHECK(cudaMalloc(&g.C, sizeof(bf16) * static_cast<size_t>(M) * N));
  fill_random<<<1024, 256>>>(g.A, static_cast<size_t>(M) * K, seed);
  fill_random<<<1024, 256>>>(g.B, static_cast<size_t>(N) * K, seed + 1);
  CUDA_CHECK(cudaGetLastError());
  g.map_a = make_map_2d(g.A, M, K, cfg::BM);
  g.map_b = make_map_2d(g.B, N, K, cfg::BN);
  const int m_tiles = (M + cfg::BM - 1) / cfg::BM, n_tiles = (N + cfg::BN - 1) / cfg::BN;
  g.shape = GemmShape{M, N, K, m_tiles, n_tiles, (K + cfg::BK - 1) / cfg::BK, m_tiles * n_tiles};
  g.grid = std::min(g.shape.num_tiles, g_sm_count);
  return g;
}

static void free_gemm(Gemm& g) {
  CUDA_CHECK(cudaFree(g.A));
  CUDA_CHECK(cudaFree(g.B));
  CUDA_CHECK(cudaFree(g.C));
}

static void launch_gemm(const Gemm& g) {
  gemm_kernel<<<g.grid, cfg::THREADS, cfg::SMEM_BYTES>>>(g.map_a, g.map_b, g.C, g.shape);
}

// Poisons C (0xFFFF is a bf16 NaN), runs once, and returns the relative L2 error against the reference; an
// element the kernel never wrote stays NaN and fails the check.
static double check_gemm(const Gemm& g, unsigned long long* nonfinite_out) {
  const size_t n = static_cast<size_t>(g.M) * g.N;
  CUDA_CHECK(cudaMemset(g.C, 0xFF, sizeof(bf16) * n));
  launch_gemm(g);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  float* ref;
  double* sums;
  unsigned long long* nonfinite;
  CUDA_CHECK(cudaMalloc(&ref, sizeof(float) * n));
  CUDA_CHECK(cudaMalloc(&sums, 2 * sizeof(double)));
  CUDA_CHECK(cudaMalloc(&nonfinite, sizeof(unsigned long long)));
  CUDA_CHECK(cudaMemset(sums, 0, 2 * sizeof(double)));
  CUDA_CHECK(cudaMemset(nonfinite, 0, sizeof(unsigned long long)));
  reference_gemm<<<dim3((g.N + 15) / 16, (g.M + 15) / 16), dim3(16, 16)>>>(g.A, g.B, ref, g.M, g.N, g.K);
  error_sums<<<1024, 256>>>(g.C, ref, n, sums, nonfinite);
  CUDA_CHECK(cudaGetLastError());
  double h_sums[2];
  CUDA_CHECK(cudaMemcpy(h_sums, sums, sizeof(h_sums), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(nonfinite_out, nonfinite, sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(ref));
  CUDA_CHECK(cudaFree(sums));
  CUDA_CHECK(cudaFree(nonfinite));
  if (h_sums[1] <= 0.0) return NAN;  // a zero reference means the inputs were zeros: never a pass
  return std::sqrt(h_sums[0] / h_sums[1]);
}

struct Timing {
  double median_ms, p10_ms, p90_ms;
};

static Timing time_gemm(const Gemm& g, int reps) {
  for (int i = 0; i < 5; ++i) launch_gemm(g);
  CUDA_CHECK(cudaGetLastError());
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> ms(reps);
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(e0));
    launch_gemm(g);
    CUDA_CHECK(cudaEventRecord(e1));
    CUDA_CHECK(cudaEventSynchronize(e1));
    CUDA_CHECK(cudaEventElapsedTime(&ms[r], e0, e1));
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventDestroy(e0));
  CUDA_CHECK(cudaEventDestroy(e1));
  std::sort(ms.begin(), ms.end());
  const double median = (reps % 2) ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
  return Timing{median, ms[reps / 10], ms[(reps * 9) / 10]};
}

// ---- RS probe: host data, float64 reference, and the checks of the padding (TMA zero fill)
struct ProbeResult {
  double s_err, o_err;
  float s_pad_max, o_pad_max;
};

static ProbeResult run_rs_probe() {
  using namespace probe;
  const int q_rows = 50, kv_rows = 100, d_qk = 80, d_v = 96;  // ragged: none a multiple of 64
  std::vector<bf16> x(q_rows * d_qk), y(kv_rows * d_qk), v(kv_rows * d_v);
  uint64_t state = 12345;
  auto next = [&state]() {  // host LCG, uniform in [-1, 1)
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((state >> 40) * (1.0 / 16777216.0)) * 2.f - 1.f;
  };
  for (auto& e : x) e = __float2bfloat16(next());
  for (auto& e : y) e = __float2bfloat16(next());
  for (auto& e : v) e = __float2bfloat16(next());
  bf16 *dx, *dy, *dv;
  float *dS, *dO;
  CUDA_CHECK(cudaMalloc(&dx, x.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMalloc(&dy, y.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMalloc(&dv, v.size() * sizeof(bf16)));
  CUDA_CHECK(cudaMalloc(&dS, QROWS * KVROWS * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dO, QROWS * DCOLS * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dx, x.data(), x.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dy, y.data(), y.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dv, v.data(), v.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dS, 0xFF, QROWS * KVROWS * sizeof(float)));  // NaN poison
  CUDA_CHECK(cudaMemset(dO, 0xFF, QROWS * DCOLS * sizeof(float)));
  const CUtensorMap mx = make_map_2d(dx, q_rows, d_qk, QROWS);
  const CUtensorMap my = make_map_2d(dy, kv_rows, d_qk, KVROWS);
  const CUtensorMap mv = make_map_2d(dv, kv_rows, d_v, KVROWS);
  CUDA_CHECK(cudaFuncSetAttribute(rs_probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  rs_probe_kernel<<<1, 128, SMEM_BYTES>>>(mx, my, mv, dS, dO);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> S(QROWS * KVROWS), O(QROWS * DCOLS);
  CUDA_CHECK(cudaMemcpy(S.data(), dS, S.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(O.data(), dO, O.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dy));
  CUDA_CHECK(cudaFree(dv));
  CUDA_CHECK(cudaFree(dS));
  CUDA_CHECK(cudaFree(dO));

  ProbeResult res{0, 0, 0, 0};
  std::vector<float> p(q_rows * kv_rows);  // P = bf16(fp32 S), as the kernel rounds it
  double se = 0, sr = 0, oe = 0, orr = 0;
  for (int i = 0; i < q_rows; ++i)
    for (int j = 0; j < kv_rows; ++j) {
      double acc = 0;
      for (int k = 0; k < d_qk; ++k)
        acc += static_cast<double>(__bfloat162float(x[i * d_qk + k])) * __bfloat162float(y[j * d_qk + k]);
      const double got = S[i * KVROWS + j];
      se += (got - acc) * (got - acc);
      sr += acc * acc;
      p[i * kv_rows + j] = __bfloat162float(__float2bfloat16(static_cast<float>(acc)));
    }
  for (int i = 0; i < q_rows; ++i)
    for (int d = 0; d < d_v; ++d) {
      double acc = 0;
      for (int j = 0; j < kv_rows; ++j) acc += (double)p[i * kv_rows + j] * __bfloat162float(v[j * d_v + d]);
      const double got = O[i * DCOLS + d];
      oe += (got - acc) * (got - acc);
      orr += acc * acc;
    }
  // Outside the real extents the loads were zero-filled, so S and O must be exactly 0 there (NaN if unwritten).
  for (int i = 0; i < QROWS; ++i)
    for (int j = 0; j < KVROWS; ++j)
      if (i >= q_rows || j >= kv_rows) {
        const float a = std::fabs(S[i * KVROWS + j]);
        res.s_pad_max = (a > res.s_pad_max || a != a) ? a : res.s_pad_max;
      }
  for (int i = 0; i < QROWS; ++i)
    for (int d = 0; d < DCOLS; ++d)
      if (i >= q_rows || d >= d_v) {
        const float a = std::fabs(O[i * DCOLS + d]);
        res.o_pad_max = (a > res.o_pad_max || a != a) ? a : res.o_pad_max;
      }
  res.s_err = std::sqrt(se / sr);
  res.o_err = std::sqrt(oe / orr);
  return res;
}

static bool ok_error(double e) { return e <= 1e-2; }  // false for NaN

int main(int argc, char** argv) {
  bool check_only = false;
  int reps = 30;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check-only")) {
      check_only = true;
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--check-only] [--reps N>=20]   (unknown argument '%s')\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (reps < 20) {
    std::fprintf(stderr, "--reps must be >= 20 (the median of at least 20 runs), got %d\n", reps);
    return 2;
  }
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  g_sm_count = prop.multiProcessorCount;
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  std::printf("device: %s, sm_%d%d, %d SMs, max clock %.0f MHz\n", prop.name, prop.major, prop.minor, g_sm_count,
              clock_khz / 1000.0);
  if (prop.major != 9 || prop.minor != 0) {
    std::fprintf(stderr, "this benchmark needs an sm_90 GPU (H100/H200); found sm_%d%d\n", prop.major, prop.minor);
    return 2;
  }
#ifdef WGMMA_WATCHDOG
  {
    CUDA_CHECK(cudaHostAlloc(&h_watchdog, sizeof(WatchdogReport), cudaHostAllocMapped));
    std::memset(const_cast<WatchdogReport*>(h_watchdog), 0, sizeof(WatchdogReport));
    WatchdogReport* d_report;
    CUDA_CHECK(cudaHostGetDevicePointer(&d_report, h_watchdog, 0));
    CUDA_CHECK(cudaMemcpyToSymbol(g_watchdog, &d_report, sizeof(d_report)));
    std::printf("watchdog build: mbarrier waits longer than ~2 s trap and report\n");
  }
#endif
  CUDA_CHECK(cudaFuncSetAttribute(gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cfg::SMEM_BYTES));
  bool all_ok = true;

  // 1. RS + MN-major B operand path (attention's P.V) on one ragged tile.
  const ProbeResult pr = run_rs_probe();
  const bool probe_ok = ok_error(pr.s_err) && ok_error(pr.o_err) && pr.s_pad_max == 0.f && pr.o_pad_max == 0.f;
  all_ok &= probe_ok;
  std::printf("rs_probe  q=50 kv=100 d_qk=80 d_v=96  S(SS,K-major) rel_l2=%.3e  O(RS,MN-major B) rel_l2=%.3e  "
              "pad max |S|=%g |O|=%g  %s\n",
              pr.s_err, pr.o_err, pr.s_pad_max, pr.o_pad_max, probe_ok ? "PASS" : "FAIL");

  // 2. GEMM correctness on shapes that are not multiples of the tile (TMA zero-fills rows and K columns).
  struct Shape {
    int M, N, K;
  };
  const Shape checks[] = {{128, 256, 64}, {33, 520, 72}, {1000, 1320, 776}, {3000, 5000, 2056}};
  uint64_t seed = 1;
  for (const Shape& s : checks) {
    Gemm g = make_gemm(s.M, s.N, s.K, seed += 2);
    unsigned long long bad = 0;
    const double err = check_gemm(g, &bad);
    const bool ok = ok_error(err) && bad == 0;
    all_ok &= ok;
    std::printf("check     %5dx%5dx%5d  tiles %4d  grid %3d  rel_l2=%.3e  nonfinite=%llu  %s\n", s.M, s.N, s.K,
                g.shape.num_tiles, g.grid, err, bad, ok ? "PASS" : "FAIL");
    free_gemm(g);
  }

  // 3. Timing (each size checked first on its poisoned output, then timed on the same random inputs).
  struct Row {
    const char* name;
    Shape s;
    double err, tflops, ms;
    bool ok;
  };
  std::vector<Row> rows = {{"square", {8192, 8192, 8192}}, {"square", {4096, 4096, 4096}},
                           {"skinny-M", {512, 8192, 8192}}, {"qk-like K", {8192, 8192, 128}}};
  double gate_tflops = 0.0;
  if (!check_only) {
    for (Row& row : rows) {
      Gemm g = make_gemm(row.s.M, row.s.N, row.s.K, seed += 2);
      unsigned long long bad = 0;
      row.err = check_gemm(g, &bad);
      row.ok = ok_error(row.err) && bad == 0;
      all_ok &= row.ok;
      const Timing tm = time_gemm(g, reps);
      row.ms = tm.median_ms;
      row.tflops = 2.0 * row.s.M * row.s.N * static_cast<double>(row.s.K) / (tm.median_ms * 1e-3) / 1e12;
      std::printf("bench     %5dx%5dx%5d  median %.4f ms (p10 %.4f, p90 %.4f, n=%d)  TFLOP/s %.1f  rel_l2=%.3e  %s\n",
                  row.s.M, row.s.N, row.s.K, tm.median_ms, tm.p10_ms, tm.p90_ms, reps, row.tflops, row.err,
                  row.ok ? "PASS" : "FAIL");
      if (row.s.M == 8192 && row.s.N == 8192 && row.s.K == 8192) gate_tflops = row.tflops;
      free_gemm(g);
    }
  }

  std::printf("\n== summary (bf16 in, fp32 accumulate, bf16 out; CUDA events, median)\n");
  std::printf("%-10s %-16s %9s %9s %8s %10s\n", "case", "MxNxK", "ms", "TFLOP/s", "%cuBLAS", "rel_l2");
  std::printf("%-10s %-16s %9s %9s %8s %10.3e  S %.3e  %s\n", "rs_probe", "64x128x128 tile", "-", "-", "-", pr.o_err,
              pr.s_err, probe_ok ? "PASS" : "FAIL");
  if (!check_only)
    for (const Row& row : rows) {
      char dims[32];
      std::snprintf(dims, sizeof(dims), "%dx%dx%d", row.s.M, row.s.N, row.s.K);
      std::printf("%-10s %-16s %9.4f %9.1f %7.1f%% %10.3e  %s\n", row.name, dims, row.ms, row.tflops,
                  100.0 * row.tflops / cfg::CUBLAS_TFLOPS, row.err, row.ok ? "PASS" : "FAIL");
    }
  std::printf("correctness: %s (relative L2 <= 1e-2 everywhere, no unwritten element)\n", all_ok ? "PASS" : "FAIL");
  if (check_only) return all_ok ? 0 : 1;
  const bool gate = gate_tflops >= cfg::GATE_TFLOPS;
  std::printf("gate: %s (>= %.0f)  8192^3 = %.1f TFLOP/s, %.1f%% of the 790 TFLOP/s cuBLAS ceiling\n",
              gate ? "PASS" : "FAIL", cfg::GATE_TFLOPS, gate_tflops, 100.0 * gate_tflops / cfg::CUBLAS_TFLOPS);
  if (!all_ok) return 1;
  return gate ? 0 : 4;
}
