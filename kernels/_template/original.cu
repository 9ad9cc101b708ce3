// original.cu: the NEWPROB problem's starting point and the baseline every speedup is measured against.
// y[i] = 2 * x[i] on bf16 vectors (README.md beside this is the contract). Fill in the kernel below, then remove
// the #error line: `workbench check kernels/NEWPROB/original.cu` builds it (CPU: the static checks; GPU: verified
// against judge.py's fp32 reference and timed).

#include <cuda_runtime.h>
#include <cuda_bf16.h>

#error "fill in original.cu (the kernel and its launch), then delete this line"

__global__ void NEWPROB_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int n) {
    // FILL IN: one element per thread, e.g.
    //   const int i = blockIdx.x * blockDim.x + threadIdx.x;
    //   if (i < n) y[i] = __float2bfloat16(2.0f * __bfloat162float(x[i]));
}

extern "C" int NEWPROB(const __nv_bfloat16* x, __nv_bfloat16* y, int n, cudaStream_t stream) {
    if (n < 0 || (n > 0 && (!x || !y))) return (int)cudaErrorInvalidValue;
    if (n == 0) return 0;
    const int threads = 256;
    NEWPROB_kernel<<<(n + threads - 1) / threads, threads, 0, stream>>>(x, y, n);   // work on `stream` only
    return (int)cudaGetLastError();
}
