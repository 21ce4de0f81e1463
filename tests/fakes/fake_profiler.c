/*
 * fake_profiler.c - the fake NCCL's side of NCCL's profiler plugin API,
 * so CI tests the shim's plugin path (issue 24) without a GPU.
 *
 * Loading follows NCCL 2.28's loader (docs/research/nccl-profiler-abi.md
 * section 5): NCCL_PROFILER_PLUGIN unset -> "libnccl-profiler.so";
 * "none" -> no plugin; else dlopen(value, RTLD_NOW | RTLD_LOCAL), then
 * "libnccl-profiler-<value>.so" for a bare name; symbols ncclProfiler_v5,
 * then _v4.  Test knobs: P3D_FAKE_NO_PROFILER=1 loads nothing (an NCCL
 * without plugin support); P3D_FAKE_PROFILER_V4=1 looks up _v4 only;
 * P3D_FAKE_PROFILER_V6=1 looks up _v6 first, as NCCL 2.29+ does (v2.30.7
 * src/plugin/profiler.cc:73-75); P3D_FAKE_GRAPH: fake_profiler.h.
 *
 * With v5/v6, each API call first sends its CollApi/P2pApi event on the
 * caller's thread (fake_prof_api); its handle is the parent of the
 * call's task event.  Events per launch, as NCCL 2.28 sends them: a
 * Group, then per task a
 * Coll (seqNumber per communicator and function) or a P2p, started and
 * stopped at once (NCCL stops them at enqueue), then per task its
 * KernelCh children: start with the channel's GPU start in pTimer,
 * recordEventState(KernelChStop) with its stop, stop.  The fake GPU's
 * globaltimer is CLOCK_REALTIME (what the real one follows): the task's
 * [t0, t_end] on CLOCK_MONOTONIC is shifted by realtime - monotonic.
 * Channels start and stop at different times inside [t0, t_end], the
 * earliest start and the latest stop on channels other than the first.
 * With P3D_FAKE_PROFILER_LOG=FILE, each task sent appends a line
 * "pid comm func peer seq nch start stop": the earliest start and latest
 * stop it sent, back on CLOCK_MONOTONIC; a replayed task's line ends in
 * " replay", and each captured call writes "pid comm func -1 - 0 0 0
 * captured" when it is made.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_profiler.h"
#include "p3d_nccl_profiler_abi.h"

#define FAKE_PROF_CHANNELS 4

static pthread_once_t prof_once = PTHREAD_ONCE_INIT;
static struct p3d_np_v5 *prof_v5; /* the v5 or (same layout) v6 table */
static int prof_abi;
static struct p3d_np_v4 *prof_v4;
static int prof_mask;             /* NCCL's one global activation mask */
static FILE *prof_log;
static __thread void *prof_group; /* the launch's Group handle */
static __thread struct fake_prof_comm *prof_group_comm;

static const char *const prof_func_names[FAKE_PROF_FUNCS] = {
    "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
    "SendRecv", "Send", "Recv", "AlltoAll", "Scatter", "Gather",
};

static void *prof_open(const char *env)
{
    char name[512];
    void *h;

    if (env == NULL)
        return dlopen("libnccl-profiler.so", RTLD_NOW | RTLD_LOCAL);
    if (strcasecmp(env, "none") == 0)
        return NULL;
    h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL && strchr(env, '/') == NULL) {
        snprintf(name, sizeof(name), "libnccl-profiler-%s.so", env);
        h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    }
    return h;
}

static void prof_load(void)
{
    const char *off = getenv("P3D_FAKE_NO_PROFILER");
    const char *v4 = getenv("P3D_FAKE_PROFILER_V4");
    const char *v6 = getenv("P3D_FAKE_PROFILER_V6");
    const char *log = getenv("P3D_FAKE_PROFILER_LOG");
    void *h;

    if (off != NULL && strcmp(off, "1") == 0)
        return;
    h = prof_open(getenv("NCCL_PROFILER_PLUGIN"));
    if (h == NULL)
        return;
    if (v6 != NULL && strcmp(v6, "1") == 0) {
        prof_v5 = dlsym(h, "ncclProfiler_v6");
        prof_abi = prof_v5 ? 6 : 0;
    }
    if (prof_v5 == NULL && (v4 == NULL || strcmp(v4, "1") != 0)) {
        prof_v5 = dlsym(h, "ncclProfiler_v5");
        prof_abi = prof_v5 ? 5 : 0;
    }
    if (prof_v5 == NULL)
        prof_v4 = dlsym(h, "ncclProfiler_v4");
    if (log != NULL && *log != '\0' && (prof_v5 || prof_v4)) {
        prof_log = fopen(log, "a");
        if (prof_log != NULL)
            setvbuf(prof_log, NULL, _IOLBF, 0);
    }
}

