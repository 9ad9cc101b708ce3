// Rung 02 — Hopper's own path: TMA -> 128B-swizzled shared memory -> wgmma, warp-specialized, persistent.
//
// What this rung changes over 01_mma_sync: a producer warpgroup (setmaxnreg 40, one thread) issues TMA tile
// loads into STAGES smem stages guarded by full/empty mbarriers; two consumer warpgroups (setmaxnreg 232) each
// own 64 rows of the 128 x BN block tile and run wgmma.m64nBNk16 straight from shared memory (A K-major; B is
// K x N row-major, i.e. MN-major, read with the transpose bit), one batch in flight (wait_group 1) so the previous
// stage is released while the next one computes. TMA zero-fills rows and columns outside the matrices, so the
// tails in M, N and K cost nothing. One CTA per SM loops over tiles in groups of GROUP_M block rows; the epilogue
// stores bf16 pairs from the accumulators while the producer already fills the next tile's stages. The
// descriptors and the MN-major B layout are those of scripts/wgmma_gemm_bench.cu (its rs_probe checked them).
// Today's figure: not yet measured (prediction: 650-750 TFLOP/s at 8192^3 as the bench's K-major version gave
// 749.5; ragged and llm near 0.8-0.9x cuBLAS; k_heavy far below: no split-K, few tiles).
//
// Sections (in file order)
//   knobs            BN, STAGES, GROUP_M (#ifndef: -D overrides); GEMM_WATCHDOG: a stuck mbarrier wait traps
//   PTX wrappers     mbarrier, TMA 2-D load, wgmma fence/commit/wait, setmaxnreg, register fences
//   wgmma            smem descriptors and the m64n256k16 / m64n128k16 SS instructions (trans-b 1)
//   gemm_wgmma       the persistent kernel: producer warpgroup, consumer warpgroups, guarded epilogue
//   generic kernels  zero fill (K == 0) and a CUDA-core tiled GEMM for what TMA cannot take (odd strides,
//                    unaligned pointers: the edge suite) or a tensor map the driver refuses
//   host             tensor maps (cuTensorMapEncodeTiled through cudart, no -lcuda), SM count, gemm_bf16
// Knobs (one at a time, every listed value compiles without spills)
//   BN 256 {128,256}  STAGES 4 {3,4} (BN 128: up to 6)  GROUP_M 16 {8,16}
// TMA's needs for the fast path: lda % 8 == 0, ldb % 8 == 0, A and B 16-byte aligned (strides of 16-byte rows).

#include <cuda.h>            // CUtensorMap and its enums (types only; no -lcuda)
#include <cudaTypedefs.h>    // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

// ---- knobs -------------------------------------------------------------------------------------------------
#ifndef BN
#define BN 256        // @knob BN 256 {128,256}
#endif
#ifndef STAGES
#define STAGES 4      // @knob STAGES 4 {3,4}
#endif
#ifndef GROUP_M
#define GROUP_M 16    // @knob GROUP_M 16 {8,16}
#endif

typedef __nv_bfloat16 bf16;
namespace cfg {
constexpr int BM = 128, BK = 64, CONSUMERS = 2, THREADS = 128 * (CONSUMERS + 1);
constexpr int ACC = BN / 2;                               // fp32 accumulators per consumer thread (m64 x BN)
constexpr int A_STAGE = BM * BK * 2;                      // 16 KB: TMA box {64 columns, 128 rows}
constexpr int B_CHUNK = BK * 128;                         // 8 KB: box {64 columns, 64 rows} of B
constexpr int B_STAGE = (BN / 64) * B_CHUNK;              // BN/64 chunks side by side
constexpr int STAGE_BYTES = A_STAGE + B_STAGE;            // one stage's smem
constexpr int SMEM_BYTES = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;   // align slack + tiles + barriers
static_assert(BN == 128 || BN == 256, "wgmma n is 128 or 256 here");
static_assert(SMEM_BYTES <= 227 * 1024, "smem over the sm_90 limit");
}  // namespace cfg

// ---- PTX wrappers ------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}
// Waits until the phase with this parity completed; a fresh barrier passes a wait on parity 1 at once (that is
// how the producer's first round over the empty barriers goes through).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#ifdef GEMM_WATCHDOG
    const long long start = clock64();
    while (!mbar_try_wait(bar, parity))
        if (clock64() - start > 4000000000LL) asm volatile("trap;");   // ~2 s: a parity bug, not a slow tile
#else
    while (!mbar_try_wait(bar, parity)) {
    }
