// Rung 04 - FlashAttention-3's scheduling on 03's machinery: the softmax hides under the GEMMs.
//
// Changes over 03_wgmma (the lesson is FA3's design; the diary of every run is docs/kernel_ladder.md):
// - intra-warpgroup overlap: S_i = Q K_i^T and O += P_{i-1} V_{i-1} are in flight together while the
//   softmax of block i runs; the producer loads K_0, (K_i, V_{i-1}), V_last in that order;
// - pingpong: two (d64: up to three) consumer warpgroups take turns on the tensor cores through named
//   barriers, so one's exponentials run under another's GEMMs; d256 rescales O before PV instead, and (one Q
//   buffer) frees Q after the last S GEMM and stages O in the V ring;
// - FA3's tiles: 128 query rows (192 with three consumers) by 176/128/112 (d128), 192/128 (d64), 80 (d256) keys;
// - grids: persistent for non-causal; causal longest block first (FA3's LPT order): one order walked by one CTA
//   per SM under 128 blocks, in chunks of heads whose K/V fit in L2 from the counter where K/V pass 32 MB; mirrored
//   pairs of query blocks for >= 768 tiles (persistent ones from the counter, head-major); split keys only for
//   grids under a wave, merged by combine_kernel;
// - descriptors as a base plus constant offsets, warp-uniform indices through shfl (uniform registers);
//   only consumer 0 polls the K/V barriers (FA3's single poller), the others follow its pingpong turn.
// Figure (device time, `workbench check <this> --suite full`, docs/kernel_ladder.md): v21 1.0456x FA3 on the H200
// (run 47); v29 (v28 with the -inf test in every block again) 1.062 on an H100 (run 108; campaign 1.0640).
// Contract: kernels/attn_fwd/README.md (head_dim 64/128/256, any lengths >= 0, GQA, causal bottom-right). Build:
// -gencode=arch=compute_90a,code=sm_90a; links only cudart (cuTensorMapEncodeTiled via the driver entry point).
// Sections: setup (knobs, Cfg, PTX wrappers, watchdog) | tile maths (tile_of, key_blocks, Bars) | producer |
//   consumer (mask_block, softmax_block, epilogue, consume) | kernel | combine | host (plan_grid, dispatch_cfg).
// Knobs (@knob lines; ladder_bench's path.cu:NAME=VALUE): tile widths D64_BN, D64_BN_CAUSAL, D64_WG3_BN, D128_BN,
//   D128_BN_CAUSAL, D128_BN_SWITCH, D128_BN_SHORT, D256_BN, D256_BN_SHORT; D64_WGS; D256_O_IN_V; RESCALE_UNDER_EXP,
//   FINALIZE_UNDER_PV, FAST_FINALIZE, STSM_EPILOGUE, FAST_DIVMOD, DESC_ADD64; grids PERSISTENT, CAUSAL_PAIRS,
//   PAIRS_MIN_TILES, CAUSAL_ORDER, CAUSAL_PERSIST, CAUSAL_LPT_WALK, DYN_CHUNKS, DYN_LONG, DYN_PAIRS, PAIR_TAIL,
//   PAIR_TAIL_ROUNDS, EMPTY_SOLO; MASK_PEEL, PACK_GQA, SHORT_KEYS, SPLIT_KV, SPLIT_WAVES, MAX_SPLITS. Diagnostics:
//   TIMELINE, WATCHDOG.
// Refuted, deleted (run; code at): CLUSTER 2 (19; 1f6267b), O_DIRECT (42), MAX_TREE (48; 026c25a), the d128 rescale
//   before PV (45; 8d6e0cf), CAUSAL_ORDER 4, CAUSAL_LPT_WALK 2 (49-52; f834456), D128_O_IN_V, KV_HINT, DYN_ONE (63-67;
//   282a7c8), GQA_PAIR_BLOCKS, D128_BN_PAD, LONG_CHUNK_MB, DYN_MIN_ROUNDS (77-82; a9a36be), NARROW_TOP (90; 6d98db8),
//   SLOT_WALK (92; 019a4e1), INF_GUARD 0 (103-105; ffc6df0).
#include <cuda.h>            // CUtensorMap and its enums (types only; no -lcuda)
#include <cudaTypedefs.h>    // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

// ---- knobs ----------------------------------------------------------------------------------------
#ifndef D64_BN
#define D64_BN 192          // @knob D64_BN 192 {128,192}          keys per block, head_dim 64, non-causal
#endif
#ifndef D64_BN_CAUSAL
#define D64_BN_CAUSAL 128   // @knob D64_BN_CAUSAL 128 {128,192}   causal (diagonal blocks waste less)
#endif
#ifndef D64_WGS
#define D64_WGS 0           // @knob D64_WGS 0 {0,2,3}           d64 consumer warpgroups (3: 192-row tiles, 0: by waves)
#endif
#ifndef D64_WG3_BN
#define D64_WG3_BN 128      // @knob D64_WG3_BN 128 {96,128}   keys per block with 3 consumers (FA3's causal tile)
#endif
#ifndef D128_BN
#define D128_BN 176         // @knob D128_BN 176 {128,176}         head_dim 128, non-causal (FA3's choice)
#endif
#ifndef D128_BN_CAUSAL
#define D128_BN_CAUSAL 128  // @knob D128_BN_CAUSAL 128 {128,176}
#endif
#ifndef D128_BN_SWITCH
#define D128_BN_SWITCH 3072 // @knob D128_BN_SWITCH 3072 {0,3072,8192}  non-causal d128: 128-key blocks up to here
#endif
#ifndef D128_BN_SHORT
#define D128_BN_SHORT 112   // @knob D128_BN_SHORT 112 {0,112}  non-causal d128 under the switch: blocks of this many
#endif                      // keys where they pad >= 5 % less than 128 (333 keys: 336, FA3 352, 128s 384; run 93)
#ifndef D256_BN
#define D256_BN 80          // @knob D256_BN 80 {64,80}            head_dim 256 (shared memory bound)
#endif
#ifndef D256_BN_SHORT
#define D256_BN_SHORT 0     // @knob D256_BN_SHORT 0 {0,64}  d256: blocks of this many keys on causal calls of <=
#endif                      // 1024 keys and non-causal ones they pad >= 5 % less (run 107: s512 c1 +9 %, s1k c1 +4 %)
#ifndef D256_O_IN_V
#define D256_O_IN_V 1       // @knob D256_O_IN_V 1 {0,1}  d256: Q freed after the last S GEMM, O staged in a V stage
#endif
#ifndef PERSISTENT
#define PERSISTENT 1        // @knob PERSISTENT 1 {0,1}  one CTA per SM looping over tiles (non-causal grids)
#endif
#ifndef CAUSAL_PAIRS
#define CAUSAL_PAIRS 2      // @knob CAUSAL_PAIRS 2 {0,1,2}  causal: a CTA per mirrored query-block pair (2: where the
#endif                      // LPT walk does not beat them, run 39)
#ifndef CAUSAL_ORDER
#define CAUSAL_ORDER 3      // @knob CAUSAL_ORDER 3 {0,1,2,3}  unpaired LPT (1: K/V in L2, 2: chunks, 3: one <128 blk)
#endif
#ifndef DYN_CHUNKS
#define DYN_CHUNKS 1        // @knob DYN_CHUNKS 1 {0,1}  deep causal grids: chunks of DYN_CHUNK_MB of K/V, handed out
#endif                      // by the atomic counter (run 52's gainers), every other grid as v21
#ifndef DYN_CHUNK_MB
#define DYN_CHUNK_MB 32     // @knob DYN_CHUNK_MB 32 {16,32,64}
#endif
#ifndef PAIRS_MIN_TILES
#define PAIRS_MIN_TILES 768 // @knob PAIRS_MIN_TILES 768 {768,1024}  causal grids of >= this many tiles run mirrored
#endif                      // pairs of query blocks (run 84: C_s3000 d128/d256 +3-6 % over 1024's LPT walk)
#ifndef DYN_MAX_GROUP
#define DYN_MAX_GROUP 1     // @knob DYN_MAX_GROUP 1 {1,64}  DYN_CHUNKS only for query groups up to this (GQA tiles of
#endif                      // one LPT step share their K/V: the one order's DRAM traffic is 1/group already)
#ifndef DYN_LONG
#define DYN_LONG 1          // @knob DYN_LONG 1 {0,1}  causal grids of >= 128 query blocks: one CTA per SM takes its
#endif                      // tiles from the counter (same chunked order) instead of a CTA launched per tile
#ifndef DYN_PAIRS
#define DYN_PAIRS 1         // @knob DYN_PAIRS 1 {0,1}  persistent pairs of >= 16 blocks up to d128 (groups of 1, >= 12
#endif                      // tiles per SM) walked instead: equal pairs leave the last round part idle (runs 67-68)
#ifndef PAIR_TAIL
#define PAIR_TAIL 3         // @knob PAIR_TAIL 3 {0,1,2,3,4}  pairs from the counter, head-major, then the last heads
#endif                      // LPT: 1 GQA persistent pairs, 2 + the walk's GQA grids, 3 + d<=128 pairs (runs 69, 73,
                            // 76), 4 + group-1 d256 relaunched pairs (run 85: -2..-5 %, 4x DRAM in run 89; run 95)
#ifndef PAIR_TAIL_ROUNDS
#define PAIR_TAIL_ROUNDS 4  // @knob PAIR_TAIL_ROUNDS 4 {1,2,4}  rounds of tiles (x SMs) in PAIR_TAIL's LPT tail: fewer
#endif                      // heads' K/V in flight there (d256 group 1: 4 rounds are 8-13 heads, 72 MB; run 95)
#define DYN_WALK (DYN_CHUNKS || DYN_LONG || PAIR_TAIL)
#ifndef CAUSAL_PERSIST
#define CAUSAL_PERSIST 32   // @knob CAUSAL_PERSIST 32 {0,32}  paired causal grids <= N blocks persistent (d64 8)
#endif
#ifndef CAUSAL_LPT_WALK
#define CAUSAL_LPT_WALK 1   // @knob CAUSAL_LPT_WALK 1 {0,1}  unpaired LPT grids < 128 blocks persistent (boustrophedon)
#endif
#ifndef MASK_PEEL
#define MASK_PEEL 1         // @knob MASK_PEEL 1 {0,1}  the masked key blocks in a loop of their own
#endif
#ifndef FAST_FINALIZE
#define FAST_FINALIZE 1     // @knob FAST_FINALIZE 1 {0,1}  a row's 1/l and log(l) by rcp/lg2.approx (FA3's fast math)
#endif                      // instead of IEEE 1/x and logf: ~80 instructions a thread and tile (run 98's SASS)
#ifndef FAST_DIVMOD
#define FAST_DIVMOD 1       // @knob FAST_DIVMOD 1 {0,1}  tile_of's divisions by grid constants as a multiply, shift
#endif                      // (host-made multipliers, FA3's FastDivmod) instead of ~25-instruction int divisions
#ifndef STSM_EPILOGUE
#define STSM_EPILOGUE 1     // @knob STSM_EPILOGUE 1 {0,1}  O staged by stmatrix.x4 (8 a thread at d128, FA3's)
#endif                      // instead of 32 st.shared.b32 (run 98)
#ifndef DESC_ADD64
#define DESC_ADD64 0        // @knob DESC_ADD64 0 {0,1}  a k-step's descriptor as one 64-bit add to the GEMM's (CUTLASS)
#endif                      // instead of a 32-bit add to its low word: ptxas then keeps them uniform (d256 loop -10 %)
#ifndef RESCALE_UNDER_EXP
#define RESCALE_UNDER_EXP 1 // @knob RESCALE_UNDER_EXP 1 {0,1}  d128: the PV wait after row 0's exponentials, O's
#endif                      // rescale among row 1's (FA3's SASS order; 0: a block of FMULs after every exponential)
#ifndef FINALIZE_UNDER_PV
#define FINALIZE_UNDER_PV 1 // @knob FINALIZE_UNDER_PV 1 {0,1}  a tile's row sums, 1/l and lse between the last PV's
#endif                      // issue and its wait (FA3's order; 0: after it, in the epilogue)
#ifndef PACK_GQA
#define PACK_GQA 1          // @knob PACK_GQA 1 {0,1}  a GQA group's query heads as rows of one tile (short queries)
#endif
#ifndef TIMELINE
#define TIMELINE 0          // diagnostics only: per-tile timestamps for scripts/tile_timeline.py (attn_timeline)
#endif
#ifndef WATCHDOG
#define WATCHDOG 0          // diagnostics only (scripts/hang_probe.py): 1 progress marks and stalled waits in host
#endif                      // memory; 2 the stalled waits only, no per-tile host writes (run 66: the marks hid a hang)
#ifndef EMPTY_SOLO
#define EMPTY_SOLO 1        // @knob EMPTY_SOLO 1 {0,1}  d256 (O staged in V): grids with tiles that see no key run one
#endif                      // tile per CTA (run 57: the d256 walk over such tiles hung on H100s, 3 of 3 tries)
#ifndef SPLIT_WAVES
#define SPLIT_WAVES 1       // @knob SPLIT_WAVES 1 {0,1}  1: split the keys only when the grid is under one wave
#endif
#ifndef SHORT_KEYS
#define SHORT_KEYS 1        // @knob SHORT_KEYS 1 {0,1}         at most 80 keys: an 80-key block, not 128-192
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