void fake_prof_init(struct fake_prof_comm *pc, uint64_t hash,
                    const char *name, int nranks, int rank)
{
    memset(pc, 0, sizeof(*pc));
    pc->hash = hash;
    pc->rank = rank;
    pc->nranks = nranks;
    pthread_once(&prof_once, prof_load);
    /* as in 2.28, a failed init goes on without the profiler */
    if (prof_v5 != NULL)
        prof_v5->init(&pc->ctx, hash, &prof_mask, name, 1, nranks, rank,
                      NULL);
    else if (prof_v4 != NULL)
        prof_v4->init(&pc->ctx, &prof_mask, name, hash, 1, nranks, rank,
                      NULL);
}

void fake_prof_fini(struct fake_prof_comm *pc)
{
    if (pc->ctx == NULL)
        return;
    if (prof_v5 != NULL)
        prof_v5->finalize(pc->ctx);
    else if (prof_v4 != NULL)
        prof_v4->finalize(pc->ctx);
    pc->ctx = NULL;
}

/* One startEvent, through whichever table was loaded. */
static void *prof_start(struct fake_prof_comm *pc, uint64_t type,
                        void *parent, const union p3d_np_descr_body *u)
{
    void *h = NULL;

    if (prof_v5 != NULL) {
        struct p3d_np_descr_v5 d;

        memset(&d, 0, sizeof(d));
        d.type = type;
        d.parent_obj = parent;
        d.rank = pc->rank;
        d.u = *u;
        prof_v5->start_event(pc->ctx, &h, &d);
    } else {
        struct p3d_np_descr_v4 d;

        memset(&d, 0, sizeof(d));
        d.type = (uint8_t)type;
        d.parent_obj = parent;
        d.rank = pc->rank;
        memcpy(&d.u, u, sizeof(d.u));
        prof_v4->start_event(pc->ctx, &h, &d);
    }
    return h;
}

static void prof_stop(void *h)
{
    if (h == NULL)
        return;
    if (prof_v5 != NULL)
        prof_v5->stop_event(h);
    else
        prof_v4->stop_event(h);
}

static void prof_record_stop(void *h, uint64_t gpu_ns)
{
    union p3d_np_state_args a = { .kernel_ch_p_timer = gpu_ns };

    if (h == NULL)
        return;
    if (prof_v5 != NULL)
        prof_v5->record_event_state(h, P3D_NP_STATE_KERNEL_CH_STOP, &a);
    else
        prof_v4->record_event_state(h, P3D_NP_STATE_KERNEL_CH_STOP, &a);
}

static int prof_on(const struct fake_prof_comm *pc)
{
    return pc->ctx != NULL && (prof_v5 != NULL || prof_v4 != NULL);
}

static void prof_record(void *h, int state)
{
    union p3d_np_state_args a;

    if (h == NULL)
        return;
    memset(&a, 0, sizeof(a));
    if (prof_v5 != NULL)
        prof_v5->record_event_state(h, state, &a);
    else
        prof_v4->record_event_state(h, state, &a);
}

/*
 * A network transfer as NCCL's proxy thread reports it: a ProxyOp (its
 * parent would be the task; the fake has none yet, so NULL) and its first
 * step, waiting for the peer's data (a receive) or for the receiver's
 * buffer (a send); fake_prof_proxy_end finishes both.  Sent only when the
 * plugin asks for proxy events (every transfer counts as a network one).
 */
void fake_prof_proxy_begin(struct fake_prof_comm *pc, int is_send, int peer,
                           struct fake_prof_proxy *px)
{
    union p3d_np_descr_body u;

    px->op = px->step = NULL;
    if (!prof_on(pc) || !(prof_mask & P3D_NP_PROXY_OP))
        return;
    memset(&u, 0, sizeof(u));
    u.proxy_op.pid = (int32_t)getpid();
    u.proxy_op.channel_id = 0;
    u.proxy_op.peer = peer;
    u.proxy_op.n_steps = 1;
    u.proxy_op.chunk_size = 1 << 17;
    u.proxy_op.is_send = is_send;
    px->op = prof_start(pc, P3D_NP_PROXY_OP, NULL, &u);
    if (px->op == NULL || !(prof_mask & P3D_NP_PROXY_STEP))
        return;
    memset(&u, 0, sizeof(u));
    u.proxy_step.step = 0;
    px->step = prof_start(pc, P3D_NP_PROXY_STEP, px->op, &u);
    prof_record(px->step, is_send ? P3D_NP_STEP_SEND_PEER_WAIT
                                  : P3D_NP_STEP_RECV_WAIT);
}

int fake_prof_proxy_wanted(void)
{
    return (prof_v5 != NULL || prof_v4 != NULL) &&
           (prof_mask & P3D_NP_PROXY_OP);
}