#endif
}
// 2-D box {64 columns, rows} at (c0 = column, c1 = row); outside the tensor it lands as zeros.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4}], [%2];"
                 ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* map) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R)); }
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R)); }
// No instruction: the compiler may not move accesses to these registers across it while a wgmma is in flight.
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// ---- wgmma -------------------------------------------------------------------------------------------------
// Shared-memory matrix descriptor: start >> 4 (bits 0-13), leading byte offset >> 4 (16-29), stride byte offset
// >> 4 (32-45), base offset 0 (atoms 1024-byte aligned), swizzle 128B (bits 62-63 = 1).
//   A, K-major SW128: LBO unused (16), SBO 1024 (8 rows x 128 B); a k16 step is +32 B inside the 128-B row.
//   B, MN-major SW128 (trans-b 1): LBO = the next 64-column chunk (B_CHUNK), SBO 1024 (the next 8 k rows);
//   a k16 step is +16 rows x 128 B = 2048 B.
__device__ __forceinline__ uint64_t make_desc(uint32_t saddr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
    return (uint64_t)((saddr & 0x3FFFFu) >> 4) | (uint64_t)((lbo_bytes & 0x3FFFFu) >> 4) << 16 |
           (uint64_t)((sbo_bytes & 0x3FFFFu) >> 4) << 32 | (uint64_t)1 << 62;
}

#define ACC8(d, i) "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
                   "+f"(d[i + 6]), "+f"(d[i + 7])
#define ACC64(d) ACC8(d, 0), ACC8(d, 8), ACC8(d, 16), ACC8(d, 24), ACC8(d, 32), ACC8(d, 40), ACC8(d, 48), ACC8(d, 56)
#define ACC128(d) ACC64(d), ACC8(d, 64), ACC8(d, 72), ACC8(d, 80), ACC8(d, 88), ACC8(d, 96), ACC8(d, 104), \
                  ACC8(d, 112), ACC8(d, 120)
#define REGS64 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
               "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, " \
               "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, " \
               "%59, %60, %61, %62, %63"
#define REGS128 REGS64 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, " \
               "%81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, " \
               "%100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, " \
               "%116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

// D[64 x BN] (+)= A[64 x 16] (smem, K-major) * B[16 x BN] (smem, MN-major); scale_d 0 starts from zero.
__device__ __forceinline__ void wgmma_ss(float (&d)[128], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" REGS128 "}, %128, %129, p, 1, 1, 0, 1;\n\t}"
                 : ACC128(d) : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" REGS64 "}, %64, %65, p, 1, 1, 0, 1;\n\t}"
                 : ACC64(d) : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// ---- the persistent kernel -----------------------------------------------------------------------------------
struct Shape {
    int M, N, K, m_tiles, n_tiles, k_blocks, num_tiles;
    long long ldc;
    bool pair_stores;   // ldc even and C 4-byte aligned: bf16 pairs may go out as one 32-bit store
};

// Grouped order: GROUP_M block rows by every block column, rows fastest, so concurrent tiles share panels in L2.
__device__ __forceinline__ void tile_coords(int tile, const Shape& s, int& mb, int& nb) {
    const int per_group = GROUP_M * s.n_tiles;
    const int first_m = (tile / per_group) * GROUP_M;
    const int group_rows = min(s.m_tiles - first_m, GROUP_M);
    mb = first_m + (tile % per_group) % group_rows;
    nb = (tile % per_group) / group_rows;
}

__device__ __forceinline__ void store_pair(bf16* __restrict__ C, const Shape& s, int row, int col, float lo, float hi) {
    if (row >= s.M || col >= s.N) return;
    bf16* dst = C + (long long)row * s.ldc + col;
    if (s.pair_stores && col + 1 < s.N) {
        *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(lo, hi);
    } else {
        dst[0] = __float2bfloat16(lo);
        if (col + 1 < s.N) dst[1] = __float2bfloat16(hi);
    }
}

// Accumulator layout of m64nN (thread t of the warpgroup): d[4j + {0,1}] at (16 (t/32) + (t%32)/4,
// 8j + 2 (t%4) + {0,1}); d[4j + {2,3}] eight rows below.
__device__ __forceinline__ void store_tile(const float (&acc)[cfg::ACC], bf16* __restrict__ C, const Shape& s,
                                           int row0, int col0, int t) {
    const int r = row0 + (t / 32) * 16 + (t % 32) / 4, c = col0 + 2 * (t % 4);
#pragma unroll
    for (int j = 0; j < cfg::ACC / 4; ++j) {
        store_pair(C, s, r, c + 8 * j, acc[4 * j], acc[4 * j + 1]);
        store_pair(C, s, r + 8, c + 8 * j, acc[4 * j + 2], acc[4 * j + 3]);
    }
}