#if FAST_DIVMOD
// n / d for 0 <= n < 2^31 and a divisor fixed for the launch: floor(n * mul / 2^shift) with shift = 31 + ceil(log2 d)
// and mul = ceil(2^shift / d) < 2^32 (Granlund-Montgomery; exact because n * (mul * d - 2^shift) < n * d < 2^shift).
// An int division by a run-time value is ~25 instructions with a MUFU.RCP; tile_of ran 4-8 of them per tile in
// every consumer warp (8 in the d128 consumer's per-tile code, run 98's SASS), FA3's scheduler none.
struct FastDiv {
    unsigned mul;
    int shift;
};
inline FastDiv make_fast_div(int d) {   // host; d >= 1
    int l = 0;
    while ((1ll << l) < d) ++l;
    return {(unsigned)(((1ull << (31 + l)) + (unsigned)d - 1) / (unsigned)d), 31 + l};
}
__device__ __forceinline__ int fast_div(int n, FastDiv f) {
    return (int)(((unsigned long long)(unsigned)n * f.mul) >> f.shift);
}
// tile_of's divisors: the query blocks, splits, the grid's heads (query heads; KV heads when packed), the GQA group,
// PAIR_TAIL's tail heads, the pairs' long and short halves (n - n/2, n/2), one LPT chunk's tiles (units * n), its
// units and the last chunk's units; and query_pos's pack (packed rows whose group does not divide 64)
struct GridDivs {
    FastDiv mblocks, splits, heads_q, heads_kv, group, tail, pair_long, pair_short, lpt_tiles, lpt_units, lpt_last;
    FastDiv pack;
};
#define GRID_DIV(n, d, fd) fast_div((n), (fd))
#define GRID_MOD(n, d, fd) ((n) - fast_div((n), (fd)) * (d))
#else
#define GRID_DIV(n, d, fd) ((n) / (d))
#define GRID_MOD(n, d, fd) ((n) % (d))
#endif

struct Params {
    float* lse;
    float* o_part;    // [splits, B*Hq, Sq, D] fp32 normalised partial outputs (split path only)
    float* lse_part;  // [splits, B*Hq, Sq] natural-log partial lse
    int batch, heads_q, heads_kv, seqlen_q, seqlen_k, group, causal;
    int n_mblocks, n_splits, blocks_per_split;
    int pairs;        // causal, one CTA per pair of query blocks (m, n_mblocks - 1 - m) of one head
    int lpt_units;    // causal, > 0: longest block first within chunks of this many (split, batch, head) units
    int pair_units;   // CAUSAL_PERSIST: the pairs a persistent grid strides over (0: a CTA per pair)
    float scale_log2;
    int lpt_walk;     // CAUSAL_LPT_WALK: a persistent grid walks the LPT order boustrophedon (last: offsets kept)
    // PACK_GQA: pack > 1 (the group size) makes a tile's rows (query position, head of the group) pairs, row
    // r = position * pack + head in group, and the grid's heads the KV heads; Q is then loaded and O stored by
    // the consumers themselves (the TMA maps have no room for the sixth dimension). Last, so the unpacked
    // kernels read every other field where they did
    int pack;
    const __nv_bfloat16* q;
    __nv_bfloat16* o;
    int packed_tiles; // the packed grid's tile count, read from the parameters where it is needed (a register of it
                      // spilled the d256 PACK_BY_TMA consumer)
#if PAIR_TAIL
    int tail_heads;   // PAIR_TAIL: > 0 makes the order pair tiles of the other heads, then these heads' tiles in LPT
#endif
#if FAST_DIVMOD
    GridDivs divs;    // tile_of's divisors, made by grid_divs() once the grid is planned
#endif
};

