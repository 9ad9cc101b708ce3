// WRONG KERNEL (the harness must reject it): hangs_on_keyless_rows.cu
// Bug: a block raises a "keys staged" flag only when it has keys to load, and every block then waits for the flag,
//      so a block whose rows all see no key (causal, seqlen_q - seqlen_k past a block's rows) waits forever. The
//      shape of run 57 (docs/kernel_ladder.md): the best rung hung on an H100 where a head_dim 256 walk met tiles
//      that see no key. Correct on every other shape, so `full` and dev26 (square causal shapes) pass it.
// Caught by: the worker's per-scenario limit on edge's E_*_q1000_k1_causal / q4097_k129 / q2000_k300 shapes.
// Expected harness reason: timeout (suite edge in wrong/expected.csv)
// Derived from kernels/attn_fwd/original.cu (knobs fixed at 256 threads, 32 dims per lane, 8 keys per step).

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <limits.h>

#define THREADS_PER_BLOCK 256
#define DIMS_PER_LANE 32
#define KEY_TILE 8
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

struct AttnParams {
    const __nv_bfloat16* q;
    const __nv_bfloat16* k;
    const __nv_bfloat16* v;
    __nv_bfloat16* o;
    float* lse;
    int batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, causal;
    float scale_log2;
    int num_q_tiles;
};

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

template <int HEAD_DIM_MAX>
__global__ void __launch_bounds__(THREADS_PER_BLOCK, 1) attn_fwd_kernel(const AttnParams p) {
    constexpr int LANES = HEAD_DIM_MAX / DIMS_PER_LANE;
    constexpr int ROWS = THREADS_PER_BLOCK / LANES;
    constexpr int CHUNKS = DIMS_PER_LANE / 8;

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

    const long long causal_shift = (long long)p.seqlen_k - p.seqlen_q;
    const int last_row = min(tile * ROWS + ROWS, p.seqlen_q) - 1;
    int block_end = p.seqlen_k;
    int row_end = row_valid ? p.seqlen_k : 0;
    if (p.causal) {
        block_end = (int)max(0LL, min((long long)p.seqlen_k, last_row + causal_shift + 1));
        if (row_valid) row_end = (int)max(0LL, min((long long)p.seqlen_k, row + causal_shift + 1));
    }

    // the bug: the flag is raised by blocks with keys only, and waited for by every block
    __shared__ int keys_staged;
    if (threadIdx.x == 0) keys_staged = 0;
    __syncthreads();
    if (threadIdx.x == 0 && block_end > 0) keys_staged = 1;
    __syncthreads();
    while (*reinterpret_cast<volatile int*>(&keys_staged) == 0) __nanosleep(1000);

    const long long q_stride = (long long)p.heads_q * p.head_dim;
    const long long kv_stride = (long long)p.heads_kv * p.head_dim;
    const __nv_bfloat16* k_base = p.k + (long long)b * p.seqlen_k * kv_stride + (long long)h_kv * p.head_dim;
    const __nv_bfloat16* v_base = p.v + (long long)b * p.seqlen_k * kv_stride + (long long)h_kv * p.head_dim;
    const long long qo_offset = ((long long)b * p.seqlen_q + row) * q_stride + (long long)h * p.head_dim;

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

    float m = -INFINITY;
    float l = 0.0f;
    float acc[CHUNKS][8];
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[c][e] = 0.0f;

    for (int j0 = 0; j0 < block_end; j0 += KEY_TILE) {
        float s[KEY_TILE];
#pragma unroll
        for (int t = 0; t < KEY_TILE; ++t) {
            const int j = j0 + t;
            float dot = 0.0f;
            if (j < block_end) {
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

        float step_max = s[0];
#pragma unroll
        for (int t = 1; t < KEY_TILE; ++t) step_max = fmaxf(step_max, s[t]);
        const float m_new = fmaxf(m, step_max);
        const float m_offset = (m_new == -INFINITY) ? 0.0f : m_new;
        const float correction = exp2f(m - m_offset);
        l *= correction;
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[c][e] *= correction;
        m = m_new;

#pragma unroll
        for (int t = 0; t < KEY_TILE; ++t) {
            const int j = j0 + t;
            const float prob = exp2f(s[t] - m_offset);
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
    constexpr int rows = THREADS_PER_BLOCK / (HEAD_DIM_MAX / DIMS_PER_LANE);
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
    if (((uintptr_t)q | (uintptr_t)k | (uintptr_t)v | (uintptr_t)o) % 16 != 0) return (int)cudaErrorInvalidValue;
    if (seqlen_q == 0) return 0;

    const AttnParams p = {q, k, v, o, lse, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, causal != 0,
                          softmax_scale * LOG2E, 0};
    if (head_dim <= 64) return launch<64>(p, stream);
    if (head_dim <= 128) return launch<128>(p, stream);
    return launch<256>(p, stream);
}
