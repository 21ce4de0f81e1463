/*
 * p3d_gpu_cuda.h - CUDA runtime functions the GPU timeline and the memory
 * sampler call, resolved at run time in the process's own libcudart
 * (never linked).  A member is NULL when the runtime lacks it.
 */
#ifndef P3D_GPU_CUDA_H
#define P3D_GPU_CUDA_H

#include <cuda_runtime_api.h>

struct p3d_cuda_api {
    cudaError_t (*GetDevice)(int *);
    cudaError_t (*DeviceGetPCIBusId)(char *, int, int);
    cudaError_t (*SetDevice)(int);
    cudaError_t (*EventCreateWithFlags)(cudaEvent_t *, unsigned int);
    cudaError_t (*EventRecord)(cudaEvent_t, cudaStream_t);
    cudaError_t (*EventQuery)(cudaEvent_t);
    cudaError_t (*EventSynchronize)(cudaEvent_t);
    cudaError_t (*EventElapsedTime)(float *, cudaEvent_t, cudaEvent_t);
    cudaError_t (*StreamIsCapturing)(cudaStream_t,
                                     enum cudaStreamCaptureStatus *);
    cudaError_t (*StreamCreateWithFlags)(cudaStream_t *, unsigned int);
    cudaError_t (*MemGetInfo)(size_t *, size_t *);
    cudaError_t (*DeviceGetMemPool)(cudaMemPool_t *, int);
    cudaError_t (*MemPoolGetAttribute)(cudaMemPool_t, enum cudaMemPoolAttr,
                                       void *);
};

/* The resolved table (resolved once, on first use). */
const struct p3d_cuda_api *p3d_cuda_api(void);

#endif /* P3D_GPU_CUDA_H */