template <int D_, int BN_, int NWG_ = 2>
struct Cfg {
    static constexpr int D = D_, BN = BN_;
    // Consumer warpgroups of 64 query rows each, plus one producer warpgroup. Three (FA3's d64 choice) give
    // the exponentials of a third warpgroup to hide under the other two's GEMMs, at 160 registers each.
    static constexpr int NWG = NWG_;
    static constexpr int BM = 64 * NWG;                        // query rows per CTA
    static constexpr int THREADS = 128 * (NWG + 1);
    static constexpr int CONSUMER_WARPS = 4 * NWG;             // arrival count of the "empty" barriers
    static constexpr int PRODUCER_REGS = NWG == 2 ? 24 : 32;   // setmaxnreg split of the 64K registers (FA3's)
    static constexpr int CONSUMER_REGS = NWG == 2 ? 240 : 160;
    static_assert(NWG == 2 || NWG == 3, "two or three consumer warpgroups");
    static_assert(128 * PRODUCER_REGS + 128 * NWG * CONSUMER_REGS <= 65536, "register split over the SM's 64K");
    static constexpr bool PINGPONG = D <= 128;           // FA3: scheduler barriers for head_dim <= 128
    static constexpr bool RESCALE_BEFORE_PV = D > 128;   // FA3's RescaleOBeforeGemm (d128 too: noise, run 45)
    // the PV wait and O's rescale among the exponentials (run 45: d128 x1.006, d64 x0.98)
    static constexpr bool RESCALE_UNDER_EXP_ = RESCALE_UNDER_EXP && D == 128;
    static constexpr int Q_WG_BYTES = 64 * D * 2;          // one consumer's 64 Q rows (reused for O)
    static constexpr int KV_BYTES = BN * D * 2;            // one K or V stage
    // K/V ring depth: 2, FA3's on sm90 (3 where it fits beside one Q buffer lost 1 %: run 15)
    static constexpr int STAGES = 2;
    // Two Q buffers (the next tile's Q loads while this tile runs) where shared memory allows it
    static constexpr int Q_BUFS = (2 * NWG * Q_WG_BYTES + 2 * STAGES * KV_BYTES + 256 + 1024 <= 227 * 1024) ? 2 : 1;
    static constexpr int OFF_Q = 0;
    static constexpr int OFF_K = OFF_Q + Q_BUFS * NWG * Q_WG_BYTES;
    static constexpr int OFF_V = OFF_K + STAGES * KV_BYTES;
    static constexpr int OFF_BAR = OFF_V + STAGES * KV_BYTES;
    static constexpr int SMEM = OFF_BAR + 256 + 1024;      // + barriers + slack to align the base to 1024
    // FA3's head_dim 256 scheme where one Q buffer is all that fits: each consumer's warps free Q after their last
    // S GEMM (the next tile's Q loads under the last PV and the epilogue) and O is staged in the V ring at the
    // warpgroup's Q offset (its address then needs no warpgroup index: one more spilled the walk), which the producer
    // refills only after every store has read it (o_empty)
    static constexpr bool O_IN_V = D256_O_IN_V && D == 256 && Q_BUFS == 1;
    static_assert(!O_IN_V || NWG * Q_WG_BYTES <= STAGES * KV_BYTES, "every consumer's O fits the V ring");
    static_assert(BN % 16 == 0 && BN <= 256, "BN must be a multiple of 16 (PV k-steps) and <= 256");
    static constexpr bool PACK = false;                    // PACK_GQA's rows: the Packed<Cfg> instantiation
    static constexpr bool PACK_BY_TMA = false;               // packed Q and O through the producer's TMA boxes
    static_assert(D % 64 == 0 && D <= 256, "head_dim must be 64, 128 or 256");
    static_assert(SMEM <= 227 * 1024, "shared memory over the sm90 limit");
};
// PACK_GQA's instantiation of a configuration: tile rows are (query position, head of the group) pairs. Its own
// kernel, so the unpacked grids run exactly the code they ran before (one function with both spilled at d256).
// kTma (groups dividing 64, run 34): Q loaded and O stored by TMA boxes of (64 columns, pack heads, 64 / pack
// positions), else by the consumers (its own kernel too: one function with both spilled 16 B at d256).
template <class C, bool kTma>
struct Packed : C {
    static constexpr bool PACK = true, PACK_BY_TMA = kTma;
    static constexpr bool O_IN_V = false;
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
// ---- watchdog (WATCHDOG builds only): words in mapped host memory that the host reads while a launch hangs
// (attn_watchdog_open; scripts/hang_probe.py): per (CTA < 1024, warpgroup) its last progress mark, tile << 8 |
// point (WD_MARK; WATCHDOG=1 only), then a count and up to 256 records of waits stuck for over a second, one per
// warp (CTA, thread, barrier address, parity, the barrier's raw 64-bit state). Plain stores only: PCIe has no atomics
// into host memory.
#if WATCHDOG
constexpr int kWdCtas = 1024, kWdRecords = 256, kWdRecordWords = 8, kWdCount = 4 * kWdCtas;
__device__ uint32_t* g_wd;
__device__ unsigned g_wd_n;
__device__ __forceinline__ uint64_t wd_now() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ void wd_mark(int tile, int point) {
    if (g_wd && blockIdx.x < kWdCtas && (threadIdx.x & 127) == 0)
        reinterpret_cast<volatile uint32_t*>(g_wd)[4 * blockIdx.x + threadIdx.x / 128] = (uint32_t)(tile << 8 | point);
}
__device__ __noinline__ void wd_stuck(uint32_t bar, uint32_t parity) {
    if ((threadIdx.x & 31) != __ffs(__activemask()) - 1) return;   // one record per warp
    uint64_t state;
    asm volatile("ld.shared.b64 %0, [%1];" : "=l"(state) : "r"(bar) : "memory");
    const unsigned i = atomicAdd(&g_wd_n, 1u);
    volatile uint32_t* w = g_wd;
    if (i < kWdRecords) {
        volatile uint32_t* r = w + kWdCount + 1 + kWdRecordWords * i;
        r[0] = blockIdx.x; r[1] = threadIdx.x; r[2] = bar; r[3] = parity;
        r[4] = (uint32_t)state; r[5] = (uint32_t)(state >> 32);
    }
    w[kWdCount] = i + 1;
    __threadfence_system();
}
// the same CTA and warpgroup's word, its tile kept (the epilogue does not know it)
__device__ __forceinline__ void wd_point(int point) {
    if (g_wd && blockIdx.x < kWdCtas && (threadIdx.x & 127) == 0) {
        volatile uint32_t* w = g_wd + 4 * blockIdx.x + threadIdx.x / 128;
        *w = (*w & ~0xffu) | (uint32_t)point;
    }
}
#endif
#if WATCHDOG == 1
#define WD_MARK(tile, point) wd_mark(tile, point)
#define WD_POINT(point) wd_point(point)
#else
#define WD_MARK(tile, point) ((void)0)
#define WD_POINT(point) ((void)0)
#endif

// try_wait with a suspend-time hint (CUTLASS's ClusterBarrier::wait, 10 ms cap): a waiting warp may sleep until
// the phase completes instead of re-issuing try_wait (SASS: TRYWAIT, then NANOSLEEP.SYNCS between polls).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#if WATCHDOG
    if (g_wd) {   // the same try_wait, one poll at a time, and a record once a wait passes a second
        const uint64_t t0 = wd_now();
        for (bool logged = false;;) {
            uint32_t done;
            asm volatile("{\n.reg .pred P1;\nmbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2, %3;\n"
                         "selp.u32 %0, 1, 0, P1;\n}\n" : "=r"(done) : "r"(bar), "r"(parity), "r"(0x989680) : "memory");
            if (done) return;
            if (!logged && wd_now() - t0 > 1000000000ull) { wd_stuck(bar, parity); logged = true; }
        }
    }
#endif
    asm volatile(
        "{\n"
        ".reg .pred P1;\n"
        "LAB_WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1, %2;\n"
        "@P1 bra.uni DONE;\n"
        "bra.uni LAB_WAIT;\n"
        "DONE:\n"
        "}\n" ::"r"(bar), "r"(parity), "r"(0x989680) : "memory");
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
// All five coordinates (PACK_BY_TMA maps {D, pack, S, Hkv, B}: one box per 64-column chunk); the store is not
// committed here, so the chunks of one tile go as one bulk group.
__device__ __forceinline__ void tma_load_5c(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c2,
                                            int c3, int c4) {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n"
        ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(0), "r"(c2), "r"(c3), "r"(c4), "r"(bar)
        : "memory");
}
__device__ __forceinline__ void tma_store_5c(const CUtensorMap* map, uint32_t src, int c0, int c2, int c3, int c4) {
    asm volatile(
        "cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4, %5}], [%6];\n"
        ::"l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(0), "r"(c2), "r"(c3), "r"(c4), "r"(src) : "memory");
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
__device__ __forceinline__ float rcp_approx(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float lg2_approx(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
}

#pragma nv_diag_suppress 177   // wrappers for the BN knob values this build does not use
// ---- generated by scripts/gen_wgmma_wrappers.py --ss 64,80,96,112,128,176,192 --rs 64,128,256 (do not edit by hand)
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

__device__ __forceinline__ void wgmma_ss_n112(float (&d)[56], uint64_t da, uint64_t db, int scale_d) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %58, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n112k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
                 "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
                 "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
                 "%51, %52, %53, %54, %55}, %56, %57, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),
                   "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),
                   "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
                   "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
                   "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
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
    else if constexpr (N == 112) wgmma_ss_n112(d, da, db, scale_d);
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

// ---- timeline (TIMELINE=1 builds only): one record of 16 words per (CTA, tile, consumer), read by
// attn_timeline(); the layout is scripts/tile_timeline.py's: globaltimer at entry and after the epilogue, the
// SM cycles from entry to Q arrived, S_0 done, block 0's softmax done, loop done, last PV done, epilogue done,
// then blockIdx, smid, tile index in the CTA, consumer, query block, key blocks.
#if TIMELINE
constexpr unsigned kTimelineMax = 1u << 18;
__device__ uint32_t g_timeline[kTimelineMax * 16];
__device__ unsigned int g_timeline_n;
struct TileClock {
    uint64_t gt0;
    long long c0;
    uint32_t c[6];
    __device__ __forceinline__ static uint64_t now_ns() {
        uint64_t t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        return t;
    }
    __device__ __forceinline__ void start() { gt0 = now_ns(); c0 = clock64(); }
    __device__ __forceinline__ void mark(int i) { c[i] = (uint32_t)(clock64() - c0); }
    __device__ __forceinline__ void write(int k, int wq, int m_block, int n_iter) {
        const uint64_t gt1 = now_ns();
        uint32_t smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        const unsigned idx = atomicAdd(&g_timeline_n, 1u);
        if (idx >= kTimelineMax) return;
        uint32_t* r = g_timeline + 16ull * idx;
        r[0] = (uint32_t)gt0; r[1] = (uint32_t)(gt0 >> 32); r[2] = (uint32_t)gt1; r[3] = (uint32_t)(gt1 >> 32);
        for (int i = 0; i < 6; ++i) r[4 + i] = c[i];
        r[10] = blockIdx.x; r[11] = smid; r[12] = k; r[13] = wq; r[14] = m_block; r[15] = n_iter;
    }
};
#define TL_START() tl.start()
#define TL_MARK(i) tl.mark(i)
#else
#define TL_START() ((void)0)
#define TL_MARK(i) ((void)0)
#endif

// ---- which tile a CTA computes, and which key blocks it visits
struct Tile {
    int m_block, split, bh, b, h, hk;
};

// kPack (Packed<C> kernels): the grid's heads are the KV heads
template <bool kPack = false>
__device__ __forceinline__ Tile tile_of(const Params& p, int id) {
    const int heads = kPack ? p.heads_kv : p.heads_q;
    // Query blocks of one head next to each other, so the CTAs running at once stream the same K/V
    // (L2 hits; heads of one GQA group are neighbours too). Causal: each head's longest blocks first, so a
    // head's short blocks fill the gaps the next head's long ones leave.
    Tile t;
    int rest;
#if PAIR_TAIL
    if (p.tail_heads > 0) {
        // each head's tiles as its mirrored pairs (n-1, 0, n-2, 1, ...), head after head, then the last tail_heads
        // heads' tiles longest first: the counter hands them out, so the pairs' end of grid is balanced
        const int n = p.n_mblocks, lead = (p.n_splits * p.batch * heads - p.tail_heads) * n;
        if (id < lead) {
            const int w = GRID_MOD(id, n, p.divs.mblocks);
            t.m_block = (w & 1) ? w >> 1 : n - 1 - (w >> 1);
            rest = GRID_DIV(id, n, p.divs.mblocks);
        } else {
            t.m_block = n - 1 - GRID_DIV(id - lead, p.tail_heads, p.divs.tail);
            rest = GRID_DIV(lead, n, p.divs.mblocks) + GRID_MOD(id - lead, p.tail_heads, p.divs.tail);
        }
    } else
#endif
    if (p.pairs) {
        // ids [0, G): the long half of the query blocks, ids [G, 2G): the short half, so that CTA c runs
        // block n-1-j and then block j of the same head: every CTA has about the same work, and the second
        // tile's Q and first K load while the first one finishes (the start-up cost is paid once per pair).
        const int P = p.n_mblocks - p.n_mblocks / 2, G = P * p.n_splits * p.batch * heads;
        if (id < G) {
            t.m_block = p.n_mblocks - 1 - GRID_MOD(id, P, p.divs.pair_long);
            rest = GRID_DIV(id, P, p.divs.pair_long);
        } else {
            const int P2 = p.n_mblocks / 2;
            t.m_block = GRID_MOD(id - G, P2, p.divs.pair_short);
            rest = GRID_DIV(id - G, P2, p.divs.pair_short);
        }
    } else if (p.lpt_units) {
        // longest-processing-time-first: the hardware hands out the long blocks of a chunk's heads first and the
        // short ones fill the gaps (head-major order left some heads' longest blocks for the last wave:
        // C_s1000_d64_c1, 1.94 waves, SMs active 65 % of the time). A chunk is one grid (CAUSAL_ORDER 1, K/V
        // in L2), or the heads whose K/V fit in L2 together (CAUSAL_ORDER 2, FA3's L2-aware LPT order).
        const int units = p.n_splits * p.batch * heads, c = p.lpt_units, n = p.n_mblocks;
        const int chunk = GRID_DIV(id, c * n, p.divs.lpt_tiles);
        const int r = id - chunk * c * n, size = min(c, units - chunk * c);
#if FAST_DIVMOD
        const FastDiv fsize = size == c ? p.divs.lpt_units : p.divs.lpt_last;   // only the last chunk is short
#endif
        t.m_block = n - 1 - GRID_DIV(r, size, fsize);
        rest = chunk * c + GRID_MOD(r, size, fsize);
    } else {
        t.m_block = GRID_MOD(id, p.n_mblocks, p.divs.mblocks);
        if (p.causal) t.m_block = p.n_mblocks - 1 - t.m_block;
        rest = GRID_DIV(id, p.n_mblocks, p.divs.mblocks);
    }
#if FAST_DIVMOD
    const FastDiv fheads = kPack ? p.divs.heads_kv : p.divs.heads_q;
#endif
    t.split = GRID_MOD(rest, p.n_splits, p.divs.splits);
    t.bh = GRID_DIV(rest, p.n_splits, p.divs.splits);
    t.b = GRID_DIV(t.bh, heads, fheads);
    t.h = GRID_MOD(t.bh, heads, fheads);               // packed: the KV head
    t.hk = kPack ? t.h : GRID_DIV(t.h, p.group, p.divs.group);
    return t;
}

// CAUSAL_PERSIST: this CTA's tiles in order, body(tile, k) for its k-th (k: the Q barriers' phase counter). Without
// p.pair_units the tiles blockIdx.x + j * gridDim.x; with it the CTA strides over the pair units of a paired grid,
// u = blockIdx.x + i * gridDim.x, the long tile u then its short partner (cta_tile), so a persistent CTA's producer
// runs into the next pair while the consumers finish this one. Producer and consumers both walk through here: one
// sequence. With p.lpt_walk (an unpaired LPT grid) CTA c takes tiles c, 2g-1-c, 2g+c, 4g-1-c, ...: each round
// of g tiles runs in the opposite direction, so the longest tiles of one round meet the shortest of the next
// (scripts/causal_schedule_model.py). The trip count is fixed before the loop: an exit on cta_tile's result made ptxas
// keep the producer's loop state in vector registers, not uniform ones, and the 24-register producer spilled
// (48-108 bytes of stores in every instantiation, ptxas -v). tests/test_persist_tiles.py runs cta_walk on the host.
#if CAUSAL_PERSIST
__device__ __forceinline__ int cta_tile(const Params& p, int j) {
    if (p.pair_units > 0) {
        const int u = blockIdx.x + (j >> 1) * gridDim.x;
        if (!(j & 1)) return u;
        // the short partner of the same head, so each pair is n + 1 blocks also for odd n (tile_of's halves
        // differ by one block per head then: P = n - n/2 long, P2 = n/2 short); the middle block has none (-1)
        const int P = p.n_mblocks - p.n_mblocks / 2, P2 = p.n_mblocks / 2, r = GRID_MOD(u, P, p.divs.pair_long);
        return r < P2 ? p.pair_units + GRID_DIV(u, P, p.divs.pair_long) * P2 + r : -1;
    }
    if (CAUSAL_LPT_WALK && p.lpt_walk && (j & 1)) return (j + 1) * gridDim.x - 1 - blockIdx.x;
    return blockIdx.x + j * gridDim.x;
}
template <class Body>
__device__ __forceinline__ void cta_walk(const Params& p, int n_tiles, Body&& body) {
    const int c = blockIdx.x, g = gridDim.x;   // c < g <= tiles (units): each CTA has a first one; no overflow
    int steps = p.pair_units > 0 ? 2 * ((p.pair_units - c - 1) / g + 1) : (n_tiles - c - 1) / g + 1;
    if (CAUSAL_LPT_WALK && p.lpt_walk) {   // full rounds, then the partial one: its first r slots (even) or last r
        const int rounds = n_tiles / g, r = n_tiles - rounds * g;
        steps = rounds + ((rounds & 1) ? (c >= g - r) : (c < r));
    }
    for (int j = 0, k = 0; j < steps; ++j) {
        const int tile = cta_tile(p, j);
        if (tile >= 0) body(tile_of(p, tile), k++);
    }
}
#endif

#if CAUSAL_PERSIST
// DYN_CHUNKS' walk: the LPT order handed out at run time, FA3's dynamic persistent scheduler: a CTA starts on tile
// blockIdx.x and then takes the counter's next index, fetched one tile ahead so the atomic's latency hides under a
// tile. The producer writes each tile's index beside its Q buffer before the Q barrier's arrive (the consumers read it
// after their wait on that barrier), and -1 after the last. The counter is process-wide, like the split workspace
// (one launch at a time per process): the last CTA to finish fetching puts it back to 0 for the next launch.
__device__ int g_walk_next = 0;
__device__ unsigned g_walk_done = 0;
// (through a one-lane shfl: ptxas then keeps the index in a uniform register; a plain one spilled the 24-register
// producer, 80-164 bytes in every instantiation)
__device__ __forceinline__ int walk_fetch() { return __shfl_sync(1u, atomicAdd(&g_walk_next, 1), 0) + (int)gridDim.x; }
__device__ __forceinline__ void walk_finish() {
    __threadfence();   // this CTA's fetches before its count
    if (atomicAdd(&g_walk_done, 1u) == gridDim.x - 1) {
        atomicExch(&g_walk_next, 0);
        atomicExch(&g_walk_done, 0u);
    }
}
#endif
__device__ __forceinline__ void st_shared_s32(uint32_t a, int v) {
    asm volatile("st.shared.s32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_shared_s32(uint32_t a) {
    int v;
    asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(v) : "r"(a) : "memory");
    return v;
}

// PACK_BY_TMA's packs divide 64, so a packed row's position and head are a shift and a mask (divisions spilled the
// d256 consumer)
__device__ __forceinline__ int pack_log2(const Params& p) { return __ffs(p.pack) - 1; }

// The query position of tile row r (packed rows: r / pack).
template <class C>
__device__ __forceinline__ int query_pos(const Params& p, int r) {
    return !C::PACK ? r : C::PACK_BY_TMA ? r >> pack_log2(p) : GRID_DIV(r, p.pack, p.divs.pack);
}

// Packed tile row g as (query position, query head): g = position * pack + head in the tile's KV head's group.
template <class C>
__device__ __forceinline__ int2 packed_row(const Params& p, const Tile& t, int g) {
    const int pos = query_pos<C>(p, g);
    return make_int2(pos, t.h * p.pack + g - pos * p.pack);
}

// Key blocks [begin, end) of this split; causal blocks right of the query block's last row's diagonal
// are never visited (row i sees keys j <= i + seqlen_k - seqlen_q).
template <class C>
__device__ __forceinline__ int2 key_blocks(const Params& p, int m_block, int split) {
    int kend = p.seqlen_k;
    const int rows_end = C::PACK ? query_pos<C>(p, (m_block + 1) * C::BM - 1) + 1 : (m_block + 1) * C::BM;
    if (p.causal) kend = min(kend, rows_end + p.seqlen_k - p.seqlen_q);
    const int n_blocks = kend > 0 ? (kend + C::BN - 1) / C::BN : 0;
    const int b0 = split * p.blocks_per_split;
    return make_int2(min(b0, n_blocks), min(n_blocks, b0 + p.blocks_per_split));
}

// Barrier slots (8 bytes each) after the tiles: K/V stages s < 3, Q buffers buf < 2 of consumers w < 3.
struct Bars {
    uint32_t base;
    __device__ uint32_t k_full(int s) const { return base + 8 * s; }
    __device__ uint32_t k_empty(int s) const { return base + 24 + 8 * s; }
    __device__ uint32_t v_full(int s) const { return base + 48 + 8 * s; }
    __device__ uint32_t v_empty(int s) const { return base + 72 + 8 * s; }
    __device__ uint32_t q_full(int buf, int w) const { return base + 96 + 24 * buf + 8 * w; }
    __device__ uint32_t q_empty(int buf, int w) const { return base + 144 + 24 * buf + 8 * w; }   // O stored
    __device__ uint32_t o_empty() const { return base + 192; }   // O_IN_V: every consumer's O store has read its stage
    __device__ uint32_t tile_slot(int buf) const { return base + 200 + 4 * buf; }   // DYN_CHUNKS: Q buf's tile
};

// Ring slot and phase of the i-th key block a CTA streams (i counts over all its tiles).
template <class C>
__device__ __forceinline__ int stage_of(int i) { return C::STAGES == 2 ? (i & 1) : (int)((unsigned)i % C::STAGES); }
template <class C>
__device__ __forceinline__ uint32_t phase_of(int i) {
    return C::STAGES == 2 ? ((i >> 1) & 1) : (((unsigned)i / C::STAGES) & 1);
}

// ================================================================================================
// Producer: one thread issues every TMA load. Order K_0, then (K_j, V_{j-1}), then V_last: the
// consumers need K_j (for S_j) before V_{j-1} (for the PV GEMM issued right after it).
// ================================================================================================
template <class C>
__device__ __forceinline__ void load_k(const CUtensorMap* tm_k, const Tile& t, int n, int i, uint32_t sK,
                                       const Bars& bar) {
    const int s = stage_of<C>(i);
    mbar_wait(bar.k_empty(s), phase_of<C>(i) ^ 1);   // a fresh barrier passes parity 1 at once
    mbar_expect_tx(bar.k_full(s), C::KV_BYTES);      // full box bytes, also when rows past seqlen_k are zero-filled
    tma_load_5d(sK + s * C::KV_BYTES, tm_k, bar.k_full(s), n * C::BN, t.hk, t.b);
}
template <class C>
__device__ __forceinline__ void load_v(const CUtensorMap* tm_v, const Tile& t, int n, int i, uint32_t sV,
                                       const Bars& bar) {
    const int s = stage_of<C>(i);
    mbar_wait(bar.v_empty(s), phase_of<C>(i) ^ 1);
    mbar_expect_tx(bar.v_full(s), C::KV_BYTES);
    tma_load_5d(sV + s * C::KV_BYTES, tm_v, bar.v_full(s), n * C::BN, t.hk, t.b);
}

// One tile: K_0 first (its stage frees early), then Q once the consumers' O of the previous tile has
// left the Q buffers, then the K/V stream. `it` counts key blocks over all tiles of this CTA (ring slot
// and phase), `tile_iter` the tiles (phase of the Q barriers).
template <class C>
__device__ __forceinline__ void produce(const Params& p, const CUtensorMap* tm_q, const CUtensorMap* tm_k,
                                        const CUtensorMap* tm_v,
                                        const Tile& t, int2 range, int it, int tile_iter, uint32_t sQ, uint32_t sK,
                                        uint32_t sV, const Bars& bar, int walk_tile = -1) {
    const int n_iter = range.y - range.x;
    // O_IN_V: the V ring holds the previous tile's O until its stores have read it. Waited once in every tile but
    // the first, before its first V load (or after its Q when no V comes): the consumers free the barrier's next
    // phase only in the tile after this one, whose Q this thread loads after the wait, so the phases never run
    // two ahead of it
    auto wait_o_stored = [&] {
        if constexpr (C::O_IN_V) if (tile_iter > 0) mbar_wait(bar.o_empty(), (tile_iter - 1) & 1);
    };
    WD_MARK(tile_iter, 10);
    if (n_iter > 0) load_k<C>(tm_k, t, range.y - 1, it, sK, bar);
    const int q0 = t.m_block * C::BM, buf = tile_iter % C::Q_BUFS;
    const uint32_t q_phase = (tile_iter / C::Q_BUFS) & 1;
#pragma unroll
    for (int w = 0; w < C::NWG && (!C::PACK || C::PACK_BY_TMA); ++w) {   // packed without TMA: the consumers load Q
        mbar_wait(bar.q_empty(buf, w), q_phase ^ 1);
        if (walk_tile >= 0 && w == 0) st_shared_s32(bar.tile_slot(buf), walk_tile);   // before the arrive below
        mbar_expect_tx(bar.q_full(buf, w), C::Q_WG_BYTES);
        const uint32_t dst = sQ + (C::NWG * buf + w) * C::Q_WG_BYTES;
        if constexpr (C::PACK) {   // rows (position, head): 64 / pack positions of the KV head's pack query heads
            const int pos = (q0 + 64 * w) >> pack_log2(p);
#pragma unroll 1
            for (int j = 0; j < C::D / 64; ++j)   // (unrolled, the 24-register producer spilled at d256)
                tma_load_5c(dst + j * 64 * 128, tm_q, bar.q_full(buf, w), 64 * j, pos, t.h, t.b);
        } else {
            tma_load_5d(dst, tm_q, bar.q_full(buf, w), q0 + 64 * w, t.h, t.b);
        }
    }
    WD_MARK(tile_iter, 11);
    if (n_iter <= 0) {
        wait_o_stored();
        WD_MARK(tile_iter, 12);
        return;
    }
    for (int i = 1; i < n_iter; ++i) {   // right to left, like the consumers
        load_k<C>(tm_k, t, range.y - 1 - i, it + i, sK, bar);
        if (i == 1) wait_o_stored();
        load_v<C>(tm_v, t, range.y - i, it + i - 1, sV, bar);
    }
    if (n_iter == 1) wait_o_stored();
    load_v<C>(tm_v, t, range.x, it + n_iter - 1, sV, bar);
    WD_MARK(tile_iter, 13);
}

// ================================================================================================
// Consumer: one warpgroup, 64 query rows. Thread layout of a 64 x N accumulator (warp w, lane l):
// value d[4j + e] sits at row 16w + l/4 + 8*(e/2), column 8j + 2*(l%4) + e%2.
// ================================================================================================

// Pingpong (FA3's warp scheduler barriers, head_dim <= 128): named barrier 4 + w belongs to consumer w
// (1-3 are the epilogue's). A consumer syncs on its own before issuing its GEMMs and arrives on the next
// one's (round robin over 2 or 3) right after, so the warpgroups take turns on the tensor cores: one runs
// its exponentials while another's GEMMs run.
constexpr int kSchedBarrier = 4;
template <class C>
__device__ __forceinline__ void sched_sync(int wq) {
    if constexpr (C::PINGPONG) named_barrier_sync(kSchedBarrier + wq, 256);
}
// FA3's single poller: a consumer's k-th turn follows consumer 0's k-th turn, which waited for the same K/V stage
// before it issued, so only consumer 0 polls the full barriers (d256 has no turns: every consumer waits).
// Measured +0.6 % on full (runs 15 and 16).
template <class C>
constexpr bool kWaitOne = C::PINGPONG;
template <class C>
__device__ __forceinline__ void sched_arrive(int wq) {
    const int next = wq + 1 < C::NWG ? wq + 1 : 0;
    if constexpr (C::PINGPONG) asm volatile("bar.arrive %0, %1;\n" ::"r"(kSchedBarrier + next), "r"(256) : "memory");
}

// Descriptors: the low word (start address >> 4 in bits 0-13, LBO above) is built once per GEMM and each
// k-step adds a compile-time offset (no carry: shared addresses stay under 256 KB); the high word (SBO,
// swizzle) is a constant. Rebuilding each descriptor per k-step cost ~4 integer instructions per wgmma
// (ncu, run 9 of docs/kernel_ladder.md: a fifth of all our instructions, on the pipes the softmax needs).
__device__ __forceinline__ uint64_t desc_join(uint32_t lo, uint32_t hi) { return ((uint64_t)hi << 32) | lo; }
template <class C>
__device__ __forceinline__ void issue_qk(float (&sc)[C::BN / 2], uint32_t sQw, uint32_t sKs) {
#if DESC_ADD64
    // the same descriptors (the low word never carries), but a 64-bit add keeps ptxas on the uniform datapath:
    // the 32-bit form made it copy each low word to a vector register, add there and R2UR it back, three
    // instructions a k-step in the d256 loop (488 against FA3's 455; 437 this way)
    const uint64_t qd = desc_kmajor(sQw), kd = desc_kmajor(sKs);
#pragma unroll
    for (int kk = 0; kk < C::D / 16; ++kk) {   // k-step kk is +32 B inside a 128-byte chunk
        const uint32_t qo = ((kk >> 2) * (64 * 128) + (kk & 3) * 32) >> 4,
                       ko = ((kk >> 2) * (C::BN * 128) + (kk & 3) * 32) >> 4;
        wgmma_ss<C::BN>(sc, qd + qo, kd + ko, kk > 0);
    }
#else
    const uint32_t hi = (uint32_t)(desc_kmajor(0) >> 32), qlo = (uint32_t)desc_kmajor(sQw),
                   klo = (uint32_t)desc_kmajor(sKs);
#pragma unroll
    for (int kk = 0; kk < C::D / 16; ++kk) {   // k-step kk is +32 B inside a 128-byte chunk
        const uint32_t qo = ((kk >> 2) * (64 * 128) + (kk & 3) * 32) >> 4,
                       ko = ((kk >> 2) * (C::BN * 128) + (kk & 3) * 32) >> 4;
        wgmma_ss<C::BN>(sc, desc_join(qlo + qo, hi), desc_join(klo + ko, hi), kk > 0);
    }
#endif
}
template <class C>
__device__ __forceinline__ void issue_pv(float (&o)[C::D / 2], const uint32_t (&pa)[C::BN / 16][4], uint32_t sVs) {
    const uint64_t d0 = desc_mnmajor(sVs, C::BN * 128);
#if DESC_ADD64
#pragma unroll
    for (int kk = 0; kk < C::BN / 16; ++kk)   // 16 keys = 2048 B of the MN-major V stage per k-step
        wgmma_rs<C::D>(o, pa[kk], d0 + kk * (2048 >> 4), 1);
#else
    const uint32_t hi = (uint32_t)(d0 >> 32), lo = (uint32_t)d0;
#pragma unroll
    for (int kk = 0; kk < C::BN / 16; ++kk)   // 16 keys = 2048 B of the MN-major V stage per k-step
        wgmma_rs<C::D>(o, pa[kk], desc_join(lo + kk * (2048 >> 4), hi), 1);
#endif
}

// ---- consumer: mask
// Mask the columns of key block n that this thread's rows must not see (past seqlen_k, right of the
// diagonal); only blocks that cross seqlen_k or the warpgroup's diagonal need it (warp-uniform test).
// One limit per row: column 8j + e of this thread (key k0 + col0 + 8j + e) is visible iff 8j + e <= lim,
// so each element costs one compare with an immediate and one select.
// Packed rows (PACK_GQA) are tested at their query positions, found here and not kept across the loop (d256's
// consumer spilled with them live).
template <class C>
__device__ __forceinline__ void mask_block(float (&sc)[C::BN / 2], const Params& p, int n, int q_first, int row0,
                                           int col0) {
    const int k0 = n * C::BN, offset = p.seqlen_k - p.seqlen_q;
    if (k0 + C::BN > p.seqlen_k || (p.causal && k0 + C::BN - 1 > query_pos<C>(p, q_first) + offset)) {
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            int lim = p.seqlen_k - 1 - (k0 + col0);
            if (p.causal) lim = min(lim, query_pos<C>(p, row0 + 8 * hf) + offset - (k0 + col0));
#pragma unroll
            for (int j = 0; j < C::BN / 8; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    if (8 * j + e > lim) sc[4 * j + 2 * hf + e] = -INFINITY;
        }
    }
}

// How many iterations, from the first (the top key block, range.y - 1, downwards), may need mask_block: the
// blocks past seqlen_k's last full block and, causal, those right of this warpgroup's first row's diagonal.
// Both conditions only hold from some block up, so they are a prefix of the walk; floor division because
// pos_first + offset - BN can be negative.
__device__ __forceinline__ int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
template <class C>
__device__ __forceinline__ int masked_iters(const Params& p, int2 range, int pos_first) {
    // block n needs a mask iff n*BN + BN > seqlen_k, or causal and n*BN + BN - 1 > pos_first + offset
    int first = floor_div(p.seqlen_k - C::BN, C::BN) + 1;
    if (p.causal) first = min(first, floor_div(pos_first + p.seqlen_k - p.seqlen_q - C::BN + 1, C::BN) + 1);
    return range.y - max(first, range.x);
}
template <bool B>
struct BoolTag { static constexpr bool value = B; };   // a compile-time flag through a generic lambda
constexpr BoolTag<true> kTrue{};
constexpr BoolTag<false> kFalse{};

// ---- consumer: softmax
// This thread's part of row hf's max over the block (one chain: four independent ones, run 48, measured no faster)
template <class C>
__device__ __forceinline__ float thread_row_max(const float (&sc)[C::BN / 2], const int hf) {
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < C::BN / 8; ++j) mx = fmaxf(mx, fmaxf(sc[4 * j + 2 * hf], sc[4 * j + 2 * hf + 1]));
    return mx;
}

// Online softmax of one block on the accumulators (a row lives in the 4 lanes of a quad): new running
// max, alpha = exp2(old max - new max), and p = exp2(s * scale - max) in place of the scores.
template <class C>
__device__ __forceinline__ void softmax_block(float (&sc)[C::BN / 2], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                              float scale_log2) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
        float mx = thread_row_max<C>(sc, hf);
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // pre-scaled running max: an unchanged max gives alpha == 1 exactly (see 02's header)
        const float m_new = fmaxf(m[hf], __fmul_rn(mx, scale_log2));
        const float ms = m_new == -INFINITY ? 0.f : m_new;   // a row with no visible key yet: p = 0
        alpha[hf] = ex2(m[hf] - ms);
        m[hf] = m_new;
        float rs = 0.f;
#pragma unroll
        for (int j = 0; j < C::BN / 8; ++j) {
            sc[4 * j + 2 * hf] = ex2(fmaf(sc[4 * j + 2 * hf], scale_log2, -ms));
            sc[4 * j + 2 * hf + 1] = ex2(fmaf(sc[4 * j + 2 * hf + 1], scale_log2, -ms));
            rs += sc[4 * j + 2 * hf] + sc[4 * j + 2 * hf + 1];
        }
        l[hf] = l[hf] * alpha[hf] + rs;   // thread-local partial row sum; the quad is summed at the end
    }
}

