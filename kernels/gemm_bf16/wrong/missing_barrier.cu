// WRONG KERNEL (the harness must reject it): missing_barrier.cu
// Bug: a producer/consumer block (8 compute warps, 1 loader warp) over shared-memory A/B tiles; the __syncthreads()
//      between the loader storing tile t and the compute warps reading it is missing. The loader backs off before
//      each store (at least LOADER_BACKOFF_CYCLES of the SM's clock, as a producer waiting for its copy does; a spin
//      on clock64(), since __nanosleep alone may sleep anywhere in [0, 2t]), and nothing makes the compute warps wait
//      for it: every compute warp reads a tile before its contents arrive, on every GPU. The tiles are cleared
//      first and the barrier that ends each step is still there, so what they read is certain: step t computes
//      with step t - 1's tile (step 0 with zeros), and C = A . B less its last K tile.
// Caught by: every scenario with K > 0: C is far from the fp32 reference on the first seed (dev's first, R_1000).
//      The CPU stand-in `missing_barrier` (kernels/gemm_bf16/standins.py) computes exactly this C.
// Expected harness reason: mismatch (nondeterministic where a store lands early on some GPU)
// Derived from kernels/gemm_bf16/original.cu (64 x 64 tiles, BK 16, 4 x 4 outputs per thread).

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#define COMPUTE_THREADS ((BM / TM) * (BN / TN))   // 256: 8 warps, 4 x 4 outputs each
#define THREADS (COMPUTE_THREADS + 32)            // + the loader warp
#define LOADER_BACKOFF_CYCLES 40000LL            // ~20 us at 2 GHz per tile, then the loads: >> a step

__global__ void __launch_bounds__(THREADS)
gemm_producer_consumer(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                       __nv_bfloat16* __restrict__ C, int M, int N, int K, long long lda, long long ldb,
                       long long ldc) {
    __shared__ float As[BK][BM];   // As[k][m]: A tile transposed
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const bool loader = tid >= COMPUTE_THREADS;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    for (int e = tid; e < BK * BM; e += THREADS) (&As[0][0])[e] = 0.0f;   // cleared: what a step reads is known
    for (int e = tid; e < BK * BN; e += THREADS) (&Bs[0][0])[e] = 0.0f;
    __syncthreads();

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        if (loader) {
            const int lane = tid - COMPUTE_THREADS;
            const long long until = clock64() + LOADER_BACKOFF_CYCLES;
            while (clock64() < until) __nanosleep(1000);     // a floor on the back-off, whatever the sleep does
            for (int e = lane; e < BM * BK; e += 32) {
                const int r = e / BK, c = e % BK;
                As[c][r] = (m0 + r < M && k0 + c < K) ? __bfloat162float(A[(long long)(m0 + r) * lda + k0 + c]) : 0.0f;
            }
            for (int e = lane; e < BK * BN; e += 32) {
                const int r = e / BN, c = e % BN;
                Bs[r][c] = (k0 + r < K && n0 + c < N) ? __bfloat162float(B[(long long)(k0 + r) * ldb + n0 + c]) : 0.0f;
            }
        }
        // BUG: a __syncthreads() belongs here: the tile must be stored before any warp reads it
        if (!loader) {
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) {
                float a[TM], b[TN];
#pragma unroll
                for (int i = 0; i < TM; ++i) a[i] = As[kk][ty * TM + i];
#pragma unroll
                for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx * TN + j];
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
        }
        __syncthreads();   // every warp is done with this step before the loader stores the next tile
    }

    if (loader) return;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int gm = m0 + ty * TM + i;
        if (gm >= M) continue;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int gn = n0 + tx * TN + j;
            if (gn < N) C[(long long)gm * ldc + gn] = __float2bfloat16(acc[i][j]);
        }
    }
}

extern "C" int gemm_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                         int lda, int ldb, int ldc, cudaStream_t stream) {
    if (M < 0 || N < 0 || K < 0 || lda < (K > 1 ? K : 1) || ldb < (N > 1 ? N : 1) || ldc < (N > 1 ? N : 1))
        return (int)cudaErrorInvalidValue;
    if (M == 0 || N == 0) return 0;
    if (!C || (K > 0 && (!A || !B))) return (int)cudaErrorInvalidValue;
    const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    if (grid.y > 65535) return (int)cudaErrorInvalidValue;
    gemm_producer_consumer<<<grid, THREADS, 0, stream>>>(A, B, C, M, N, K, lda, ldb, ldc);
    return (int)cudaGetLastError();
}
