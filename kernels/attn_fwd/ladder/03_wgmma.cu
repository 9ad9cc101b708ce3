// Rung 03 — Hopper-native: TMA loads on mbarriers, wgmma from shared memory, a producer warp and two
// consumer warpgroups (FlashAttention-3's skeleton, without its two scheduling tricks).
//
// What this rung changes over 02_mma:
// - Matrix products: wgmma.mma_async (one instruction per 64 x N x 16 step and warpgroup) instead of
//   mma.sync. S = Q K^T is the SS form (Q and K both K-major in shared memory, straight from the TMA
//   layout); O += P V is the RS form: P is the S accumulator converted to bf16 in registers (its layout is
//   the A-fragment layout, no shuffles) and V is read MN-major (trans-b = 1), so V needs no transpose.
// - Loads: one cp.async.bulk.tensor (TMA) per tile on a 5-D tensor map {64, S, D/64, H, B} with the
//   128-byte swizzle, so shared memory holds exactly the wgmma operand layout and rows past the sequence
//   end arrive as zeros per (batch, head). Q once per tile; K and V through a 2-stage ring with full/empty
//   mbarriers (K and V on separate barriers, so QK^T starts before V lands).
// - Roles: warpgroup 0 is the producer (one elected thread issues every TMA; `setmaxnreg` gives its
//   registers away, 24 left), warpgroups 1 and 2 each own 64 query rows of the 128-row tile (240 regs).
// - Epilogue: O is normalised in registers, staged in the warpgroup's own (now free) Q buffer in the same
//   swizzled layout and written by one TMA store, which clips rows past seqlen_q.
// - Unchanged from 02: the online softmax on the accumulators (running max kept pre-scaled, so an
//   unchanged max gives alpha == 1 exactly), causal key blocks above the diagonal never visited (and here
//   visited right to left, so only the first ones need a mask), split-KV plus a merge kernel for grids
//   that do not fill the GPU.
// Still serial inside a consumer: QK^T -> wait -> softmax -> PV -> wait. The tensor cores idle during
// every softmax; that is what the next rung (pingpong between the two consumers, and overlapping the
// softmax of block j with the PV GEMM of block j-1) is for.
//
// Prediction (before measuring): the wgmma path itself reaches ~930 TFLOP/s in the brief's probe and
// FA3's ablation puts "no warp specialization, no pipelining" at ~75 % of FA3. With specialization but no
// softmax/GEMM overlap: large d128 non-causal 480-560 TFLOP/s (~0.65-0.75x FA3), d64 lower (exp-bound,
// 400-480), d256 ~500. Categories A/B 0.65-0.75x FA3 (02 was 0.52/0.51), C/D ~0.7-0.9x (split-KV as in
// 02; D cross with 77 keys pays a 128-key block). Overall 0.70-0.80x FA3 in device time.
// Measured (H200, 2026-12-01, device time: one CUDA-graph replay per sample, L2 flushed; command:
// `bash scripts/gpu_hopper.sh edge dev26 sass`, i.e. scripts/ladder_bench.py, first version, one run):
// edge 30/30 and dev26 26/26 pass (fp64 reference, x16 inputs). dev26 geomean x FA3 0.826 (A 0.767,
// B 0.759, C 0.859, D 0.975). d128 526-594 TFLOP/s (predicted 480-560), d256 504-663, d64 271-413
// (below the 400-480 predicted: the exponentials are serial with the GEMMs). Best D_prefill_q128_k4k
// 1.76x FA3 (split-KV; FA3 does not split there), worst A_d256_c1_s16k 0.63x. SASS: HGMMA 49,
// UTMALDG 36, UTMASTG 3, USETMAXREG 6, no HMMA, no LDL/STL; ptxas 0 spill bytes.
//
// Next rung should fix: the serial softmax (tensor cores idle ~40 % of a d128 iteration), and short-key
// shapes (a 77-key block padded to 128).
//
// Contract: kernels/attn_fwd/README.md; head_dim 64/128/256, any lengths >= 0, GQA, causal bottom-right.
// Build: -gencode=arch=compute_90a,code=sm_90a (wgmma/setmaxnreg need the `a` target). Links only
// cudart: cuTensorMapEncodeTiled comes through cudaGetDriverEntryPointByVersion.
#include <cuda.h>            // CUtensorMap and its enums (types only; no -lcuda)
#include <cudaTypedefs.h>    // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

