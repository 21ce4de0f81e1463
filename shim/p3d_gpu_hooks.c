/*
 * p3d_gpu_hooks.c - the strong versions of the NCCL wrapper hooks
 * (p3d_hooks.h): choose the GPU timing backend once and route each op to
 * it.
 *
 * P3D_GPU_TIMING=auto (default) times NCCL ops with CUDA events and
 * records kernels with CUPTI in windows (gpu_start_auto); "plugin" takes
 * NCCL op times from NCCL's profiler plugin (p3d_plugin.h) with kernel
 * windows as auto, falling back to auto's events, warned; "cupti" asks
 * for CUPTI for both, all the run (still falling back to events,
 * warned), "events" for events alone; "off" records no GPU times.  With CUPTI an ungrouped
 * op is bracketed by an external correlation id = its op_id; the ops of a group are
 * remembered on the thread and published at the outermost ncclGroupEnd,
 * which is bracketed by a group key (P3D_GPU_GROUP_KEY | sequence),
 * because that is where NCCL launches their kernels.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_env.h"
#include "p3d_gpu.h"
#include "p3d_gpu_cuda.h"
#include "p3d_inflight.h"
#include "p3d_mem.h"
#include "p3d_plugin.h"
#include "p3d_shim.h"

static pthread_once_t gpu_once = PTHREAD_ONCE_INIT;
static _Atomic int gpu_mode = P3D_GPU_OFF;
static _Atomic int gpu_done;
static _Atomic int gpu_ready;       /* gpu_init ran: skip pthread_once */
static struct p3d_gpu_group gpu_groups[P3D_GPU_GROUPS];
static _Atomic uint64_t gpu_group_seq;

/* Ops of the open group of this thread. */
static P3D_TLS struct {
    uint32_t n;
    uint32_t lost;
    uint64_t op_id[P3D_GPU_GROUP_OPS];
    uint64_t comm[P3D_GPU_GROUP_OPS];
    uint32_t stream[P3D_GPU_GROUP_OPS];   /* CUPTI stream ids */
} gpu_tls_group;
static P3D_TLS uint8_t gpu_tls_pushed;

enum p3d_gpu_mode p3d_gpu_mode_parse(const char *s)
{
    if (!s || !*s || !strcmp(s, "auto"))
        return P3D_GPU_AUTO;
    if (!strcmp(s, "cupti"))
        return P3D_GPU_CUPTI;
    if (!strcmp(s, "events"))
        return P3D_GPU_EVENTS;
    if (!strcmp(s, "plugin"))
        return P3D_GPU_PLUGIN;
    if (!strcmp(s, "off") || !strcmp(s, "0") || !strcmp(s, "none"))
        return P3D_GPU_OFF;
    p3d_warn_once("gpu_timing_env", "%s=%s not understood; using auto",
                  P3D_ENV_GPU_TIMING, s);
    return P3D_GPU_AUTO;
}

/*
 * Registered once a backend runs, i.e. after the CUDA runtime initialised:
 * atexit handlers run in reverse order, so this runs before the runtime's
 * own teardown and may still query CUDA/CUPTI (unlike p3d_hook_fini).
 */
static void gpu_atexit(void)
{
    int mode = atomic_load(&gpu_mode);

    p3d_gpu_thread_stop();
    if (mode == P3D_GPU_EVENTS)
        p3d_events_drain(20000000ull);
    p3d_cupti_fini();      /* no-op unless CUPTI runs (maybe in windows) */
}

/* CUPTI records kernels in windows (p3d_gpu_window.c). */
static void gpu_start_windows(void)
{
    if (p3d_gpu_window_config() && p3d_cupti_start_windowed() == 0) {
        p3d_gpu_warn_shared();
        p3d_gpu_window_begin();
    }
}

/* CUDA events time the NCCL ops, with kernel windows; without CUDA
 * events, CUPTI for everything. */
static int gpu_start_auto(void)
{
    if (p3d_events_start() == 0) {
        gpu_start_windows();
        return P3D_GPU_EVENTS;
    }
    if (p3d_cupti_start(0) == 0) {
        p3d_gpu_warn_shared();
        return P3D_GPU_CUPTI;
    }
    return P3D_GPU_OFF;
}

