/*
 * p3d_inflight.c - the lock-free table of ops not known complete (see
 * p3d_inflight.h).  Each slot is guarded by one 64-bit word, op_id << 4 |
 * state bits, so an update for an op whose slot was reused is a no-op and
 * a reader can tell a torn copy (seqlock style: word read before and
 * after the fields, which are relaxed atomics).
 *
 * Who writes a slot's word: an adder claims a free slot with a CAS (other
 * adders race for it); after that only the op's own thread sets ISSUED
 * (or DONE for an init) with a plain release store, because a slot is
 * free for a new op only once one of those bits is set.  Completions
 * come from other threads and go to a field of their own (`done`), so
 * they never race with the owner's store.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_env.h"
#include "p3d_inflight.h"
#include "p3d_shim.h"

#define P3D_IF_ISSUED 1u
#define P3D_IF_DONE 2u
#define P3D_IF_GROUPED 4u
#define P3D_IF_SHIFT 4
#define P3D_IF_STREAMS 64
#define P3D_IF_BUSY (~(uint64_t)0 << P3D_IF_SHIFT) /* being filled */
#define P3D_IF_PROBE 16   /* slots tried from an op's home slot */

/*
 * A slot's fields are written by the thread that claimed its word and
 * read by others (watchdog, completions) at any time: relaxed atomic
 * accesses (plain moves on x86); the word says whether a copy is whole.
 */
#define P3D_IF_PUT(f, v) __atomic_store_n(&(f), (v), __ATOMIC_RELAXED)
#define P3D_IF_GET(f) __atomic_load_n(&(f), __ATOMIC_RELAXED)

struct p3d_ifslot {
    uint64_t word;          /* 0 = empty */
    uint64_t done;          /* op_id the GPU completed in this slot */
    uint64_t t_enqueue;
    uint64_t comm_hash;
    uint64_t seq;
    uint64_t stream;
    int32_t peer;
    uint32_t stack_id;
    uint32_t tid;
    uint8_t op;
};

/* Highest completed op_id per stream: earlier ops there are done too. */
struct p3d_ifstream {
    uint64_t stream;
    uint64_t done_id;
};

#define P3D_IF_INITS 64     /* slots of comm-init pseudo-ops, after ops */
#define P3D_IF_ALL (P3D_INFLIGHT_SLOTS + P3D_IF_INITS)

static struct p3d_ifslot p3d_if[P3D_IF_ALL];
static struct p3d_ifstream p3d_if_streams[P3D_IF_STREAMS];
static uint64_t p3d_if_overflow;
static int p3d_if_live = -1;  /* -1 undecided, 0 never, 1 completions seen */

static int p3d_if_env_off = -1;   /* P3D_GPU_TIMING=off; -1 not read */

static void p3d_if_set(struct p3d_ifslot *s, uint64_t op_id, uint64_t bit);

static uint64_t p3d_if_stream_done(uint64_t stream)
{
    const struct p3d_ifstream *s =
        &p3d_if_streams[(stream >> 4) % P3D_IF_STREAMS];

    if (__atomic_load_n(&s->stream, __ATOMIC_ACQUIRE) != stream)
        return 0;
    return __atomic_load_n(&s->done_id, __ATOMIC_RELAXED);
}

/* 1 if the op in `s` (word `w`) still counts as not complete. */
static int p3d_if_open(const struct p3d_ifslot *s, uint64_t w)
{
    if (w == 0 || (w & P3D_IF_DONE) ||
        P3D_IF_GET(s->done) == w >> P3D_IF_SHIFT)
        return 0;
    if (!(w & P3D_IF_ISSUED))
        return 1;
    if (!p3d_inflight_gpu_live())
        return 0;               /* completion unknown */
    return (w >> P3D_IF_SHIFT) > p3d_if_stream_done(P3D_IF_GET(s->stream));
}

/* Slot k of op_id's probe sequence (inits live in their own region). */
static struct p3d_ifslot *p3d_if_at(uint64_t op_id, int k)
{
    if (op_id & P3D_INFLIGHT_INIT_ID)
        return &p3d_if[P3D_INFLIGHT_SLOTS + (op_id + k) % P3D_IF_INITS];
    return &p3d_if[(op_id + k) % P3D_INFLIGHT_SLOTS];
}

/* Slot of op_id: the first of P3D_IF_PROBE slots from its home. */
static struct p3d_ifslot *p3d_if_slot(uint64_t op_id)
{
    for (int k = 0; k < P3D_IF_PROBE; k++) {
        struct p3d_ifslot *s = p3d_if_at(op_id, k);
        uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
        if (w != 0 && (w >> P3D_IF_SHIFT) == op_id)
            return s;
    }
    return NULL;
}

/* 1 if a new op may take the slot: empty, or its owner is done with it
 * (ISSUED or DONE set) and the op no longer counts as pending. */