__global__ void __launch_bounds__(cfg::THREADS, 1)
gemm_wgmma(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
           bf16* __restrict__ C, const Shape shape) {
    using namespace cfg;
    extern __shared__ __align__(1024) uint8_t smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;   // SW128 atoms must be 1024-byte aligned
    const uint32_t sA = base;                                      // STAGES x [128 rows][128 B]
    const uint32_t sB = base + STAGES * A_STAGE;                   // STAGES x BN/64 x [64 k rows][128 B]
    const uint32_t full = base + STAGES * STAGE_BYTES;             // STAGES x 8 B: the TMA bytes landed
    const uint32_t empty = full + STAGES * 8;                      // STAGES x 8 B: both consumers are done

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full + 8 * s, 1);           // the producer's arrive.expect_tx (+ the transaction bytes)
            mbar_init(empty + 8 * s, CONSUMERS);  // one elected thread per consumer warpgroup
        }
        fence_mbar_init();
    }
    __syncthreads();   // the last CTA-wide barrier: the producer's idle threads leave below

    const int wg = threadIdx.x / 128;
    if (wg == 0) {   // ------------------------------------------------------------- producer warpgroup
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            prefetch_tensormap(&map_a);
            prefetch_tensormap(&map_b);
            int stage = 0;
            uint32_t phase = 0;
            for (int tile = blockIdx.x; tile < shape.num_tiles; tile += gridDim.x) {
                int mb, nb;
                tile_coords(tile, shape, mb, nb);
                // B chunks that start at or past column N are not loaded: they feed only columns of the
                // accumulator that are never stored (each output column depends on its own B column only)
                const int left = (shape.N - nb * BN + 63) / 64, chunks = left < BN / 64 ? left : BN / 64;
                for (int kb = 0; kb < shape.k_blocks; ++kb) {
                    mbar_wait(empty + 8 * stage, phase ^ 1);   // round r waits for the consumers' round r - 1
                    const uint32_t bar = full + 8 * stage;
                    mbar_arrive_expect_tx(bar, A_STAGE + chunks * B_CHUNK);   // a partial box counts in full
                    tma_load_2d(sA + stage * A_STAGE, &map_a, bar, kb * BK, mb * BM);
                    for (int c = 0; c < chunks; ++c)
                        tma_load_2d(sB + stage * B_STAGE + c * B_CHUNK, &map_b, bar, nb * BN + 64 * c, kb * BK);
                    if (++stage == STAGES) {
                        stage = 0;
                        phase ^= 1;
                    }
                }
            }
        }
    } else {   // -------------------------------------------------------------------- consumer warpgroups
        setmaxnreg_inc<232>();
        const int consumer = wg - 1;   // rows [64 consumer, 64 consumer + 64) of the block tile
        const int t = threadIdx.x % 128;
        float acc[ACC];
        const uint64_t desc_a0 = make_desc(sA + consumer * 64 * 128, 16, 1024);
        const uint64_t desc_b0 = make_desc(sB, B_CHUNK, 1024);
        int stage = 0;
        uint32_t phase = 0;
        for (int tile = blockIdx.x; tile < shape.num_tiles; tile += gridDim.x) {
            int mb, nb;
            tile_coords(tile, shape, mb, nb);
            int prev_stage = 0;
            for (int kb = 0; kb < shape.k_blocks; ++kb) {
                mbar_wait(full + 8 * stage, phase);
                // stage offsets are multiples of 1024 B; both go into the start-address field (>> 4)
                const uint64_t desc_a = desc_a0 + (uint64_t)((stage * A_STAGE) >> 4);
                const uint64_t desc_b = desc_b0 + (uint64_t)((stage * B_STAGE) >> 4);
                fence_regs(acc);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)   // A: +32 B per k16 (>> 4 = 2); B: +2048 B (>> 4 = 128)
                    wgmma_ss(acc, desc_a + 2 * kk, desc_b + 128 * kk, (kb | kk) != 0);
                wgmma_commit();
                fence_regs(acc);
                wgmma_wait<1>();   // every batch but this one retired: the previous stage is free
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
            store_tile(acc, C, shape, mb * BM + consumer * 64, nb * BN, t);
        }
    }
}

// ---- generic kernels -----------------------------------------------------------------------------------------
__global__ void zero_fill(bf16* __restrict__ C, int M, int N, long long ldc) {
    const long long cells = (long long)M * N;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < cells; i += step)
        C[(i / N) * ldc + i % N] = __float2bfloat16(0.0f);
}