// softmax_block in parts (RESCALE_UNDER_EXP): row hf's new max and alpha (returns the max the exponentials
// subtract), then its exponentials and row sum
template <class C>
__device__ __forceinline__ float row_max(const float (&sc)[C::BN / 2], const int hf, float (&m)[2], float (&alpha)[2],
                                         float scale_log2) {
    float mx = thread_row_max<C>(sc, hf);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(m[hf], __fmul_rn(mx, scale_log2));
    const float ms = m_new == -INFINITY ? 0.f : m_new;
    alpha[hf] = ex2(m[hf] - ms);
    m[hf] = m_new;
    return ms;
}
template <class C>
__device__ __forceinline__ void row_exp(float (&sc)[C::BN / 2], const int hf, const float ms, float (&l)[2],
                                        const float (&alpha)[2], float scale_log2) {
    float rs = 0.f;
#pragma unroll
    for (int j = 0; j < C::BN / 8; ++j) {
        sc[4 * j + 2 * hf] = ex2(fmaf(sc[4 * j + 2 * hf], scale_log2, -ms));
        sc[4 * j + 2 * hf + 1] = ex2(fmaf(sc[4 * j + 2 * hf + 1], scale_log2, -ms));
        rs += sc[4 * j + 2 * hf] + sc[4 * j + 2 * hf + 1];
    }
    l[hf] = l[hf] * alpha[hf] + rs;
}

// P (bf16) as the A fragments of the RS wgmma: k-step kk takes n-tiles 2kk and 2kk+1 (no shuffles).
template <class C>
__device__ __forceinline__ void pack_p(const float (&sc)[C::BN / 2], uint32_t (&pa)[C::BN / 16][4]) {
#pragma unroll
    for (int j = 0; j < C::BN / 8; ++j)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf)
            pa[j >> 1][2 * (j & 1) + hf] = pack_bf16(sc[4 * j + 2 * hf], sc[4 * j + 2 * hf + 1]);
}

template <class C>
__device__ __forceinline__ void rescale_o(float (&o)[C::D / 2], const float (&alpha)[2]) {
#pragma unroll
    for (int j = 0; j < C::D / 8; ++j) {
        o[4 * j + 0] *= alpha[0];
        o[4 * j + 1] *= alpha[0];
        o[4 * j + 2] *= alpha[1];
        o[4 * j + 3] *= alpha[1];
    }
}