static inline int p3d_if_free(const struct p3d_ifslot *s, uint64_t w)
{
    if (w == 0)
        return 1;
    if (!(w & (P3D_IF_ISSUED | P3D_IF_DONE)))
        return 0;               /* its owner is not done with it */
    if (!(w & P3D_IF_DONE) && /* issued: known complete?  (fast: no GPU) */
        __atomic_load_n(&p3d_if_live, __ATOMIC_RELAXED) == 0)
        return 1;
    return !p3d_if_open(s, w);
}

/* Claim (word = BUSY) a free slot of op_id's probe sequence, or NULL. */
static __attribute__((noinline)) struct p3d_ifslot *
p3d_if_claim(uint64_t op_id)
{
    for (int k = 0; k < P3D_IF_PROBE; k++) {
        struct p3d_ifslot *c = p3d_if_at(op_id, k);
        uint64_t old = __atomic_load_n(&c->word, __ATOMIC_ACQUIRE);
        if (p3d_if_free(c, old) &&
            __atomic_compare_exchange_n(&c->word, &old, P3D_IF_BUSY, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return c;
    }
    __atomic_add_fetch(&p3d_if_overflow, 1, __ATOMIC_RELAXED);
    return NULL;
}

/*
 * The common case in line: the op's home slot is empty or its op was
 * issued with no GPU completions to wait for; else the probe above.
 */
int p3d_inflight_enter(const struct p3d_op_ctx *ctx, uint64_t t,
                       uint32_t stack_id, uint32_t tid)
{
    struct p3d_ifslot *s = p3d_if_at(ctx->op_id, 0);
    uint64_t old = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);

    if (!P3D_LIKELY((old == 0 || ((old & (P3D_IF_ISSUED | P3D_IF_DONE)) ==
                                      P3D_IF_ISSUED &&
                                  __atomic_load_n(&p3d_if_live,
                                                  __ATOMIC_RELAXED) == 0)) &&
                    __atomic_compare_exchange_n(&s->word, &old, P3D_IF_BUSY,
                                                0, __ATOMIC_ACQ_REL,
                                                __ATOMIC_RELAXED)))
        s = p3d_if_claim(ctx->op_id);
    if (s == NULL)
        return -1;
    P3D_IF_PUT(s->t_enqueue, t);
    P3D_IF_PUT(s->comm_hash, ctx->comm_hash);
    P3D_IF_PUT(s->seq, ctx->seq);
    P3D_IF_PUT(s->stream, (uint64_t)(uintptr_t)ctx->stream);
    P3D_IF_PUT(s->peer, ctx->peer);
    P3D_IF_PUT(s->stack_id, stack_id);
    P3D_IF_PUT(s->tid, tid);
    P3D_IF_PUT(s->op, ctx->op);
    __atomic_store_n(&s->word, ctx->op_id << P3D_IF_SHIFT |
                     (ctx->in_group ? P3D_IF_GROUPED : 0), __ATOMIC_RELEASE);
    return (int)(s - p3d_if);
}

void p3d_inflight_add(const struct p3d_op_ctx *ctx, uint64_t t,
                      uint32_t stack_id)
{
    p3d_inflight_enter(ctx, t, stack_id, p3d_tid());
}

uint64_t p3d_inflight_init_begin(uint64_t comm_hash, int nranks, int rank)
{
    static uint64_t ids;
    struct p3d_op_ctx ctx;

    memset(&ctx, 0, sizeof(ctx));
    ctx.op_id = P3D_INFLIGHT_INIT_ID |
                __atomic_add_fetch(&ids, 1, __ATOMIC_RELAXED);
    ctx.comm_hash = comm_hash;
    ctx.seq = nranks > 0 ? (uint64_t)nranks : UINT64_MAX;
    ctx.op = P3D_INFLIGHT_INIT;
    ctx.peer = rank;
    p3d_inflight_add(&ctx, p3d_now(), 0);
    return ctx.op_id;
}

void p3d_inflight_done(uint64_t op_id)
{
    p3d_if_set(p3d_if_slot(op_id), op_id, P3D_IF_DONE);
}

/*
 * The owner sets ISSUED or DONE: nobody else writes the word until one
 * of them is set (see the top), so a plain release store does.
 */
static void p3d_if_set(struct p3d_ifslot *s, uint64_t op_id, uint64_t bit)
{
    uint64_t w;

    if (s == NULL)
        return;
    w = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
    if (w != 0 && (w >> P3D_IF_SHIFT) == op_id &&
        !(w & (P3D_IF_ISSUED | P3D_IF_DONE)))
        __atomic_store_n(&s->word, w | bit, __ATOMIC_RELEASE);
}

void p3d_inflight_issued(uint64_t op_id)
{
    p3d_if_set(p3d_if_slot(op_id), op_id, P3D_IF_ISSUED);
}

void p3d_inflight_issued_at(int slot, uint64_t op_id)
{
    if (slot >= 0 && slot < P3D_IF_ALL)
        p3d_if_set(&p3d_if[slot], op_id, P3D_IF_ISSUED);
}

/* Raise the stream's highest completed op_id (if the slot is its). */
static void p3d_if_stream_mark(uint64_t stream, uint64_t op_id)
{
    struct p3d_ifstream *s = &p3d_if_streams[(stream >> 4) % P3D_IF_STREAMS];
    uint64_t cur = __atomic_load_n(&s->stream, __ATOMIC_ACQUIRE);
    uint64_t d;

    if (cur != stream) {
        __atomic_store_n(&s->done_id, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->stream, stream, __ATOMIC_RELEASE);
    }
    d = __atomic_load_n(&s->done_id, __ATOMIC_RELAXED);
    while (d < op_id &&
           !__atomic_compare_exchange_n(&s->done_id, &d, op_id, 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void p3d_inflight_complete(uint64_t op_id)
{
    struct p3d_ifslot *s = p3d_if_slot(op_id);

    if (__atomic_load_n(&p3d_if_live, __ATOMIC_RELAXED) != 1)
        __atomic_store_n(&p3d_if_live, 1, __ATOMIC_RELEASE);
    if (s == NULL)
        return;
    p3d_if_stream_mark(P3D_IF_GET(s->stream), op_id);
    P3D_IF_PUT(s->done, op_id);
}

int p3d_inflight_gpu_live(void)
{
    int live = __atomic_load_n(&p3d_if_live, __ATOMIC_ACQUIRE);
    const char *g;

    if (live >= 0)
        return live;
    if (__atomic_load_n(&p3d_if_env_off, __ATOMIC_RELAXED) < 0) {
        g = getenv(P3D_ENV_GPU_TIMING);
        __atomic_store_n(&p3d_if_env_off,
                         g != NULL && (!strcmp(g, "off") ||
                                       !strcmp(g, "0") ||
                                       !strcmp(g, "none")), __ATOMIC_RELAXED);
    }
    if (__atomic_load_n(&p3d_if_env_off, __ATOMIC_RELAXED)) {
        __atomic_store_n(&p3d_if_live, 0, __ATOMIC_RELEASE);
        return 0;
    }
    return 0;                   /* undecided until a completion arrives */
}

/* Copy slot `i` if it is open; 1 on success. */
static int p3d_if_copy(int i, struct p3d_inflight_op *o)
{
    const struct p3d_ifslot *s = &p3d_if[i];
    uint64_t w = __atomic_load_n(&s->word, __ATOMIC_ACQUIRE), w2;

    if (w == P3D_IF_BUSY || !p3d_if_open(s, w))
        return 0;
    o->t_enqueue = P3D_IF_GET(s->t_enqueue);
    o->comm_hash = P3D_IF_GET(s->comm_hash);
    o->seq = P3D_IF_GET(s->seq);
    o->stream = P3D_IF_GET(s->stream);
    o->peer = P3D_IF_GET(s->peer);
    o->stack_id = P3D_IF_GET(s->stack_id);
    o->tid = P3D_IF_GET(s->tid);
    o->op = P3D_IF_GET(s->op);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    w2 = __atomic_load_n(&s->word, __ATOMIC_RELAXED);
    if ((w2 >> P3D_IF_SHIFT) != (w >> P3D_IF_SHIFT) || !p3d_if_open(s, w2))
        return 0;
    o->op_id = w2 >> P3D_IF_SHIFT;
    o->issued = (w2 & P3D_IF_ISSUED) != 0;
    o->grouped = (w2 & P3D_IF_GROUPED) != 0;
    return 1;
}

int p3d_inflight_pending(struct p3d_inflight_op *out, int max)
{
    struct p3d_inflight_op o;
    int n = 0, k = 0;

    for (int i = 0; i < P3D_IF_ALL; i++) {
        if (!p3d_if_copy(i, &o))
            continue;
        n++;
        if (k < max) {
            out[k++] = o;
        } else if (max > 0) {   /* keep the oldest: replace the newest */
            int j = 0;
            for (int m = 1; m < k; m++)
                if (out[m].t_enqueue > out[j].t_enqueue)
                    j = m;
            if (o.t_enqueue < out[j].t_enqueue)
                out[j] = o;
        }
    }
    for (int i = 1; i < k; i++)          /* insertion sort, oldest first */
        for (int j = i; j > 0 && out[j].t_enqueue < out[j - 1].t_enqueue;
             j--) {
            o = out[j];
            out[j] = out[j - 1];
            out[j - 1] = o;
        }
    return n;
}

uint32_t p3d_inflight_pending_on(uint64_t comm_hash)
{
    struct p3d_inflight_op o;
    uint32_t n = 0;

    for (int i = 0; i < P3D_IF_ALL; i++)
        if (p3d_if_copy(i, &o) && o.comm_hash == comm_hash)
            n++;
    return n;
}

uint64_t p3d_inflight_overflow(void)
{
    return __atomic_load_n(&p3d_if_overflow, __ATOMIC_RELAXED);
}

void p3d_inflight_reset(void)
{
    memset(p3d_if, 0, sizeof(p3d_if));
    memset(p3d_if_streams, 0, sizeof(p3d_if_streams));
    p3d_if_overflow = 0;
    p3d_if_live = -1;
    p3d_if_env_off = -1;
}
