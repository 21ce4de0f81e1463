/*
 * p3d_mem_driver.c - interposed CUDA driver allocation calls.
 *
 * cuMemAlloc/cuMemFree count like cudaMalloc.  The virtual-memory API
 * (PyTorch's expandable segments) counts physical memory while it is
 * mapped: cuMemCreate remembers a handle's size and device, cuMemMap of
 * such a handle counts the mapped bytes, cuMemUnmap uncounts them,
 * cuMemRelease forgets the handle.  PyTorch obtains these functions from
 * cudaGetDriverEntryPoint*, so p3d_mem_entry.c hands out the wrappers
 * below through p3d_mem_driver_redirect; each wrapper calls the real
 * function remembered there, or resolved by name when linked directly.
 */
#include <string.h>

#include <cuda.h>

#include "p3d_mem.h"
#include "p3d_mem_wrap.h"
#include "p3d_shim.h"

#undef cuGetProcAddress

typedef CUresult (*p3d_cu_alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*p3d_cu_free_fn)(CUdeviceptr);
typedef CUresult (*p3d_cu_create_fn)(CUmemGenericAllocationHandle *, size_t,
                                     const CUmemAllocationProp *,
                                     unsigned long long);
typedef CUresult (*p3d_cu_release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*p3d_cu_map_fn)(CUdeviceptr, size_t, size_t,
                                  CUmemGenericAllocationHandle,
                                  unsigned long long);
typedef CUresult (*p3d_cu_unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*p3d_cu_gpa2_fn)(const char *, void **, int, cuuint64_t,
                                   CUdriverProcAddressQueryResult *);
typedef CUresult (*p3d_cu_gpa1_fn)(const char *, void **, int, cuuint64_t);

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
                          cuuint64_t flags);

static void *real_alloc, *real_free, *real_create, *real_release;
static void *real_map, *real_unmap, *real_gpa2, *real_gpa1;

static void *drv_real(void **slot, const char *name)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

    return p ? p : p3d_resolve_cached(slot, name, NULL);
}

static int drv_device(void)
{
    static void *slot;
    CUresult (*fn)(CUdevice *) = drv_real(&slot, "cuCtxGetDevice");
    CUdevice dev = 0;

    if (!fn || fn(&dev) != CUDA_SUCCESS)
        return 0;
    return dev;
}

P3D_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
    p3d_cu_alloc_fn real = drv_real(&real_alloc, "cuMemAlloc_v2");
    int outer;
    CUresult ret;

    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    outer = p3d_mem_wrap_enter();
    ret = real(dptr, bytes);
    p3d_mem_wrap_leave();
    if (ret == CUDA_SUCCESS && outer && dptr && *dptr &&
        p3d_core_enabled()) {
        p3d_mem_track(*dptr, bytes, P3D_MC_DEVICE, drv_device());
        p3d_gpu_mem_seen();
    }
    return ret;
}

P3D_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    p3d_cu_free_fn real = drv_real(&real_free, "cuMemFree_v2");
    int outer, cls = 0, dev = 0;
    uint64_t bytes = 0;
    CUresult ret;

    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    outer = p3d_mem_wrap_enter();
    if (outer && dptr)
        bytes = p3d_mem_untrack(dptr, &cls, &dev);
    ret = real(dptr);
    p3d_mem_wrap_leave();
    if (ret != CUDA_SUCCESS && bytes)
        p3d_mem_track(dptr, bytes, cls, dev);
    return ret;
}

P3D_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle,
                                size_t size, const CUmemAllocationProp *prop,
                                unsigned long long flags)
{
    p3d_cu_create_fn real = drv_real(&real_create, "cuMemCreate");
    CUresult ret;
    int dev = 0;

    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    ret = real(handle, size, prop, flags);
    if (ret != CUDA_SUCCESS || !handle || !p3d_core_enabled())
        return ret;
    if (prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        dev = prop->location.id;
    else
        return ret;     /* host/NUMA backed: not device memory */
    p3d_mem_track(P3D_MEM_HANDLE_TAG | (uint64_t)*handle, size,
                  P3D_MC_HANDLE, dev);
    return ret;
}

P3D_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    p3d_cu_release_fn real = drv_real(&real_release, "cuMemRelease");
    CUresult ret;
    int cls, dev;

    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    ret = real(handle);
    if (ret == CUDA_SUCCESS)
        p3d_mem_untrack(P3D_MEM_HANDLE_TAG | (uint64_t)handle, &cls, &dev);
    return ret;
}

