// original.cu: the bf16 GEMM's starting point and the baseline every speedup is measured against.
// C = A . B (README.md beside this is the contract): bf16 in, fp32 FMA on CUDA cores, bf16 out; row-major with
// any strides, any M, N, K >= 0. No tensor cores, no asynchronous copies: a textbook shared-memory tiling.
//
// Design
//   * One block of 256 threads computes a BM x BN (64 x 64) tile of C. Each thread owns a TM x TN (4 x 4)
//     patch: rows ty*TM .. ty*TM+3, columns tx*TN .. tx*TN+3 of the tile (ty = tid / 16, tx = tid % 16).
//   * The K loop walks BK = 16 columns of A and rows of B at a time: the block copies the A tile (64 x 16) and
//     the B tile (16 x 64) into shared memory as fp32 (A transposed, so both are read along rows), waits,
//     and every thread does BK x TM x TN FMAs from registers. Elements outside the matrices load as 0, so
//     tails in M, N and K need no other case; K == 0 leaves the accumulators 0 and C is written with zeros.
//   * Index arithmetic in 64 bits (M * ldc can pass 2^31). Strides are arbitrary: loads and stores are scalar.
//
// Why it is slow (what the ladder changes): fp32 FMA on CUDA cores peaks near 67 TFLOP/s on an H200 against
// ~790 for bf16 tensor cores; every element goes through a bf16 -> fp32 conversion and a shared-memory
// store per block that uses it; loads are not overlapped with the FMAs (one barrier-separated phase each).
// Estimate (not yet measured): 5-15 TFLOP/s on large shapes.
//
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC -Xptxas -v
//        -o original.so original.cu

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

// Knobs (the offline agent's and the evolution's search space; every listed value builds,
// tests/test_gemm_bf16_files.py):
#define BM 64      // @knob BM 64 {32,64,128}      layer=parallelism  (rows of C per block)
#define BN 64      // @knob BN 64 {32,64,128}      layer=parallelism  (columns of C per block)
#define BK 16      // @knob BK 16 {8,16,32}        layer=pipelining   (K per shared-memory step)
#define TM 4
#define TN 4
#define THREADS ((BM / TM) * (BN / TN))   // 256 at the defaults (64 to 1024 over the knobs)

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
    gemm_tiled<<<grid, THREADS, 0, stream>>>(A, B, C, M, N, K, lda, ldb, ldc);
    return (int)cudaGetLastError();
}
