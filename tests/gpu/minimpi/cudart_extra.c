/*
 * cudart_extra.c - the CUDA runtime entry points nccl-tests needs that the
 * CPU test doubles (tests/fakes/fake_cudart.c) lack, for NT_FAKE=1 runs of
 * tests/gpu/nccl_tests.sh: the real nccl-tests binaries then run on a
 * machine without a GPU over the fake CUDA runtime and fake NCCL, which
 * checks the op selection of check_nccl_tests.py against the real
 * programs.  Preloaded after the shim.  Kernels are not run (nccl-tests
 * launches none with -c 0); the device is a compute capability 9.0 "fake".
 */
#include <string.h>

#include <cuda_runtime_api.h>

static void *extra_handle[4];

void **__cudaRegisterFatBinary(void *fat_cubin)
{
    (void)fat_cubin;
    return extra_handle;
}

void __cudaRegisterFatBinaryEnd(void **h)
{
    (void)h;
}

void __cudaUnregisterFatBinary(void **h)
{
    (void)h;
}

/* Called with arguments these ignore; returning 0 is success. */
void __cudaRegisterFunction(void) {}
unsigned __cudaPushCallConfiguration(void) { return 0; }
int __cudaPopCallConfiguration(void) { return 0; }
int __cudaLaunchKernel(void) { return 0; }
int __cudaGetKernel(void) { return 0; }

cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int dev)
{
    (void)dev;
    *v = a == cudaDevAttrComputeCapabilityMajor ? 9 : 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    (void)dev;
    memset(p, 0, sizeof(*p));
    strcpy(p->name, "fake");
    p->totalGlobalMem = 80ull << 30;
    p->major = 9;
    return cudaSuccess;
}

cudaError_t cudaDeviceReset(void)
{
    return cudaSuccess;
}
