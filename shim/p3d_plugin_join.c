/*
 * p3d_plugin_join.c - match the profiler plugin's Coll/P2p events to the
 * shim's op records (issue 24).
 *
 * NCCL numbers collectives per communicator and per NCCL function
 * (coll.seqNumber, 0-based, counted only for ops that become tasks: not
 * for empty ones nor on 1-rank communicators); the shim numbers them per
 * communicator.  P2p events carry no number, so both sides count them per
 * (communicator, Send/Recv, peer).  NCCL runs AlltoAll, Gather and
 * Scatter as Send/Recv tasks: the app side advances those counts the way
 * NCCL's taskAppend splits them, so later sends stay matched; those ops
 * themselves get no plugin GPU time (one op, many P2p events).
 *
 * The app thread puts (key -> op id) before the real call; the plugin
 * takes it when NCCL starts the task's event, later or on another thread.
 * Both tables are fixed, open-addressed with short probes; a full probe
 * overwrites (join) or gives up (counters), counted.
 *
 * That numbering breaks under CUDA graphs: a captured call is one of our
 * ops but gets no Coll event and no number at capture, and each replay
 * sends a Coll event carrying either the next eager op's number (NULL
 * Group/API handles) or a fresh one (docs/nccl-profiler-notes.md section
 * 1; NCCL v2.28.9 src/plugin/profiler.cc:419-427).  So with v5+ the join
 * goes through the API events instead (p3d_plugin_join_api): the op is
 * handed to its CollApi/P2pApi event on the calling thread, that event's
 * handle names it, and NCCL gives the handle back as the task's parentObj
 * (v2.28.9 src/enqueue.cc:2488, src/plugin/profiler.cc:403,438), also at
 * each replay, where it is the capture-time handle.  The v4 ABI has no
 * API events, so v4 keeps the numbers (and their graph limitation).
 */
#include <stdatomic.h>

#include "p3d_format.h"
#include "p3d_plugin.h"

#define JOIN_SLOTS 16384u      /* ops registered, not yet taken */
#define CTR_SLOTS 16384u       /* (comm, kind, peer) counters per side */
#define PROBE 8u
#define KEY_BUSY 1ull          /* a slot being written */
#define KEY_SET (1ull << 63)   /* every real key has it: never 0 or BUSY */

struct join_slot {
    _Atomic uint64_t key;
    uint64_t op_id;
    uint64_t t_put;        /* the op's t_enter: its kernel starts later */
};

struct ctr_slot {
    _Atomic uint64_t key;
    _Atomic uint64_t n;
};

/*
 * API handles: a ring of tickets, overwritten after API_SLOTS newer
 * calls (a Coll event that late is not joined, counted by the plugin).
 * A handle is API_TAG | ticket, not an address (NCCL only passes it
 * back); ticket 0 is the one "captured" handle.  x86-64 and AArch64
 * user pointers never have these top bits, so a handle is never mistaken
 * for one of the plugin's op objects.  Each slot is a small seqlock: the
 * writer claims it (ticket -> API_BUSY) before the fields, the reader
 * claims it back from its ticket only after reading them.  The writer's
 * claim is a compare-and-swap that gives way to a slot held by another
 * writer or holding a newer ticket: two calls API_SLOTS tickets apart
 * (one preempted mid-write) would otherwise mix one slot's fields, and
 * an op would get another's GPU time.  A call that gives way gets no
 * handle: its task is not joined, as one overwritten would not be.
 */
#define API_SLOTS 16384u
#define API_TAG 0xa5c0000000000000ull
#define API_TAG_MASK 0xfff0000000000000ull
#define API_BUSY UINT64_MAX    /* a writer is filling the slot */

struct api_slot {
    _Atomic uint64_t ticket;
    _Atomic uint64_t op_id;
    _Atomic uint64_t t_put;
    _Atomic uint8_t op;
};

/* The op our wrapper is about to hand to NCCL on this thread. */
struct join_inflight {
    uint64_t op_id;
    uint64_t t_enter;
    uint64_t comm;
    uint8_t op;
    uint8_t set;
};

static struct api_slot api_tab[API_SLOTS];
static _Atomic uint64_t api_cursor, api_captured;
static _Atomic int join_by_api;
static __thread struct join_inflight join_tls;

static struct join_slot join_tab[JOIN_SLOTS];
static struct ctr_slot ctr_app[CTR_SLOTS];    /* the shim's ops */
static struct ctr_slot ctr_plugin[CTR_SLOTS]; /* the plugin's P2p events */
static _Atomic uint64_t join_put, join_lost;

static uint64_t join_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static uint64_t join_class(uint64_t comm, uint8_t op, int32_t peer)
{
    return join_mix(comm ^ join_mix(((uint64_t)op << 32) |
                                    (uint32_t)(peer + 1))) | KEY_SET;
}

