// Rung 01 — tiled attention forward with the online softmax, plain fp32 FMA (no tensor cores).
//
// What this rung changes: a block owns a 64-row tile of queries of one (batch, head) and streams the keys
// in 64-row K/V tiles through shared memory (cooperative 16-byte loads), keeping a running row max, row sum
// and output accumulator in registers (FlashAttention's online softmax). Each of the 256 threads computes
// a 4x4 register tile of scores (rows ty+16i, keys tx+16j), so every K/Q value read from shared memory
// feeds four FMAs, and the 64x64 probability tile goes through shared memory into P.V.
// Why it should be faster than a naive kernel: K and V are read from DRAM/L2 once per 64 query rows instead
// of once per row, and the SxS score matrix never touches global memory.
//
// Prediction (before measuring): fp32 FMA bound. Peak FP32 is ~67 TFLOP/s; the inner loop spends about one
// conversion or shared load per FMA, so ~35-45% of peak: 20-25 TFLOP/s on large shapes, i.e. ~0.03-0.04x FA3.
// Measured (H200, scripts/ladder_bench.py, dev26, L2 flushed): 25-31 TFLOP/s on large shapes (26 at d64,
// 30-31 at d128), 0.04x FA3 / 0.10x FA2 on A and B; geomean 0.071x FA3 over dev26. Prediction held (fp32 FMA
// bound at ~45% of the 67 TFLOP/s peak). The first version failed the lse check at 32k keys on x16 inputs:
// the rescale ex2(m_old*c - fl(m_new*c)) was FMA-contracted, so alpha != 1 with an unchanged max and l
// drifted per tile; both products are now rounded alike. After the fix: 182/182 of full pass (H200,
// x16 + seed 0 against an fp64 reference; worst rel_l2 1.7e-3, lse 6.5e-4).
// Harness (workbench check --suite full --anchors fa3,cudnn,fa2, H200, 2026-11-30): 182/182 passed;
// x3.15 the original; geomean x FA3 0.066 (A 0.057, B 0.047, C 0.124, D 0.083), x FA2 0.104.
// These figures are per-call timing (events around the Python call, before 0881b0b), not re-measured in
// device time; its TFLOP/s on large shapes, where the host's share is negligible, stand.
//
// Contract: kernels/attn_fwd/README.md; head_dim 64/128/256, any lengths, GQA, causal
// bottom-right aligned, empty rows write o = 0 and lse = -inf.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

