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

void p3d_plugin_join_op(const struct p3d_op_ctx *op, uint64_t t_enter)
{
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
