// original.cu: attention forward, the campaign's starting point and the baseline every speedup is measured
// against. Plain online-softmax (FlashAttention's recurrence) on CUDA cores: fp32 FMA math, fp32 accumulation,
// no tensor cores, no shared memory.
//
//   o[b, i, h, :] = sum_j softmax_j(scale * q[b, i, h, :] . k[b, j, g, :]) * v[b, j, g, :],  g = h / (Hq / Hkv)
//   lse[b, h, i]  = log(sum_j exp(scale * q.k_j))              (natural log; -inf for a row that sees no key)
//
// Layout: q, o are [batch, seqlen_q, heads_q, head_dim]; k, v are [batch, seqlen_k, heads_kv, head_dim]; all
// contiguous bf16. lse is [batch, heads_q, seqlen_q] fp32. Causal masking is bottom-right aligned: query i sees
// keys j <= i + seqlen_k - seqlen_q, so with seqlen_q > seqlen_k the leading rows see nothing (o = 0, lse = -inf).
//
// Design
//   * One block = THREADS_PER_BLOCK / LANES consecutive query rows of one (batch, head) (64 rows for head_dim
//     128 at the defaults). Blocks are ordered so that the query tiles with the most causal work start first
//     (a cheap longest-job-first schedule).
//   * LANES = head_dim_bucket / DIMS_PER_LANE adjacent threads share one query row. A lane owns 16-byte chunks
//     (8 dims) lane, lane + LANES, lane + 2*LANES, ... so the LANES lanes of a row read one contiguous stretch of
//     each K/V row per step. head_dim is rounded up to a bucket (64, 128, 256) chosen at compile time; chunks at
//     or past head_dim are skipped, so every multiple of 8 up to 256 works.
//   * Keys are walked in steps of KEY_TILE: each lane dots its q chunks with a K row, the LANES partial sums are
//     combined with __shfl_xor_sync, then the running max m, running sum l and accumulator acc (all fp32, in
//     registers) are rescaled once per step and updated with p = exp2(s - m) times the V row. Scores are kept in
//     log2 units (q is pre-multiplied by softmax_scale * log2 e), so lse = (m + log2 l) * ln 2 at the end.
//   * -inf handling: masked scores are -inf; while a row has seen no key, m stays -inf and the exponent offset
//     used is 0 instead, so there is never a (-inf) - (-inf).
//   * Every loop that touches registers is fully unrolled with compile-time bounds, so nothing lives in local
//     memory (the ptxas report shows a 0-byte stack frame).
//
// Why it is slow (what the ladder changes next)
//   * fp32 FMA on CUDA cores: ~67 TFLOP/s peak on an H200 against ~790 for bf16 tensor cores (wgmma).
//   * Each K/V element is converted bf16 -> fp32 once per query row that uses it and is re-read from L1 by
//     every warp of the block; a tiled kernel stages K/V in shared memory once per block (cp.async / TMA).
//   * Per key the lanes of a row spend shuffles, an exp2 and softmax bookkeeping on only 2 * DIMS_PER_LANE FMAs;
//     a tensor-core kernel amortises those over a whole 64x64 or 128x128 score tile.
//   * No pipelining: the loads of the next key step are not overlapped explicitly with the math of this one.
//   Estimate (not yet measured): per key a lane issues ~150 instructions of which 2 * DIMS_PER_LANE = 64 are
//   FMAs (the rest: bf16 unpacking, loads, shuffles, exp2), at 125 registers = 16 warps per SM; so expect
//   roughly 8-15 TFLOP/s on large shapes, far below the 67 TFLOP/s FMA peak.
//
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC -Xptxas -v
//        -lineinfo -o out.so original.cu

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <limits.h>

// ---- tunables: a scripted agent edits the #define lines (or passes -D); every listed choice compiles without
// spills and stays correct. THREADS_PER_BLOCK: threads per block; DIMS_PER_LANE: dims of a query row per thread
// (fewer = more lanes per row, more shuffles, fewer registers); KEY_TILE: keys per online-softmax rescale.
#ifndef THREADS_PER_BLOCK
#define THREADS_PER_BLOCK 256   // @knob THREADS_PER_BLOCK 256 {128,256}
#endif
#ifndef DIMS_PER_LANE
#define DIMS_PER_LANE 32        // @knob DIMS_PER_LANE 32 {16,32,64}
#endif
#ifndef KEY_TILE
#define KEY_TILE 8              // @knob KEY_TILE 8 {4,8,16}
#endif

static_assert(DIMS_PER_LANE % 8 == 0 && DIMS_PER_LANE <= 64, "a lane owns whole 16-byte chunks, at most 8");
static_assert(THREADS_PER_BLOCK % 32 == 0 && THREADS_PER_BLOCK >= 256 / DIMS_PER_LANE, "whole warps, >= 1 row");