// ---- consumer: epilogue
// The O store's wait for the TMA to have read the staging buffer happens in the next tile, after its first
// S GEMM is issued (FA3 does the same), so the storing warp starts the next tile at once. Needs two Q
// buffers (the freed buffer is the one the tile after next loads its Q into; store_pending: it, or -1) or
// O_IN_V's staging in a V stage (then o_empty is what the read frees).
template <class C>
constexpr bool kStoreLate = C::Q_BUFS == 2 || C::O_IN_V;
template <class C>
__device__ __forceinline__ void retire_store(const Bars& bar, int wq, int& store_pending) {
    if (store_pending >= 0) {
        tma_store_wait_read();
        mbar_arrive(C::O_IN_V ? bar.o_empty() : bar.q_empty(store_pending, wq));
        store_pending = -1;
    }
}
// O_IN_V: this warp's last S GEMM of the tile has completed, so the next tile's Q may replace it (one arrival
// per warp, like the K/V stages)
template <class C>
__device__ __forceinline__ void release_q(const Bars& bar, int wq, int lane) {
    if constexpr (C::O_IN_V) if (lane == 0) mbar_arrive(bar.q_empty(0, wq));
}
constexpr int kOStageBarrier = 7;   // O_IN_V: every consumer is past its last PV, so the V ring is read no more

// This thread's two rows at the end of a tile: the row sums over the quad, 1/l and the lse (the epilogue's inputs).
__device__ __forceinline__ void finalize_rows(const float (&m)[2], const float (&l)[2], float (&inv)[2],
                                              float (&lse_row)[2]) {
    constexpr float kLn2 = 0.6931471805599453f;
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
        float lt = l[hf];
        lt += __shfl_xor_sync(0xffffffffu, lt, 1);
        lt += __shfl_xor_sync(0xffffffffu, lt, 2);
        if constexpr (FAST_FINALIZE) {   // one MUFU each (FA3's fast-math build); lt >= 1 after the quad's sum
            inv[hf] = lt > 0.f ? rcp_approx(lt) : 0.f;
            lse_row[hf] = lt > 0.f ? (m[hf] + lg2_approx(lt)) * kLn2 : -INFINITY;
        } else {
            inv[hf] = lt > 0.f ? 1.f / lt : 0.f;
            lse_row[hf] = lt > 0.f ? m[hf] * kLn2 + logf(lt) : -INFINITY;   // no visible key: o = 0, lse = -inf
        }
    }
}

// O normalised into the 128-byte-swizzled staging buffer (64-column panels of 64 rows) by stmatrix.x4: matrices
// (row half 0, chunk j), (half 1, j), (half 0, j + 1), (half 1, j + 1); lanes 8i..8i+7 give matrix i's row
// addresses. A thread's accumulator pair is exactly its stmatrix fragment, so no shuffle (FA3's staging).
template <class C>
__device__ __forceinline__ void stage_o_stmatrix(const float (&o)[C::D / 2], const float (&inv)[2], int warp, int lane,
                                                 uint32_t sO) {
    const int mat = lane >> 3, rr = 16 * warp + (lane & 7) + 8 * (mat & 1);
#pragma unroll
    for (int j = 0; j < C::D / 8; j += 2) {
        const int jj = j + (mat >> 1);
        const uint32_t addr = sO + (jj >> 3) * (64 * 128) + rr * 128 + (((jj & 7) ^ (rr & 7)) << 4);
        const uint32_t r0 = pack_bf16(o[4 * j] * inv[0], o[4 * j + 1] * inv[0]);
        const uint32_t r1 = pack_bf16(o[4 * j + 2] * inv[1], o[4 * j + 3] * inv[1]);
        const uint32_t r2 = pack_bf16(o[4 * j + 4] * inv[0], o[4 * j + 5] * inv[0]);
        const uint32_t r3 = pack_bf16(o[4 * j + 6] * inv[1], o[4 * j + 7] * inv[1]);
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
                     ::"r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
    }
}

// Normalise, write lse from registers, O through a staging buffer (the warpgroup's Q buffer, or O_IN_V's V
// stage) and a TMA store (one split), or fp32 partial results for the combine kernel (several splits).
template <class C>
__device__ __forceinline__ void epilogue(const Params& p, const CUtensorMap* tm_o, const Tile& t, const Bars& bar,
                                         const float (&o)[C::D / 2], const float (&inv)[2], const float (&lse_row)[2],
                                         int wq, int ltid, int warp, int lane, int buf, uint32_t sQw, int q_first,
                                         int row0, int col0, int& store_pending, uint32_t sO) {
    constexpr int D = C::D;
    if (C::PACK && (!C::PACK_BY_TMA || p.n_splits > 1)) {
        // packed rows: O and lse straight from registers to (b, position, head), the head of each row its own
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            const int2 sh = packed_row<C>(p, t, row0 + 8 * hf);
            const int s = sh.x, h = sh.y;
            if (s >= p.seqlen_q) continue;
            const int64_t bh = (int64_t)t.b * p.heads_q + h;
            if (p.n_splits == 1) {
                __nv_bfloat16* op = p.o + (((int64_t)t.b * p.seqlen_q + s) * p.heads_q + h) * D + col0;
#pragma unroll
                for (int j = 0; j < D / 8; ++j)
                    *reinterpret_cast<uint32_t*>(op + 8 * j) =
                        pack_bf16(o[4 * j + 2 * hf] * inv[hf], o[4 * j + 2 * hf + 1] * inv[hf]);
                if ((lane & 3) == 0) p.lse[bh * p.seqlen_q + s] = lse_row[hf];
            } else {
                const int64_t prow = ((int64_t)t.split * p.batch * p.heads_q + bh) * p.seqlen_q + s;
                float* op = p.o_part + prow * D + col0;
#pragma unroll
                for (int j = 0; j < D / 8; ++j)
                    *reinterpret_cast<float2*>(op + 8 * j) =
                        make_float2(o[4 * j + 2 * hf] * inv[hf], o[4 * j + 2 * hf + 1] * inv[hf]);
                if ((lane & 3) == 0) p.lse_part[prow] = lse_row[hf];
            }
        }
        if constexpr (C::PACK_BY_TMA) {             // the producer's next Q may land in this buffer now
            named_barrier_sync(1 + wq, 128);
            if (ltid == 0) mbar_arrive(bar.q_empty(buf, wq));
        }
        return;
    }
    if (p.n_splits == 1) {
        // every wgmma that read this Q buffer has completed (wait_group 0 above), so it can hold O; O_IN_V's
        // stage may still feed the other consumer's last PV until both are here
        if constexpr (C::O_IN_V) named_barrier_sync(kOStageBarrier, 128 * C::NWG);
        WD_POINT(4);
        if constexpr (STSM_EPILOGUE) stage_o_stmatrix<C>(o, inv, warp, lane, sO);
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
            const int r = 16 * warp + (lane >> 2) + 8 * hf;   // row inside the warpgroup's 64
#pragma unroll
            for (int j = 0; j < D / 8 && !STSM_EPILOGUE; ++j) {
                const uint32_t addr = sO + (j >> 3) * (64 * 128) + r * 128 + ((((j & 7) ^ (r & 7))) << 4)
                                      + (lane & 3) * 4;
                const uint32_t val = pack_bf16(o[4 * j + 2 * hf] * inv[hf], o[4 * j + 2 * hf + 1] * inv[hf]);
                asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(val) : "memory");
            }
            const int row = row0 + 8 * hf;
            if constexpr (C::PACK) {
                const int2 sh = packed_row<C>(p, t, row);
                if ((lane & 3) == 0 && sh.x < p.seqlen_q)
                    p.lse[((int64_t)t.b * p.heads_q + sh.y) * p.seqlen_q + sh.x] = lse_row[hf];
            } else {
                if ((lane & 3) == 0 && row < p.seqlen_q) p.lse[(int64_t)t.bh * p.seqlen_q + row] = lse_row[hf];
            }
        }
        fence_proxy_async();                 // generic-proxy writes, read next by the TMA (async proxy)
        // the whole warpgroup's rows are staged. O_IN_V reads barrier 1 + wq afresh from threadIdx: wq kept live
        // across the mainloop for it spilled the d256 walk (4 bytes)
        named_barrier_sync(C::O_IN_V ? __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0) : 1 + wq, 128);
        WD_POINT(5);
        if (ltid == 0) {
            if constexpr (C::PACK) {
#pragma unroll
                for (int j = 0; j < D / 64; ++j)
                    tma_store_5c(tm_o, sO + j * 64 * 128, 64 * j, q_first >> pack_log2(p), t.h, t.b);
                asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
            } else {
                tma_store_5d(tm_o, sO, q_first, t.h, t.b);    // rows past seqlen_q are clipped by the TMA
            }
            if constexpr (kStoreLate<C>) {
                store_pending = buf;                      // retired in the next tile (or after the last)
            } else {
                tma_store_wait_read();                    // shared memory stays valid until it is read
                mbar_arrive(bar.q_empty(buf, wq));        // the producer may load a later tile's Q here
            }
            WD_POINT(6);
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
        if constexpr (C::O_IN_V) {
            // nothing staged, but o_empty is freed where a store's read would be (next tile), so its phases keep
            // the producer's pace
            if (ltid == 0) store_pending = buf;
        } else {
            named_barrier_sync(1 + wq, 128);     // every warp's last QK^T has read this Q buffer
            if (ltid == 0) mbar_arrive(bar.q_empty(buf, wq));
        }
    }
}

// ---- packed rows (PACK_GQA): Q in, O out, by the consumer warpgroup itself
// The warpgroup's 64 rows of Q into its buffer in the TMA's layout (D/64 chunks of 64 rows x 128 B, 128-byte
// swizzle), rows past seqlen_q as zeros; then visible to the wgmma (async proxy) and to the whole warpgroup.
// Its previous tile's wgmmas have all completed (wait_group 0), and no O store reads the buffer when packed.
template <class C>
__device__ __forceinline__ void load_packed_q(const Params& p, const Tile& t, uint32_t sQw, int q_first, int ltid,
                                              int wq) {
    constexpr int CHUNKS = C::D / 8;                   // 16-byte pieces per row
    constexpr int BATCH = C::D == 256 ? 1 : 4;         // loads in flight per thread (d256 at 4 spilled 16 B)
    static_assert((64 * CHUNKS / 128) % BATCH == 0, "a thread's pieces come in whole batches");
    named_barrier_sync(1 + wq, 128);                   // every warp's last wgmma on this buffer has completed
#pragma unroll 1
    for (int i0 = ltid; i0 < 64 * CHUNKS; i0 += 128 * BATCH) {
        uint4 v[BATCH];
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            const int i = i0 + 128 * b, r = i / CHUNKS, j = i % CHUNKS;
            const int2 sh = packed_row<C>(p, t, q_first + r);
            v[b] = make_uint4(0u, 0u, 0u, 0u);
            if (sh.x < p.seqlen_q)
                v[b] = *reinterpret_cast<const uint4*>(
                    p.q + (((int64_t)t.b * p.seqlen_q + sh.x) * p.heads_q + sh.y) * C::D + 8 * j);
        }
#pragma unroll
        for (int b = 0; b < BATCH; ++b) {
            const int i = i0 + 128 * b, r = i / CHUNKS, j = i % CHUNKS;
            const uint32_t addr = sQw + (j >> 3) * (64 * 128) + r * 128 + (((j & 7) ^ (r & 7)) << 4);
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v[b].x), "r"(v[b].y),
                         "r"(v[b].z), "r"(v[b].w) : "memory");
        }
    }
    fence_proxy_async();
    named_barrier_sync(1 + wq, 128);
}