void fake_prof_proxy_end(struct fake_prof_proxy *px)
{
    prof_stop(px->step);
    prof_stop(px->op);
    px->op = px->step = NULL;
}

void fake_prof_launch_begin(struct fake_prof_comm *pc)
{
    union p3d_np_descr_body none;

    if (!prof_on(pc) || !(prof_mask & (P3D_NP_GROUP | P3D_NP_COLL |
                                       P3D_NP_P2P | P3D_NP_KERNEL_CH)))
        return;
    memset(&none, 0, sizeof(none));
    prof_group = prof_start(pc, P3D_NP_GROUP, NULL, &none);
    prof_group_comm = pc;
}

void fake_prof_launch_end(void)
{
    prof_stop(prof_group);
    prof_group = NULL;
    prof_group_comm = NULL;
}

/*
 * The fake globaltimer: CLOCK_MONOTONIC plus an epoch fixed at the first
 * call (CLOCK_REALTIME - CLOCK_MONOTONIC then).  A GPU's timer is set
 * from the host's wall clock and then runs on its own: it does not follow
 * the wall clock's later steps (this VM's CLOCK_REALTIME moves against
 * CLOCK_MONOTONIC by 0.5 ms steps, 5 ms a second), so neither does the
 * fake's.  P3D_FAKE_PROFILER_SKEW_NS=N makes it read N ns late (the
 * H200's ran up to 1.4 ms off the wall clock), the truth log staying true.
 */
static int64_t prof_epoch;
static pthread_once_t prof_epoch_once = PTHREAD_ONCE_INIT;

static void prof_epoch_init(void)
{
    struct timespec r, m;

    clock_gettime(CLOCK_MONOTONIC, &m);
    clock_gettime(CLOCK_REALTIME, &r);
    prof_epoch = ((int64_t)r.tv_sec - m.tv_sec) * 1000000000ll +
                 (r.tv_nsec - m.tv_nsec);
}

static int64_t prof_gpu_offset(void)
{
    const char *skew = getenv("P3D_FAKE_PROFILER_SKEW_NS");

    pthread_once(&prof_epoch_once, prof_epoch_init);
    return prof_epoch + (skew ? strtoll(skew, NULL, 10) : 0);
}

/* The task's channels: starts and stops spread inside [t0, t_end]. */
static void prof_channels(struct fake_prof_comm *pc, void *task, int nch,
                          uint64_t t0, uint64_t t_end, uint64_t *lo,
                          uint64_t *hi)
{
    uint64_t d = t_end > t0 ? (t_end - t0) / (2 * (uint64_t)nch) : 0;
    int64_t off = prof_gpu_offset();

    *lo = UINT64_MAX;
    *hi = 0;
    for (int k = 0; k < nch; k++) {
        union p3d_np_descr_body u;
        uint64_t s = t0 + (uint64_t)((k + nch - 1) % nch) * d;
        uint64_t e = t_end - (uint64_t)((k + nch - 2) % nch) * d;
        void *h;

        memset(&u, 0, sizeof(u));
        u.kernel_ch.channel_id = (uint8_t)k;
        u.kernel_ch.p_timer = (uint64_t)((int64_t)s + off);
        h = prof_start(pc, P3D_NP_KERNEL_CH, task, &u);
        prof_record_stop(h, (uint64_t)((int64_t)e + off));
        prof_stop(h);
        *lo = s < *lo ? s : *lo;
        *hi = e > *hi ? e : *hi;
    }
}

/* One task's events; replay: a persistent plan's (a graph replay). */
static void prof_task(struct fake_prof_comm *pc, int func, int peer,
                      size_t count, uint64_t t0, uint64_t t_end, void *api,
                      int replay)
{
    int p2p = func == 6 || func == 7;
    int nch = p2p ? 2 : FAKE_PROF_CHANNELS;
    int bump = !replay || prof_group != NULL || api != NULL;
    uint64_t seq = p2p ? 0 : bump ? atomic_fetch_add(&pc->seq[func], 1)
                                  : atomic_load(&pc->seq[func]);
    union p3d_np_descr_body u;
    uint64_t lo, hi;
    void *task;

    if (!prof_on(pc) || !(prof_mask & (P3D_NP_COLL | P3D_NP_P2P |
                                       P3D_NP_KERNEL_CH)))
        return;
    memset(&u, 0, sizeof(u));
    if (p2p) {
        u.p2p.func = prof_func_names[func];
        u.p2p.count = count;
        u.p2p.peer = peer;
        u.p2p.n_channels = (uint8_t)nch;
    } else {
        u.coll.seq_number = seq;
        u.coll.func = prof_func_names[func];
        u.coll.count = count;
        u.coll.n_channels = (uint8_t)nch;
    }
    /* v5+: the parent is the call's API event (v2.28.9
     * src/plugin/profiler.cc:403,438); v4 has none: the Group */
    task = prof_start(pc, p2p ? P3D_NP_P2P : P3D_NP_COLL,
                      prof_v5 != NULL ? api : prof_group, &u);
    prof_stop(task);      /* NCCL: once the proxy ops are posted */
    if (!(prof_mask & P3D_NP_KERNEL_CH))
        return;
    prof_channels(pc, task, nch, t0, t_end, &lo, &hi);
    if (prof_log != NULL)
        fprintf(prof_log, "%d %016llx %s %d %llu %d %llu %llu%s\n",
                (int)getpid(), (unsigned long long)pc->hash,
                prof_func_names[func], peer, (unsigned long long)seq, nch,
                (unsigned long long)lo, (unsigned long long)hi,
                replay ? " replay" : "");
}