/*
 * Whether the process uses the CUDA runtime: its libcudart is loaded.  In
 * one that calls NCCL without it (NCCL's own copy is static and hidden),
 * CUPTI or libcudart loaded on its behalf would initialise CUDA there:
 * CUPTI fails (error 999) and every rank warned.  Such a process gets no
 * GPU timing and no message, only a note in its trace.
 */
static int gpu_process_uses_cuda(void)
{
    if (p3d_resolve("cudaGetDevice", NULL))
        return 1;
    p3d_note("gpu timing: off: no CUDA runtime (libcudart) in the process");
    return 0;
}

/*
 * plugin: NCCL loaded us as its profiler plugin (its init ran for the
 * communicator of this first op), else the events path of auto, warned:
 * the user runs another plugin, or NCCL never loaded us (older than
 * 2.27, or plugins off).
 */
static int gpu_start_plugin(void)
{
    const char *other = p3d_plugin_env_other();

    if (other == NULL && p3d_plugin_inits() > 0) {
        gpu_start_windows();
        return P3D_GPU_PLUGIN;
    }
    if (other != NULL)
        p3d_warn_once("gpu_plugin_other", "%s=%s is another profiler "
                      "plugin: NCCL op GPU times from CUDA events instead",
                      P3D_ENV_NCCL_PROFILER_PLUGIN, other);
    else
        p3d_warn_once("gpu_plugin_none", "NCCL did not load libp3dtrace.so "
                      "as its profiler plugin (NCCL older than 2.27, or "
                      "plugins off): NCCL op GPU times from CUDA events "
                      "instead");
    return gpu_start_auto();
}

const char *p3d_gpu_ops_source(void)
{
    switch (atomic_load(&gpu_mode)) {
    case P3D_GPU_PLUGIN: return "the NCCL profiler plugin";
    case P3D_GPU_EVENTS: return "CUDA events";
    case P3D_GPU_CUPTI: return "CUPTI";
    default: return "nothing";
    }
}

static void gpu_init(void)
{
    enum p3d_gpu_mode want = p3d_gpu_mode_parse(getenv(P3D_ENV_GPU_TIMING));
    int mode = P3D_GPU_OFF;

    if (!p3d_core_enabled() || want == P3D_GPU_OFF ||
        !gpu_process_uses_cuda()) {
        __atomic_store_n(&p3d_hook_ops_idle, 1, __ATOMIC_RELAXED);
        return;
    }
    if (want == P3D_GPU_PLUGIN ||
        (want == P3D_GPU_AUTO && p3d_plugin_auto_default()))
        mode = gpu_start_plugin();
    else if (want == P3D_GPU_AUTO)
        mode = gpu_start_auto();
    else if (want == P3D_GPU_CUPTI && p3d_cupti_start(1) == 0)
        mode = P3D_GPU_CUPTI;
    else if (p3d_events_start() == 0)
        mode = P3D_GPU_EVENTS;
    if (mode == P3D_GPU_OFF)
        p3d_warn_once("gpu_none", "no GPU timing: neither CUPTI nor CUDA "
                      "events are available");
    atomic_store(&gpu_mode, mode);
    p3d_note("gpu timing: NCCL ops timed by %s", p3d_gpu_ops_source());
    if (mode == P3D_GPU_OFF)    /* the op hooks have nothing to do */
        __atomic_store_n(&p3d_hook_ops_idle, 1, __ATOMIC_RELAXED);
    if (mode != P3D_GPU_OFF)
        atexit(gpu_atexit);
    p3d_gpu_thread_start();
}

static int gpu_mode_get(void)
{
    if (P3D_UNLIKELY(atomic_load_explicit(&gpu_done, memory_order_acquire)))
        return P3D_GPU_OFF;
    if (P3D_UNLIKELY(!atomic_load_explicit(&gpu_ready,
                                           memory_order_acquire))) {
        pthread_once(&gpu_once, gpu_init);
        atomic_store_explicit(&gpu_ready, 1, memory_order_release);
    }
    return atomic_load_explicit(&gpu_mode, memory_order_relaxed);
}

