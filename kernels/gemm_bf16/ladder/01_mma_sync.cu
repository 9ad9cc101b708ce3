// Rung 01 — tensor cores through mma.sync.m16n8k16 (bf16 in, fp32 accumulate), ldmatrix, a cp.async pipeline.
//
// What this rung changes over original.cu: the products run on the tensor cores (mma.sync, the Ampere
// instruction Hopper still runs) instead of fp32 FMA; A and B stay bf16 in shared memory and reach the
// registers through ldmatrix (B through ldmatrix.trans, since B is K x N row-major); tiles arrive by cp.async
// into XOR-swizzled shared memory (16-byte chunk index ^ row bits: ldmatrix and cp.async conflict-free), STAGES
// deep, so the loads of tile k+STAGES-1 run under the mma's of tile k. Each warp owns a 64 x 32 patch of the
// 128 x 128 block tile (16 mma's per 16-wide k step per ldmatrix of A and B); blocks are ordered in groups of
// GROUP_M block rows so a wave shares its A and B panels in L2.
// Today's figure: not yet measured (prediction: 350-450 TFLOP/s on 4096^3-8192^3, about half of cuBLAS; far
// lower on skinny and k_heavy shapes, which get few blocks).
//
// Sections (in file order)
//   knobs            BM, BN, BK, STAGES, WARPS_M, WARPS_N, GROUP_M (#ifndef: -D overrides)
//   PTX wrappers     cp.async with zero fill, ldmatrix(.trans), mma.sync
//   swizzle          the smem offset of (row, 16-byte chunk) for the A and B tiles
//   tile loaders     FAST: cp.async 16-byte chunks, partial chunks zero-filled (rows 16-byte aligned);
//                    generic: scalar loads for odd strides or unaligned pointers (the edge suite), same smem
//   gemm_mma         prologue (STAGES-1 tiles), main loop (wait, barrier, prefetch, 2 x k16 mma steps), epilogue
//                    (fp32 -> bf16 pairs straight from the accumulators, guarded for M/N tails and odd ldc)
//   gemm_bf16        argument checks, zero sizes, fast/generic choice, launch on `stream`
// Knobs (one at a time, every listed value compiles without spills; 2 blocks/SM where they fit, else 1)
//   BM 128 {64,128}  BN 128 {128,256}  BK 32 {32,64}  STAGES 4 {3,4}  WARPS_M 2 {2,4}  WARPS_N 4 {2,4}
//   GROUP_M 8 {1,8,16}
// Contract corners: K == 0 writes zeros (no k tile, epilogue of zero accumulators); M or N == 0 launches nothing.

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

// ---- knobs -------------------------------------------------------------------------------------------------
#ifndef BM
#define BM 128        // @knob BM 128 {64,128}
#endif
#ifndef BN
#define BN 128        // @knob BN 128 {128,256}
#endif
#ifndef BK
#define BK 32         // @knob BK 32 {32,64}
#endif
#ifndef STAGES
#define STAGES 4      // @knob STAGES 4 {3,4}
#endif
#ifndef WARPS_M
#define WARPS_M 2     // @knob WARPS_M 2 {2,4}
#endif
#ifndef WARPS_N
#define WARPS_N 4     // @knob WARPS_N 4 {2,4}
#endif
#ifndef GROUP_M
#define GROUP_M 8     // @knob GROUP_M 8 {1,8,16}
#endif

constexpr int THREADS = 32 * WARPS_M * WARPS_N;
constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;   // one warp's patch of the block tile
constexpr int MT = WM / 16, NT = WN / 8;              // m16 and n8 tiles per warp
constexpr int A_CHUNKS = BK / 8, B_CHUNKS = BN / 8;    // 16-byte chunks per smem row
constexpr int A_STAGE = BM * BK, B_STAGE = BK * BN;   // elements per stage
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * 2;
// two blocks per SM where registers (64 accumulators, 256 threads) and shared memory allow, else one
constexpr int MIN_BLOCKS = (MT * NT * 4 <= 64 && THREADS <= 256 && 2 * SMEM_BYTES <= 227 * 1024) ? 2 : 1;
static_assert(BK == 32 || BK == 64, "the A swizzle covers 64- and 128-byte rows");
static_assert(B_CHUNKS >= 8, "the B swizzle needs at least 8 chunks per row");
static_assert(WM % 16 == 0 && WN % 16 == 0, "a warp patch is whole m16 tiles and pairs of n8 tiles");
static_assert((BM * A_CHUNKS) % THREADS == 0 && (BK * B_CHUNKS) % THREADS == 0, "whole chunks per thread");