// ---- consumer: mainloop
// One tile of one consumer: S_0 alone, then S_i = Q K_i^T and O += P_{i-1} V_{i-1} in flight together with
// the softmax of block i under PV_{i-1} (and the other consumers' GEMMs), then the last PV and the epilogue.
// The ring counter, key range and shared-memory bases go through a shfl: they are warp-uniform by
// construction and the shfl lets ptxas prove it, so the K/V descriptors live in uniform registers (SASS of
// the d128/176 loop: R2UR 38 -> 3, run 13).
template <class C>
__device__ __forceinline__ void consume(const Params& p, const CUtensorMap* tm_o, const Tile& t, int2 range,
                                        int it, int tile_iter, int wq, uint32_t sQw, uint32_t sK, uint32_t sV,
                                        const Bars& bar, int& store_pending) {
    constexpr int D = C::D, BN = C::BN;
    const int ltid = threadIdx.x - 128 * (wq + 1);
    const int warp = __shfl_sync(0xffffffffu, ltid >> 5, 0), lane = ltid & 31;
    const int q_first = t.m_block * C::BM + 64 * wq;          // first query row of this warpgroup
    const int row0 = q_first + 16 * warp + (lane >> 2);     // this thread's rows: row0 and row0 + 8
    const int col0 = 2 * (lane & 3);

    float o[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};   // m: running row max, pre-scaled to log2 units
    float alpha[2] = {1.f, 1.f};
    float inv[2], lse_row[2];                               // finalize_rows' (FINALIZE_UNDER_PV: under the last PV)
    const int buf = tile_iter % C::Q_BUFS;
    sQw += buf * C::NWG * C::Q_WG_BYTES;
#if TIMELINE
    TileClock tl;
#endif
    TL_START();
    WD_MARK(tile_iter, 1);
    if constexpr (C::PACK && !C::PACK_BY_TMA)
        load_packed_q<C>(p, t, sQw, q_first, ltid, wq);
    else
        mbar_wait(bar.q_full(buf, wq), (tile_iter / C::Q_BUFS) & 1);
    TL_MARK(0);
    WD_MARK(tile_iter, 2);
    it = __shfl_sync(0xffffffffu, it, 0);
    range.x = __shfl_sync(0xffffffffu, range.x, 0);
    range.y = __shfl_sync(0xffffffffu, range.y, 0);
    sK = __shfl_sync(0xffffffffu, sK, 0);
    sV = __shfl_sync(0xffffffffu, sV, 0);
    sQw = __shfl_sync(0xffffffffu, sQw, 0);

    const int n_iter = range.y - range.x;
    if (n_iter > 0) {
        uint32_t pa[BN / 16][4];
        {
            float sc[BN / 2];
            const int s0 = stage_of<C>(it);
            if (!kWaitOne<C> || wq == 0) mbar_wait(bar.k_full(s0), phase_of<C>(it));
            // the first S GEMM takes its pingpong turn too (FA3's order), so the warpgroups start staggered:
            // one's first softmax runs under the other's first GEMM
            sched_sync<C>(wq);
            wgmma_fence();
            issue_qk<C>(sc, sQw, sK + s0 * C::KV_BYTES);
            wgmma_commit();
            sched_arrive<C>(wq);
            if constexpr (kStoreLate<C>) if (ltid == 0) retire_store<C>(bar, wq, store_pending);
            wgmma_wait<0>();
            fence_regs(sc);
            if (lane == 0) mbar_arrive(bar.k_empty(s0));
            TL_MARK(1);
            mask_block<C>(sc, p, range.y - 1, q_first, row0, col0);
            softmax_block<C>(sc, m, l, alpha, p.scale_log2);
            pack_p<C>(sc, pa);
            TL_MARK(2);
        }
        // one key block: S_i with PV_{i-1}; kMask: the block may need mask_block (its own loop under MASK_PEEL)
        auto block = [&](const int i, auto mask_tag) {
            constexpr bool kMask = decltype(mask_tag)::value;
            const int n = range.y - 1 - i;
            const int s = stage_of<C>(it + i), sv = stage_of<C>(it + i - 1);
            float sc[BN / 2];
            if (!kWaitOne<C> || wq == 0) mbar_wait(bar.k_full(s), phase_of<C>(it + i));
            sched_sync<C>(wq);
            wgmma_fence();
            issue_qk<C>(sc, sQw, sK + s * C::KV_BYTES);
            wgmma_commit();
            if constexpr (C::RESCALE_BEFORE_PV) {   // head_dim 256: under S_i
                fence_regs(o);
                rescale_o<C>(o, alpha);
                fence_regs(o);
            }
            if (!kWaitOne<C> || wq == 0) mbar_wait(bar.v_full(sv), phase_of<C>(it + i - 1));
            wgmma_fence();
            issue_pv<C>(o, pa, sV + sv * C::KV_BYTES);
            wgmma_commit();
            sched_arrive<C>(wq);
            wgmma_wait<1>();                     // S_i is done (committed first); PV_{i-1} may still run
            fence_regs(sc);
            if (lane == 0) mbar_arrive(bar.k_empty(s));
            if constexpr (kMask) mask_block<C>(sc, p, n, q_first, row0, col0);
            if constexpr (C::RESCALE_UNDER_EXP_) {
                // ptxas (nvcc 13.0) puts the PV wait after every exponential and the 64 FMULs of the rescale in a
                // block at the end of the iteration (ncu, C_s9000_d128_c1: 134 cycles a block); FA3's SASS waits
                // after row 0's and rescales among row 1's exponentials, in their MUFU shadow. A never-taken
                // branch after the wait ends the basic block, so ptxas cannot sink the wait below row 1 (a vote,
                // so the branch stays warp-uniform: a per-thread one put the descriptors back in vector registers)
                const float ms0 = row_max<C>(sc, 0, m, alpha, p.scale_log2);
                const float ms1 = row_max<C>(sc, 1, m, alpha, p.scale_log2);
                row_exp<C>(sc, 0, ms0, l, alpha, p.scale_log2);
                wgmma_wait<0>();
                fence_regs(o);
                if (lane == 0) mbar_arrive(bar.v_empty(sv));
                if (__any_sync(0xffffffffu, alpha[0] > 1.f)) __nanosleep(1);   // never (alpha <= 1, or NaN)
                row_exp<C>(sc, 1, ms1, l, alpha, p.scale_log2);
                rescale_o<C>(o, alpha);
                pack_p<C>(sc, pa);
                return;
            }
            softmax_block<C>(sc, m, l, alpha, p.scale_log2);
            wgmma_wait<0>();                     // PV_{i-1} is done: its P registers and O are free
            fence_regs(o);
            if (lane == 0) mbar_arrive(bar.v_empty(sv));
            pack_p<C>(sc, pa);
            if constexpr (!C::RESCALE_BEFORE_PV) rescale_o<C>(o, alpha);
        };
        // run 31: +3-5 % at head_dim 128/256, -2.5 % at 64 with 96-key blocks; run 35: d64 +4 % with 128-key ones
        if constexpr (MASK_PEEL) {
            // the first ones (the top blocks)
            const int n_masked = min(n_iter, masked_iters<C>(p, range, query_pos<C>(p, q_first)));
            int i = 1;
            for (; i < n_masked; ++i) block(i, kTrue);
            for (; i < n_iter; ++i) block(i, kFalse);
        } else {
            for (int i = 1; i < n_iter; ++i) block(i, kTrue);
        }
        // ---- last PV
        TL_MARK(3);
        release_q<C>(bar, wq, lane);   // every S GEMM of the tile is done (a test per block spilled the walk)
        const int sl = stage_of<C>(it + n_iter - 1);
        if constexpr (C::RESCALE_BEFORE_PV) rescale_o<C>(o, alpha);
        mbar_wait(bar.v_full(sl), phase_of<C>(it + n_iter - 1));   // the last PV takes no pingpong turn
        fence_regs(o);
        wgmma_fence();
        issue_pv<C>(o, pa, sV + sl * C::KV_BYTES);
        wgmma_commit();
#if FINALIZE_UNDER_PV
        // under the last PV: a branch on the results ends the basic block, so ptxas cannot sink the shuffles,
        // the reciprocal and the log below the wait (warp-uniform through the vote; taken only on a NaN/huge lse,
        // where it costs a nanosleep)
        finalize_rows(m, l, inv, lse_row);
        if (__any_sync(0xffffffffu, !(inv[0] >= 0.f && inv[1] >= 0.f && lse_row[0] < 1e30f && lse_row[1] < 1e30f)))
            __nanosleep(1);
#endif
        wgmma_wait<0>();
        fence_regs(o);
        if (lane == 0) mbar_arrive(bar.v_empty(sl));
        TL_MARK(4);
    }
    else {
        if (FINALIZE_UNDER_PV) finalize_rows(m, l, inv, lse_row);
        release_q<C>(bar, wq, lane);
#if TIMELINE
        for (int i = 1; i < 5; ++i) tl.c[i] = tl.c[0];
#endif
    }
    if constexpr (kStoreLate<C>) if (ltid == 0) retire_store<C>(bar, wq, store_pending);   // n_iter == 0: here
    WD_MARK(tile_iter, 3);
    const uint32_t sO = C::O_IN_V ? sQw + (C::OFF_V - C::OFF_Q) : sQw;   // O_IN_V: 1024-aligned like Q
    if (!FINALIZE_UNDER_PV) finalize_rows(m, l, inv, lse_row);
    epilogue<C>(p, tm_o, t, bar, o, inv, lse_row, wq, ltid, warp, lane, buf, sQw, q_first, row0, col0, store_pending,
                sO);
#if TIMELINE
    TL_MARK(5);
    if (ltid == 0) tl.write(tile_iter, wq, t.m_block, n_iter);
#endif
}


// ================================================================================================
// The kernel: barriers, then one branch per role (setmaxnreg needs each role to be one branch)
// ================================================================================================
// The end of a walk whose consumers read each tile from its Q slot (kWalk 2): -1 in the next Q buffer's
// slot, once its last tile's consumers have let it go (an arrive before that would complete a phase they still wait
// for). k: the tiles produced.
template <class C>
__device__ __forceinline__ void publish_walk_end(const Bars& bar, int k) {
    const int buf = k % C::Q_BUFS;
#pragma unroll
    for (int w = 0; w < C::NWG; ++w) mbar_wait(bar.q_empty(buf, w), ((k / C::Q_BUFS) & 1) ^ 1);
    st_shared_s32(bar.tile_slot(buf), -1);
#pragma unroll
    for (int w = 0; w < C::NWG; ++w) mbar_arrive(bar.q_full(buf, w));
}

// kWalk 1 (CAUSAL_PERSIST's persistent pairs, the static LPT walk): the tiles through cta_walk; 2 (DYN_CHUNKS):
// through the walk counter. Each its own instantiation, so every other grid runs the default build's code (run 27:
// in one function with the plain loop it cost the non-causal shapes 1.4 % and the small ones up to 4 %)
template <class C, int kWalk = 0>
__global__ void __launch_bounds__(C::THREADS, 1)
attn_wgmma_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                  const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_o,
                  const Params p) {
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;   // 128B-swizzle atoms need 1024-B alignment
    const uint32_t sQ = base + C::OFF_Q, sK = base + C::OFF_K, sV = base + C::OFF_V;
    const Bars bar{base + C::OFF_BAR};
    // the warpgroup index through a shfl (CUTLASS's canonical_warp_group_idx) is provably warp-uniform, so the
    // shared-memory addresses and wgmma descriptors derived from it can live in uniform registers
    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);
    const int n_tiles = C::PACK ? p.packed_tiles : p.n_mblocks * p.n_splits * p.batch * p.heads_q;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int buf = 0; buf < 2; ++buf)
#pragma unroll
            for (int w = 0; w < C::NWG; ++w) {
                mbar_init(bar.q_full(buf, w), 1);
                mbar_init(bar.q_empty(buf, w), C::O_IN_V ? 4 : 1);   // O_IN_V: each warp frees Q
            }
        if constexpr (C::O_IN_V) mbar_init(bar.o_empty(), C::NWG);
