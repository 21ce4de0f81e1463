/*
 * p3d_plugin.c - libp3dtrace.so as NCCL's profiler plugin (issue 24): the
 * exported ncclProfiler_v6 (NCCL 2.29+), ncclProfiler_v5 (2.28+) and
 * ncclProfiler_v4 (2.27) tables, and what their callbacks do with NCCL's
 * events.
 *
 * Per communicator, init asks for Coll, P2p and KernelCh events (NCCL
 * then also sends their ancestors: Group, which gets no handle, and with
 * v5+ the API events, whose handles carry the join).  A Coll/P2p start
 * takes its op id from the join (p3d_plugin_join.c) and claims an op
 * object from a fixed pool; a CUDA-graph replay's task (its parent is
 * the join's "captured" handle) claims one too, to sum its kernel time
 * for the closing note, and writes no record; each
 * KernelCh child brings its channel's GPU start in the descriptor and its
 * stop in recordEventState(KernelChStop).  When the task was stopped and
 * all its nChannels channels stopped, the op's GPU interval is [earliest
 * start, latest stop], put on the host clock and written as the same
 * P3D_REC_GPU_OP the CUDA-events path writes (source PLUGIN).
 *
 * The timestamps are the GPU's globaltimer in ns, which the driver keeps
 * on the host's wall clock (CLOCK_REALTIME); like the CUPTI path
 * (p3d_gpu_clock.c) the shim pairs that clock with CLOCK_MONOTONIC, at
 * the first init and again every second, each pairing a CLOCK_SYNC record
 * (device P3D_PLUGIN_CLOCK_DEVICE).  How late NCCL delivered the stops
 * is kept (min/max) for the closing note: a negative lag would mean the
 * clock assumption is wrong.
 *
 * Every callback returns ncclSuccess, never blocks, never allocates
 * except one context per communicator at init; events it cannot place
 * get a NULL handle.  Proxy events (P3D_PLUGIN_PROXY) go to
 * p3d_plugin_proxy.c, for hang reports; network-plugin events are not
 * requested.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "p3d_gpu.h"
#include "p3d_nccl_profiler_abi.h"
#include "p3d_plugin.h"
#include "p3d_shim.h"

#define P3D_PLUGIN_CLOCK_DEVICE (-2)  /* CLOCK_SYNC: NCCL's globaltimer */
#define OP_SLOTS 4096
#define OP_TRIES 8
#define CLOCK_EVERY_NS 1000000000ull
#define MASK (P3D_NP_COLL | P3D_NP_P2P | P3D_NP_KERNEL_CH)
/* NCCL 2.28+ starts the API events for MASK already (v2.28.9
 * src/plugin/profiler.cc:267,292); asking says we rely on them. */
#define MASK_V5 (MASK | P3D_NP_COLL_API | P3D_NP_P2P_API)
/* Where network transfers stand, for hang reports (p3d_plugin_proxy.c). */
#define MASK_PROXY (P3D_NP_PROXY_OP | P3D_NP_PROXY_STEP)

enum { OP_FREE, OP_LIVE };

/* One Coll/P2p task in flight; a KernelCh handle is its address + 1. */
struct plugin_op {
    _Atomic int state;
    _Atomic int task_stopped;
    _Atomic int emitted;
    int replay;                     /* a graph replay's task: no record */
    uint32_t expected;              /* the task's nChannels (>= 1) */
    _Atomic uint32_t ch_started;
    _Atomic uint32_t ch_stopped;
    uint64_t op_id;
    uint64_t t_claim;               /* host ns of its NCCL call (join) */
    const void *ctx;
    _Atomic uint64_t start;         /* earliest channel start (GPU ns) */
    _Atomic uint64_t stop;          /* latest channel stop */
} __attribute__((aligned(64)));

struct plugin_ctx {
    uint64_t comm;                  /* NCCL's commHash = our comm_hash */
};

static struct plugin_op plugin_ops[OP_SLOTS];
static _Atomic uint64_t plugin_cursor;
static _Atomic int plugin_n_inits, plugin_abi;
static _Atomic uint64_t plugin_n_ops, plugin_n_unjoined, plugin_n_full;
static _Atomic int64_t plugin_lag_min = INT64_MAX, plugin_lag_max = INT64_MIN;
/* Causal bounds of host - gpu (plugin_causal), and how often they moved
 * the paired offset, by how much at most. */