/* Next number of `cls` in `t` (0-based); UINT64_MAX if the table is full. */
static uint64_t ctr_next(struct ctr_slot *t, uint64_t cls)
{
    uint32_t i, at = (uint32_t)cls;

    for (i = 0; i < PROBE * 4; i++) {
        struct ctr_slot *c = &t[(at + i) % CTR_SLOTS];
        uint64_t k = atomic_load_explicit(&c->key, memory_order_acquire);

        if (k == 0 && atomic_compare_exchange_strong(&c->key, &k, cls))
            k = cls;
        if (k == cls)
            return atomic_fetch_add_explicit(&c->n, 1, memory_order_relaxed);
    }
    return UINT64_MAX;
}

static void join_put_key(uint64_t key, uint64_t op_id, uint64_t t_enter)
{
    struct join_slot *s = NULL;
    uint32_t i;

    for (i = 0; i < PROBE && s == NULL; i++) {
        struct join_slot *c = &join_tab[((uint32_t)key + i) % JOIN_SLOTS];
        uint64_t k = 0;

        if (atomic_compare_exchange_strong(&c->key, &k, KEY_BUSY))
            s = c;
    }
    if (s == NULL) {            /* overwrite: the oldest is likely stale */
        s = &join_tab[(uint32_t)key % JOIN_SLOTS];
        atomic_store(&s->key, KEY_BUSY);
        atomic_fetch_add_explicit(&join_lost, 1, memory_order_relaxed);
    }
    s->op_id = op_id;
    s->t_put = t_enter;
    atomic_store_explicit(&s->key, key, memory_order_release);
    atomic_fetch_add_explicit(&join_put, 1, memory_order_relaxed);
}

uint64_t p3d_plugin_join_take(uint64_t comm, uint8_t op, int32_t peer,
                                 uint64_t seq, uint64_t *t_put)
{
    uint64_t key = join_mix(join_class(comm, op, peer) + seq) | KEY_SET;
    uint32_t i;

    for (i = 0; i < PROBE; i++) {
        struct join_slot *c = &join_tab[((uint32_t)key + i) % JOIN_SLOTS];
        uint64_t k = atomic_load_explicit(&c->key, memory_order_acquire);
        uint64_t id, t;

        if (k != key)
            continue;
        id = c->op_id;
        t = c->t_put;
        /* still ours after the read: a writer re-marks BUSY first */
        if (atomic_compare_exchange_strong(&c->key, &k, 0)) {
            if (t_put)
                *t_put = t;
            return id;
        }
    }
    return 0;
}


static void join_put_op(uint64_t comm, uint8_t op, int32_t peer,
                        uint64_t op_id, uint64_t t_enter)
{
    uint64_t cls = join_class(comm, op, peer);
    uint64_t seq = ctr_next(ctr_app, cls);

    if (seq == UINT64_MAX) {
        atomic_fetch_add_explicit(&join_lost, 1, memory_order_relaxed);
        return;
    }
    join_put_key(join_mix(cls + seq) | KEY_SET, op_id, t_enter);
}

/* The Send/Recv tasks NCCL makes of AlltoAll, Gather, Scatter. */
static void join_split(const struct p3d_op_ctx *op)
{
    int32_t n = op->comm_nranks, r;
    int root = op->comm_rank == op->peer;

    for (r = 0; r < n; r++) {
        if (op->op == P3D_OP_ALLTOALL || (op->op == P3D_OP_SCATTER && root))
            ctr_next(ctr_app, join_class(op->comm_hash, P3D_OP_SEND, r));
        if (op->op == P3D_OP_ALLTOALL || (op->op == P3D_OP_GATHER && root))
            ctr_next(ctr_app, join_class(op->comm_hash, P3D_OP_RECV, r));
    }
    if (op->op == P3D_OP_GATHER)
        ctr_next(ctr_app, join_class(op->comm_hash, P3D_OP_SEND, op->peer));
    if (op->op == P3D_OP_SCATTER)
        ctr_next(ctr_app, join_class(op->comm_hash, P3D_OP_RECV, op->peer));
}

/* Whether NCCL makes exactly one task of `op`, with a Coll/P2p event. */
static int join_one_task(const struct p3d_op_ctx *op)
{
    if (op->op == P3D_OP_SEND || op->op == P3D_OP_RECV)
        return 1;
    return op->count != 0 && op->comm_nranks != 1 &&
           op->op != P3D_OP_ALLTOALL && op->op != P3D_OP_GATHER &&
           op->op != P3D_OP_SCATTER;
}

/* v5+: keep the op for the API event NCCL starts inside this call. */
static void join_op_api(const struct p3d_op_ctx *op, uint64_t t_enter)
{
    join_tls.set = 0;
    if (!join_one_task(op))
        return;
    join_tls.op_id = op->op_id;
    join_tls.t_enter = t_enter;
    join_tls.comm = op->comm_hash;
    join_tls.op = op->op;
    join_tls.set = 1;
    atomic_fetch_add_explicit(&join_put, 1, memory_order_relaxed);
}