#pragma unroll
        for (int s = 0; s < C::STAGES; ++s) {
            mbar_init(bar.k_full(s), 1);
            mbar_init(bar.v_full(s), 1);
            mbar_init(bar.k_empty(s), C::CONSUMER_WARPS);
            mbar_init(bar.v_empty(s), C::CONSUMER_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    // Tile k of this CTA: blockIdx.x + k * gridDim.x (one tile per CTA when the grid has every tile; a
    // persistent grid strides). The next tile's first K block and Q load while the consumers finish this
    // tile's last block and store O.
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(C::PRODUCER_REGS));
        if (threadIdx.x == 0) {
            int it = 0;
#if CAUSAL_PERSIST
            if constexpr (kWalk == 2) {
                int tile = blockIdx.x, next = walk_fetch(), k = 0;
                for (; tile < n_tiles; ++k) {
                    const Tile t = tile_of(p, tile);
                    const int2 range = key_blocks<C>(p, t.m_block, t.split);
                    produce<C>(p, &tm_q, &tm_k, &tm_v, t, range, it, k, sQ, sK, sV, bar, tile);
                    it += max(0, range.y - range.x);
                    tile = next;
                    if (tile < n_tiles) next = walk_fetch();
                }
                publish_walk_end<C>(bar, k);
                walk_finish();
            } else if constexpr (kWalk == 1) {
                cta_walk(p, n_tiles, [&](const Tile& t, int k) {
                    const int2 range = key_blocks<C>(p, t.m_block, t.split);
                    produce<C>(p, &tm_q, &tm_k, &tm_v, t, range, it, k, sQ, sK, sV, bar);
                    it += max(0, range.y - range.x);
                });
            } else
#endif
            for (int k = 0, tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
                const Tile t = tile_of<C::PACK>(p, tile);
                const int2 range = key_blocks<C>(p, t.m_block, t.split);
                produce<C>(p, &tm_q, &tm_k, &tm_v, t, range, it, k, sQ, sK, sV, bar);
                it += max(0, range.y - range.x);
                ++k;
            }
            WD_MARK(0xffff, 14);
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(C::CONSUMER_REGS));
        const int wq = wg - 1;
        if (C::PINGPONG && wq == C::NWG - 1) sched_arrive<C>(wq);   // consumer 0 goes first
        int it = 0, store_pending = -1;
#if CAUSAL_PERSIST
        if constexpr (kWalk == 2) {
            for (int k = 0;; ++k) {
                const int buf = k % C::Q_BUFS;
                mbar_wait(bar.q_full(buf, wq), (k / C::Q_BUFS) & 1);
                const int tile = __shfl_sync(0xffffffffu, ld_shared_s32(bar.tile_slot(buf)), 0);
                if (tile < 0) break;
                const Tile t = tile_of(p, tile);
                const int2 range = key_blocks<C>(p, t.m_block, t.split);
                consume<C>(p, &tm_o, t, range, it, k, wq, sQ + wq * C::Q_WG_BYTES, sK, sV, bar, store_pending);
                it += max(0, range.y - range.x);
            }
        } else if constexpr (kWalk == 1) {
            cta_walk(p, n_tiles, [&](const Tile& t, int k) {
                const int2 range = key_blocks<C>(p, t.m_block, t.split);
                consume<C>(p, &tm_o, t, range, it, k, wq, sQ + wq * C::Q_WG_BYTES, sK, sV, bar, store_pending);
                it += max(0, range.y - range.x);
            });
        } else
#endif
        for (int k = 0, tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
            const Tile t = tile_of<C::PACK>(p, tile);
            const int2 range = key_blocks<C>(p, t.m_block, t.split);
            consume<C>(p, &tm_o, t, range, it, k, wq, sQ + wq * C::Q_WG_BYTES, sK, sV, bar, store_pending);
            it += max(0, range.y - range.x);
            ++k;
        }
        // the last O store must have left shared memory before the CTA exits
        if constexpr (kStoreLate<C>) if (threadIdx.x == 128u * (wq + 1)) retire_store<C>(bar, wq, store_pending);
        WD_MARK(0xffff, 7);
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

// PACK_BY_TMA: [B, S, Hkv * pack, D] seen as {D, pack, S, Hkv, B}, so a box of (64 columns, pack heads, 64 / pack
// positions) is 64 packed rows (row = position * pack + head) of one 64-column chunk, in the same swizzled layout.
int make_packed_map(CUtensorMap* map, const void* ptr, int S, int Hkv, int B, int D, int pack) {
    PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (encode == nullptr) return cudaErrorNotSupported;
    const cuuint64_t row = (cuuint64_t)D * 2, hq = (cuuint64_t)Hkv * pack;
    cuuint64_t dims[5] = {(cuuint64_t)D, (cuuint64_t)pack, (cuuint64_t)S, (cuuint64_t)Hkv, (cuuint64_t)B};
    cuuint64_t strides[4] = {row, hq * row, (cuuint64_t)pack * row, (cuuint64_t)S * hq * row};
    cuuint32_t box[5] = {64, (cuuint32_t)pack, (cuuint32_t)(64 / pack), 1, 1};
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

// PACK_GQA: FA3's rule (hopper/heuristics.h should_pack_gqa): pack a GQA group's query heads into the rows of
// one tile when the tiles' row occupancy unpacked is under 90 % of what packing gives (short query lengths:
// decode, few-token prefill), where a 128-row tile would otherwise run mostly empty rows.
bool pack_gqa(int seqlen_q, int group, int block_m) {
    if (group <= 1 || seqlen_q <= 0) return false;
    auto occupancy = [&](long long rows) {
        return (double)rows / (double)(((rows + block_m - 1) / block_m) * block_m);
    };
    return occupancy(seqlen_q) < 0.9 * occupancy((long long)seqlen_q * group);
}

// Number of key splits: minimise waves x blocks-per-CTA, with a small charge for the merge.
int choose_splits(long long ctas, int max_blocks, int slots) {
    if (!SPLIT_KV || ctas <= 0 || max_blocks < 2) return 1;
    // a grid of a wave or more gains little balance from splits and pays fp32 partials, a combine pass and, when
    // causal, CTAs with no key block (SPLIT_WAVES; the tile timeline of B_h28x4_d128_c1_s8k: 2 splits, half of
    // its 7168 tiles empty)
    if (SPLIT_WAVES && ctas >= slots) return 1;
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

// Whether some tile (query block, key split) of an unpacked grid has no key block to visit: causal query blocks
// above the first visible key, or key splits past a short block's end. The first query block sees the fewest keys,
// so it is enough that its blocks end by the last split's start (tests/test_keyless_tiles.py: against every tile).
// D128_BN_SHORT: whether blocks of `bn` keys pad seqlen_k at least 5 % less than blocks of `other` (every key block
// of a non-causal tile costs its full width, the padded keys included: run 91's tensor cycles)
#if D128_BN_SHORT || D256_BN_SHORT
inline bool pads_less(int seqlen_k, int bn, int other) {
    const long long a = (long long)(seqlen_k + bn - 1) / bn * bn, b = (long long)(seqlen_k + other - 1) / other * other;
    return a * 100 <= b * 95;
}
#endif

inline bool has_keyless_tiles(int seqlen_q, int seqlen_k, int causal, int bm, int bn, int splits,
                              int blocks_per_split) {
    const int kend0 = causal ? min(seqlen_k, bm + seqlen_k - seqlen_q) : seqlen_k;
    return (kend0 > 0 ? (kend0 + bn - 1) / bn : 0) <= (splits - 1) * blocks_per_split;
}

struct Call {
    const __nv_bfloat16 *q, *k, *v;
    __nv_bfloat16* o;
    float* lse;
    int batch, heads_q, heads_kv, seqlen_q, seqlen_k, causal;
    float scale;
};

// The grid a launch takes and how its CTAs walk the tiles: p's pairs, pair_units, lpt_units, lpt_walk (and
// tail_heads), and the CTA count. Host C++ only (no CUDA calls): tests/test_grid_plan.py compiles it with g++ and
// checks which walk each measured shape class gets. p holds n_mblocks, group and pack; splits and grid (tiles) are
// chosen; heads_grid is the grid's heads (the KV heads when packed).
template <class C>
long long plan_grid(Params& p, const Call& a, int sms, int splits, long long grid, int heads_grid) {
    // causal tiles differ in length: the hardware's CTA scheduling balances them better than a static
    // persistent striding (-4..13 % on dev26) or an atomic tile counter (runs 4, 7 and 14: -2..-8 %)
    const bool persistent = PERSISTENT == 1 && !a.causal;
    long long ctas_launched = persistent ? (grid < sms ? grid : sms) : grid;
    // pairs halve the grid: only where it stays several waves deep and the split count (chosen for the
    // unpaired grid) is 1 (measured: D_prefill_q512_k16k with 4 splits 1.63 -> 0.82x FA3 when paired;
    // grids of >= 1024 tiles +3-7 %, C_s1500 with 384 tiles -3 %; run 84: C_s3000's 768, head-major pairs against
    // one LPT order over 32 heads' K/V (2x FA3's DRAM bytes, run 80), d256 +5-6 %, d128 +3-4 %)
    // CAUSAL_ORDER 2: pairs only for query blocks under 128 (long tiles make a pair's tail cost more than the
    // start-up it saves: run 17, 16k-32k +3-9 % without pairs, 512-4k -3..-15 %)
    p.pairs = CAUSAL_PAIRS && a.causal && !persistent && p.n_mblocks >= 2 && splits == 1 && grid >= PAIRS_MIN_TILES &&
              (CAUSAL_ORDER < 2 || p.n_mblocks < 128);
    // EMPTY_SOLO: at d256 (O in V) a grid with tiles that see no key runs one tile per CTA: the persistent walk
    // over such tiles hung on H100s (run 57), one tile per CTA did not
    const bool empty_solo = EMPTY_SOLO && C::O_IN_V && p.pack == 1 &&
                            has_keyless_tiles(a.seqlen_q, a.seqlen_k, a.causal, C::BM, C::BN, splits,
                                              p.blocks_per_split);
    if (empty_solo) p.pairs = 0;
    // CAUSAL_PERSIST: short tiles, where a CTA's start and end cost most (run 21: +8-25 % at 512-1k keys, -4..-7 %
    // at 8k, where the hardware's dynamic CTA order balances better than a static stride)
    // d64 to 8 blocks: its 2k-key grids lost 5 % in runs 26-28 (96-key tiles) and 0.5 % at 32 in run 37 (128-key)
    const int persist_blocks = C::D == 64 ? 8 : CAUSAL_PERSIST;
    // CAUSAL_PAIRS 2: the LPT walk below instead of the pairs where it measured better (run 39, the 72 causal
    // shapes): up to d128 wherever the pairs would be relaunched CTAs (their last wave a third idle: d64 +1.5-7 %,
    // d128 8k +3-4 %), and for groups of >= 4 query heads per KV head, whose tiles in one LPT step share their K/V
    // in L2 (d128 1k-4k +1-4 %, d64 1k +12 %); without the group the persistent pairs' head-major reuse wins
    // (A_d128_c1_s1k -19 %), and d256's long tiles gain nothing from the walk (-3 %)
    // DYN_PAIRS: also the persistent pairs' grids of >= 16 query blocks whose walk would be the counter's chunks
    // (groups of 1, >= 12 tiles per SM): 1024 equal pairs on 132 SMs are 7.76 rounds, the chunked LPT order ends on
    // short tiles (run 67: A_d128_c1_s2k/s4k +0.8/+1.5 %; at 4-8 blocks the pairs won by 6-11 %)
    // (DYN_CHUNKS' own conditions, below, on the grid's tiles: groups of 1, >= 12 tiles per SM)
    const long long all_tiles = (long long)p.n_mblocks * splits * a.batch * heads_grid;
    const bool dyn_chunks_fit = p.group <= DYN_MAX_GROUP && all_tiles >= 12LL * sms;
    const bool dyn_pairs = DYN_PAIRS && DYN_CHUNKS && dyn_chunks_fit && p.n_mblocks >= 16;
    const bool walk_beats_pairs = C::D <= 128 && (p.n_mblocks > persist_blocks ||
                                                  (a.heads_q >= 4 * a.heads_kv && PAIR_TAIL < 2) || dyn_pairs);
    if (CAUSAL_PAIRS == 2 && CAUSAL_PERSIST && CAUSAL_LPT_WALK && p.pack == 1 && walk_beats_pairs) p.pairs = 0;
    if (p.pairs) ctas_launched = (long long)(p.n_mblocks - p.n_mblocks / 2) * splits * a.batch * heads_grid;
    // (packed grids have no walk instantiation of their own: they keep the hardware's CTA order)
    // pairs of equal work: a balanced stride
    if (CAUSAL_PERSIST && p.pairs && p.n_mblocks <= persist_blocks && p.pack == 1) {
        p.pair_units = (int)ctas_launched;
        if (ctas_launched > sms) ctas_launched = sms;
    }
    // LPT over the whole grid only while every head's K and V fit in a third of the 50 MB L2 together: beyond that
    // the head-major order's K/V reuse between neighbouring CTAs is worth more than the balance (CAUSAL_ORDER 1);
    // CAUSAL_ORDER 2 keeps LPT inside chunks of heads that fit (a kv head's K/V serves its query group)
    const long long kv_head_bytes = 2LL * a.seqlen_k * C::D * 2, units = (long long)splits * a.batch * heads_grid;
    const long long kv_bytes = kv_head_bytes * a.batch * a.heads_kv;
    if (a.causal && !p.pairs && CAUSAL_ORDER == 1 && kv_bytes <= (16LL << 20)) p.lpt_units = (int)units;
    // CAUSAL_ORDER 3: one LPT order over every head under 128 query blocks, whatever the K/V size: chunked LPT
    // runs a chunk's short tiles before the next chunk's long ones (a list-scheduling model of C_s3000_d128_c1's
    // 10-head chunks: 159.6 us, measured 160.4; one order 134, measured 146: run 26, C +1.6 %). From 128 blocks
    // a head is itself several waves of tiles and the chunks' L2 reuse wins (run 26: 16k-32k -1.5 %)
    if (a.causal && !p.pairs && CAUSAL_ORDER == 3 && p.n_mblocks < 128) p.lpt_units = (int)units;
    if (a.causal && !p.pairs && (CAUSAL_ORDER == 2 || (CAUSAL_ORDER == 3 && p.n_mblocks >= 128))) {
        const long long heads_fit = kv_head_bytes > 0 ? (16LL << 20) / kv_head_bytes : units;
        const long long c = (heads_fit > 0 ? heads_fit : 1) * (heads_grid / a.heads_kv) * splits;
        p.lpt_units = (int)(c < units ? c : units);
    }
    // CAUSAL_LPT_WALK: one LPT order (under 128 blocks) walked by a grid of one CTA per SM, so a CTA's next Q and
    // first K load under this tile's last blocks instead of a CTA relaunch per tile (the model: C_s3000_d128_c1
    // 134 -> 122-127 us, C_s1000 19.6 -> 17.6-18.6)
    if (CAUSAL_PERSIST && CAUSAL_LPT_WALK && a.causal && !p.pairs && p.lpt_units == (int)units && p.pack == 1 &&
        p.n_mblocks < 128 && ctas_launched > sms && !empty_solo) {
        p.lpt_walk = 1;
        ctas_launched = sms;
    }
    // DYN_CHUNKS: where the K/V pass DYN_CHUNK_MB and the walk has >= 12 tiles per SM, LPT inside chunks of heads
    // that fit, handed out by the counter (run 52, 32 MB: A_d128_c1_s8k x1.049, B 8k x1.03; run 50's ncu: the one
    // order read DRAM at 45 % of peak, FA3 9-13 %). Not where the chunk is the whole grid (the counter alone lost the
    // short C grids 12 %, runs 49 and 52) nor on grids of a few waves (the last chunk's long tiles start late)
    if (DYN_CHUNKS && p.lpt_walk == 1 && p.lpt_units == (int)units && dyn_chunks_fit) {
        const long long fit = kv_head_bytes > 0 ? ((long long)DYN_CHUNK_MB << 20) / kv_head_bytes : units;
        const long long c = (fit > 0 ? fit : 1) * (heads_grid / a.heads_kv) * splits;
        if (c < units) {
            p.lpt_units = (int)c;
            p.lpt_walk = 2;
        }
    }
    // DYN_LONG: the chunked grids of >= 128 query blocks (a CTA per tile, its start and the previous one's end
    // unhidden) walked by one CTA per SM through the counter, in the same order, up to d128 (run 54: B d128 16k-32k
    // +2-7 %; A_d256_c1_s16k -13 %, B_h16x8_d256_c1_s16k -2..-6 %)
    if (DYN_LONG && CAUSAL_PERSIST && C::D <= 128 && a.causal && !p.pairs && p.pack == 1 && p.lpt_units > 0 &&
        p.lpt_walk == 0 && splits == 1 && ctas_launched > sms) {
        p.lpt_walk = 2;
        ctas_launched = sms;
    }
#if PAIR_TAIL
    // PAIR_TAIL: a GQA persistent pair grid taken from the counter instead (kWalk 2), in tile_of's pair-tail order:
    // the tail's heads cover >= 4 rounds of tiles (scripts/causal_schedule_model.py: fewer leave the head-major part's
    // end unbalanced). Groups of 1 lost (run 69: A_d256_c1_s512-s4k -4..-10 %), B_h16x8_d256_c1_s1k-s4k gained 2-6 %.
    // PAIR_TAIL 2 also takes the GQA pair grids relaunched per pair (d256 from 64 blocks) and, above, the GQA grids
    // up to 32 blocks that the static LPT walk takes (its one order read 1.5x FA3's DRAM bytes: run 65's ncu)
    // PAIR_TAIL 3 (run 76): also the persistent pair grids of groups of 1 up to d128 (run 69: A_d128_c1_s1k +2-3 %)
    // PAIR_TAIL 4 (runs 85, 95): also the group-1 d256 pair grids relaunched per pair
    if ((p.group > 1 || (PAIR_TAIL >= 3 && C::D <= 128 && p.pair_units > 0) ||
         (PAIR_TAIL >= 4 && C::D == 256 && p.pairs && p.pair_units == 0)) && p.pack == 1 &&
        (p.pair_units > 0 || (PAIR_TAIL >= 2 && p.pairs))) {
        const long long tail = ((long long)PAIR_TAIL_ROUNDS * sms + p.n_mblocks - 1) / p.n_mblocks;
        p.tail_heads = (int)(tail < units ? tail : units);
        p.pairs = p.pair_units = p.lpt_units = 0;
        p.lpt_walk = 2;
        ctas_launched = grid < sms ? grid : sms;   // (pairs come from >= 1024 tiles: every CTA has a first one)
    }
#endif
    return ctas_launched;
}

#if FAST_DIVMOD
// tile_of's divisors for the planned grid (a divisor a walk does not use is 1)
inline GridDivs grid_divs(const Params& p, int heads_grid) {
    const int n = p.n_mblocks > 0 ? p.n_mblocks : 1, units = p.n_splits * p.batch * heads_grid;
    const int c = p.lpt_units > 0 ? p.lpt_units : 1, last = units - (units - 1) / c * c;
    GridDivs d;
    d.mblocks = make_fast_div(n);
    d.splits = make_fast_div(p.n_splits);
    d.heads_q = make_fast_div(p.heads_q);
    d.heads_kv = make_fast_div(p.heads_kv);
    d.group = make_fast_div(p.group);
#if PAIR_TAIL
    d.tail = make_fast_div(p.tail_heads > 0 ? p.tail_heads : 1);
#else
    d.tail = make_fast_div(1);
#endif
    d.pair_long = make_fast_div(n - n / 2);
    d.pair_short = make_fast_div(n / 2 > 0 ? n / 2 : 1);
    d.lpt_tiles = make_fast_div(c * n);
    d.lpt_units = make_fast_div(c);
    d.lpt_last = make_fast_div(last > 0 ? last : 1);
    d.pack = make_fast_div(p.pack > 0 ? p.pack : 1);
    return d;
}
#endif

template <class C>
int launch(const Call& a, cudaStream_t stream) {
    static int sms = 0;
    if (sms == 0) {
        cudaError_t e =
            cudaFuncSetAttribute(attn_wgmma_kernel<C>, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM);
        if (e != cudaSuccess) return e;
        if constexpr (CAUSAL_PERSIST != 0) {
            e = cudaFuncSetAttribute(attn_wgmma_kernel<C, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     C::SMEM);
            if (e != cudaSuccess) return e;
        }
        if constexpr (DYN_WALK) {
            e = cudaFuncSetAttribute(attn_wgmma_kernel<C, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     C::SMEM);
            if (e != cudaSuccess) return e;
        }
        if constexpr (PACK_GQA != 0) {
            e = cudaFuncSetAttribute(attn_wgmma_kernel<Packed<C, false>>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     C::SMEM);
            if (e != cudaSuccess) return e;
        }
        if constexpr (PACK_GQA != 0) {
            e = cudaFuncSetAttribute(attn_wgmma_kernel<Packed<C, true>>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     C::SMEM);
            if (e != cudaSuccess) return e;
        }
        int dev = 0;
        if ((e = cudaGetDevice(&dev)) != cudaSuccess) return e;
        if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess) return e;
    }
    Params p{};
    p.lse = a.lse;
    p.batch = a.batch; p.heads_q = a.heads_q; p.heads_kv = a.heads_kv;
    p.seqlen_q = a.seqlen_q; p.seqlen_k = a.seqlen_k; p.group = a.heads_q / a.heads_kv; p.causal = a.causal;
    p.scale_log2 = a.scale * 1.4426950408889634f;
    p.q = a.q; p.o = a.o;
    p.pack = PACK_GQA && pack_gqa(a.seqlen_q, p.group, C::BM) ? p.group : 1;
    const int heads_grid = p.pack > 1 ? a.heads_kv : a.heads_q;
    const long long packed_rows = (long long)a.seqlen_q * p.pack;
    if (packed_rows > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
    p.n_mblocks = (int)((packed_rows + C::BM - 1) / C::BM);
    int kend = a.seqlen_k;   // keys visible to the last (longest) query block
    if (a.causal) kend = min(kend, (int)((p.n_mblocks * (long long)C::BM - 1) / p.pack) + 1 + a.seqlen_k - a.seqlen_q);
    const int max_blocks = kend > 0 ? (kend + C::BN - 1) / C::BN : 0;
    const long long ctas = (long long)p.n_mblocks * a.batch * heads_grid;
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
    p.packed_tiles = p.pack > 1 ? (int)grid : 0;

    CUtensorMap tm_q, tm_k, tm_v, tm_o;
    int e;
    if ((e = make_map(&tm_q, a.q, a.seqlen_q, a.heads_q, a.batch, C::D, 64)) != cudaSuccess) return e;
    if ((e = make_map(&tm_k, a.k, a.seqlen_k, a.heads_kv, a.batch, C::D, C::BN)) != cudaSuccess) return e;
    if ((e = make_map(&tm_v, a.v, a.seqlen_k, a.heads_kv, a.batch, C::D, C::BN)) != cudaSuccess) return e;
    if ((e = make_map(&tm_o, a.o, a.seqlen_q, a.heads_q, a.batch, C::D, 64)) != cudaSuccess) return e;
    // run 34: the consumers' own Q loads cost a tile 1.2-2x where tiles are short (random shapes 23, 31,
    // 36); a group that divides 64 gets the producer's prefetching TMA instead, else keeps the consumer path
    bool pack_tma = false;
    if (p.pack > 1 && 64 % p.pack == 0) {
        if ((e = make_packed_map(&tm_q, a.q, a.seqlen_q, a.heads_kv, a.batch, C::D, p.pack)) != cudaSuccess) return e;
        if ((e = make_packed_map(&tm_o, a.o, a.seqlen_q, a.heads_kv, a.batch, C::D, p.pack)) != cudaSuccess) return e;
        pack_tma = true;
    }
    const long long ctas_launched = plan_grid<C>(p, a, sms, splits, grid, heads_grid);
#if FAST_DIVMOD
    p.divs = grid_divs(p, heads_grid);
#endif
    if constexpr (PACK_GQA != 0) {
        if (p.pack > 1 && !pack_tma)
            attn_wgmma_kernel<Packed<C, false>><<<(unsigned)ctas_launched, C::THREADS, C::SMEM, stream>>>(
                tm_q, tm_k, tm_v, tm_o, p);
    }
    if constexpr (PACK_GQA != 0) {
        if (p.pack > 1 && pack_tma)
            attn_wgmma_kernel<Packed<C, true>><<<(unsigned)ctas_launched, C::THREADS, C::SMEM, stream>>>(
                tm_q, tm_k, tm_v, tm_o, p);
    }
    if constexpr (CAUSAL_PERSIST != 0) {
        if (p.pack == 1 && (p.pair_units > 0 || p.lpt_walk == 1))
            attn_wgmma_kernel<C, 1><<<(unsigned)ctas_launched, C::THREADS, C::SMEM, stream>>>(tm_q, tm_k, tm_v, tm_o,
                                                                                               p);
        if constexpr (DYN_WALK) if (p.pack == 1 && p.pair_units == 0 && p.lpt_walk == 2)
            attn_wgmma_kernel<C, 2><<<(unsigned)ctas_launched, C::THREADS, C::SMEM, stream>>>(tm_q, tm_k, tm_v, tm_o,
                                                                                               p);
    }
    if (p.pack == 1 && p.pair_units == 0 && !p.lpt_walk)
        attn_wgmma_kernel<C><<<(unsigned)ctas_launched, C::THREADS, C::SMEM, stream>>>(tm_q, tm_k, tm_v, tm_o, p);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess || splits == 1) return err;
    CombineParams cp{a.o, a.lse, p.o_part, p.lse_part, a.batch, a.heads_q, a.seqlen_q, splits};
    combine_kernel<C::D><<<(unsigned)((rows + 7) / 8), 256, 0, stream>>>(cp);
    return cudaGetLastError();
}

// head_dim 64, D64_WGS 0: three consumers (192-row tiles) unless the coarser grid loses more to its last
// partial wave than the third warpgroup gains (measured +10-15 % on long causal grids, run 6): with W(t) the
// waves of t tiles, 192-row tiles cost 1.5 W(t192) against 1.1 W(t128). Under one wave of 128-row tiles the
// split-KV path decides, with two consumers. (C_s1000_d64: 256 -> 192 tiles, 1.94 -> 1.45 waves: -30 %.)
inline int sm_count() {
    static int sms = 0;
    if (sms == 0) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            sms = 132;
    }
    return sms;
}
inline bool three_consumers_pay(const Call& a) {
    const long long sms = sm_count(), heads = (long long)a.batch * a.heads_q;
    const long long t128 = heads * ((a.seqlen_q + 127) / 128), t192 = heads * ((a.seqlen_q + 191) / 192);
    if (t128 < sms) return false;
    // non-causal grids of two waves of 192-row tiles or more: three consumers (run 36: the wave rule below, fitted
    // to 96-key tiles, gave A_d64_c0_s512/s1k, B_h64x8_d64_c0_s1k and D_cross_q1k two; forced three gained 13-36 %
    // there and lost 9 % on C_s1000_d64_c0, 1.5 waves; the rule x1.023 on the 46 d64 shapes)
    if (!a.causal && t192 >= 2 * sms) return true;
    const long long w128 = (t128 + sms - 1) / sms, w192 = (t192 + sms - 1) / sms;
    return 15 * w192 <= 11 * w128;
}

using Cfg64 = Cfg<64, D64_BN>;
using Cfg64c = Cfg<64, D64_BN_CAUSAL>;
using Cfg64w3 = Cfg<64, D64_WG3_BN, 3>;   // three consumers, causal and not
using Cfg128 = Cfg<128, D128_BN>;
using Cfg128c = Cfg<128, D128_BN_CAUSAL>;
#if D128_BN_SHORT
using Cfg128m = Cfg<128, D128_BN_SHORT>;   // short non-causal keys (two Q buffers still fit beside its stages)
#endif
using Cfg256 = Cfg<256, D256_BN>;
#if D256_BN_SHORT
using Cfg256m = Cfg<256, D256_BN_SHORT>;   // short keys: a narrower diagonal block, less padding
#endif
using Cfg64s = Cfg<64, 80>;     // at most 80 keys (cross-attention with 77): one block, little padding
using Cfg128s = Cfg<128, 80>;

// The configuration a call runs, by head_dim, key count, causality and (d64) the grid's waves: visit.run<C>() with
// it. One home for the choice: attn_fwd launches through it, and scripts/grid_plan.py compiles it on the CPU.
template <class Visit>
int dispatch_cfg(const Call& a, int head_dim, const Visit& visit) {
    switch (head_dim) {
        case 64:
            if (SHORT_KEYS && a.seqlen_k <= 80) return visit.template run<Cfg64s>();
            if (D64_WGS == 3 || (D64_WGS == 0 && three_consumers_pay(a))) return visit.template run<Cfg64w3>();
            return a.causal ? visit.template run<Cfg64c>() : visit.template run<Cfg64>();
        case 128:
            if (SHORT_KEYS && a.seqlen_k <= 80) return visit.template run<Cfg128s>();
            // up to ~3k keys the 128-key blocks win (double-buffered Q fits beside them); past it 176
            if (a.causal || a.seqlen_k <= D128_BN_SWITCH) {
#if D128_BN_SHORT
                if (!a.causal && pads_less(a.seqlen_k, D128_BN_SHORT, D128_BN_CAUSAL))
                    return visit.template run<Cfg128m>();
#endif
                return visit.template run<Cfg128c>();
            }
            return visit.template run<Cfg128>();
        default:
#if D256_BN_SHORT
            // short causal rows: the 128-row diagonal spans less masked work in 64-key blocks (run 107)
            if ((a.causal && a.seqlen_k <= 1024) || (!a.causal && pads_less(a.seqlen_k, D256_BN_SHORT, D256_BN)))
                return visit.template run<Cfg256m>();
#endif
            return visit.template run<Cfg256>();
    }
}

struct LaunchVisit {        // attn_fwd's visitor: launch the call with the configuration picked
    const Call& a;
    cudaStream_t stream;
    template <class C> int run() const { return launch<C>(a, stream); }
};

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
    return dispatch_cfg(a, head_dim, LaunchVisit{a, stream});
}

