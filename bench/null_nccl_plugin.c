/*
 * null_nccl_plugin.c - a do-nothing NCCL that still drives a profiler
 * plugin the way NCCL 2.28.9 does per eager collective, so
 * bench/plugin_host_cost.c can put a figure on P3D_GPU_TIMING=plugin's
 * host cost: bench/null_nccl.c calls no plugin, and a real NCCL needs a
 * GPU.
 *
 * ncclCommInitRank loads NCCL_PROFILER_PLUGIN's ncclProfiler_v5 (only
 * that: the bench runs the shim, which exports it) and calls its init
 * with the commHash the shim derives from the unique id (shim/
 * p3d_commhash.c, linked in).  Per ncclAllReduce, all on the calling
 * thread (docs/nccl-profiler-notes.md): GroupApi start, CollApi start
 * and stop (NCCL v2.28.9 src/enqueue.cc:2463-2493), Group start, Coll
 * start and stop (hostStreamPlanTask, :1307-1321), Group stop, and per
 * channel (2) a KernelCh start, recordEventState(KernelChStop) and stop.
 * Real NCCL sends the KernelCh events from its proxy thread, so the
 * figure is an upper bound for the calling thread.  The GroupApi handle
 * is stopped only when not NULL, as NCCL does.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "p3d_commhash.h"
#include "p3d_nccl_profiler_abi.h"

#define NULL_API __attribute__((visibility("default"), noinline))
#define NULL_CHANNELS 2

static int null_comm;
static struct p3d_np_v5 *null_prof;
static void *null_ctx;
static int null_mask;
static uint64_t null_seq;

static uint64_t null_wall(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *null_start(uint64_t type, void *parent,
                        const union p3d_np_descr_body *u)
{
    struct p3d_np_descr_v5 d;
    void *h = NULL;

    memset(&d, 0, sizeof(d));
    d.type = type;
    d.parent_obj = parent;
    d.u = *u;
    null_prof->start_event(null_ctx, &h, &d);
    return h;
}

static void null_stop(void *h)
{
    if (h != NULL)
        null_prof->stop_event(h);
}

static void null_kernel_channels(void *task)
{
    for (int k = 0; k < NULL_CHANNELS; k++) {
        union p3d_np_descr_body u;
        union p3d_np_state_args a;
        void *h;

        memset(&u, 0, sizeof(u));
        u.kernel_ch.channel_id = (uint8_t)k;
        u.kernel_ch.p_timer = null_wall();
        h = null_start(P3D_NP_KERNEL_CH, task, &u);
        a.kernel_ch_p_timer = null_wall();
        if (h != NULL)
            null_prof->record_event_state(h, P3D_NP_STATE_KERNEL_CH_STOP,
                                          &a);
        null_stop(h);
    }
}

/* One eager all-reduce's events, in NCCL 2.28.9's order. */
static void null_prof_allreduce(size_t count)
{
    union p3d_np_descr_body u;
    void *gapi, *api, *group, *task;

    memset(&u, 0, sizeof(u));
    gapi = null_start(0x100, NULL, &u);          /* GroupApi */
    u.coll_api.func = "AllReduce";
    u.coll_api.count = count;
    api = null_start(P3D_NP_COLL_API, gapi, &u);
    null_stop(api);
    memset(&u, 0, sizeof(u));
    group = null_start(P3D_NP_GROUP, NULL, &u);
    u.coll.seq_number = null_seq++;
    u.coll.func = "AllReduce";
    u.coll.count = count;
    u.coll.n_channels = NULL_CHANNELS;
    task = null_start(P3D_NP_COLL, api, &u);
    null_stop(task);
    null_stop(group);
    null_stop(gapi);
    if (null_mask & P3D_NP_KERNEL_CH)
        null_kernel_channels(task);
}

NULL_API ncclResult_t ncclAllReduce(const void *s, void *r, size_t n,
                                    ncclDataType_t d, ncclRedOp_t o,
                                    ncclComm_t c, cudaStream_t st)
{
    (void)s, (void)r, (void)d, (void)o, (void)c, (void)st;
    if (null_ctx != NULL)
        null_prof_allreduce(n);
    __asm__ volatile("" ::: "memory");
    return ncclSuccess;
}

NULL_API ncclResult_t ncclGroupStart(void)
{
    return ncclSuccess;
}

NULL_API ncclResult_t ncclGroupEnd(void)
{
    return ncclSuccess;
}

NULL_API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
        id->internal[i] = (char)i;
    return ncclSuccess;
}

static void null_prof_load(const ncclUniqueId *id)
{
    const char *name = getenv("NCCL_PROFILER_PLUGIN");
    void *h = name ? dlopen(name, RTLD_NOW | RTLD_LOCAL) : NULL;

    null_prof = h ? dlsym(h, "ncclProfiler_v5") : NULL;
    if (null_prof != NULL)
        null_prof->init(&null_ctx, p3d_commhash_root(id->internal),
                        &null_mask, "bench", 1, 2, 0, NULL);
}

NULL_API ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id,
                                       int r)
{
    (void)n, (void)r;
    null_prof_load(&id);
    *c = (ncclComm_t)&null_comm;
    return ncclSuccess;
}

NULL_API ncclResult_t ncclCommDestroy(ncclComm_t c)
{
    (void)c;
    if (null_prof != NULL && null_ctx != NULL)
        null_prof->finalize(null_ctx);
    null_ctx = NULL;
    return ncclSuccess;
}

NULL_API ncclResult_t ncclGetVersion(int *v)
{
    *v = NCCL_VERSION_CODE;
    return ncclSuccess;
}