void p3d_plugin_join_call_done(void)
{
    join_tls.set = 0; /* NCCL started no API event for it: not the next's */
}

void p3d_plugin_join_use_api(int on)
{
    atomic_store(&join_by_api, on);
}

/* Take slot s for ticket t, or give way (0): see API_BUSY. */
static int api_slot_claim(struct api_slot *s, uint64_t t)
{
    uint64_t cur = atomic_load_explicit(&s->ticket, memory_order_relaxed);

    do {
        if (cur == API_BUSY || cur > t)
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(
        &s->ticket, &cur, API_BUSY, memory_order_acquire,
        memory_order_relaxed));
    return 1;
}

void (*p3d_plugin_join_midwrite)(void);

static void *api_slot_put(struct join_inflight in)
{
    uint64_t t = atomic_fetch_add(&api_cursor, 1) + 1;
    struct api_slot *s = &api_tab[t % API_SLOTS];

    if (!api_slot_claim(s, t))
        return NULL;
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->op_id, in.op_id, memory_order_relaxed);
    if (p3d_plugin_join_midwrite)
        p3d_plugin_join_midwrite(); /* tests: preempted here */
    atomic_store_explicit(&s->t_put, in.t_enter, memory_order_relaxed);
    atomic_store_explicit(&s->op, in.op, memory_order_relaxed);
    atomic_store_explicit(&s->ticket, t, memory_order_release);
    return (void *)(uintptr_t)(API_TAG | (t & ~API_TAG_MASK));
}

void *p3d_plugin_join_api(uint64_t comm, uint8_t op, int graph_captured)
{
    int mine = join_tls.set && join_tls.comm == comm && join_tls.op == op;

    if (graph_captured) {
        /* captured now, run at replays: never an eager op's time.
         * Counted only as the call's own event: a captured AlltoAll's
         * inner sends and receives each bring one too. */
        join_tls.set = 0;
        if (mine)
            atomic_fetch_add_explicit(&api_captured, 1,
                                      memory_order_relaxed);
        return (void *)(uintptr_t)API_TAG;
    }
    if (!mine)
        return NULL;
    join_tls.set = 0;   /* one API event per call: inner calls get none */
    return api_slot_put(join_tls);
}

uint64_t p3d_plugin_join_parent(const void *parent, uint8_t op,
                                uint64_t *t_put, int *replay)
{
    uint64_t h = (uint64_t)(uintptr_t)parent, t, id, tp;
    struct api_slot *s;

    *replay = 0;
    if ((h & API_TAG_MASK) != API_TAG)
        return 0;
    t = h & ~API_TAG_MASK;
    if (t == 0) {
        *replay = 1;
        return 0;
    }
    s = &api_tab[t % API_SLOTS];
    if (atomic_load_explicit(&s->ticket, memory_order_acquire) != t)
        return 0;
    id = atomic_load_explicit(&s->op_id, memory_order_relaxed);
    tp = atomic_load_explicit(&s->t_put, memory_order_relaxed);
    if (atomic_load_explicit(&s->op, memory_order_relaxed) != op)
        return 0;
    atomic_thread_fence(memory_order_acquire);
    if (!atomic_compare_exchange_strong(&s->ticket, &t, 0))
        return 0;       /* overwritten meanwhile, or taken */
    if (t_put)
        *t_put = tp;
    return id;
}

uint64_t p3d_plugin_join_captured(void)
{
    return atomic_load(&api_captured);
}

void p3d_plugin_join_op(const struct p3d_op_ctx *op, uint64_t t_enter)
{
    if (atomic_load_explicit(&join_by_api, memory_order_relaxed)) {
        join_op_api(op, t_enter);
        return;
    }
    if (op->op == P3D_OP_SEND || op->op == P3D_OP_RECV) {
        join_put_op(op->comm_hash, op->op, op->peer, op->op_id, t_enter);
        return;
    }
    /* NCCL makes no task of these: no event, no number */
    if (op->count == 0 || op->comm_nranks == 1)
        return;
    if (op->op == P3D_OP_ALLTOALL || op->op == P3D_OP_GATHER ||
        op->op == P3D_OP_SCATTER) {
        join_split(op);
        return;
    }
    join_put_op(op->comm_hash, op->op, -1, op->op_id, t_enter);
}

uint64_t p3d_plugin_join_p2p_next(uint64_t comm, uint8_t op, int32_t peer)
{
    return ctr_next(ctr_plugin, join_class(comm, op, peer));
}

void p3d_plugin_join_counts(uint64_t *put, uint64_t *lost)
{
    *put = atomic_load(&join_put);
    *lost = atomic_load(&join_lost);
}