#if WATCHDOG
// The watchdog's words (see its section) in mapped host memory, zeroed, and their host address (0 on an error):
// one allocation per process, zeroed again by every call. The host reads them while a launch runs.
extern "C" uint64_t attn_watchdog_open() {
    constexpr size_t kWords = kWdCount + 1 + kWdRecords * kWdRecordWords;
    static uint32_t* host = nullptr;
    if (!host && cudaHostAlloc((void**)&host, kWords * sizeof(uint32_t), cudaHostAllocMapped) != cudaSuccess) {
        host = nullptr;
        return 0;
    }
    for (size_t i = 0; i < kWords; ++i) host[i] = 0;
    uint32_t* dev = nullptr;
    unsigned zero = 0;
    if (cudaHostGetDevicePointer((void**)&dev, host, 0) != cudaSuccess ||
        cudaMemcpyToSymbol(g_wd, &dev, sizeof dev) != cudaSuccess ||
        cudaMemcpyToSymbol(g_wd_n, &zero, sizeof zero) != cudaSuccess)
        return 0;
    return (uint64_t)(uintptr_t)host;
}
#endif

#if TIMELINE
// Copies up to max_records timeline records (16 words each) of the launches since the last call into host memory
// and starts a new count; returns the records written since the last call, or a negated CUDA error.
extern "C" int attn_timeline(uint32_t* host_dst, int max_records) {
    unsigned int n = 0, zero = 0;
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpyFromSymbol(&n, g_timeline_n, sizeof n);
    const unsigned kept = n < kTimelineMax ? n : kTimelineMax;
    const unsigned copy = max_records < 0 ? 0u : (kept < (unsigned)max_records ? kept : (unsigned)max_records);
    if (e == cudaSuccess && copy > 0 && host_dst)
        e = cudaMemcpyFromSymbol(host_dst, g_timeline, (size_t)copy * 16 * sizeof(uint32_t));
    if (e == cudaSuccess) e = cudaMemcpyToSymbol(g_timeline_n, &zero, sizeof zero);
    return e == cudaSuccess ? (int)n : -(int)e;
}
#endif