void fake_prof_task(struct fake_prof_comm *pc, int func, int peer,
                    size_t count, uint64_t t0, uint64_t t_end, void *api)
{
    prof_task(pc, func, peer, count, t0, t_end, api, 0);
}

void *fake_prof_api(struct fake_prof_comm *pc, int func, size_t count,
                    int captured)
{
    int p2p = func == 6 || func == 7;
    union p3d_np_descr_body u;
    void *h;

    if (!prof_on(pc) || prof_v5 == NULL)
        return NULL;
    memset(&u, 0, sizeof(u));
    if (p2p) {
        u.p2p_api.func = prof_func_names[func];
        u.p2p_api.count = count;
        u.p2p_api.graph_captured = captured != 0;
    } else {
        u.coll_api.func = prof_func_names[func];
        u.coll_api.count = count;
        u.coll_api.graph_captured = captured != 0;
    }
    h = prof_start(pc, p2p ? P3D_NP_P2P_API : P3D_NP_COLL_API, NULL, &u);
    prof_stop(h);        /* NCCL: at the end of collTaskAppend */
    return h;
}

/* P3D_FAKE_GRAPH's three numbers; 0 if unset or malformed. */
static int prof_graph_knob(uint64_t *first, uint64_t *len, uint64_t *reps)
{
    const char *e = getenv("P3D_FAKE_GRAPH");
    unsigned long long a, b, c;

    if (e == NULL || sscanf(e, "%llu:%llu:%llu", &a, &b, &c) != 3 ||
        b == 0 || b > FAKE_PROF_GRAPH_MAX)
        return 0;
    *first = a;
    *len = b;
    *reps = c;
    return 1;
}

int fake_prof_capturing(struct fake_prof_comm *pc, int func, size_t count,
                        int in_group)
{
    uint64_t first, len, reps, n;

    if (func > 4 || count == 0 || in_group || pc->nranks < 2 ||
        !prof_graph_knob(&first, &len, &reps))
        return 0;
    n = pc->n_calls++;
    return n >= first && n < first + len;
}

struct prof_replay_job {
    struct fake_prof_comm *pc;
    uint64_t n;
};

/* The graph's host node at each replay: what hostStreamPlanTask sends. */
static void *prof_replay_thread(void *arg)
{
    struct prof_replay_job *j = arg;
    struct timespec ts;

    for (uint64_t r = 0; r < j->n; r++) {
        fake_prof_launch_begin(j->pc);
        for (int i = 0; i < j->pc->n_graph; i++) {
            struct fake_prof_captured *g = &j->pc->graph[i];
            uint64_t t0;

            clock_gettime(CLOCK_MONOTONIC, &ts);
            t0 = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
            prof_task(j->pc, g->func, -1, g->count, t0,
                      t0 + 40000 + 1000 * (uint64_t)i, g->api, 1);
        }
        fake_prof_launch_end();
    }
    return NULL;
}

void fake_prof_capture(struct fake_prof_comm *pc, int func, size_t count,
                       void *api)
{
    uint64_t first, len, reps;
    struct prof_replay_job j = { pc, 0 };
    pthread_t t;

    if (!prof_graph_knob(&first, &len, &reps) ||
        pc->n_graph >= FAKE_PROF_GRAPH_MAX)
        return;
    pc->graph[pc->n_graph].func = func;
    pc->graph[pc->n_graph].count = count;
    pc->graph[pc->n_graph++].api = api;
    if (prof_log != NULL)
        fprintf(prof_log, "%d %016llx %s -1 - 0 0 0 captured\n",
                (int)getpid(), (unsigned long long)pc->hash,
                prof_func_names[func]);
    if ((uint64_t)pc->n_graph != len || !prof_on(pc))
        return;
    j.n = reps;
    if (pthread_create(&t, NULL, prof_replay_thread, &j) == 0)
        pthread_join(t, NULL);
}
