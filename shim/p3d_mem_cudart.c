/*
 * p3d_mem_cudart.c - interposed CUDA runtime allocation calls.
 *
 * PyTorch's caching allocator and its cudaMallocAsync backend call the
 * dynamic libcudart.so.13, so these definitions in the preloaded shim see
 * them.  Each wrapper calls the real function first and passes its result
 * through unchanged; only a successful call is counted (p3d_mem.c).
 * Frees are uncounted before the real free, so a pointer reused at once by
 * another thread cannot meet its own stale entry.  The _ptsz variants are
 * what code built with per-thread default streams calls.
 */
#include <cuda_runtime_api.h>

#include "p3d_mem.h"
#include "p3d_mem_wrap.h"
#include "p3d_shim.h"

typedef cudaError_t (*p3d_malloc_fn)(void **, size_t);
typedef cudaError_t (*p3d_free_fn)(void *);
typedef cudaError_t (*p3d_malloc_async_fn)(void **, size_t, cudaStream_t);
typedef cudaError_t (*p3d_free_async_fn)(void *, cudaStream_t);
typedef cudaError_t (*p3d_malloc_pool_fn)(void **, size_t, cudaMemPool_t,
                                          cudaStream_t);
typedef cudaError_t (*p3d_malloc_flags_fn)(void **, size_t, unsigned int);

cudaError_t cudaMallocAsync_ptsz(void **p, size_t size, cudaStream_t s);
cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **p, size_t size,
                                         cudaMemPool_t pool, cudaStream_t s);

static P3D_TLS int mem_depth;

/* Device current on this thread, for attributing an allocation. */
static int mem_device(void)
{
    static void *slot;
    cudaError_t (*fn)(int *) = p3d_resolve_cached(&slot, "cudaGetDevice",
                                                   NULL);
    int dev = 0;

    if (!fn || fn(&dev) != cudaSuccess)
        return 0;
    return dev;
}

int p3d_mem_wrap_enter(void)
{
    return mem_depth++ == 0;
}

void p3d_mem_wrap_leave(void)
{
    mem_depth--;
}

/* Count a successful allocation made by an outermost wrapper (in line:
 * a call per allocation costs more than its checks). */
static inline __attribute__((always_inline)) void
mem_alloc_done(cudaError_t ret, void **p, size_t size, int cls,
                           int outer)
{
    int dev;

    if (ret != cudaSuccess || !outer || !p || !*p || !p3d_core_enabled())
        return;
    dev = cls == P3D_MC_HOST ? 0 : mem_device();
    if (cls == P3D_MC_ASYNC)
        p3d_mem_pool_note(dev);
    p3d_mem_track((uint64_t)(uintptr_t)*p, size, cls, dev);
    p3d_gpu_mem_seen();
}

/* Uncount before a free; undo if the free failed. */
static uint64_t mem_free_begin(void *p, int outer, int *cls, int *dev)
{
    if (!p || !outer || !p3d_core_enabled())
        return 0;               /* disabled: nothing was counted */
    return p3d_mem_untrack((uint64_t)(uintptr_t)p, cls, dev);
}

static void mem_free_end(cudaError_t ret, void *p, uint64_t bytes, int cls,
                         int dev)
{
    if (ret != cudaSuccess && bytes)
        p3d_mem_track((uint64_t)(uintptr_t)p, bytes, cls, dev);
}

#define P3D_MEM_ALLOC(fn_t, name, cls, call, ...)                             \
    static void *slot;                                                        \
    fn_t real = (fn_t)p3d_resolve_cached(&slot, name, NULL);                  \
    int outer;                                                                \
    cudaError_t ret;                                                          \
    if (!real)                                                                \
        return cudaErrorInitializationError;                                  \
    outer = p3d_mem_wrap_enter();                                             \
    ret = real call;                                                          \
    p3d_mem_wrap_leave();                                                     \
    mem_alloc_done(ret, __VA_ARGS__, cls, outer);                             \
    return ret

#define P3D_MEM_FREE(fn_t, name, p, call)                                     \
    static void *slot;                                                        \
    fn_t real = (fn_t)p3d_resolve_cached(&slot, name, NULL);                  \
    int outer, cls = 0, dev = 0;                                              \
    uint64_t bytes;                                                           \
    cudaError_t ret;                                                          \
    if (!real)                                                                \
        return cudaErrorInitializationError;                                  \
    outer = p3d_mem_wrap_enter();                                             \
    bytes = mem_free_begin(p, outer, &cls, &dev);                             \
    ret = real call;                                                          \
    p3d_mem_wrap_leave();                                                     \
    mem_free_end(ret, p, bytes, cls, dev);                                    \
    return ret

P3D_EXPORT cudaError_t cudaMalloc(void **p, size_t size)
{
    P3D_MEM_ALLOC(p3d_malloc_fn, "cudaMalloc", P3D_MC_DEVICE, (p, size), p,
                  size);
}

P3D_EXPORT cudaError_t cudaFree(void *p)
{
    P3D_MEM_FREE(p3d_free_fn, "cudaFree", p, (p));
}

P3D_EXPORT cudaError_t cudaMallocManaged(void **p, size_t size,
                                         unsigned int flags)
{
    P3D_MEM_ALLOC(p3d_malloc_flags_fn, "cudaMallocManaged", P3D_MC_MANAGED,
                  (p, size, flags), p, size);
}

P3D_EXPORT cudaError_t cudaMallocHost(void **p, size_t size)
{
    P3D_MEM_ALLOC(p3d_malloc_fn, "cudaMallocHost", P3D_MC_HOST, (p, size),
                  p, size);
}

P3D_EXPORT cudaError_t cudaHostAlloc(void **p, size_t size,
                                     unsigned int flags)
{
    P3D_MEM_ALLOC(p3d_malloc_flags_fn, "cudaHostAlloc", P3D_MC_HOST,
                  (p, size, flags), p, size);
}

P3D_EXPORT cudaError_t cudaFreeHost(void *p)
{
    P3D_MEM_FREE(p3d_free_fn, "cudaFreeHost", p, (p));
}

P3D_EXPORT cudaError_t cudaMallocAsync(void **p, size_t size,
                                       cudaStream_t s)
{
    P3D_MEM_ALLOC(p3d_malloc_async_fn, "cudaMallocAsync", P3D_MC_ASYNC,
                  (p, size, s), p, size);
}

P3D_EXPORT cudaError_t cudaMallocAsync_ptsz(void **p, size_t size,
                                            cudaStream_t s)
{
    P3D_MEM_ALLOC(p3d_malloc_async_fn, "cudaMallocAsync_ptsz", P3D_MC_ASYNC,
                  (p, size, s), p, size);
}

P3D_EXPORT cudaError_t cudaMallocFromPoolAsync(void **p, size_t size,
                                               cudaMemPool_t pool,
                                               cudaStream_t s)
{
    P3D_MEM_ALLOC(p3d_malloc_pool_fn, "cudaMallocFromPoolAsync",
                  P3D_MC_ASYNC, (p, size, pool, s), p, size);
}

P3D_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **p, size_t size,
                                                    cudaMemPool_t pool,
                                                    cudaStream_t s)
{
    P3D_MEM_ALLOC(p3d_malloc_pool_fn, "cudaMallocFromPoolAsync_ptsz",
                  P3D_MC_ASYNC, (p, size, pool, s), p, size);
}

P3D_EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    P3D_MEM_FREE(p3d_free_async_fn, "cudaFreeAsync", p, (p, s));
}

P3D_EXPORT cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s)
{
    P3D_MEM_FREE(p3d_free_async_fn, "cudaFreeAsync_ptsz", p, (p, s));
}