/*
 * The mode once the first op decided it, else OFF without deciding.  For
 * the hooks that are not an op's (group end, communicator end): a group
 * that ends before any op was issued holds no op of ours, but may hold
 * communicator inits, which NCCL runs inside that ncclGroupEnd (so does
 * nccl-tests, one init per GPU in a group), and with them NCCL's init of
 * the profiler plugin: deciding there would find no plugin yet and take
 * CUDA events (seen on the H200 with nccl-tests, NCCL 2.28.9).
 */
static int gpu_mode_decided(void)
{
    if (!atomic_load_explicit(&gpu_ready, memory_order_acquire) ||
        atomic_load_explicit(&gpu_done, memory_order_acquire))
        return P3D_GPU_OFF;
    return atomic_load_explicit(&gpu_mode, memory_order_relaxed);
}

void p3d_gpu_op_write(uint8_t source, uint64_t op_id, uint64_t start,
                      uint64_t end)
{
    struct p3d_rec_gpu_op *r = p3d_rec_reserve(P3D_REC_GPU_OP, sizeof(*r));

    if (end != 0)
        p3d_inflight_complete(op_id); /* hang watchdog (issue 7) */
    if (!r)
        return;
    r->source = source;
    r->op_id = op_id;
    r->gpu_start = start;
    r->gpu_end = end;
    p3d_rec_commit(r);
}

/* Publish this thread's group under a new key; 0 if it has no ops. */
static uint64_t gpu_group_publish(void)
{
    uint64_t seq, key;
    struct p3d_gpu_group *g;

    if (!gpu_tls_group.n)
        return 0;
    seq = atomic_fetch_add(&gpu_group_seq, 1) + 1;
    key = P3D_GPU_GROUP_KEY | seq;
    g = &gpu_groups[seq % P3D_GPU_GROUPS];
    __atomic_store_n(&g->key, 0, __ATOMIC_RELEASE);
    g->n_ops = gpu_tls_group.n;
    memcpy(g->op_id, gpu_tls_group.op_id,
           gpu_tls_group.n * sizeof(uint64_t));
    __atomic_store_n(&g->key, key, __ATOMIC_RELEASE);
    return key;
}

int p3d_gpu_group_get(uint64_t key, struct p3d_gpu_group *out)
{
    const struct p3d_gpu_group *g =
        &gpu_groups[(key & ~P3D_GPU_GROUP_KEY) % P3D_GPU_GROUPS];
    uint32_t n;

    if (__atomic_load_n(&g->key, __ATOMIC_ACQUIRE) != key)
        return 0;
    n = g->n_ops < P3D_GPU_GROUP_OPS ? g->n_ops : P3D_GPU_GROUP_OPS;
    out->n_ops = n;
    memcpy(out->op_id, g->op_id, n * sizeof(uint64_t));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&g->key, __ATOMIC_RELAXED) != key)
        return 0;
    out->key = key;
    return 1;
}

void p3d_hook_op_before(const struct p3d_op_ctx *op)
{
    int mode = gpu_mode_get();

    if (mode == P3D_GPU_CUPTI) {
        uint32_t sid = p3d_cupti_stream_id(op->stream);

        if (!op->in_group) {
            if (sid)
                p3d_cupti_order_push(sid, op->op_id, 1);
            p3d_cupti_push(op->op_id);
            gpu_tls_pushed = 1;
        } else if (gpu_tls_group.n < P3D_GPU_GROUP_OPS) {
            gpu_tls_group.comm[gpu_tls_group.n] = op->comm_hash;
            gpu_tls_group.stream[gpu_tls_group.n] = sid;
            gpu_tls_group.op_id[gpu_tls_group.n++] = op->op_id;
        } else {
            gpu_tls_group.lost++;
        }
    } else if (mode == P3D_GPU_EVENTS) {
        p3d_events_op_before(op);
    }
}

/* Plugin mode registers the op here, with its t_enter: the lower causal
 * bound of its kernel's start (p3d_plugin.c). */
void p3d_hook_op_entered(const struct p3d_op_ctx *op, uint64_t t_enter)
{
    if (gpu_mode_get() == P3D_GPU_PLUGIN)
        p3d_plugin_join_op(op, t_enter);
}

/*
 * Asked after the call, which does not end a capture: the same answer as
 * before it.  The legacy default stream (NULL, cudaStreamLegacy) is not
 * asked: querying it while another stream captures in global mode is an
 * error that can invalidate that capture, and NCCL ops under capture run
 * on streams of their own.
 */