namespace {

constexpr int BQ = 64;       // query rows per block
constexpr int BK = 64;       // keys per shared-memory tile
constexpr int THREADS = 256; // 16 x 16 threads: ty owns rows ty+16i, tx owns keys tx+16j / output cols
constexpr int RT = BQ / 16;  // rows per thread
constexpr int CT = BK / 16;  // keys per thread

struct Params {
    const __nv_bfloat16 *q, *k, *v;
    __nv_bfloat16* o;
    float* lse;
    int batch, heads_q, heads_kv, seqlen_q, seqlen_k, group, causal, n_qtiles;
    float scale, scale_log2;
};

__device__ __forceinline__ float bf_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

// Copies rows [row0, row0+ROWS) of a [seq, heads, D] tensor slice into shared memory with row pitch PITCH
// elements, 16 bytes per load; rows at or past n_valid are zero-filled (so padding can never be NaN).
template <int ROWS, int D, int PITCH>
__device__ __forceinline__ void load_tile(__nv_bfloat16* s, const __nv_bfloat16* g, int64_t g_stride,
                                          int row0, int n_valid, int tid) {
    constexpr int CPR = D / 8;
#pragma unroll
    for (int c = tid; c < ROWS * CPR; c += THREADS) {
        int r = c / CPR, ch = c % CPR;
        uint4 val = make_uint4(0, 0, 0, 0);
        if (row0 + r < n_valid) val = *reinterpret_cast<const uint4*>(g + (int64_t)(row0 + r) * g_stride + ch * 8);
        *reinterpret_cast<uint4*>(s + r * PITCH + ch * 8) = val;
    }
}

template <int D>
__global__ void __launch_bounds__(THREADS) attn_tiled_kernel(Params p) {
    constexpr int QK_PITCH = D + 8;   // +16 bytes: 8 consecutive rows hit 8 different 16-byte bank groups
    constexpr int P_PITCH = BK + 4;
    constexpr int OC = D / 32;        // bf16 pairs per thread per row: cols 2*tx + 32*jj
    extern __shared__ __align__(16) unsigned char smem[];
    __nv_bfloat16* sQ = reinterpret_cast<__nv_bfloat16*>(smem);
    __nv_bfloat16* sK = sQ + BQ * QK_PITCH;
    __nv_bfloat16* sV = sK + BK * QK_PITCH;
    float* sP = reinterpret_cast<float*>(sV + BK * D);

    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int bh = blockIdx.x % (p.batch * p.heads_q);
    int qt = blockIdx.x / (p.batch * p.heads_q);
    if (p.causal) qt = p.n_qtiles - 1 - qt;   // longest rows first
    const int b = bh / p.heads_q, h = bh % p.heads_q, hk = h / p.group;
    const int q0 = qt * BQ;
    const int offset = p.seqlen_k - p.seqlen_q;  // bottom-right causal: row i sees keys j <= i + offset

    const int64_t q_stride = (int64_t)p.heads_q * D, kv_stride = (int64_t)p.heads_kv * D;
    const __nv_bfloat16* qg = p.q + ((int64_t)b * p.seqlen_q * p.heads_q + h) * D;
    const __nv_bfloat16* kg = p.k + ((int64_t)b * p.seqlen_k * p.heads_kv + hk) * D;
    const __nv_bfloat16* vg = p.v + ((int64_t)b * p.seqlen_k * p.heads_kv + hk) * D;

    load_tile<BQ, D, QK_PITCH>(sQ, qg, q_stride, q0, p.seqlen_q, tid);

    int kend = p.seqlen_k;
    if (p.causal) kend = min(kend, q0 + BQ + offset);

    float m[RT], l[RT], acc[RT][OC][2];
#pragma unroll
    for (int i = 0; i < RT; ++i) {
        m[i] = -INFINITY;
        l[i] = 0.f;
#pragma unroll
        for (int jj = 0; jj < OC; ++jj) acc[i][jj][0] = acc[i][jj][1] = 0.f;
    }

    for (int k0 = 0; k0 < kend; k0 += BK) {
        __syncthreads();  // previous tile's P.V reads are done before K/V are overwritten
        load_tile<BK, D, QK_PITCH>(sK, kg, kv_stride, k0, p.seqlen_k, tid);
        load_tile<BK, D, D>(sV, vg, kv_stride, k0, p.seqlen_k, tid);
        __syncthreads();

        float s[RT][CT];
#pragma unroll
        for (int i = 0; i < RT; ++i)
#pragma unroll
            for (int j = 0; j < CT; ++j) s[i][j] = 0.f;
#pragma unroll 4
        for (int d = 0; d < D; d += 8) {
            uint4 qa[RT], ka[CT];
#pragma unroll
            for (int i = 0; i < RT; ++i) qa[i] = *reinterpret_cast<const uint4*>(sQ + (ty + 16 * i) * QK_PITCH + d);
#pragma unroll
            for (int j = 0; j < CT; ++j) ka[j] = *reinterpret_cast<const uint4*>(sK + (tx + 16 * j) * QK_PITCH + d);
#pragma unroll
            for (int i = 0; i < RT; ++i) {
                const uint32_t qw[4] = {qa[i].x, qa[i].y, qa[i].z, qa[i].w};
#pragma unroll
                for (int j = 0; j < CT; ++j) {
                    const uint32_t kw[4] = {ka[j].x, ka[j].y, ka[j].z, ka[j].w};
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        s[i][j] = fmaf(bf_lo(qw[e]), bf_lo(kw[e]), s[i][j]);
                        s[i][j] = fmaf(bf_hi(qw[e]), bf_hi(kw[e]), s[i][j]);
                    }
                }
            }
        }

        // online softmax on the 4x4 tile; a row's 16 owners are lanes tx = 0..15 of one half-warp
#pragma unroll
        for (int i = 0; i < RT; ++i) {
            const int row = q0 + ty + 16 * i;
            float mx = m[i];
#pragma unroll
            for (int j = 0; j < CT; ++j) {
                const int col = k0 + tx + 16 * j;
                if (col >= p.seqlen_k || (p.causal && col > row + offset)) s[i][j] = -INFINITY;
                mx = fmaxf(mx, s[i][j]);
            }
#pragma unroll
            for (int off = 8; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            // both products rounded alike (no FMA contraction), so an unchanged max gives alpha == 1 exactly
            const float ms = (mx == -INFINITY) ? 0.f : __fmul_rn(mx, p.scale_log2);  // fully masked row stays 0
            const float alpha = exp2f(__fmul_rn(m[i], p.scale_log2) - ms);
            m[i] = mx;
            l[i] *= alpha;
#pragma unroll
            for (int jj = 0; jj < OC; ++jj) { acc[i][jj][0] *= alpha; acc[i][jj][1] *= alpha; }
#pragma unroll
            for (int j = 0; j < CT; ++j) {
                const float pr = exp2f(fmaf(s[i][j], p.scale_log2, -ms));
                l[i] += pr;
                sP[(ty + 16 * i) * P_PITCH + tx + 16 * j] = pr;
            }
        }
        __syncthreads();

#pragma unroll 2
        for (int kk = 0; kk < BK; kk += 4) {
            float4 pr[RT];
#pragma unroll
            for (int i = 0; i < RT; ++i) pr[i] = *reinterpret_cast<const float4*>(sP + (ty + 16 * i) * P_PITCH + kk);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const uint32_t* vrow = reinterpret_cast<const uint32_t*>(sV + (kk + e) * D);
#pragma unroll
                for (int jj = 0; jj < OC; ++jj) {
                    const uint32_t w = vrow[tx + 16 * jj];
                    const float v0 = bf_lo(w), v1 = bf_hi(w);
#pragma unroll
                    for (int i = 0; i < RT; ++i) {
                        const float pe = e == 0 ? pr[i].x : e == 1 ? pr[i].y : e == 2 ? pr[i].z : pr[i].w;
                        acc[i][jj][0] = fmaf(pe, v0, acc[i][jj][0]);
                        acc[i][jj][1] = fmaf(pe, v1, acc[i][jj][1]);
                    }
                }
            }
        }
    }

#pragma unroll
    for (int i = 0; i < RT; ++i) {
        float lt = l[i];
#pragma unroll
        for (int off = 8; off > 0; off >>= 1) lt += __shfl_xor_sync(0xffffffffu, lt, off);
        const int row = q0 + ty + 16 * i;
        if (row >= p.seqlen_q) continue;
        const float inv = lt > 0.f ? 1.f / lt : 0.f;
        __nv_bfloat16* orow = p.o + (((int64_t)b * p.seqlen_q + row) * p.heads_q + h) * D;
#pragma unroll
        for (int jj = 0; jj < OC; ++jj)
            *reinterpret_cast<__nv_bfloat162*>(orow + 2 * tx + 32 * jj) =
                __floats2bfloat162_rn(acc[i][jj][0] * inv, acc[i][jj][1] * inv);
        if (tx == 0)
            p.lse[((int64_t)b * p.heads_q + h) * p.seqlen_q + row] = lt > 0.f ? m[i] * p.scale + logf(lt) : -INFINITY;
    }
}

