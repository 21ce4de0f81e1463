/*
 * p3d_gpu_shared.c - say once when several ranks of a node time-slice one
 * GPU while CUPTI traces every kernel.  There CUPTI is what costs: Megatron
 * TP=4 PP=1 DP=2 as 8 ranks on one H200 ran +49% slower per iteration
 * under CUPTI, +6% with CUDA events and +0% without GPU timing
 * (bench/gpu_overhead.sh ablate), while one rank per GPU is the case the
 * default is meant for.  The user chooses the trade, so this only tells.
 */
#include "p3d_env.h"
#include "p3d_gpu.h"
#include "p3d_gpu_cuda.h"
#include "p3d_shim.h"

int p3d_gpu_ranks_per_device(int local_world_size, int devices)
{
    if (local_world_size < 1 || devices < 1)
        return 0;
    return (local_world_size + devices - 1) / devices;
}

void p3d_gpu_warn_shared(void)
{
    const struct p3d_cuda_api *c = p3d_cuda_api();
    const struct p3d_cfg *cfg = p3d_core_cfg();
    int local = cfg->local_world_size;
    int devices = 0;
    int per;

    if (cfg->local_rank > 0)    /* one line per node, from local rank 0 */
        return;
    if (!c->GetDeviceCount || c->GetDeviceCount(&devices) != cudaSuccess)
        return;
    per = p3d_gpu_ranks_per_device(local, devices);
    if (per < 2)
        return;
    p3d_warn_once("gpu_shared", "%d ranks on this node share %d visible "
                  "GPU(s); CUPTI kernel tracing slows GPUs that processes "
                  "time-slice (measured +49%% step time, 8 ranks on one "
                  "GPU; CUDA events +6%%): set %s=events (no compute "
                  "timeline) or off if the step time matters",
                  local, devices, P3D_ENV_GPU_TIMING);
}