// ---- knobs ----------------------------------------------------------------------------------------
#ifndef D64_BN
#define D64_BN 128          // @knob D64_BN 128 {64,128,192}   keys per block, head_dim 64
#endif
#ifndef D128_BN
#define D128_BN 128         // @knob D128_BN 128 {64,128,176}   keys per block, head_dim 128
#endif
#ifndef D256_BN
#define D256_BN 80          // @knob D256_BN 80 {64,80}         keys per block, head_dim 256 (smem-bound)
#endif
#ifndef SPLIT_KV
#define SPLIT_KV 1          // @knob SPLIT_KV 1 {0,1}           split the keys when the grid is under a wave
#endif
#ifndef MAX_SPLITS
#define MAX_SPLITS 16       // @knob MAX_SPLITS 16 {4,8,16,32}
#endif

namespace {

// ================================================================================================
// Setup: parameters, configuration, PTX wrappers
// ================================================================================================
constexpr int kBM = 128;                 // query rows per CTA: two consumer warpgroups of 64
constexpr int kThreads = 384;            // producer warpgroup + 2 consumer warpgroups
constexpr int kStages = 2;               // K/V ring depth (FA3 uses 2 on sm90)

struct Params {
    float* lse;
    float* o_part;    // [splits, B*Hq, Sq, D] fp32 normalised partial outputs (split path only)
    float* lse_part;  // [splits, B*Hq, Sq] natural-log partial lse
    int batch, heads_q, heads_kv, seqlen_q, seqlen_k, group, causal;
    int n_mblocks, n_splits, blocks_per_split;
    float scale_log2;
};

template <int D_, int BN_>
struct Cfg {
    static constexpr int D = D_, BN = BN_;
    static constexpr int Q_WG_BYTES = 64 * D * 2;          // one consumer's 64 Q rows (reused for O)
    static constexpr int KV_BYTES = BN * D * 2;            // one K or V stage
    static constexpr int OFF_Q = 0;
    static constexpr int OFF_K = OFF_Q + 2 * Q_WG_BYTES;
    static constexpr int OFF_V = OFF_K + kStages * KV_BYTES;
    static constexpr int OFF_BAR = OFF_V + kStages * KV_BYTES;
    static constexpr int SMEM = OFF_BAR + 128 + 1024;      // + barriers + slack to align the base to 1024
    static_assert(BN % 16 == 0 && BN <= 256, "BN must be a multiple of 16 (PV k-steps) and <= 256");
    static_assert(D % 64 == 0 && D <= 256, "head_dim must be 64, 128 or 256");
    static_assert(SMEM <= 227 * 1024, "shared memory over the sm90 limit");
};

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n"
        ".reg .pred P1;\n"
        "LAB_WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
        "@P1 bra.uni DONE;\n"
        "bra.uni LAB_WAIT;\n"
        "DONE:\n"
        "}\n" ::"r"(bar), "r"(parity) : "memory");
}

// ---- TMA
__device__ __forceinline__ void tma_load_5d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c1, int c3, int c4) {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %2, %4, %5}], [%6];\n"
        ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(0), "r"(c1), "r"(c3), "r"(c4), "r"(bar)
        : "memory");
}
__device__ __forceinline__ void tma_store_5d(const CUtensorMap* map, uint32_t src, int c1, int c3, int c4) {
    asm volatile(
        "cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %1, %3, %4}], [%5];\n"
        ::"l"(reinterpret_cast<uint64_t>(map)), "r"(0), "r"(c1), "r"(c3), "r"(c4), "r"(src) : "memory");
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void tma_store_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- wgmma bookkeeping
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across the asynchronous region (CUTLASS's
// warpgroup_fence_operand): without it ptxas may serialise wgmma (C7515) or read registers in flight.
template <int R>
__device__ __forceinline__ void fence_regs(float (&r)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// Shared-memory matrix descriptors, 128-byte swizzle (bits 0-13 start>>4, 16-29 LBO>>4, 32-45 SBO>>4,
// 62-63 swizzle mode 1 = 128B). K-major (Q, K): LBO unused (16), SBO = 1024 (8-row atoms).
// MN-major (V as B of P.V): LBO = distance between 64-column chunks, SBO = 1024.
__device__ __forceinline__ uint64_t desc_kmajor(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)64 << 32) | ((uint64_t)1 << 62);
}
__device__ __forceinline__ uint64_t desc_mnmajor(uint32_t addr, uint32_t chunk_bytes) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(chunk_bytes >> 4) << 16) | ((uint64_t)64 << 32) |
           ((uint64_t)1 << 62);
}

