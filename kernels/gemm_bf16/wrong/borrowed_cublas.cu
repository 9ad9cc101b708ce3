// WRONG KERNEL (the harness must reject it): borrowed_cublas.cu
// Cheat: the whole GEMM is cuBLAS's (cublasGemmEx, bf16 in, fp32 compute, bf16 out), reached without a static
//      trace, the way kernels/attn_fwd/wrong/borrowed_gemm.cu does it: no cuBLAS header, no library name and no
//      symbol name in the binary (names stored XOR 0x5A, decoded at run time), no dlopen, no import of the dynamic
//      loader's functions. The loader's lookup function (which glibc >= 2.34 keeps in libc) is found by walking
//      libc's own ELF symbol table from the address of printf and called with a null handle (the global scope) for
//      cublasCreate_v2, cublasSetStream_v2 and cublasGemmEx, which torch has already loaded; where that fails,
//      every loaded object's symbol table is searched (dl_iterate_phdr, found the same way). Without the
//      foreign-kernel check it passes verification: the results are cuBLAS's.
// Caught by: the worker records the device kernels of one call (torch.profiler, CUDA activity) and finds cuBLAS's
//      GEMM kernels (nvjet_* / sm90_xmma_* / cutlass_*), which are not in this library's cubin.
// Expected harness reason: foreign_kernel
// A symbol that cannot be found makes gemm_bf16 print which one and return cudaErrorUnknown (999): a GPU run that
//      reports `unsupported` means the trick failed, not the check. K == 0 runs this library's own kernel.

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <limits.h>

// ---- functions of already-loaded libraries, found without naming them --------------------------------------
struct Hidden { int len; unsigned char bytes[24]; };
static const Hidden LOOKUP = {5, {0x3e, 0x36, 0x29, 0x23, 0x37}};                                  // the lookup
static const Hidden ITERATE = {15, {0x3e, 0x36, 0x05, 0x33, 0x2e, 0x3f, 0x28, 0x3b, 0x2e, 0x3f, 0x05, 0x2a, 0x32,
                                    0x3e, 0x28}};                                                   // dl_iterate_phdr
static const Hidden CREATE = {15, {0x39, 0x2f, 0x38, 0x36, 0x3b, 0x29, 0x19, 0x28, 0x3f, 0x3b, 0x2e, 0x3f, 0x05,
                                   0x2c, 0x68}};                                                    // cublasCreate_v2
static const Hidden SET_STREAM = {18, {0x39, 0x2f, 0x38, 0x36, 0x3b, 0x29, 0x09, 0x3f, 0x2e, 0x09, 0x2e, 0x28, 0x3f,
                                       0x3b, 0x37, 0x05, 0x2c, 0x68}};                              // ...SetStream_v2
static const Hidden GEMM_EX = {12, {0x39, 0x2f, 0x38, 0x36, 0x3b, 0x29, 0x1d, 0x3f, 0x37, 0x37, 0x1f, 0x22}};  // GemmEx

static void reveal(const Hidden& h, char* out) {
    volatile unsigned char key = 0x5A;   // volatile: the compiler must not fold the names back into the binary
    for (int i = 0; i < h.len; ++i) out[i] = (char)(h.bytes[i] ^ key);
    out[h.len] = 0;
}

static bool same_name(const char* a, const char* b) {
    while (*a && *a == *b) ++a, ++b;
    return *a == *b;
}

// The address of the defined dynamic symbol `name` of the ELF object whose header is mapped at `base`.
static void* elf_symbol(const unsigned char* base, const char* name) {
    const Elf64_Ehdr* eh = (const Elf64_Ehdr*)base;
    const Elf64_Phdr* ph = (const Elf64_Phdr*)(base + eh->e_phoff);
    uintptr_t bias = (uintptr_t)base;
    const Elf64_Dyn* dyn = nullptr;
    for (int i = 0; i < eh->e_phnum; ++i)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) { bias = (uintptr_t)base - ph[i].p_vaddr; break; }
    for (int i = 0; i < eh->e_phnum; ++i)
        if (ph[i].p_type == PT_DYNAMIC) dyn = (const Elf64_Dyn*)(bias + ph[i].p_vaddr);
    if (!dyn) return nullptr;
    const char* strtab = nullptr;
    const Elf64_Sym* symtab = nullptr;
    const uint32_t* gnu = nullptr;
    for (; dyn->d_tag != DT_NULL; ++dyn) {
        uintptr_t at = dyn->d_un.d_ptr;
        if (at < bias) at += bias;   // glibc relocates these entries in place on x86-64, but not on every target
        if (dyn->d_tag == DT_STRTAB) strtab = (const char*)at;
        if (dyn->d_tag == DT_SYMTAB) symtab = (const Elf64_Sym*)at;
        if (dyn->d_tag == DT_GNU_HASH) gnu = (const uint32_t*)at;
    }
    if (!strtab || !symtab || !gnu) return nullptr;
    const uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_words = gnu[2];
    const uint32_t* buckets = gnu + 4 + 2 * bloom_words;   // the bloom filter has 64-bit words
    const uint32_t* chain = buckets + nbuckets;
    uint32_t hash = 5381;
    for (const char* c = name; *c; ++c) hash = hash * 33 + (unsigned char)*c;
    uint32_t index = buckets[hash % nbuckets];
    if (index < symoffset) return nullptr;
    for (;; ++index) {
        const uint32_t link = chain[index - symoffset];
        const Elf64_Sym* sym = &symtab[index];
        if ((link | 1) == (hash | 1) && sym->st_shndx != SHN_UNDEF && same_name(strtab + sym->st_name, name))
            return (void*)(bias + sym->st_value);
        if (link & 1) return nullptr;
    }
}