// ---- PTX wrappers ------------------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// 16 bytes to shared memory, of which the first src_bytes come from global memory and the rest are zeros.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
// D[16x8] += A[16x16] (row) * B[16x8] (col), bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- swizzle: element offset of (row, 16-byte chunk) inside one stage's tile ----------------------------------
// A rows are BK elements (4 or 8 chunks), B rows BN elements (>= 8 chunks). The 8 rows one ldmatrix reads sit at
// one logical chunk; XOR-ing the chunk with row bits spreads them over all 8 bank groups.
__device__ __forceinline__ int a_offset(int row, int chunk) {
    const int phys = A_CHUNKS == 4 ? (chunk ^ ((row >> 1) & 3)) : (chunk ^ (row & 7));
    return row * BK + phys * 8;
}
__device__ __forceinline__ int b_offset(int row, int chunk) { return row * BN + ((chunk ^ (row & 7)) * 8); }

struct Params {
    const __nv_bfloat16* A;
    const __nv_bfloat16* B;
    __nv_bfloat16* C;
    int M, N, K;
    long long lda, ldb, ldc;
    int m_tiles, n_tiles, k_tiles;
    bool pair_stores;   // ldc even and C 4-byte aligned: bf16 pairs may be stored as one 32-bit word
};

// ---- tile loaders ----------------------------------------------------------------------------------------------
// FAST: every row starts 16-byte aligned, so a chunk is one cp.async; the chunk that straddles the end of a row
// (K or N not a multiple of 8) reads only the elements inside the matrix, zero-filled after them.
template <bool FAST>
__device__ __forceinline__ void load_chunk(uint32_t dst_smem, __nv_bfloat16* dst_generic, const __nv_bfloat16* row_ptr,
                                           int col, int valid_row, int cols) {
    const int left = valid_row ? cols - col : 0;   // elements of this row from col on
    if (FAST) {
        const int bytes = left >= 8 ? 16 : (left > 0 ? 2 * left : 0);
        cp_async_16(dst_smem, bytes > 0 ? (const void*)(row_ptr + col) : (const void*)row_ptr, bytes);
    } else {
        union { uint4 v; __nv_bfloat16 h[8]; } chunk;
#pragma unroll
        for (int j = 0; j < 8; ++j) chunk.h[j] = j < left ? row_ptr[col + j] : __float2bfloat16(0.0f);
        *reinterpret_cast<uint4*>(dst_generic) = chunk.v;
    }
}

template <bool FAST>
__device__ __forceinline__ void load_stage(const Params& p, __nv_bfloat16* sA, __nv_bfloat16* sB, int stage, int kt,
                                           int m0, int n0) {
    const int tid = threadIdx.x, k0 = kt * BK;
    __nv_bfloat16* a_tile = sA + stage * A_STAGE;
    __nv_bfloat16* b_tile = sB + stage * B_STAGE;
#pragma unroll
    for (int i = 0; i < BM * A_CHUNKS / THREADS; ++i) {
        const int idx = tid + i * THREADS, row = idx / A_CHUNKS, chunk = idx % A_CHUNKS;
        const int gm = m0 + row;
        const __nv_bfloat16* row_ptr = p.A + (long long)(gm < p.M ? gm : 0) * p.lda;
        __nv_bfloat16* dst = a_tile + a_offset(row, chunk);
        load_chunk<FAST>(smem_u32(dst), dst, row_ptr, k0 + chunk * 8, gm < p.M, p.K);
    }
#pragma unroll
    for (int i = 0; i < BK * B_CHUNKS / THREADS; ++i) {
        const int idx = tid + i * THREADS, row = idx / B_CHUNKS, chunk = idx % B_CHUNKS;
        const int gk = k0 + row;
        const __nv_bfloat16* row_ptr = p.B + (long long)(gk < p.K ? gk : 0) * p.ldb;
        __nv_bfloat16* dst = b_tile + b_offset(row, chunk);
        load_chunk<FAST>(smem_u32(dst), dst, row_ptr, n0 + chunk * 8, gk < p.K, p.N);
    }
}

__device__ __forceinline__ void store_pair(const Params& p, int row, int col, float lo, float hi) {
    if (row >= p.M || col >= p.N) return;
    __nv_bfloat16* dst = p.C + (long long)row * p.ldc + col;
    if (p.pair_stores && col + 1 < p.N) {
        *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(lo, hi);
    } else {
        dst[0] = __float2bfloat16(lo);
        if (col + 1 < p.N) dst[1] = __float2bfloat16(hi);
    }
}