__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
}

#pragma nv_diag_suppress 177   // wrappers for the BN knob values this build does not use
// ---- generated by scripts/gen_wgmma_wrappers.py --ss 64,80,96,128,176,192 --rs 64,128,256 (do not edit by hand)
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_ss_n80(float (&d)[40], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31, %32, %33, %34, %35, %36, %37, %38, %39}, %40, %41, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
                   "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
                 : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_ss_n96(float (&d)[48], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, "
                 "1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
                   "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
                   "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
                 : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
                 "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
                   "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
                   "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
                   "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),
                   "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_ss_n176(float (&d)[88], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
                 "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, "
                 "%71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, "
                 "1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
                   "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
                   "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
                   "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),
                   "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),
                   "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]),
                   "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]),
                   "+f"(d[86]), "+f"(d[87])
                 : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_ss_n192(float (&d)[96], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
                 "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, "
                 "%71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, "
                 "%91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
                   "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
                   "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
                   "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),
                   "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),
                   "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]),
                   "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]),
                   "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]),
                   "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                 : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
                 "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, "
                 "1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
                   "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
                   "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
                   "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),
                   "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_rs_n256(float (&d)[128], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
                 "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, "
                 "%71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, "
                 "%91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, "
                 "%109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, "
                 "%125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
                   "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
                   "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
                   "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),
                   "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),
                   "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]),
                   "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]),
                   "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]),
                   "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]),
                   "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]),
                   "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]),
                   "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]),
                   "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

// ---- end of generated wrappers
#pragma nv_diag_default 177

template <int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int scale_d) {
    if constexpr (N == 64) wgmma_ss_n64(d, da, db, scale_d);
    else if constexpr (N == 80) wgmma_ss_n80(d, da, db, scale_d);
    else if constexpr (N == 96) wgmma_ss_n96(d, da, db, scale_d);
    else if constexpr (N == 128) wgmma_ss_n128(d, da, db, scale_d);
    else if constexpr (N == 176) wgmma_ss_n176(d, da, db, scale_d);
    else if constexpr (N == 192) wgmma_ss_n192(d, da, db, scale_d);
    else static_assert(N == 64, "no generated SS wrapper for this N");
}
template <int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    if constexpr (N == 64) wgmma_rs_n64(d, a, db, scale_d);
    else if constexpr (N == 128) wgmma_rs_n128(d, a, db, scale_d);
    else if constexpr (N == 256) wgmma_rs_n256(d, a, db, scale_d);
    else static_assert(N == 64, "no generated RS wrapper for this N");
}

// ---- which tile a CTA computes, and which key blocks it visits
struct Tile {
    int m_block, split, bh, b, h, hk;
};

__device__ __forceinline__ Tile tile_of(const Params& p, int id) {
    const int BH = p.batch * p.heads_q;
    Tile t;
    if (p.causal) {   // longest query blocks (most keys) first, so the last wave is short
        t.bh = id % BH;
        id /= BH;
        t.split = id % p.n_splits;
        t.m_block = p.n_mblocks - 1 - id / p.n_splits;
    } else {          // query blocks of one head next to each other: they share K/V in L2
        t.m_block = id % p.n_mblocks;
        id /= p.n_mblocks;
        t.split = id % p.n_splits;
        t.bh = id / p.n_splits;
    }
    t.b = t.bh / p.heads_q;
    t.h = t.bh % p.heads_q;
    t.hk = t.h / p.group;
    return t;
}

// Key blocks [begin, end) of this split; causal blocks right of the query block's last row's diagonal
// are never visited (row i sees keys j <= i + seqlen_k - seqlen_q).
template <int BN>
__device__ __forceinline__ int2 key_blocks(const Params& p, int m_block, int split) {
    int kend = p.seqlen_k;
    if (p.causal) kend = min(kend, (m_block + 1) * kBM + p.seqlen_k - p.seqlen_q);
    const int n_blocks = kend > 0 ? (kend + BN - 1) / BN : 0;
    const int b0 = split * p.blocks_per_split;
    return make_int2(min(b0, n_blocks), min(n_blocks, b0 + p.blocks_per_split));
}