// original.cu's tiling (64 x 64 tile, 4 x 4 per thread, fp32 FMA): any strides, any alignment.
constexpr int GT = 64, GK = 16, GTHREADS = 256;
__global__ void __launch_bounds__(GTHREADS)
gemm_generic(const bf16* __restrict__ A, const bf16* __restrict__ B, bf16* __restrict__ C, int M, int N, int K,
             long long lda, long long ldb, long long ldc) {
    __shared__ float As[GK][GT], Bs[GK][GT];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int m0 = blockIdx.y * GT, n0 = blockIdx.x * GT;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += GK) {
#pragma unroll
        for (int i = 0; i < GT * GK / GTHREADS; ++i) {
            const int e = tid + i * GTHREADS;
            const int ar = e / GK, ac = e % GK, br = e / GT, bc = e % GT;
            As[ac][ar] = (m0 + ar < M && k0 + ac < K) ? __bfloat162float(A[(long long)(m0 + ar) * lda + k0 + ac]) : 0.f;
            Bs[br][bc] = (k0 + br < K && n0 + bc < N) ? __bfloat162float(B[(long long)(k0 + br) * ldb + n0 + bc]) : 0.f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < GK; ++kk)
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(As[kk][ty * 4 + i], Bs[kk][tx * 4 + j], acc[i][j]);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            if (m0 + ty * 4 + i < M && n0 + tx * 4 + j < N)
                C[(long long)(m0 + ty * 4 + i) * ldc + n0 + tx * 4 + j] = __float2bfloat16(acc[i][j]);
}

// ---- host ----------------------------------------------------------------------------------------------------
static PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (fn == nullptr) {
        void* sym = nullptr;
        cudaDriverEntryPointQueryResult status;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &sym, 12000, cudaEnableDefault, &status) ==
                cudaSuccess && status == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(sym);
    }
    return fn;
}

// Row-major bf16 [rows, cols] with a row stride of ld elements, box {64 columns, box_rows}, 128B swizzle,
// elements outside the matrix read as zero. false where the driver refuses (the generic kernel runs instead).
static bool make_map(CUtensorMap* map, const void* ptr, int rows, int cols, long long ld, int box_rows) {
    PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (encode == nullptr) return false;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * sizeof(bf16)};   // a multiple of 16 B: ld % 8 == 0
    const cuuint32_t box[2] = {64, (cuuint32_t)box_rows};
    const cuuint32_t elem_strides[2] = {1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(ptr), dims, strides, box, elem_strides,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

static int launch_generic(const bf16* A, const bf16* B, bf16* C, int M, int N, int K, int lda, int ldb, int ldc,
                          cudaStream_t stream) {
    const dim3 grid((N + GT - 1) / GT, (M + GT - 1) / GT);
    if (grid.y > 65535) return (int)cudaErrorInvalidValue;
    gemm_generic<<<grid, GTHREADS, 0, stream>>>(A, B, C, M, N, K, lda, ldb, ldc);
    return (int)cudaGetLastError();
}

extern "C" int gemm_bf16(const bf16* A, const bf16* B, bf16* C, int M, int N, int K, int lda, int ldb, int ldc,
                         cudaStream_t stream) {
    using namespace cfg;
    if (M < 0 || N < 0 || K < 0 || lda < (K > 1 ? K : 1) || ldb < (N > 1 ? N : 1) || ldc < (N > 1 ? N : 1))
        return (int)cudaErrorInvalidValue;
    if (M == 0 || N == 0) return 0;
    if (!C || (K > 0 && (!A || !B))) return (int)cudaErrorInvalidValue;
    if (K == 0) {   // C = 0: written, not skipped
        const long long cells = (long long)M * N;
        const int blocks = (int)(cells / 256 + 1 < 4096 ? cells / 256 + 1 : 4096);
        zero_fill<<<blocks, 256, 0, stream>>>(C, M, N, ldc);
        return (int)cudaGetLastError();
    }
    const bool tma_ok = lda % 8 == 0 && ldb % 8 == 0 && ((uintptr_t)A & 15) == 0 && ((uintptr_t)B & 15) == 0;
    CUtensorMap map_a, map_b;
    if (!tma_ok || !make_map(&map_a, A, M, K, lda, BM) || !make_map(&map_b, B, K, N, ldb, BK))
        return launch_generic(A, B, C, M, N, K, lda, ldb, ldc, stream);

    static int sms = 0;   // the first call raises the smem limit and reads the SM count (not capturable work)
    if (sms == 0) {
        cudaError_t err = cudaFuncSetAttribute(gemm_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        int dev = 0, count = 0;
        if (err == cudaSuccess) err = cudaGetDevice(&dev);
        if (err == cudaSuccess) err = cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev);
        if (err != cudaSuccess) return (int)err;
        sms = count;
    }
    Shape shape{M, N, K, (M + BM - 1) / BM, (N + BN - 1) / BN, (K + BK - 1) / BK, 0, ldc,
                ldc % 2 == 0 && ((uintptr_t)C & 3) == 0};
    const long long tiles = (long long)shape.m_tiles * shape.n_tiles;
    if (tiles > 0x7fffffffLL) return (int)cudaErrorInvalidValue;
    shape.num_tiles = (int)tiles;
    const int grid = shape.num_tiles < sms ? shape.num_tiles : sms;
    gemm_wgmma<<<grid, THREADS, SMEM_BYTES, stream>>>(map_a, map_b, C, shape);
    return (int)cudaGetLastError();
}