// ---- the kernel --------------------------------------------------------------------------------------------------
template <bool FAST>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) gemm_mma(const Params p) {
    extern __shared__ __align__(128) uint8_t smem[];
    __nv_bfloat16* sA = reinterpret_cast<__nv_bfloat16*>(smem);
    __nv_bfloat16* sB = sA + STAGES * A_STAGE;

    // grouped tile order: GROUP_M block rows by every block column, rows fastest
    const int tile = blockIdx.x, per_group = GROUP_M * p.n_tiles;
    const int first_m = (tile / per_group) * GROUP_M;
    const int group_rows = min(p.m_tiles - first_m, GROUP_M);
    const int mb = first_m + (tile % per_group) % group_rows, nb = (tile % per_group) / group_rows;
    const int m0 = mb * BM, n0 = nb * BN;

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < p.k_tiles) load_stage<FAST>(p, sA, sB, s, s, m0, n0);
        cp_async_commit();
    }
    const uint32_t sA_u32 = smem_u32(sA), sB_u32 = smem_u32(sB);
    for (int kt = 0; kt < p.k_tiles; ++kt) {
        cp_async_wait<STAGES - 2>();   // tile kt has landed (this thread's copies) ...
        __syncthreads();               // ... everyone's, and everyone is done with the stage refilled below
        const int next = kt + STAGES - 1;
        if (next < p.k_tiles) load_stage<FAST>(p, sA, sB, next % STAGES, next, m0, n0);
        cp_async_commit();
        const int stage = kt % STAGES;
        const uint32_t a_tile = sA_u32 + stage * A_STAGE * 2, b_tile = sB_u32 + stage * B_STAGE * 2;
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) {
            uint32_t af[MT][4], bf[NT / 2][4];
#pragma unroll
            for (int i = 0; i < MT; ++i)   // lanes 0-15: rows 0-15 at k 0-7; lanes 16-31: the same rows at k 8-15
                ldmatrix_x4(af[i], a_tile + 2 * a_offset(wm + i * 16 + lane % 16, ks * 2 + lane / 16));
#pragma unroll
            for (int j = 0; j < NT / 2; ++j)   // k rows 0-15, lanes 16-31 the next 8 columns: b0,b1 of two n8 tiles
                ldmatrix_x4_trans(bf[j], b_tile + 2 * b_offset(ks * 16 + lane % 16, (wn + j * 16) / 8 + lane / 16));
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j)
                    mma_bf16(acc[i][j], af[i], bf[j / 2][(j % 2) * 2], bf[j / 2][(j % 2) * 2 + 1]);
        }
    }
    cp_async_wait<0>();

    // accumulator layout: c0,c1 at (lane/4, 2*(lane%4) + {0,1}), c2,c3 eight rows below
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            const int row = m0 + wm + i * 16 + g, col = n0 + wn + j * 8 + 2 * t;
            store_pair(p, row, col, acc[i][j][0], acc[i][j][1]);
            store_pair(p, row + 8, col, acc[i][j][2], acc[i][j][3]);
        }
}

template <bool FAST>
static int launch(const Params& p, cudaStream_t stream) {
    static bool configured = false;   // the smem limit is a property of the function: raise it once
    if (!configured) {
        const cudaError_t err = cudaFuncSetAttribute(gemm_mma<FAST>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                     SMEM_BYTES);
        if (err != cudaSuccess) return (int)err;
        configured = true;
    }
    const long long tiles = (long long)p.m_tiles * p.n_tiles;
    if (tiles > 0x7fffffffLL) return (int)cudaErrorInvalidValue;
    gemm_mma<FAST><<<(unsigned)tiles, THREADS, SMEM_BYTES, stream>>>(p);
    return (int)cudaGetLastError();
}

extern "C" int gemm_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                         int lda, int ldb, int ldc, cudaStream_t stream) {
    if (M < 0 || N < 0 || K < 0 || lda < (K > 1 ? K : 1) || ldb < (N > 1 ? N : 1) || ldc < (N > 1 ? N : 1))
        return (int)cudaErrorInvalidValue;
    if (M == 0 || N == 0) return 0;
    if (!C || (K > 0 && (!A || !B))) return (int)cudaErrorInvalidValue;
    Params p{A, B, C, M, N, K, lda, ldb, ldc, (M + BM - 1) / BM, (N + BN - 1) / BN, (K + BK - 1) / BK,
             ldc % 2 == 0 && ((uintptr_t)C & 3) == 0};
    const bool fast = lda % 8 == 0 && ldb % 8 == 0 && ((uintptr_t)A & 15) == 0 && ((uintptr_t)B & 15) == 0;
    return fast ? launch<true>(p, stream) : launch<false>(p, stream);
}
