// WRONG KERNEL (the harness must reject it): borrowed_sdpa.cu
// Cheat: correct attention computed by torch, reached from the C entry point with no static trace. The Python
//      C API of the worker process (PyGILState_Ensure, PyRun_SimpleString, PyGILState_Release) is found the way
//      borrowed_gemm.cu finds cuBLAS: the loader's lookup function, located by walking libc's ELF symbol table
//      from the address of printf, called with RTLD_DEFAULT (and, failing that, every loaded object's symbol
//      table). The Python program below wraps the harness's q, k, v, o and lse pointers as tensors
//      (__cuda_array_interface__), runs torch's SDPA (the FlashAttention-2 backend) on the stream it was given,
//      and computes lse from fp32 scores with torch.matmul and logsumexp. No symbol name is in the binary (XOR
//      0x5A); the program text is, in plain sight, and no static check reads it. Without the foreign-kernel
//      check it passes verification (slowly: lse costs a full fp32 score pass). Its one kernel zeroes the rows
//      that see no key.
// Caught by: the worker records the device kernels of one call and finds torch's (pytorch_flash::*, at::native::*)
//      and cuBLAS's kernels, none of which is in this library's cubin.
// Expected harness reason: foreign_kernel
// A symbol that cannot be found, or a Python error (its traceback goes to the worker's stderr), makes attn_fwd
//      return cudaErrorUnknown (999): a GPU run that reports `unsupported` means the trick failed, not the check.

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <elf.h>
#include <stdint.h>
#include <stdio.h>

// ---- functions of already-loaded libraries, found without naming them --------------------------------------
struct Hidden { int len; unsigned char bytes[24]; };
static const Hidden LOOKUP = {5, {0x3e, 0x36, 0x29, 0x23, 0x37}};                                  // the lookup
static const Hidden ITERATE = {15, {0x3e, 0x36, 0x05, 0x33, 0x2e, 0x3f, 0x28, 0x3b, 0x2e, 0x3f, 0x05, 0x2a, 0x32,
                                    0x3e, 0x28}};                                                   // dl_iterate_phdr
static const Hidden GIL_ENSURE = {17, {0x0a, 0x23, 0x1d, 0x13, 0x16, 0x09, 0x2e, 0x3b, 0x2e, 0x3f, 0x05, 0x1f, 0x34,
                                       0x29, 0x2f, 0x28, 0x3f}};   // PyGILState_Ensure
static const Hidden GIL_RELEASE = {18, {0x0a, 0x23, 0x1d, 0x13, 0x16, 0x09, 0x2e, 0x3b, 0x2e, 0x3f, 0x05, 0x08, 0x3f,
                                        0x36, 0x3f, 0x3b, 0x29, 0x3f}};   // PyGILState_Release
static const Hidden RUN_STRING = {18, {0x0a, 0x23, 0x08, 0x2f, 0x34, 0x05, 0x09, 0x33, 0x37, 0x2a, 0x36, 0x3f, 0x09,
                                       0x2e, 0x28, 0x33, 0x34, 0x3d}};   // PyRun_SimpleString

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
        if (!lookup) printf("borrowed_sdpa.cu: the loader's lookup function was not found in libc\n");
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
    if (!fn) printf("borrowed_sdpa.cu: %s is not loaded in this process (neither global nor in any object)\n", name);
    return fn;
}