// Threads per query row and query rows per block for a head_dim bucket: e.g. 128 -> 4 lanes, 64 rows.
#define LANES_PER_ROW(HEAD_DIM_MAX) ((HEAD_DIM_MAX) / DIMS_PER_LANE)
#define ROWS_PER_BLOCK(HEAD_DIM_MAX) (THREADS_PER_BLOCK / LANES_PER_ROW(HEAD_DIM_MAX))

#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

struct AttnParams {
    const __nv_bfloat16* q;
    const __nv_bfloat16* k;
    const __nv_bfloat16* v;
    __nv_bfloat16* o;
    float* lse;
    int batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, causal;
    float scale_log2;   // softmax_scale * log2(e): scores come out in log2 units, ready for exp2f
    int num_q_tiles;    // ceil(seqlen_q / rows per block)
};

// ---- bf16 <-> fp32 for 8 packed values (one 16-byte chunk); element 0 is the low half of word 0 ----
__device__ __forceinline__ void unpack_bf16x8(const uint4& raw, float (&f)[8]) {
    const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}

// ---- the kernel: HEAD_DIM_MAX is the head_dim bucket (64, 128 or 256) ----
// (min 1 block per SM in __launch_bounds__: without it ptxas caps some knob settings at 64/128 registers and
// spills a few bytes; with it every setting stays spill-free.)
template <int HEAD_DIM_MAX>
__global__ void __launch_bounds__(THREADS_PER_BLOCK, 1)
attn_fwd_kernel(const AttnParams p) {
    constexpr int LANES = LANES_PER_ROW(HEAD_DIM_MAX);   // threads per query row (a power of two, <= 32)
    constexpr int ROWS = ROWS_PER_BLOCK(HEAD_DIM_MAX);   // query rows per block
    constexpr int CHUNKS = DIMS_PER_LANE / 8;            // 16-byte chunks per lane
    static_assert(LANES >= 1 && LANES <= 32 && (LANES & (LANES - 1)) == 0, "lanes of a row sit in one warp");

    // Which (batch, head) and which query rows this block owns; the heaviest causal tiles go first.
    const int bh_count = p.batch * p.heads_q;
    const int bh = blockIdx.x % bh_count;
    const int tile = p.num_q_tiles - 1 - blockIdx.x / bh_count;
    const int b = bh / p.heads_q;
    const int h = bh % p.heads_q;
    const int h_kv = h / (p.heads_q / p.heads_kv);
    const int lane = threadIdx.x % LANES;
    const int row = tile * ROWS + threadIdx.x / LANES;
    const bool row_valid = row < p.seqlen_q;
    const int n_chunks = p.head_dim / 8;

    // Visible keys: [0, row_end) for this row, [0, block_end) for the union over the block's rows. The loop
    // runs to block_end for every thread so that warps stay converged for the shuffles.
    const long long causal_shift = (long long)p.seqlen_k - p.seqlen_q;
    const int last_row = min(tile * ROWS + ROWS, p.seqlen_q) - 1;
    int block_end = p.seqlen_k;
    int row_end = row_valid ? p.seqlen_k : 0;
    if (p.causal) {
        block_end = (int)max(0LL, min((long long)p.seqlen_k, last_row + causal_shift + 1));
        if (row_valid) row_end = (int)max(0LL, min((long long)p.seqlen_k, row + causal_shift + 1));
    }

    // Row strides in elements; 64-bit because batch * seqlen * heads * head_dim can pass 2^31.
    const long long q_stride = (long long)p.heads_q * p.head_dim;
    const long long kv_stride = (long long)p.heads_kv * p.head_dim;
    const __nv_bfloat16* k_base = p.k + (long long)b * p.seqlen_k * kv_stride + (long long)h_kv * p.head_dim;
    const __nv_bfloat16* v_base = p.v + (long long)b * p.seqlen_k * kv_stride + (long long)h_kv * p.head_dim;
    const long long qo_offset = ((long long)b * p.seqlen_q + row) * q_stride + (long long)h * p.head_dim;

    // This lane's slice of the query row, pre-scaled into log2 units. Absent rows/chunks are zero.
    float q[CHUNKS][8];
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int chunk = lane + c * LANES;
        uint4 raw = make_uint4(0, 0, 0, 0);
        if (row_valid && chunk < n_chunks) raw = *reinterpret_cast<const uint4*>(p.q + qo_offset + chunk * 8);
        unpack_bf16x8(raw, q[c]);
#pragma unroll
        for (int e = 0; e < 8; ++e) q[c][e] *= p.scale_log2;
    }

    float m = -INFINITY;   // running max of the scores seen so far (log2 units)
    float l = 0.0f;        // running sum of exp2(s - m)
    float acc[CHUNKS][8];  // running sum of exp2(s - m) * v, this lane's dims
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[c][e] = 0.0f;

    for (int j0 = 0; j0 < block_end; j0 += KEY_TILE) {
        // Scores for KEY_TILE keys: partial dot over this lane's chunks, then a butterfly sum over the row's lanes.
        float s[KEY_TILE];
#pragma unroll
        for (int t = 0; t < KEY_TILE; ++t) {
            const int j = j0 + t;
            float dot = 0.0f;
            if (j < block_end) {   // the same for the whole block: no divergence
                const __nv_bfloat16* k_row = k_base + (long long)j * kv_stride;
#pragma unroll
                for (int c = 0; c < CHUNKS; ++c) {
                    const int chunk = lane + c * LANES;
                    if (chunk < n_chunks) {
                        float kf[8];
                        unpack_bf16x8(*reinterpret_cast<const uint4*>(k_row + chunk * 8), kf);
#pragma unroll
                        for (int e = 0; e < 8; ++e) dot = fmaf(q[c][e], kf[e], dot);
                    }
                }
            }
#pragma unroll
            for (int offset = LANES / 2; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
            s[t] = (j < row_end) ? dot : -INFINITY;
        }

        // Online softmax: one rescale of l and acc per key step.
        float step_max = s[0];
#pragma unroll
        for (int t = 1; t < KEY_TILE; ++t) step_max = fmaxf(step_max, s[t]);
        const float m_new = fmaxf(m, step_max);
        const float m_offset = (m_new == -INFINITY) ? 0.0f : m_new;   // no (-inf) - (-inf) while nothing is seen
        const float correction = exp2f(m - m_offset);                // 0 when m was -inf
        l *= correction;
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[c][e] *= correction;
        m = m_new;

#pragma unroll
        for (int t = 0; t < KEY_TILE; ++t) {
            const int j = j0 + t;
            const float prob = exp2f(s[t] - m_offset);   // 0 for masked keys
            l += prob;
            if (j < block_end) {
                const __nv_bfloat16* v_row = v_base + (long long)j * kv_stride;
#pragma unroll
                for (int c = 0; c < CHUNKS; ++c) {
                    const int chunk = lane + c * LANES;
                    if (chunk < n_chunks) {
                        float vf[8];
                        unpack_bf16x8(*reinterpret_cast<const uint4*>(v_row + chunk * 8), vf);
#pragma unroll
                        for (int e = 0; e < 8; ++e) acc[c][e] = fmaf(prob, vf[e], acc[c][e]);
                    }
                }
            }
        }
    }

    if (!row_valid) return;
    // A row that saw no key has l == 0: it writes o = 0 and lse = -inf.
    const float inv_l = (l > 0.0f) ? 1.0f / l : 0.0f;
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c) {
        const int chunk = lane + c * LANES;
        if (chunk < n_chunks) {
            uint4 out;
            out.x = pack_bf16x2(acc[c][0] * inv_l, acc[c][1] * inv_l);
            out.y = pack_bf16x2(acc[c][2] * inv_l, acc[c][3] * inv_l);
            out.z = pack_bf16x2(acc[c][4] * inv_l, acc[c][5] * inv_l);
            out.w = pack_bf16x2(acc[c][6] * inv_l, acc[c][7] * inv_l);
            *reinterpret_cast<uint4*>(p.o + qo_offset + chunk * 8) = out;
        }
    }
    if (lane == 0)
        p.lse[((long long)b * p.heads_q + h) * p.seqlen_q + row] = (l > 0.0f) ? (m + log2f(l)) * LN2 : -INFINITY;
}