// Barrier slots (8 bytes each) after the tiles.
struct Bars {
    uint32_t base;
    __device__ uint32_t q_full(int w) const { return base + 8 * w; }
    __device__ uint32_t k_full(int s) const { return base + 16 + 8 * s; }
    __device__ uint32_t k_empty(int s) const { return base + 32 + 8 * s; }
    __device__ uint32_t v_full(int s) const { return base + 48 + 8 * s; }
    __device__ uint32_t v_empty(int s) const { return base + 64 + 8 * s; }
};
constexpr int kConsumerWarps = 8;   // every consumer warp releases a stage (arrival count of "empty")

// ================================================================================================
// Producer: one thread issues every TMA load (Q once, then K_j and V_j through the 2-stage ring)
// ================================================================================================
template <class C>
__device__ __forceinline__ void produce(const CUtensorMap* tm_q, const CUtensorMap* tm_k, const CUtensorMap* tm_v,
                                        const Tile& t, int2 range, uint32_t sQ, uint32_t sK, uint32_t sV,
                                        const Bars& bar) {
    const int q0 = t.m_block * kBM;
#pragma unroll
    for (int w = 0; w < 2; ++w) {
        mbar_expect_tx(bar.q_full(w), C::Q_WG_BYTES);
        tma_load_5d(sQ + w * C::Q_WG_BYTES, tm_q, bar.q_full(w), q0 + 64 * w, t.h, t.b);
    }
    int i = 0;
    for (int n = range.y - 1; n >= range.x; --n, ++i) {   // right to left, like the consumers
        const int s = i & 1;
        const uint32_t phase = (i >> 1) & 1;
        mbar_wait(bar.k_empty(s), phase ^ 1);   // a fresh barrier passes parity 1 at once
        mbar_expect_tx(bar.k_full(s), C::KV_BYTES);   // full box bytes, also when rows past seqlen_k are zero-filled
        tma_load_5d(sK + s * C::KV_BYTES, tm_k, bar.k_full(s), n * C::BN, t.hk, t.b);
        mbar_wait(bar.v_empty(s), phase ^ 1);
        mbar_expect_tx(bar.v_full(s), C::KV_BYTES);
        tma_load_5d(sV + s * C::KV_BYTES, tm_v, bar.v_full(s), n * C::BN, t.hk, t.b);
    }
}

