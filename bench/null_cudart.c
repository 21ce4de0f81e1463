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