template <int D>
int launch(const Params& p, cudaStream_t stream) {
    constexpr size_t smem = (size_t)(BQ + BK) * (D + 8) * 2 + (size_t)BK * D * 2 + (size_t)BQ * (BK + 4) * 4;
    static bool configured = false;
    if (!configured) {
        cudaError_t e =
            cudaFuncSetAttribute(attn_tiled_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
        configured = true;
    }
    const long long blocks = (long long)p.n_qtiles * p.batch * p.heads_q;
    if (blocks <= 0) return cudaSuccess;
    if (blocks > 0x7fffffffLL) return cudaErrorInvalidConfiguration;
    attn_tiled_kernel<D><<<(unsigned)blocks, THREADS, smem, stream>>>(p);
    return cudaGetLastError();
}

}  // namespace

extern "C" int attn_fwd(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                        __nv_bfloat16* o, float* lse,
                        int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim,
                        int causal, float softmax_scale, cudaStream_t stream) {
    if (batch < 0 || heads_q <= 0 || heads_kv <= 0 || heads_q % heads_kv != 0 || seqlen_q < 0 || seqlen_k < 0)
        return cudaErrorInvalidValue;
    if (!(softmax_scale > 0.f) || !isfinite(softmax_scale)) return cudaErrorInvalidValue;
    Params p{q, k, v, o, lse, batch, heads_q, heads_kv, seqlen_q, seqlen_k, heads_q / heads_kv, causal ? 1 : 0,
             (seqlen_q + BQ - 1) / BQ, softmax_scale, softmax_scale * 1.4426950408889634f};
    switch (head_dim) {
        case 64: return launch<64>(p, stream);
        case 128: return launch<128>(p, stream);
        case 256: return launch<256>(p, stream);
        default: return cudaErrorInvalidValue;
    }
}