// ================================================================================================
// Consumer: one warpgroup, 64 query rows. Thread layout of a 64 x N accumulator (warp w, lane l):
// value d[4j + e] sits at row 16w + l/4 + 8*(e/2), column 8j + 2*(l%4) + e%2.
// ================================================================================================
template <class C>
__device__ __forceinline__ void consume(const Params& p, const CUtensorMap* tm_o, const Tile& t, int2 range,
                                        int wq, uint32_t sQw, uint32_t sK, uint32_t sV, const Bars& bar) {
    constexpr int D = C::D, BN = C::BN;
    const int ltid = threadIdx.x - 128 * (wq + 1);
    const int warp = ltid >> 5, lane = ltid & 31;
    const int q_first = t.m_block * kBM + 64 * wq;          // first query row of this warpgroup
    const int row0 = q_first + 16 * warp + (lane >> 2);     // this thread's rows: row0 and row0 + 8
    const int col0 = 2 * (lane & 3);
    const int offset = p.seqlen_k - p.seqlen_q;

    float o[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};   // m: running row max, pre-scaled to log2 units

    mbar_wait(bar.q_full(wq), 0);
    int i = 0;
    for (int n = range.y - 1; n >= range.x; --n, ++i) {
        const int s = i & 1;
        const uint32_t phase = (i >> 1) & 1;
        const uint32_t sKs = sK + s * C::KV_BYTES, sVs = sV + s * C::KV_BYTES;

        // ---- S = Q K^T (SS wgmma, D/16 k-steps; k-step kk is +32 B inside a 128-byte chunk)
        float sc[BN / 2];
        mbar_wait(bar.k_full(s), phase);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const uint64_t da = desc_kmajor(sQw + (kk >> 2) * (64 * 128) + (kk & 3) * 32);
            const uint64_t db = desc_kmajor(sKs + (kk >> 2) * (BN * 128) + (kk & 3) * 32);
            wgmma_ss<BN>(sc, da, db, kk > 0);
        }
        wgmma_commit();
        wgmma_wait<0>();
        fence_regs(sc);
        if (lane == 0) mbar_arrive(bar.k_empty(s));   // this warp is done reading K stage s

        // ---- mask: only blocks crossing seqlen_k or this warpgroup's diagonal
        const int k0 = n * BN;
        if (k0 + BN > p.seqlen_k || (p.causal && k0 + BN - 1 > q_first + offset)) {
#pragma unroll
            for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int row = row0 + 8 * (e >> 1), col = k0 + 8 * j + col0 + (e & 1);
                    if (col >= p.seqlen_k || (p.causal && col > row + offset)) sc[4 * j + e] = -INFINITY;
                }
        }

        // ---- online softmax; a row lives in the 4 lanes of a quad. P goes straight into the A fragments
        // of the RS wgmma: k-step kk takes n-tiles 2kk and 2kk+1, fragment register 2*(j%2) + half.
        uint32_t pa[BN / 16][4];
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(sc[4 * j + 2 * hf], sc[4 * j + 2 * hf + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            // pre-scaled running max: an unchanged max gives alpha == 1 exactly (see 02's header)
            const float m_new = fmaxf(m[hf], __fmul_rn(mx, p.scale_log2));
            const float ms = (m_new == -INFINITY) ? 0.f : m_new;   // a row with no visible key yet: p = 0
            const float alpha = ex2(m[hf] - ms);
            m[hf] = m_new;
            float rs = 0.f;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                const float p0 = ex2(fmaf(sc[4 * j + 2 * hf], p.scale_log2, -ms));
                const float p1 = ex2(fmaf(sc[4 * j + 2 * hf + 1], p.scale_log2, -ms));
                rs += p0 + p1;
                pa[j >> 1][2 * (j & 1) + hf] = pack_bf16(p0, p1);
            }
            l[hf] = l[hf] * alpha + rs;   // thread-local partial row sum; the quad is summed at the end
#pragma unroll
            for (int j = 0; j < D / 8; ++j) {
                o[4 * j + 2 * hf] *= alpha;
                o[4 * j + 2 * hf + 1] *= alpha;
            }
        }

        // ---- O += P V (RS wgmma, BN/16 k-steps of 16 keys = 2048 B of the MN-major V stage each)
        mbar_wait(bar.v_full(s), phase);
        fence_regs(o);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk)
            wgmma_rs<D>(o, pa[kk], desc_mnmajor(sVs + kk * 2048, BN * 128), 1);
        wgmma_commit();
        wgmma_wait<0>();
        fence_regs(o);
        if (lane == 0) mbar_arrive(bar.v_empty(s));
    }

    // ================================================================================================
    // Epilogue: normalise, write lse from registers, O through the warpgroup's Q buffer and a TMA store
    // ================================================================================================
    constexpr float kLn2 = 0.6931471805599453f;
    float inv[2], lse_row[2];
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
        float lt = l[hf];
        lt += __shfl_xor_sync(0xffffffffu, lt, 1);
        lt += __shfl_xor_sync(0xffffffffu, lt, 2);
        inv[hf] = lt > 0.f ? 1.f / lt : 0.f;
        lse_row[hf] = lt > 0.f ? m[hf] * kLn2 + logf(lt) : -INFINITY;   // no visible key: o = 0, lse = -inf
    }
    if (p.n_splits == 1) {
        // every wgmma that read this Q buffer has completed (wait_group 0 above), so it can hold O
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            const int r = 16 * warp + (lane >> 2) + 8 * hf;   // row inside the warpgroup's 64
#pragma unroll
            for (int j = 0; j < D / 8; ++j) {
                const uint32_t addr = sQw + (j >> 3) * (64 * 128) + r * 128 + ((((j & 7) ^ (r & 7))) << 4)
                                      + (lane & 3) * 4;
                const uint32_t val = pack_bf16(o[4 * j + 2 * hf] * inv[hf], o[4 * j + 2 * hf + 1] * inv[hf]);
                asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(val) : "memory");
            }
            const int row = row0 + 8 * hf;
            if ((lane & 3) == 0 && row < p.seqlen_q) p.lse[(int64_t)t.bh * p.seqlen_q + row] = lse_row[hf];
        }
        fence_proxy_async();                 // generic-proxy writes, read next by the TMA (async proxy)
        named_barrier_sync(1 + wq, 128);     // the whole warpgroup's rows are staged
        if (ltid == 0) {
            tma_store_5d(tm_o, sQw, q_first, t.h, t.b);   // rows past seqlen_q are clipped by the TMA
            tma_store_wait_read();                        // shared memory stays valid until it is read
        }
    } else {
        const int64_t part_row0 = ((int64_t)t.split * p.batch * p.heads_q + t.bh) * p.seqlen_q;
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            const int row = row0 + 8 * hf;
            if (row >= p.seqlen_q) continue;
            float* op = p.o_part + (part_row0 + row) * D + col0;
#pragma unroll
            for (int j = 0; j < D / 8; ++j)
                *reinterpret_cast<float2*>(op + 8 * j) =
                    make_float2(o[4 * j + 2 * hf] * inv[hf], o[4 * j + 2 * hf + 1] * inv[hf]);
            if ((lane & 3) == 0) p.lse_part[part_row0 + row] = lse_row[hf];
        }
    }
}