P3D_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle handle,
                             unsigned long long flags)
{
    p3d_cu_map_fn real = drv_real(&real_map, "cuMemMap");
    uint64_t hbytes;
    CUresult ret;
    int cls, dev;

    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    ret = real(ptr, size, offset, handle, flags);
    if (ret == CUDA_SUCCESS &&
        p3d_mem_lookup(P3D_MEM_HANDLE_TAG | (uint64_t)handle, &hbytes, &cls,
                       &dev)) {
        p3d_mem_track(ptr, size, P3D_MC_DEVICE, dev);
        p3d_gpu_mem_seen();
    }
    return ret;
}

P3D_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    p3d_cu_unmap_fn real = drv_real(&real_unmap, "cuMemUnmap");
    size_t off = 0;
    int cls, dev;

    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    /* One unmap may cover several mappings; each is a table entry. */
    while (off < size) {
        uint64_t b = p3d_mem_untrack(ptr + off, &cls, &dev);

        if (!b)
            break;
        off += b;
    }
    return real(ptr, size);
}

/* Hand out a wrapper for what the real getter found. */
static void drv_redirect(const char *symbol, void **pfn, int version,
                         CUresult ret)
{
    void *w;

    if (ret != CUDA_SUCCESS || !symbol || !pfn || !*pfn)
        return;
    w = p3d_mem_driver_redirect(symbol, *pfn, version);
    if (w)
        *pfn = w;
}

P3D_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
                                        int version, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *st)
{
    p3d_cu_gpa2_fn real = drv_real(&real_gpa2, "cuGetProcAddress_v2");
    CUresult ret;

    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    ret = real(symbol, pfn, version, flags, st);
    drv_redirect(symbol, pfn, version, ret);
    return ret;
}

P3D_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                     int version, cuuint64_t flags)
{
    p3d_cu_gpa1_fn real = drv_real(&real_gpa1, "cuGetProcAddress");
    CUresult ret;

    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    ret = real(symbol, pfn, version, flags);
    drv_redirect(symbol, pfn, version, ret);
    return ret;
}

/* Name (as passed to a getter) -> wrapper, real slot, oldest ABI. */
struct drv_redirect {
    const char *name;
    void *wrapper;
    void **slot;
    int min_version;
};

void *p3d_mem_driver_redirect(const char *symbol, void *real, int version)
{
    static const struct drv_redirect tab[] = {
        {"cuMemAlloc", (void *)cuMemAlloc_v2, &real_alloc, 3020},
        {"cuMemAlloc_v2", (void *)cuMemAlloc_v2, &real_alloc, 0},
        {"cuMemFree", (void *)cuMemFree_v2, &real_free, 3020},
        {"cuMemFree_v2", (void *)cuMemFree_v2, &real_free, 0},
        {"cuMemCreate", (void *)cuMemCreate, &real_create, 0},
        {"cuMemRelease", (void *)cuMemRelease, &real_release, 0},
        {"cuMemMap", (void *)cuMemMap, &real_map, 0},
        {"cuMemUnmap", (void *)cuMemUnmap, &real_unmap, 0},
        {"cuGetProcAddress", (void *)cuGetProcAddress_v2, &real_gpa2,
         12000},
        {"cuGetProcAddress_v2", (void *)cuGetProcAddress_v2, &real_gpa2, 0},
    };
    size_t i;

    for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
        if (strcmp(symbol, tab[i].name) != 0)
            continue;
        if (version && version < tab[i].min_version)
            return NULL;            /* an older ABI: leave it alone */
        if (real == tab[i].wrapper)
            return NULL;
        if (!__atomic_load_n(tab[i].slot, __ATOMIC_ACQUIRE))
            __atomic_store_n(tab[i].slot, real, __ATOMIC_RELEASE);
        return tab[i].wrapper;
    }
    return NULL;
}