uint8_t p3d_hook_op_flags(const struct p3d_op_ctx *op)
{
    const struct p3d_cuda_api *c;
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;

    if ((uintptr_t)op->stream <= 1 /* NULL or cudaStreamLegacy */ ||
        gpu_mode_get() == P3D_GPU_OFF)
        return 0;
    c = p3d_cuda_api();
    if (c == NULL || !c->StreamIsCapturing ||
        c->StreamIsCapturing((cudaStream_t)op->stream, &st) != cudaSuccess)
        return 0;
    return st == cudaStreamCaptureStatusNone ? 0 : P3D_OPF_CAPTURING;
}

void p3d_hook_op_after(const struct p3d_op_ctx *op, int ret)
{
    int mode = gpu_mode_get();

    if (mode == P3D_GPU_PLUGIN)
        p3d_plugin_join_call_done();
    if (mode == P3D_GPU_CUPTI) {
        if (!op->in_group && gpu_tls_pushed) {
            p3d_cupti_pop();
            gpu_tls_pushed = 0;
        }
    } else if (mode == P3D_GPU_EVENTS) {
        p3d_events_op_after(op, ret);
    }
}

/* Queue the group's launch units: per stream, one kernel per comm. */
static void gpu_group_order(uint64_t key)
{
    uint32_t n = gpu_tls_group.n, i, j, k;

    for (i = 0; i < n; i++) {
        uint32_t sid = gpu_tls_group.stream[i], comms = 0;

        for (j = 0; j < i && gpu_tls_group.stream[j] != sid; j++)
            ;
        if (!sid || j < i)
            continue;               /* unknown, or stream already queued */
        for (j = i; j < n; j++) {
            if (gpu_tls_group.stream[j] != sid)
                continue;
            for (k = i; k < j; k++)
                if (gpu_tls_group.stream[k] == sid &&
                    gpu_tls_group.comm[k] == gpu_tls_group.comm[j])
                    break;
            comms += k == j;
        }
        p3d_cupti_order_push(sid, key, comms);
    }
}

void p3d_hook_group_end_before(uint32_t group_id)
{
    uint64_t key;

    (void)group_id;
    if (gpu_mode_decided() != P3D_GPU_CUPTI)
        return;
    if (gpu_tls_group.lost)
        p3d_warn_once("gpu_group_ops", "a group had more than %d ops; the "
                      "rest get no GPU times", P3D_GPU_GROUP_OPS);
    key = gpu_group_publish();
    if (key)
        gpu_group_order(key);
    gpu_tls_group.n = 0;
    gpu_tls_group.lost = 0;
    if (key) {
        p3d_cupti_push(key);
        gpu_tls_pushed = 1;
    }
}

void p3d_hook_group_end_after(uint32_t group_id, int ret)
{
    int mode = gpu_mode_decided();

    (void)ret;
    if (mode == P3D_GPU_CUPTI && gpu_tls_pushed) {
        p3d_cupti_pop();
        gpu_tls_pushed = 0;
    } else if (mode == P3D_GPU_EVENTS) {
        p3d_events_group_end_after(group_id);
    }
}

/*
 * A communicator ends (app thread, CUDA alive, not an op's hot path):
 * collect the GPU times of finished ops now, because nothing may call
 * CUDA at exit.
 */
void p3d_hook_comm_end(uint64_t comm_hash, int how)
{
    int mode = gpu_mode_decided();

    (void)comm_hash;
    (void)how;
    if (mode == P3D_GPU_EVENTS)
        p3d_events_drain(50000000ull);
    p3d_cupti_flush();     /* no-op unless CUPTI runs (maybe in windows) */
}

/* No CUDA here (the runtime may be gone): only what gpu_atexit missed. */
void p3d_hook_fini(void)
{
    if (atomic_exchange(&gpu_done, 1))
        return;
    if (atomic_load(&gpu_mode) == P3D_GPU_PLUGIN)
        p3d_plugin_note();
    p3d_gpu_thread_stop();
    p3d_cupti_fini();     /* no-op unless gpu_atexit did not run */
    p3d_mem_emit_final();
}