// ================================================================================================
// The kernel: barriers, then one branch per role (setmaxnreg needs each role to be one branch)
// ================================================================================================
template <class C>
__global__ void __launch_bounds__(kThreads, 1)
attn_wgmma_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                  const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_o,
                  const Params p) {
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;   // 128B-swizzle atoms need 1024-B alignment
    const uint32_t sQ = base + C::OFF_Q, sK = base + C::OFF_K, sV = base + C::OFF_V;
    const Bars bar{base + C::OFF_BAR};
    const Tile t = tile_of(p, blockIdx.x);
    const int2 range = key_blocks<C::BN>(p, t.m_block, t.split);
    const int wg = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        mbar_init(bar.q_full(0), 1);
        mbar_init(bar.q_full(1), 1);
#pragma unroll
        for (int s = 0; s < kStages; ++s) {
            mbar_init(bar.k_full(s), 1);
            mbar_init(bar.v_full(s), 1);
            mbar_init(bar.k_empty(s), kConsumerWarps);
            mbar_init(bar.v_empty(s), kConsumerWarps);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
        if (threadIdx.x == 0) produce<C>(&tm_q, &tm_k, &tm_v, t, range, sQ, sK, sV, bar);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n");
        consume<C>(p, &tm_o, t, range, wg - 1, sQ + (wg - 1) * C::Q_WG_BYTES, sK, sV, bar);
    }
}

// Merge the split partial results of each (b, h, row): one warp per row, D/32 columns per lane.
struct CombineParams {
    __nv_bfloat16* o;
    float* lse;
    const float* o_part;
    const float* lse_part;
    int batch, heads_q, seqlen_q, n_splits;
};

template <int D>
__global__ void __launch_bounds__(256) combine_kernel(const CombineParams p) {
    constexpr int CPL = D / 32;
    const int lane = threadIdx.x & 31;
    const int64_t rows = (int64_t)p.batch * p.heads_q * p.seqlen_q;
    const int64_t idx = (int64_t)blockIdx.x * 8 + (threadIdx.x >> 5);
    if (idx >= rows) return;
    const int64_t bh = idx / p.seqlen_q;
    const int row = (int)(idx % p.seqlen_q);
    const int b = (int)(bh / p.heads_q), h = (int)(bh % p.heads_q);
    const float ls = lane < p.n_splits ? p.lse_part[lane * rows + idx] : -INFINITY;
    float mx = ls;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    const float w = (mx == -INFINITY) ? 0.f : __expf(ls - mx);
    float sum = w;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    float acc[CPL];
#pragma unroll
    for (int c = 0; c < CPL; ++c) acc[c] = 0.f;
    for (int s = 0; s < p.n_splits; ++s) {
        const float ws = __shfl_sync(0xffffffffu, w, s);
        if (ws == 0.f) continue;   // warp-uniform
        const float* src = p.o_part + (s * rows + idx) * D + lane * CPL;
#pragma unroll
        for (int c = 0; c < CPL; c += 2) {
            const float2 v = *reinterpret_cast<const float2*>(src + c);
            acc[c] += ws * v.x;
            acc[c + 1] += ws * v.y;
        }
    }
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    __nv_bfloat16* dst = p.o + (((int64_t)b * p.seqlen_q + row) * p.heads_q + h) * D + lane * CPL;
#pragma unroll
    for (int c = 0; c < CPL; c += 2)
        *reinterpret_cast<__nv_bfloat162*>(dst + c) = __floats2bfloat162_rn(acc[c] * inv, acc[c + 1] * inv);
    if (lane == 0) p.lse[idx] = sum > 0.f ? mx + logf(sum) : -INFINITY;
}

