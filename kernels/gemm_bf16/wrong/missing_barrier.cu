// WRONG KERNEL (the harness must reject it): missing_barrier.cu
// Bug: shared-memory A/B tiles with a register prefetch of the next tile (its global loads fly during the FMAs);
//      the __syncthreads() between consuming a tile and storing the next over it is missing, so a warp that
//      finishes its FMAs early overwrites elements that slower warps of the block still read.
// Caught by: how often and where it bites depends on warp timing: the same inputs twice give different bits
//      (or, when many elements are hit, C is off the fp32 reference).
// Expected harness reason: nondeterministic or mismatch
// Derived from kernels/gemm_bf16/original.cu (64 x 64 tiles, BK 16, 4 x 4 outputs per thread).

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4
#define THREADS ((BM / TM) * (BN / TN))   // 256
#define PER_THREAD (BM * BK / THREADS)    // 4 elements of each tile per thread

__global__ void __launch_bounds__(THREADS, 1)
gemm_prefetch(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, __nv_bfloat16* __restrict__ C,
              int M, int N, int K, long long lda, long long ldb, long long ldc) {
    __shared__ float As[BK][BM];   // As[k][m]: A tile transposed
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float ra[PER_THREAD], rb[PER_THREAD];   // this thread's share of the next tile

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

#define FETCH(k0)                                                                                          \
    _Pragma("unroll") for (int i = 0; i < PER_THREAD; ++i) {                                               \
        const int e = tid + i * THREADS;                                                                   \
        const int ar = e / BK, ac = e % BK, br = e / BN, bc = e % BN;                                      \
        ra[i] = (m0 + ar < M && (k0) + ac < K) ? __bfloat162float(A[(long long)(m0 + ar) * lda + (k0) + ac]) \
                                               : 0.0f;                                                     \
        rb[i] = ((k0) + br < K && n0 + bc < N) ? __bfloat162float(B[(long long)((k0) + br) * ldb + n0 + bc]) \
                                               : 0.0f;                                                     \
    }
#define STASH()                                                          \
    _Pragma("unroll") for (int i = 0; i < PER_THREAD; ++i) {             \
        const int e = tid + i * THREADS;                                 \
        As[e % BK][e / BK] = ra[i];                                      \
        Bs[e / BN][e % BN] = rb[i];                                      \
    }

    if (K > 0) {
        FETCH(0)
        STASH()
    }
    __syncthreads();
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) {
            FETCH(k0 + BK)
        }
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
        // BUG: a __syncthreads() belongs here: every warp must be done reading the tile before it is overwritten
        if (more) {
            STASH()
        }
        __syncthreads();
    }

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
    gemm_prefetch<<<grid, THREADS, 0, stream>>>(A, B, C, M, N, K, lda, ldb, ldc);
    return (int)cudaGetLastError();
}