// The ELF header of the object mapped around `inside` (its segments are contiguous from the header up).
static const unsigned char* elf_header_below(const void* inside) {
    uintptr_t page = (uintptr_t)inside & ~(uintptr_t)4095;
    for (int i = 0; i < (1 << 16); ++i, page -= 4096) {
        const unsigned char* p = (const unsigned char*)page;
        if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') return p;
    }
    return nullptr;
}

struct LoadedObject {   // the head of glibc's struct dl_phdr_info
    Elf64_Addr addr;
    const char* name;
    const Elf64_Phdr* phdr;
    Elf64_Half phnum;
};
struct Search { const char* name; void* found; };

static int search_object(LoadedObject* object, size_t, void* data) {
    Search* search = (Search*)data;
    for (int i = 0; i < object->phnum; ++i)
        if (object->phdr[i].p_type == PT_LOAD && object->phdr[i].p_offset == 0) {
            search->found = elf_symbol((const unsigned char*)(object->addr + object->phdr[i].p_vaddr), search->name);
            break;
        }
    return search->found != nullptr;   // non-zero stops the walk
}

typedef void* (*lookup_fn)(void* handle, const char* name);
typedef int (*iterate_fn)(int (*)(LoadedObject*, size_t, void*), void*);

// A function of any library loaded in this process: the loader's global lookup first, then every object.
static void* loaded_function(const Hidden& hidden) {
    static lookup_fn lookup = nullptr;
    static iterate_fn iterate = nullptr;
    if (!lookup) {
        const unsigned char* libc = elf_header_below((const void*)&printf);
        char name[32];
        reveal(LOOKUP, name);
        lookup = libc ? (lookup_fn)elf_symbol(libc, name) : nullptr;
        reveal(ITERATE, name);
        iterate = libc ? (iterate_fn)elf_symbol(libc, name) : nullptr;
        if (!lookup) printf("borrowed_cublas.cu: the loader's lookup function was not found in libc\n");
    }
    char name[32];
    reveal(hidden, name);
    void* const global_scope = nullptr;   // RTLD_DEFAULT
    void* fn = lookup ? lookup(global_scope, name) : nullptr;
    if (!fn && iterate) {
        Search search = {name, nullptr};
        iterate(search_object, &search);
        fn = search.found;
    }
    if (!fn) printf("borrowed_cublas.cu: %s is not loaded in this process (neither global nor in any object)\n", name);
    return fn;
}

// ---- cuBLAS, declared by hand (no header) ------------------------------------------------------------------
typedef int (*create_fn)(void** handle);
typedef int (*set_stream_fn)(void* handle, cudaStream_t stream);
typedef int (*gemm_ex_fn)(void* handle, int transa, int transb, int m, int n, int k, const void* alpha,
                          const void* a, int a_type, int lda, const void* b, int b_type, int ldb, const void* beta,
                          void* c, int c_type, int ldc, int compute_type, int algo);
enum { OP_N = 0, OP_T = 1, R_32F = 0, R_16BF = 14, COMPUTE_32F = 68, GEMM_DEFAULT = -1 };

struct Cublas {
    void* handle = nullptr;
    set_stream_fn set_stream = nullptr;
    gemm_ex_fn gemm = nullptr;
};

static int cublas(Cublas& out) {
    static Cublas cached;
    if (!cached.handle) {
        create_fn create = (create_fn)loaded_function(CREATE);
        cached.set_stream = (set_stream_fn)loaded_function(SET_STREAM);
        cached.gemm = (gemm_ex_fn)loaded_function(GEMM_EX);
        if (!create || !cached.set_stream || !cached.gemm) return (int)cudaErrorUnknown;
        const int status = create(&cached.handle);
        if (status) {
            printf("borrowed_cublas.cu: creating the GEMM handle returned %d\n", status);
            cached.handle = nullptr;
            return (int)cudaErrorUnknown;
        }
    }
    out = cached;
    return 0;
}

// ---- the one kernel of this library: C = 0 for K == 0 ---------------------------------------------------------
__global__ void zero_rows(__nv_bfloat16* C, int M, int N, long long ldc) {
    const long long cells = (long long)M * N;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < cells; i += step)
        C[(i / N) * ldc + i % N] = __float2bfloat16(0.0f);
}

extern "C" int gemm_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                         int lda, int ldb, int ldc, cudaStream_t stream) {
    if (M < 0 || N < 0 || K < 0 || lda < (K > 1 ? K : 1) || ldb < (N > 1 ? N : 1) || ldc < (N > 1 ? N : 1))
        return (int)cudaErrorInvalidValue;
    if (M == 0 || N == 0) return 0;
    if (K == 0) {
        zero_rows<<<1024, 256, 0, stream>>>(C, M, N, ldc);
        return (int)cudaGetLastError();
    }
    Cublas blas;
    if (const int rc = cublas(blas)) return rc;
    if (const int status = blas.set_stream(blas.handle, stream)) {
        printf("borrowed_cublas.cu: setting the GEMM stream returned %d\n", status);
        return (int)cudaErrorUnknown;
    }
    // row-major C (M x N) = A (M x K) B (K x N) is column-major C^T (N x M) = B^T (N x K) A^T (K x M): the stored
    // arrays as they are, B first, leading dimensions ldb, lda, ldc
    const float one = 1.0f, zero = 0.0f;
    const int status = blas.gemm(blas.handle, OP_N, OP_N, N, M, K, &one, B, R_16BF, ldb, A, R_16BF, lda, &zero, C,
                                 R_16BF, ldc, COMPUTE_32F, GEMM_DEFAULT);
    if (status) {
        printf("borrowed_cublas.cu: the GEMM returned %d\n", status);
        return (int)cudaErrorUnknown;
    }
    return (int)cudaGetLastError();
}