// No keys at all (seqlen_k == 0): every row sees nothing, o = 0 and lse = -inf.
__global__ void empty_keys_kernel(__nv_bfloat16* o, float* lse, int64_t o_elems, int64_t lse_elems) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < o_elems) o[i] = __float2bfloat16(0.f);
    if (i < lse_elems) lse[i] = -INFINITY;
}

// ================================================================================================
// Host: tensor maps, split choice, launch
// ================================================================================================
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
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

// [B, S, H, D] bf16 seen as {64, S, D/64, H, B}: one box is `rows` rows by all D columns, landing in
// shared memory as D/64 chunks of rows x 128 B with the 128-byte swizzle, i.e. the wgmma operand layout.
int make_map(CUtensorMap* map, const void* ptr, int S, int H, int B, int D, int rows) {
    PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (encode == nullptr) return cudaErrorNotSupported;
    cuuint64_t dims[5] = {64, (cuuint64_t)S, (cuuint64_t)(D / 64), (cuuint64_t)H, (cuuint64_t)B};
    cuuint64_t strides[4] = {(cuuint64_t)H * D * 2, 128, (cuuint64_t)D * 2, (cuuint64_t)S * H * D * 2};
    cuuint32_t box[5] = {64, (cuuint32_t)rows, (cuuint32_t)(D / 64), 1, 1};
    cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 5, const_cast<void*>(ptr), dims, strides, box,
                        elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

// Split workspace: grown on demand and kept for the life of the process.
float* g_workspace = nullptr;
size_t g_workspace_bytes = 0;

int ensure_workspace(size_t bytes) {
    if (bytes <= g_workspace_bytes) return cudaSuccess;
    if (g_workspace) cudaFree(g_workspace);
    g_workspace = nullptr;
    g_workspace_bytes = 0;
    bytes = bytes < ((size_t)64 << 20) ? ((size_t)64 << 20) : bytes;
    cudaError_t e = cudaMalloc(&g_workspace, bytes);
    if (e != cudaSuccess) return e;
    g_workspace_bytes = bytes;
    return cudaSuccess;
}

// Number of key splits: minimise waves x blocks-per-CTA, with a small charge for the merge.
int choose_splits(long long ctas, int max_blocks, int slots) {
    if (!SPLIT_KV || ctas <= 0 || max_blocks < 2) return 1;
    int best = 1;
    double best_cost = 1e30;
    for (int s = 1; s <= MAX_SPLITS && s <= max_blocks; ++s) {
        const long long waves = (ctas * s + slots - 1) / slots;
        const int blocks = (max_blocks + s - 1) / s;
        const double cost = (double)waves * (blocks + 1.0) + (s > 1 ? 2.0 : 0.0);
        if (cost < best_cost - 1e-9) { best_cost = cost; best = s; }
    }
    return best;
}

struct Call {
    const __nv_bfloat16 *q, *k, *v;
    __nv_bfloat16* o;
    float* lse;
    int batch, heads_q, heads_kv, seqlen_q, seqlen_k, causal;
    float scale;
};

template <class C>
int launch(const Call& a, cudaStream_t stream) {
    static int sms = 0;
    if (sms == 0) {
        cudaError_t e =
            cudaFuncSetAttribute(attn_wgmma_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM);
        if (e != cudaSuccess) return e;
        int dev = 0;
        if ((e = cudaGetDevice(&dev)) != cudaSuccess) return e;
        if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess) return e;
    }
    Params p{};
    p.lse = a.lse;
    p.batch = a.batch; p.heads_q = a.heads_q; p.heads_kv = a.heads_kv;
    p.seqlen_q = a.seqlen_q; p.seqlen_k = a.seqlen_k; p.group = a.heads_q / a.heads_kv; p.causal = a.causal;
    p.scale_log2 = a.scale * 1.4426950408889634f;
    p.n_mblocks = (a.seqlen_q + kBM - 1) / kBM;
    int kend = a.seqlen_k;   // keys visible to the last (longest) query block
    if (a.causal) kend = min(kend, p.n_mblocks * kBM + a.seqlen_k - a.seqlen_q);
    const int max_blocks = kend > 0 ? (kend + C::BN - 1) / C::BN : 0;
    const long long ctas = (long long)p.n_mblocks * a.batch * a.heads_q;
    int splits = choose_splits(ctas, max_blocks, sms);   // one CTA per SM (registers and smem)
    p.blocks_per_split = splits > 1 ? (max_blocks + splits - 1) / splits : (max_blocks > 0 ? max_blocks : 1);
    if (splits > 1) splits = (max_blocks + p.blocks_per_split - 1) / p.blocks_per_split;
    const size_t rows = (size_t)a.batch * a.heads_q * a.seqlen_q;
    if (splits > 1) {
        const size_t bytes = (size_t)splits * rows * (C::D + 1) * sizeof(float);
        if (bytes > ((size_t)1 << 30) || ensure_workspace(bytes) != cudaSuccess) {
            splits = 1;
            p.blocks_per_split = max_blocks > 0 ? max_blocks : 1;
        } else {
            p.o_part = g_workspace;
            p.lse_part = g_workspace + (size_t)splits * rows * C::D;
        }
    }
    p.n_splits = splits;
    const long long grid = ctas * splits;
    if (grid > 0x7fffffffLL) return cudaErrorInvalidConfiguration;

    CUtensorMap tm_q, tm_k, tm_v, tm_o;
    int e;
    if ((e = make_map(&tm_q, a.q, a.seqlen_q, a.heads_q, a.batch, C::D, 64)) != cudaSuccess) return e;
    if ((e = make_map(&tm_k, a.k, a.seqlen_k, a.heads_kv, a.batch, C::D, C::BN)) != cudaSuccess) return e;
    if ((e = make_map(&tm_v, a.v, a.seqlen_k, a.heads_kv, a.batch, C::D, C::BN)) != cudaSuccess) return e;
    if ((e = make_map(&tm_o, a.o, a.seqlen_q, a.heads_q, a.batch, C::D, 64)) != cudaSuccess) return e;
    attn_wgmma_kernel<C><<<(unsigned)grid, kThreads, C::SMEM, stream>>>(tm_q, tm_k, tm_v, tm_o, p);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess || splits == 1) return err;
    CombineParams cp{a.o, a.lse, p.o_part, p.lse_part, a.batch, a.heads_q, a.seqlen_q, splits};
    combine_kernel<C::D><<<(unsigned)((rows + 7) / 8), 256, 0, stream>>>(cp);
    return cudaGetLastError();
}