static _Atomic int64_t plugin_off_lo = INT64_MIN, plugin_off_hi = INT64_MAX;
static _Atomic uint64_t plugin_n_moved;
static _Atomic int64_t plugin_moved_max;
/* Graph replays: tasks seen, those whose channels all stopped, their
 * summed kernel time (earliest channel start to latest stop, GPU ns). */
static _Atomic uint64_t plugin_n_replays, plugin_n_replays_timed;
static _Atomic uint64_t plugin_replay_ns;
static _Atomic int64_t plugin_offset;         /* host = gpu + offset */
static _Atomic uint64_t plugin_clock_at;      /* 0 = never paired */
static _Atomic int plugin_clock_busy;

int p3d_plugin_inits(void)
{
    return atomic_load(&plugin_n_inits);
}

int p3d_plugin_version(void)
{
    return atomic_load(&plugin_abi);
}

/* The GPU's globaltimer as the host sees it: raw CLOCK_REALTIME ns. */
static uint64_t plugin_wall(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Re-pair the clocks if a second passed (one thread at a time). */
static void plugin_clock_update(uint64_t now)
{
    struct p3d_clock_map m;
    int idle = 0;

    if (now - atomic_load(&plugin_clock_at) < CLOCK_EVERY_NS &&
        atomic_load(&plugin_clock_at) != 0)
        return;
    if (!atomic_compare_exchange_strong(&plugin_clock_busy, &idle, 1))
        return;
    if (p3d_clock_pair(&m, plugin_wall, P3D_PLUGIN_CLOCK_DEVICE, 5) == 0) {
        atomic_store(&plugin_offset, m.offset);
        atomic_store(&plugin_clock_at, now ? now : 1);
    }
    atomic_store(&plugin_clock_busy, 0);
}

static void plugin_max(_Atomic int64_t *a, int64_t v)
{
    int64_t cur = atomic_load(a);

    while (v > cur && !atomic_compare_exchange_weak(a, &cur, v))
        ;
}

static void plugin_min(_Atomic int64_t *a, int64_t v)
{
    int64_t cur = atomic_load(a);

    while (v < cur && !atomic_compare_exchange_weak(a, &cur, v))
        ;
}

static void plugin_minmax(_Atomic int64_t *min, _Atomic int64_t *max,
                          int64_t v)
{
    plugin_min(min, v);
    plugin_max(max, v);
}

/*
 * Pairing the globaltimer with CLOCK_REALTIME is not enough: on the H200
 * it put kernels up to 0.7 ms off, by a different amount each run
 * (README, "NCCL op times from NCCL's profiler plugin").  Causality bounds
 * host = gpu + offset, as between hosts (analyzer/time/p3d_clock.c): a
 * task's kernel starts after its NCCL call (lo: t_claim - start) and ends
 * before we hear of its end (hi: now - stop).  The paired offset
 * is kept when it lies within the bounds of all ops so far, else moved to
 * the nearest bound; bounds that contradict each other (the clocks
 * drifted apart) start again from this op's.
 */
static int64_t plugin_causal(int64_t off, int64_t lo, int64_t hi)
{
    int64_t l, h, use;

    plugin_max(&plugin_off_lo, lo);
    plugin_min(&plugin_off_hi, hi);
    l = atomic_load(&plugin_off_lo);
    h = atomic_load(&plugin_off_hi);
    if (l > h) {
        atomic_store(&plugin_off_lo, lo);
        atomic_store(&plugin_off_hi, hi);
        l = lo;
        h = hi;
    }
    use = off < l ? l : off > h ? h : off;
    if (use != off) {
        atomic_fetch_add_explicit(&plugin_n_moved, 1, memory_order_relaxed);
        plugin_max(&plugin_moved_max, use > off ? use - off : off - use);
    }
    return use;
}

/* A replay counts as timed only with stamps NCCL filled in: NCCL 2.28.9
 * on the H200 sent every replay's KernelCh events with zero timers. */
static void plugin_replay_done(struct plugin_op *o)
{
    uint64_t rs = atomic_load(&o->start), re = atomic_load(&o->stop);

    if (rs == 0 || rs == UINT64_MAX || re <= rs)
        return;
    atomic_fetch_add_explicit(&plugin_n_replays_timed, 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&plugin_replay_ns, re - rs,
                              memory_order_relaxed);
}

static void plugin_emit(struct plugin_op *o)
{
    uint64_t now = p3d_now();
    int64_t off, rs, re;
    uint64_t s, e;

    if (o->replay) {
        plugin_replay_done(o);
        return;
    }
    plugin_clock_update(now);
    off = atomic_load(&plugin_offset);
    rs = (int64_t)atomic_load(&o->start);
    re = (int64_t)atomic_load(&o->stop);
    /* the pairing's own lag, before the bounds move it */
    plugin_minmax(&plugin_lag_min, &plugin_lag_max,
                  (int64_t)now - (re + off));
    if (rs > 0 && re >= rs && o->t_claim) /* stamps NCCL filled in */
        off = plugin_causal(off, (int64_t)o->t_claim - rs,
                            (int64_t)now - re);
    s = (uint64_t)(rs + off);
    e = (uint64_t)(re + off);
    p3d_gpu_op_write(P3D_GPU_SRC_PLUGIN, o->op_id, s, e);
    atomic_fetch_add_explicit(&plugin_n_ops, 1, memory_order_relaxed);
}

static void plugin_op_free(struct plugin_op *o)
{
    atomic_store_explicit(&o->state, OP_FREE, memory_order_release);
}

/* Emit and free once the task stopped and all its channels stopped. */
static void plugin_op_check(struct plugin_op *o)
{
    uint32_t n = atomic_load(&o->ch_stopped);
    int zero = 0;

    if (!atomic_load(&o->task_stopped) || n < o->expected ||
        n != atomic_load(&o->ch_started))
        return;
    if (!atomic_compare_exchange_strong(&o->emitted, &zero, 1))
        return;
    plugin_emit(o);
    plugin_op_free(o);
}

static struct plugin_op *plugin_op_claim(const void *ctx, uint64_t op_id,
                                         uint32_t channels, uint64_t t_call)
{
    int i;

    for (i = 0; i < OP_TRIES; i++) {
        uint64_t k = atomic_fetch_add(&plugin_cursor, 1) % OP_SLOTS;
        struct plugin_op *o = &plugin_ops[k];
        int st = OP_FREE;

        if (!atomic_compare_exchange_strong(&o->state, &st, OP_LIVE))
            continue;
        o->op_id = op_id;
        o->replay = 0;
        o->t_claim = t_call;
        o->ctx = ctx;
        o->expected = channels ? channels : 1;
        atomic_store(&o->task_stopped, 0);
        atomic_store(&o->emitted, 0);
        atomic_store(&o->ch_started, 0);
        atomic_store(&o->ch_stopped, 0);
        atomic_store(&o->start, UINT64_MAX);
        atomic_store(&o->stop, 0);
        return o;
    }
    atomic_fetch_add_explicit(&plugin_n_full, 1, memory_order_relaxed);
    return NULL;
}

/* The op object a handle names, or NULL; *channel: a KernelCh handle. */
static struct plugin_op *plugin_op_of(const void *h, int *channel)
{
    uintptr_t p = (uintptr_t)h, base = (uintptr_t)plugin_ops;

    *channel = (int)(p & 1);
    p &= ~(uintptr_t)1;
    if (p < base || p >= base + sizeof(plugin_ops) ||
        (p - base) % sizeof(struct plugin_op) != 0)
        return NULL;
    return (struct plugin_op *)p;
}

/* ---- the version-independent callbacks -------------------------------- */

static const char *const plugin_funcs[] = {
    [P3D_OP_ALLREDUCE] = "AllReduce", [P3D_OP_REDUCESCATTER] = "ReduceScatter",
    [P3D_OP_ALLGATHER] = "AllGather", [P3D_OP_BROADCAST] = "Broadcast",
    [P3D_OP_REDUCE] = "Reduce",       [P3D_OP_SEND] = "Send",
    [P3D_OP_RECV] = "Recv",
};

/* Our op kind of NCCL's function name; -1 if not one we join. */
static int plugin_func(const char *name)
{
    size_t i;

    for (i = 0; name && i < sizeof(plugin_funcs) / sizeof(*plugin_funcs);
         i++)
        if (plugin_funcs[i] && strcmp(plugin_funcs[i], name) == 0)
            return (int)i;
    return -1;
}

/*
 * Whether this communicator's events are ours to take: the plugin is
 * wanted, recording is on, and our wrappers see the process's NCCL
 * calls.  A decline leaves the mask as NCCL set it, so NCCL sends
 * nothing.
 */
static int plugin_takes(void)
{
    return p3d_plugin_env_wanted() && p3d_core_enabled() &&
           p3d_plugin_env_interposes();
}

static int plugin_init(void **context, uint64_t comm, int *mask, int abi)
{
    struct plugin_ctx *c = NULL;

    if (plugin_takes())
        c = calloc(1, sizeof(*c));
    *context = c;
    if (c == NULL)
        return P3D_NP_SUCCESS;      /* NCCL goes on without us */
    c->comm = comm;
    if (mask)
        *mask = (abi >= 5 ? MASK_V5 : MASK) |
                (p3d_plugin_env_proxy() ? MASK_PROXY : 0);
    atomic_store(&plugin_abi, abi);
    p3d_plugin_join_use_api(abi >= 5);
    plugin_clock_update(p3d_now());
    atomic_fetch_add(&plugin_n_inits, 1);
    return P3D_NP_SUCCESS;
}

static void plugin_start_task(struct plugin_ctx *c, void **h, int kind,
                              int32_t peer, uint64_t seq, uint32_t channels)
{
    uint64_t t_call = 0;
    uint64_t id = p3d_plugin_join_take(c->comm, (uint8_t)kind, peer, seq,
                                          &t_call);

    if (id == 0) {
        atomic_fetch_add_explicit(&plugin_n_unjoined, 1,
                                  memory_order_relaxed);
        return;
    }
    *h = plugin_op_claim(c, id, channels, t_call);
}

/*
 * v5+: the task's parent is its API event's handle (p3d_plugin_join.c):
 * an eager op of ours, a graph replay, or nothing of ours.
 */
static void plugin_start_by_parent(struct plugin_ctx *c, void **h, int kind,
                                   const void *parent, uint32_t channels)
{
    uint64_t t_call = 0;
    int replay;
    uint64_t id = p3d_plugin_join_parent(parent, (uint8_t)kind, &t_call,
                                         &replay);

    if (replay) {
        atomic_fetch_add_explicit(&plugin_n_replays, 1,
                                  memory_order_relaxed);
        *h = plugin_op_claim(c, 0, channels, 0);
        if (*h)
            ((struct plugin_op *)*h)->replay = 1;
        return;
    }
    if (id == 0) {
        atomic_fetch_add_explicit(&plugin_n_unjoined, 1,
                                  memory_order_relaxed);
        return;
    }
    *h = plugin_op_claim(c, id, channels, t_call);
}

static int plugin_by_api(void)
{
    return atomic_load_explicit(&plugin_abi, memory_order_relaxed) >= 5;
}

static void plugin_start_coll(struct plugin_ctx *c, void **h, void *parent,
                              const struct p3d_np_coll *d)
{
    int kind = plugin_func(d->func);

    if (kind < 0 || kind == P3D_OP_SEND || kind == P3D_OP_RECV)
        return;
    if (plugin_by_api())
        plugin_start_by_parent(c, h, kind, parent, d->n_channels);
    else
        plugin_start_task(c, h, kind, -1, d->seq_number, d->n_channels);
}

static void plugin_start_p2p(struct plugin_ctx *c, void **h, void *parent,
                             const struct p3d_np_p2p *d)
{
    int kind = plugin_func(d->func);
    uint64_t ord;

    if (kind != P3D_OP_SEND && kind != P3D_OP_RECV)
        return;
    if (plugin_by_api()) {
        plugin_start_by_parent(c, h, kind, parent, d->n_channels);
        return;
    }
    ord = p3d_plugin_join_p2p_next(c->comm, (uint8_t)kind, d->peer);
    if (ord != UINT64_MAX)
        plugin_start_task(c, h, kind, d->peer, ord, d->n_channels);
}

static void plugin_start_channel(void **h, void *parent,
                                 const struct p3d_np_kernel_ch *d)
{
    int ch;
    struct plugin_op *o = plugin_op_of(parent, &ch);
    uint64_t cur;

    if (o == NULL || ch || atomic_load(&o->state) != OP_LIVE)
        return;
    cur = atomic_load(&o->start);
    while (d->p_timer < cur &&
           !atomic_compare_exchange_weak(&o->start, &cur, d->p_timer))
        ;
    atomic_fetch_add(&o->ch_started, 1);
    *h = (char *)o + 1;
}

/* The op id of a task handle we gave out (a ProxyOp's parent), else 0. */
static uint64_t plugin_task_op_id(const void *parent)
{
    int ch;
    struct plugin_op *o = plugin_op_of(parent, &ch);

    if (o == NULL || ch || atomic_load(&o->state) != OP_LIVE || o->replay)
        return 0;
    return o->op_id;
}

static void plugin_start(void *context, void **h, uint64_t type,
                         void *parent, const union p3d_np_descr_body *u)
{
    struct plugin_ctx *c = context;

    *h = NULL;
    if (c == NULL)
        return;
    if (type == P3D_NP_COLL)
        plugin_start_coll(c, h, parent, &u->coll);
    else if (type == P3D_NP_P2P)
        plugin_start_p2p(c, h, parent, &u->p2p);
    else if (type == P3D_NP_COLL_API && plugin_by_api())
        *h = p3d_plugin_join_api(c->comm,
                                 (uint8_t)plugin_func(u->coll_api.func),
                                 u->coll_api.graph_captured);
    else if (type == P3D_NP_P2P_API && plugin_by_api())
        *h = p3d_plugin_join_api(c->comm,
                                 (uint8_t)plugin_func(u->p2p_api.func),
                                 u->p2p_api.graph_captured);
    else if (type == P3D_NP_KERNEL_CH)
        plugin_start_channel(h, parent, &u->kernel_ch);
    else if (type == P3D_NP_PROXY_OP)
        p3d_plugin_proxy_op_start(h, c->comm, plugin_task_op_id(parent),
                                  &u->proxy_op);
    else if (type == P3D_NP_PROXY_STEP)
        p3d_plugin_proxy_step_start(h, parent, u->proxy_step.step);
}

static int plugin_stop(void *h)
{
    int ch;
    struct plugin_op *o = plugin_op_of(h, &ch);

    if (o == NULL) {
        p3d_plugin_proxy_stop(h);   /* ignores handles not its own */
        return P3D_NP_SUCCESS;
    }
    if (ch)
        atomic_fetch_add(&o->ch_stopped, 1);
    else
        atomic_store(&o->task_stopped, 1);
    plugin_op_check(o);
    return P3D_NP_SUCCESS;
}

static int plugin_record(void *h, int state, union p3d_np_state_args *a)
{
    int ch;
    struct plugin_op *o = plugin_op_of(h, &ch);
    uint64_t cur;

    if (o == NULL) {
        p3d_plugin_proxy_record(h, state);
        return P3D_NP_SUCCESS;
    }
    if (!ch || state != P3D_NP_STATE_KERNEL_CH_STOP || !a)
        return P3D_NP_SUCCESS;
    cur = atomic_load(&o->stop);
    while (a->kernel_ch_p_timer > cur &&
           !atomic_compare_exchange_weak(&o->stop, &cur,
                                         a->kernel_ch_p_timer))
        ;
    return P3D_NP_SUCCESS;
}

/*
 * The communicator ends (NCCL stopped delivering its events): ops with
 * stopped channels get what they have, the others are forgotten.
 */
static int plugin_finalize(void *context)
{
    size_t i;

    if (context == NULL)
        return P3D_NP_SUCCESS;
    for (i = 0; i < OP_SLOTS; i++) {
        struct plugin_op *o = &plugin_ops[i];
        int zero = 0;

        if (atomic_load(&o->state) != OP_LIVE || o->ctx != context)
            continue;
        if (atomic_load(&o->ch_stopped) > 0 &&
            atomic_compare_exchange_strong(&o->emitted, &zero, 1))
            plugin_emit(o);
        plugin_op_free(o);
    }
    free(context);
    return P3D_NP_SUCCESS;
}

void p3d_plugin_note(void)
{
    uint64_t put, lost;
    int64_t lo = atomic_load(&plugin_lag_min);
    int64_t hi = atomic_load(&plugin_lag_max);

    p3d_plugin_join_counts(&put, &lost);
    if (lo > hi)
        lo = hi = 0;
    p3d_note("plugin: NCCL ops timed by the NCCL profiler plugin (v%d, %d "
             "communicators): %llu ops timed of %llu registered, %llu "
             "events not joined, %llu lost; kernel end to callback "
             "%.1f..%.1f us by the paired clocks; %llu ops moved onto "
             "causal bounds, by up to %.1f us",
             p3d_plugin_version(), p3d_plugin_inits(),
             (unsigned long long)atomic_load(&plugin_n_ops),
             (unsigned long long)put,
             (unsigned long long)atomic_load(&plugin_n_unjoined),
             (unsigned long long)(lost + atomic_load(&plugin_n_full)),
             (double)lo / 1e3, (double)hi / 1e3,
             (unsigned long long)atomic_load(&plugin_n_moved),
             (double)atomic_load(&plugin_moved_max) / 1e3);
    /* a second line: a note holds 255 bytes, the first is near that */
    p3d_note("plugin graphs: %llu graph-captured calls, %llu replayed tasks "
             "(%llu with kernel times, %.1f us in all), none attached to "
             "an op",
             (unsigned long long)p3d_plugin_join_captured(),
             (unsigned long long)atomic_load(&plugin_n_replays),
             (unsigned long long)atomic_load(&plugin_n_replays_timed),
             (double)atomic_load(&plugin_replay_ns) / 1e3);
}

/* ---- the exported tables ---------------------------------------------- */

static int plugin_init_v5(void **context, uint64_t comm_id, int *mask,
                          const char *name, int n_nodes, int nranks,
                          int rank, p3d_np_logger_fn log)
{
    (void)name, (void)n_nodes, (void)nranks, (void)rank, (void)log;
    return plugin_init(context, comm_id, mask, 5);
}

static int plugin_start_v5(void *context, void **h,
                           struct p3d_np_descr_v5 *d)
{
    if (h != NULL && d != NULL)
        plugin_start(context, h, d->type, d->parent_obj, &d->u);
    return P3D_NP_SUCCESS;
}

static int plugin_init_v6(void **context, uint64_t comm_id, int *mask,
                          const char *name, int n_nodes, int nranks,
                          int rank, p3d_np_logger_fn log)
{
    (void)name, (void)n_nodes, (void)nranks, (void)rank, (void)log;
    return plugin_init(context, comm_id, mask, 6);
}

static int plugin_init_v4(void **context, int *mask, const char *name,
                          uint64_t comm_hash, int n_nodes, int nranks,
                          int rank, p3d_np_logger_fn log)
{
    (void)name, (void)n_nodes, (void)nranks, (void)rank, (void)log;
    return plugin_init(context, comm_hash, mask, 4);
}

/* v4's union has the same members at the same offsets as v5's. */
static int plugin_start_v4(void *context, void **h,
                           struct p3d_np_descr_v4 *d)
{
    if (h != NULL && d != NULL)
        plugin_start(context, h, d->type, d->parent_obj,
                     (const union p3d_np_descr_body *)(void *)&d->u);
    return P3D_NP_SUCCESS;
}

/* v6's descriptor is v5's with copy-engine members we never read (their
 * event types are not in our mask): the v5 start callback serves it. */
P3D_EXPORT struct p3d_np_v6 ncclProfiler_v6 = {
    "p3dtrace", plugin_init_v6, plugin_start_v5, plugin_stop, plugin_record,
    plugin_finalize,
};

P3D_EXPORT struct p3d_np_v5 ncclProfiler_v5 = {
    "p3dtrace", plugin_init_v5, plugin_start_v5, plugin_stop, plugin_record,
    plugin_finalize,
};

P3D_EXPORT struct p3d_np_v4 ncclProfiler_v4 = {
    "p3dtrace", plugin_init_v4, plugin_start_v4, plugin_stop, plugin_record,
    plugin_finalize,
};
