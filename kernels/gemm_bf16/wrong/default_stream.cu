// WRONG KERNEL (the harness must reject it): default_stream.cu
// Bug: the launch forgets the stream argument: the work goes to the legacy default stream, which is not ordered
//      with the caller's non-blocking stream, so the caller can read C before it is written.
// Caught by: a copy of C taken on the given stream right after the call differs from C after a device-wide sync.
// Expected harness reason: stream (mismatch or unwritten where the copy lands after the kernel by chance)
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
            Bs[r][c] = (gk < K && gn < N) ? __bfloat162float(B[(long long)gk * ldb + gn]) : 0.0f;
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
    (void)stream;
    gemm_tiled<<<grid, THREADS>>>(A, B, C, M, N, K, lda, ldb, ldc);   // BUG: no stream
    return (int)cudaGetLastError();
}