using Cfg64 = Cfg<64, D64_BN>;
using Cfg128 = Cfg<128, D128_BN>;
using Cfg256 = Cfg<256, D256_BN>;

}  // namespace

extern "C" int attn_fwd(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                        __nv_bfloat16* o, float* lse,
                        int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim,
                        int causal, float softmax_scale, cudaStream_t stream) {
    if (batch < 0 || heads_q <= 0 || heads_kv <= 0 || heads_q % heads_kv != 0 || seqlen_q < 0 || seqlen_k < 0)
        return cudaErrorInvalidValue;
    if (!(softmax_scale > 0.f) || !isfinite(softmax_scale)) return cudaErrorInvalidValue;
    if (head_dim != 64 && head_dim != 128 && head_dim != 256) return cudaErrorInvalidValue;
    if (MAX_SPLITS > 32) return cudaErrorInvalidValue;   // the merge holds one split per lane
    if (batch == 0 || seqlen_q == 0) return cudaSuccess;
    if (seqlen_k == 0) {
        const int64_t o_elems = (int64_t)batch * seqlen_q * heads_q * head_dim;
        const int64_t lse_elems = (int64_t)batch * heads_q * seqlen_q;
        empty_keys_kernel<<<(unsigned)((o_elems + 255) / 256), 256, 0, stream>>>(o, lse, o_elems, lse_elems);
        return cudaGetLastError();
    }
    const Call a{q, k, v, o, lse, batch, heads_q, heads_kv, seqlen_q, seqlen_k, causal ? 1 : 0, softmax_scale};
    switch (head_dim) {
        case 64: return launch<Cfg64>(a, stream);
        case 128: return launch<Cfg128>(a, stream);
        default: return launch<Cfg256>(a, stream);
    }
}
