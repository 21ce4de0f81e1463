/*
 * fake_cuda_driver.c - CPU test double of libcuda.so.1 (the CUDA driver)
 * for the memory paths of the shim: cuMemAlloc/cuMemFree, the
 * virtual-memory API PyTorch's expandable segments use (cuMemCreate,
 * cuMemAddressReserve, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease,
 * cuMemAddressFree) and cuGetProcAddress.  The fake cudart finds this
 * library next to itself for cudaGetDriverEntryPoint*.
 *
 * Memory is anonymous NORESERVE mappings: sizes in the gigabytes cost
 * nothing.  Every call checks its arguments the way the real driver
 * would for the cases the tests rely on (unknown handle, unmapped range).
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cuda.h>

#undef cuGetProcAddress

#define FAKE_API __attribute__((visibility("default")))
#define FAKE_HANDLE_MAGIC 0x70336468616e646cull

struct fake_handle {
    uint64_t magic;
    size_t size;
    int device;
};

static __thread int fake_ctx_device;

FAKE_API CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuCtxGetDevice(CUdevice *dev)
{
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    *dev = fake_ctx_device;
    return CUDA_SUCCESS;
}

/* Test hook: the device cuCtxGetDevice reports on this thread. */
FAKE_API void p3dfake_driver_set_device(int dev)
{
    fake_ctx_device = dev;
}

static void *fake_map(size_t size, int prot)
{
    void *m = mmap(NULL, size ? size : 1, prot,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    return m == MAP_FAILED ? NULL : m;
}

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes)
{
    size_t *m;

    if (!dptr || !bytes)
        return CUDA_ERROR_INVALID_VALUE;
    m = fake_map(bytes + 4096, PROT_READ | PROT_WRITE);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *m = bytes;
    *dptr = (CUdeviceptr)(uintptr_t)((char *)m + 4096);
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    size_t *m;

    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    m = (size_t *)(uintptr_t)(dptr - 4096);
    munmap(m, *m + 4096);
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemGetAllocationGranularity(
    size_t *g, const CUmemAllocationProp *prop,
    CUmemAllocationGranularity_flags option)
{
    (void)prop;
    (void)option;
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    *g = 2u << 20;
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle,
                              size_t size, const CUmemAllocationProp *prop,
                              unsigned long long flags)
{
    struct fake_handle *h;

    (void)flags;
    if (!handle || !prop || !size || (size & ((2u << 20) - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    h = calloc(1, sizeof(*h));
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    h->magic = FAKE_HANDLE_MAGIC;
    h->size = size;
    h->device = prop->location.id;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}

static struct fake_handle *fake_handle(CUmemGenericAllocationHandle handle)
{
    struct fake_handle *h = (struct fake_handle *)(uintptr_t)handle;

    return h && h->magic == FAKE_HANDLE_MAGIC ? h : NULL;
}

FAKE_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    struct fake_handle *h = fake_handle(handle);

    if (!h)
        return CUDA_ERROR_INVALID_VALUE;
    h->magic = 0;
    free(h);
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
                                      size_t align, CUdeviceptr addr,
                                      unsigned long long flags)
{
    void *m;

    (void)align;
    (void)addr;
    (void)flags;
    if (!ptr || !size)
        return CUDA_ERROR_INVALID_VALUE;
    m = fake_map(size, PROT_NONE);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    if (!ptr)
        return CUDA_ERROR_INVALID_VALUE;
    munmap((void *)(uintptr_t)ptr, size);
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                           CUmemGenericAllocationHandle handle,
                           unsigned long long flags)
{
    struct fake_handle *h = fake_handle(handle);

    (void)flags;
    if (!ptr || !h || offset + size > h->size)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                 const CUmemAccessDesc *desc, size_t count)
{
    (void)desc;
    (void)count;
    if (!ptr || !size)
        return CUDA_ERROR_INVALID_VALUE;
    if (mprotect((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    if (!ptr || !size)
        return CUDA_ERROR_INVALID_VALUE;
    mprotect((void *)(uintptr_t)ptr, size, PROT_NONE);
    return CUDA_SUCCESS;
}

/*
 * cuGetProcAddress: this library's own definition of `symbol` (the "_v2"
 * ABI first, as the real driver for versions >= 3.2).  dlsym on our own
 * handle never returns an interposer's definition.
 */
static CUresult fake_gpa(const char *symbol, void **pfn, int version)
{
    char name[256];
    Dl_info info;
    void *self, *p = NULL;

    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dladdr((void *)fake_gpa, &info) || !info.dli_fname)
        return CUDA_ERROR_NOT_FOUND;
    self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!self)
        return CUDA_ERROR_NOT_FOUND;
    snprintf(name, sizeof(name), "%s_v2", symbol);
    if (version >= 3020)
        p = dlsym(self, name);
    if (!p)
        p = dlsym(self, symbol);
    dlclose(self);
    *pfn = p;
    return p ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

FAKE_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
                                      int version, cuuint64_t flags,
                                      CUdriverProcAddressQueryResult *st)
{
    CUresult r = fake_gpa(symbol, pfn, version);

    (void)flags;
    if (st)
        *st = r == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS
                                : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return r;
}

FAKE_API CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                   int version, cuuint64_t flags)
{
    (void)flags;
    return fake_gpa(symbol, pfn, version);
}
