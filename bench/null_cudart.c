/*
 * null_cudart.c - a CUDA runtime that hands out fake device pointers and
 * does nothing else, so bench/shim_bench.c measures what the shim adds to
 * cudaMalloc/cudaFree.  Pointers are distinct addresses of a reserved,
 * never touched range.
 */
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#define NULL_API __attribute__((visibility("default"), noinline))

static uintptr_t null_next = (uintptr_t)1 << 40;

NULL_API cudaError_t cudaMalloc(void **p, size_t size)
{
    *p = (void *)__atomic_fetch_add(&null_next, (size + 511) & ~511ul,
                                    __ATOMIC_RELAXED);
    return cudaSuccess;
}

NULL_API cudaError_t cudaFree(void *p)
{
    (void)p;
    __asm__ volatile("" ::: "memory");
    return cudaSuccess;
}

NULL_API cudaError_t cudaGetDevice(int *d)
{
    *d = 0;
    return cudaSuccess;
}

NULL_API cudaError_t cudaSetDevice(int d)
{
    (void)d;
    return cudaSuccess;
}

NULL_API cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
    *free_b = (size_t)80 << 30;
    *total = (size_t)80 << 30;
    return cudaSuccess;
}

NULL_API cudaError_t cudaStreamIsCapturing(cudaStream_t s,
                                           enum cudaStreamCaptureStatus *st)
{
    (void)s;
    *st = cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

/*
 * Events that complete at once, for the default GPU timing's NCCL path
 * (P3D_GPU_TIMING=auto/events records two per op): what the shim adds
 * around them, without the runtime's own cost of recording an event.
 */
static uintptr_t null_event = 1;

NULL_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f)
{
    (void)f;
    *e = (cudaEvent_t)__atomic_fetch_add(&null_event, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}

NULL_API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)e;
    (void)s;
    __asm__ volatile("" ::: "memory");
    return cudaSuccess;
}

NULL_API cudaError_t cudaEventQuery(cudaEvent_t e)
{
    (void)e;
    return cudaSuccess;
}

NULL_API cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    (void)e;
    return cudaSuccess;
}

NULL_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a,
                                          cudaEvent_t b)
{
    (void)a;
    (void)b;
    *ms = 0;
    return cudaSuccess;
}

NULL_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f)
{
    (void)f;
    *s = (cudaStream_t)(uintptr_t)0x5000;
    return cudaSuccess;
}
