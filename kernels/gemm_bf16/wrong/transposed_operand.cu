// WRONG KERNEL (the harness must reject it): transposed_operand.cu
// Bug: reads B as if it were stored N x K (B[n * ldb + k], the layout scripts/wgmma_gemm_bench.cu uses), so it
//      computes A . B^T on square shapes and garbage elsewhere; reads are kept inside B's buffer (no crash).
// Caught by: the fp32 reference (dev's first, R_1000, is square); padded strides can also bring in B's NaN padding.
// Expected harness reason: mismatch (nonfinite where a read lands in the padding)
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

__global__ void __launch_bounds__(THREADS)
gemm_tiled(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, __nv_bfloat16* __restrict__ C,
           int M, int N, int K, long long lda, long long ldb, long long ldc) {
    __shared__ float As[BK][BM];   // As[k][m]: A tile transposed
    __shared__ float Bs[BK][BN];
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const long long b_extent = (long long)(K - 1) * ldb + N;   // elements of B's buffer

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // A tile: 64 rows x 16 columns; consecutive threads read consecutive k of one row
#pragma unroll
        for (int i = 0; i < BM * BK / THREADS; ++i) {
            const int e = tid + i * THREADS, r = e / BK, c = e % BK;
            const int gm = m0 + r, gk = k0 + c;
            As[c][r] = (gm < M && gk < K) ? __bfloat162float(A[(long long)gm * lda + gk]) : 0.0f;
        }
        // B tile: 16 rows x 64 columns; consecutive threads read consecutive n of one row
#pragma unroll
        for (int i = 0; i < BK * BN / THREADS; ++i) {
            const int e = tid + i * THREADS, r = e / BN, c = e % BN;
            const int gk = k0 + r, gn = n0 + c;
            const long long at = (long long)gn * ldb + gk;   // BUG: B taken as N x K
            Bs[r][c] = (gk < K && gn < N && at < b_extent) ? __bfloat162float(B[at]) : 0.0f;
        }
        __syncthreads();
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
        __syncthreads();   // the next iteration overwrites the tiles
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
    if (grid.y > 65535) return (int)cudaErrorInvalidValue;   // M > 4,194,240: more rows than one grid column
    gemm_tiled<<<grid, THREADS, 0, stream>>>(A, B, C, M, N, K, lda, ldb, ldc);
    return (int)cudaGetLastError();
}
