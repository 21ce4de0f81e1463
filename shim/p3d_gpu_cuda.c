/*
 * p3d_gpu_cuda.c - resolve the CUDA runtime functions of p3d_gpu_cuda.h
 * in the traced process (the same libcudart the application uses), once.
 */
#include <pthread.h>

#include "p3d_gpu_cuda.h"
#include "p3d_shim.h"

static struct p3d_cuda_api cuda_api;
static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;

#define P3D_CUDA_GET(member, name)                                            \
    (*(void **)&cuda_api.member = p3d_resolve(name, NULL))

static void cuda_resolve(void)
{
    P3D_CUDA_GET(GetDevice, "cudaGetDevice");
    P3D_CUDA_GET(DeviceGetPCIBusId, "cudaDeviceGetPCIBusId");
    P3D_CUDA_GET(SetDevice, "cudaSetDevice");
    P3D_CUDA_GET(EventCreateWithFlags, "cudaEventCreateWithFlags");
    P3D_CUDA_GET(EventRecord, "cudaEventRecord");
    P3D_CUDA_GET(EventQuery, "cudaEventQuery");
    P3D_CUDA_GET(EventSynchronize, "cudaEventSynchronize");
    P3D_CUDA_GET(EventElapsedTime, "cudaEventElapsedTime");
    P3D_CUDA_GET(StreamIsCapturing, "cudaStreamIsCapturing");
    P3D_CUDA_GET(StreamCreateWithFlags, "cudaStreamCreateWithFlags");
    P3D_CUDA_GET(MemGetInfo, "cudaMemGetInfo");
    P3D_CUDA_GET(DeviceGetMemPool, "cudaDeviceGetMemPool");
    P3D_CUDA_GET(MemPoolGetAttribute, "cudaMemPoolGetAttribute");
}

const struct p3d_cuda_api *p3d_cuda_api(void)
{
    pthread_once(&cuda_once, cuda_resolve);
    return &cuda_api;
}