template <int HEAD_DIM_MAX>
static int launch(AttnParams p, cudaStream_t stream) {
    constexpr int rows = ROWS_PER_BLOCK(HEAD_DIM_MAX);
    p.num_q_tiles = (p.seqlen_q + rows - 1) / rows;
    const long long blocks = (long long)p.num_q_tiles * p.batch * p.heads_q;
    if (blocks > INT_MAX) return (int)cudaErrorInvalidValue;
    attn_fwd_kernel<HEAD_DIM_MAX><<<(unsigned)blocks, THREADS_PER_BLOCK, 0, stream>>>(p);
    return (int)cudaGetLastError();
}

extern "C" int attn_fwd(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                        __nv_bfloat16* o, float* lse,
                        int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim,
                        int causal, float softmax_scale, cudaStream_t stream) {
    if (batch < 1 || heads_q < 1 || heads_kv < 1 || heads_q % heads_kv != 0 || seqlen_q < 0 || seqlen_k < 0 ||
        head_dim < 8 || head_dim > 256 || head_dim % 8 != 0 || (long long)batch * heads_q > INT_MAX)
        return (int)cudaErrorInvalidValue;
    // 16-byte loads and stores need 16-byte aligned base pointers (rows are, since head_dim % 8 == 0).
    if (((uintptr_t)q | (uintptr_t)k | (uintptr_t)v | (uintptr_t)o) % 16 != 0) return (int)cudaErrorInvalidValue;
    if (seqlen_q == 0) return 0;

    const AttnParams p = {q, k, v, o, lse, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, causal != 0,
                          softmax_scale * LOG2E, 0};
    if (head_dim <= 64) return launch<64>(p, stream);
    if (head_dim <= 128) return launch<128>(p, stream);
    return launch<256>(p, stream);
}