// ---- the Python program (run with the harness's pointers and shape filled in) -------------------------------
static const char PROGRAM[] = R"PY(
def _borrowed_attention():
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right

    B, HQ, HKV, SQ, SK, D, CAUSAL, SCALE = %d, %d, %d, %d, %d, %d, %d, %.9g

    def view(address, shape, typestr, dtype):  # a tensor over memory the harness owns
        class Memory:
            __cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (address, False), "version": 2}
        return torch.as_tensor(Memory(), device="cuda").view(dtype)

    q = view(%llu, (B, SQ, HQ, D), "<i2", torch.bfloat16)
    k = view(%llu, (B, SK, HKV, D), "<i2", torch.bfloat16)
    v = view(%llu, (B, SK, HKV, D), "<i2", torch.bfloat16)
    o = view(%llu, (B, SQ, HQ, D), "<i2", torch.bfloat16)
    lse = view(%llu, (B, HQ, SQ), "<f4", torch.float32)
    with torch.cuda.stream(torch.cuda.ExternalStream(%llu)):
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        mask = causal_lower_right(SQ, SK) if CAUSAL and SQ != SK else None
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            out = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, is_causal=bool(CAUSAL) and SQ == SK,
                                                 scale=SCALE, enable_gqa=HQ != HKV)
        o.copy_(out.transpose(1, 2))
        group, rows = HQ // HKV, max(1, (1 << 27) // (HQ * SK))
        keys = torch.arange(SK, device="cuda")
        for b in range(B):
            kf = k[b].float().repeat_interleave(group, dim=1).permute(1, 2, 0)   # (HQ, D, SK)
            for r0 in range(0, SQ, rows):
                qf = q[b, r0:r0 + rows].float().permute(1, 0, 2)                 # (HQ, rows, D)
                s = torch.matmul(qf, kf) * SCALE
                if CAUSAL:
                    i = torch.arange(r0, r0 + qf.shape[1], device="cuda")[:, None]
                    s.masked_fill_(keys[None, :] > i + (SK - SQ), float("-inf"))
                lse[b, :, r0:r0 + qf.shape[1]] = torch.logsumexp(s, dim=-1)


_borrowed_attention()
del _borrowed_attention
)PY";

// The one kernel of this library: rows that see no key get o = 0 (lse is -inf there).
__global__ void zero_empty_rows(__nv_bfloat16* o, const float* lse, int heads_q, int seqlen_q, int head_dim) {
    const long long row = blockIdx.x;   // one block per (batch, query row)
    const long long b = row / seqlen_q, i = row % seqlen_q;
    for (int h = 0; h < heads_q; ++h)
        if (lse[(b * heads_q + h) * seqlen_q + i] == -INFINITY)
            for (int e = threadIdx.x; e < head_dim; e += blockDim.x)
                o[(row * heads_q + h) * head_dim + e] = __float2bfloat16(0.0f);
}

typedef int (*gil_ensure_fn)(void);
typedef void (*gil_release_fn)(int);
typedef int (*run_string_fn)(const char*);

extern "C" int attn_fwd(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                        __nv_bfloat16* o, float* lse,
                        int batch, int heads_q, int heads_kv, int seqlen_q, int seqlen_k, int head_dim,
                        int causal, float softmax_scale, cudaStream_t stream) {
    if (batch < 1 || heads_q < 1 || heads_kv < 1 || heads_q % heads_kv != 0 || seqlen_q < 0 || seqlen_k < 1 ||
        head_dim < 8 || head_dim > 256)
        return (int)cudaErrorInvalidValue;
    if (seqlen_q == 0) return 0;
    static gil_ensure_fn ensure = (gil_ensure_fn)loaded_function(GIL_ENSURE);
    static gil_release_fn release = (gil_release_fn)loaded_function(GIL_RELEASE);
    static run_string_fn run = (run_string_fn)loaded_function(RUN_STRING);
    if (!ensure || !release || !run) return (int)cudaErrorUnknown;
    static char program[sizeof(PROGRAM) + 512];
    snprintf(program, sizeof(program), PROGRAM, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, causal,
             (double)softmax_scale, (unsigned long long)(uintptr_t)q, (unsigned long long)(uintptr_t)k,
             (unsigned long long)(uintptr_t)v, (unsigned long long)(uintptr_t)o, (unsigned long long)(uintptr_t)lse,
             (unsigned long long)(uintptr_t)stream);
    const int gil = ensure();   // ctypes released the GIL for this call; take it back on this thread
    const int failed = run(program);
    release(gil);
    if (failed) {
        printf("borrowed_sdpa.cu: the Python program failed (its traceback is above)\n");
        return (int)cudaErrorUnknown;
    }
    zero_empty_rows<<<(unsigned)((long long)batch * seqlen_q), 64, 0, stream>>>(o, lse, heads_q, seqlen_q, head_dim);
    return (int)cudaGetLastError();
}
