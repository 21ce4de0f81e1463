/*
 * p3d_mem_entry.c - the runtime's driver entry-point getters.
 *
 * PyTorch's expandable segments get cuMemCreate/cuMemMap/... from
 * cudaGetDriverEntryPointByVersion (older builds: cudaGetDriverEntryPoint)
 * and call them through pointers, so interposing the cu* symbols alone
 * sees nothing.  These wrappers call the real getter and, for the memory
 * functions the shim counts, hand back the shim's wrapper instead
 * (p3d_mem_driver_redirect remembers the real pointer).
 */
#include <cuda_runtime_api.h>

#include "p3d_mem_wrap.h"
#include "p3d_shim.h"

#undef cudaGetDriverEntryPoint
#undef cudaGetDriverEntryPointByVersion

typedef cudaError_t (*p3d_gdep_fn)(const char *, void **, unsigned long long,
                                   enum cudaDriverEntryPointQueryResult *);
typedef cudaError_t (*p3d_gdepv_fn)(const char *, void **, unsigned int,
                                    unsigned long long,
                                    enum cudaDriverEntryPointQueryResult *);

cudaError_t cudaGetDriverEntryPoint_ptsz(
    const char *symbol, void **fn, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *st);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **fn, unsigned int version,
    unsigned long long flags, enum cudaDriverEntryPointQueryResult *st);

static void entry_redirect(cudaError_t ret, const char *symbol, void **fn,
                           int version)
{
    void *w;

    if (ret != cudaSuccess || !symbol || !fn || !*fn)
        return;
    w = p3d_mem_driver_redirect(symbol, *fn, version);
    if (w)
        *fn = w;
}

static cudaError_t entry_get(const char *name, void **slot,
                             const char *symbol, void **fn,
                             unsigned long long flags,
                             enum cudaDriverEntryPointQueryResult *st)
{
    p3d_gdep_fn real = (p3d_gdep_fn)p3d_resolve_cached(slot, name, NULL);
    cudaError_t ret;

    if (!real)
        return cudaErrorInitializationError;
    ret = real(symbol, fn, flags, st);
    entry_redirect(ret, symbol, fn, 0);
    return ret;
}

static cudaError_t entry_get_v(const char *name, void **slot,
                               const char *symbol, void **fn,
                               unsigned int version,
                               unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *st)
{
    p3d_gdepv_fn real = (p3d_gdepv_fn)p3d_resolve_cached(slot, name, NULL);
    cudaError_t ret;

    if (!real)
        return cudaErrorInitializationError;
    ret = real(symbol, fn, version, flags, st);
    entry_redirect(ret, symbol, fn, (int)version);
    return ret;
}

P3D_EXPORT cudaError_t cudaGetDriverEntryPoint(
    const char *symbol, void **fn, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *st)
{
    static void *slot;

    return entry_get("cudaGetDriverEntryPoint", &slot, symbol, fn, flags,
                     st);
}

P3D_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(
    const char *symbol, void **fn, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *st)
{
    static void *slot;

    return entry_get("cudaGetDriverEntryPoint_ptsz", &slot, symbol, fn,
                     flags, st);
}

P3D_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
    const char *symbol, void **fn, unsigned int version,
    unsigned long long flags, enum cudaDriverEntryPointQueryResult *st)
{
    static void *slot;

    return entry_get_v("cudaGetDriverEntryPointByVersion", &slot, symbol, fn,
                       version, flags, st);
}

P3D_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **fn, unsigned int version,
    unsigned long long flags, enum cudaDriverEntryPointQueryResult *st)
{
    static void *slot;

    return entry_get_v("cudaGetDriverEntryPointByVersion_ptsz", &slot,
                       symbol, fn, version, flags, st);
}
