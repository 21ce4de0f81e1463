/*
 * p3d_match.c - cross-rank matching.
 *
 * A collective instance is keyed by (communicator, seq): the first member
 * read sets the reference (op, count, datatype, root, redop; 24 bytes per
 * instance), every later member is compared with it.  Send/Recv pairs
 * are keyed by (communicator, src, dst, seq).  A disagreement is recorded
 * and matching goes on with the next instance (never stops a communicator
 * at its first mismatch, unlike Flight Recorder's analyzer).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_match.h"
#include "p3d_reader.h"
#include "p3d_util.h"

const char *const p3d_mm_field_name[] = {"op", "count", "datatype", "root",
                                         "redop", "unmatched", "issued"};

struct p3d_ref {
    uint64_t count;
    int32_t root, rank;
    uint8_t op, dtype, redop, set;
};

struct p3d_cref {
    struct p3d_ref *v;
    size_t cap;
};

struct p3d_pair {
    struct p3d_ref *v; /* op = Send or Recv of who came first */
    size_t cap;
    int src, dst;
    uint64_t comm;
};

struct p3d_mstate {
    struct p3d_job *job;
    struct p3d_cref *cref; /* per job comm */
    struct p3d_map pair_idx;
    struct p3d_pair *pairs;
    size_t n_pairs, pairs_cap;
    struct p3d_match_res *res;
};

static void p3d_mm_add(struct p3d_match_res *res, const struct p3d_mismatch *m)
{
    if (m->field < P3D_MM_UNMATCHED)
        res->n_mismatch++;
    if (res->n_kept < P3D_MM_KEEP)
        res->mm[res->n_kept++] = *m;
}

static void p3d_mm_diff(struct p3d_match_res *res, struct p3d_mismatch *m,
                        int field, int64_t a, int64_t b)
{
    if (a == b)
        return;
    m->field = field;
    m->va = a;
    m->vb = b;
    p3d_mm_add(res, m);
}

void p3d_match_coll(struct p3d_match_res *res, uint64_t comm, uint64_t seq,
                    int rank_a, const struct p3d_rec_op *a, int rank_b,
                    const struct p3d_rec_op *b)
{
    struct p3d_mismatch m = {comm, seq, 0, rank_a, rank_b, 0, 0, a->op,
                             -1, -1};

    if (a->op != b->op) { /* other fields are not comparable */
        p3d_mm_diff(res, &m, P3D_MM_OP, a->op, b->op);
        return;
    }
    p3d_mm_diff(res, &m, P3D_MM_COUNT, (int64_t)a->count, (int64_t)b->count);
    p3d_mm_diff(res, &m, P3D_MM_DTYPE, a->dtype, b->dtype);
    if (a->op == P3D_OP_BROADCAST || a->op == P3D_OP_REDUCE ||
        a->op == P3D_OP_GATHER || a->op == P3D_OP_SCATTER)
        p3d_mm_diff(res, &m, P3D_MM_ROOT, a->peer, b->peer);
    p3d_mm_diff(res, &m, P3D_MM_REDOP, a->redop, b->redop);
}

static void p3d_ref_to_op(const struct p3d_ref *r, struct p3d_rec_op *o)
{
    memset(o, 0, sizeof(*o));
    o->op = r->op;
    o->count = r->count;
    o->dtype = r->dtype;
    o->redop = r->redop;
    o->peer = r->root;
}

static void p3d_ref_set(struct p3d_ref *r, const struct p3d_rec_op *o,
                        int rank)
{
    r->count = o->count;
    r->root = o->peer;
    r->rank = rank;
    r->op = o->op;
    r->dtype = o->dtype;
    r->redop = o->redop;
    r->set = 1;
}

#define P3D_MAX_SEQ (1ull << 28)

static void p3d_on_coll(struct p3d_mstate *s, int gi, int rank,
                        const struct p3d_rec_op *o)
{
    struct p3d_cref *c = &s->cref[gi];
    struct p3d_ref *r;
    struct p3d_rec_op a;

    if (o->seq >= P3D_MAX_SEQ)
        return;
    c->cap = p3d_grow((void **)&c->v, c->cap, (size_t)o->seq, sizeof(*c->v));
    r = &c->v[o->seq];
    if (!r->set) {
        p3d_ref_set(r, o, rank);
        s->res->n_coll++;
        return;
    }
    p3d_ref_to_op(r, &a);
    p3d_match_coll(s->res, o->comm_hash, o->seq, r->rank, &a, rank, o);
}

static struct p3d_pair *p3d_pair_get(struct p3d_mstate *s, int gi, int src,
                                     int dst)
{
    uint64_t key = (uint64_t)gi << 42 ^ (uint64_t)(uint32_t)src << 21 ^
                   (uint64_t)(uint32_t)dst;
    int i = p3d_map_get(&s->pair_idx, key);
    struct p3d_pair *p;

    if (i >= 0)
        return &s->pairs[i];
    s->pairs_cap = p3d_grow((void **)&s->pairs, s->pairs_cap, s->n_pairs,
                            sizeof(*s->pairs));
    p = &s->pairs[s->n_pairs];
    memset(p, 0, sizeof(*p));
    p->src = src;
    p->dst = dst;
    p->comm = s->job->comms[gi].hash;
    p3d_map_put(&s->pair_idx, key, (int)s->n_pairs++);
    return p;
}

static void p3d_on_p2p(struct p3d_mstate *s, int gi, int rank,
                       const struct p3d_rec_op *o)
{
    const struct p3d_gcomm *g = &s->job->comms[gi];
    int other, src, dst;
    struct p3d_pair *p;
    struct p3d_ref *r;

    if (o->peer < 0 || o->peer >= g->size || o->seq >= P3D_MAX_SEQ)
        return;
    other = g->slot[o->peer];
    src = o->op == P3D_OP_SEND ? rank : other;
    dst = o->op == P3D_OP_SEND ? other : rank;
    p = p3d_pair_get(s, gi, src, dst);
    p->cap = p3d_grow((void **)&p->v, p->cap, (size_t)o->seq, sizeof(*p->v));
    r = &p->v[o->seq];
    if (!r->set) {
        p3d_ref_set(r, o, rank);
        return;
    }
    if (r->set == 2 || r->op == o->op)
        return; /* a duplicate record; not a pair */
    r->set = 2;
    s->res->n_p2p++;
    {
        struct p3d_mismatch m = {o->comm_hash, o->seq, 0, r->rank, rank, 0, 0,
                                 r->op, src, dst};
        p3d_mm_diff(s->res, &m, P3D_MM_COUNT, (int64_t)r->count,
                    (int64_t)o->count);
        p3d_mm_diff(s->res, &m, P3D_MM_DTYPE, r->dtype, o->dtype);
    }
}

static void p3d_match_rank(struct p3d_mstate *s, struct p3d_rank *rk)
{
    struct p3d_reader rd;
    const struct p3d_rec_hdr *h;

    if (rk->failed || p3d_reader_open(&rd, rk->path) != 0)
        return;
    while (p3d_reader_next(&rd, &h) > 0) {
        const struct p3d_rec_op *o = (const void *)h;
        int gi;
        if (h->tag != P3D_REC_OP || o->op >= P3D_OP_COUNT)
            continue;
        gi = p3d_map_get(&s->job->comm_idx, o->comm_hash);
        if (gi < 0)
            continue;
        if (P3D_OP_IS_P2P(o->op))
            p3d_on_p2p(s, gi, rk->rank, o);
        else
            p3d_on_coll(s, gi, rk->rank, o);
    }
    p3d_reader_close(&rd);
}

/* Sends never received and receives never sent, one line per pair. */
static void p3d_unmatched(struct p3d_mstate *s)
{
    for (size_t i = 0; i < s->n_pairs; i++) {
        struct p3d_pair *p = &s->pairs[i];
        uint64_t n_send = 0, n_recv = 0;
        for (size_t k = 0; k < p->cap; k++) {
            if (p->v[k].set != 1)
                continue;
            if (p->v[k].op == P3D_OP_SEND)
                n_send++;
            else
                n_recv++;
        }
        if (n_send || n_recv) {
            struct p3d_mismatch m = {p->comm, 0, P3D_MM_UNMATCHED, p->src,
                                     p->dst, (int64_t)n_send,
                                     (int64_t)n_recv, P3D_OP_SEND, p->src,
                                     p->dst};
            s->res->n_unmatched_p2p += n_send + n_recv;
            p3d_mm_add(s->res, &m);
        }
        free(p->v);
    }
}

static uint64_t p3d_n_coll(const struct p3d_rcomm *c)
{
    uint64_t n = 0;

    for (int k = 0; k < P3D_OP_COUNT; k++)
        if (!P3D_OP_IS_P2P(k))
            n += c->st[k].calls;
    return n;
}

/*
 * Members that issued fewer collectives on a communicator than another
 * member: a killed or hung rank, or a desynchronised schedule.
 */
static void p3d_short_members(struct p3d_job *job, struct p3d_match_res *res)
{
    uint64_t *max = p3d_xcalloc((size_t)job->n_comms + 1, sizeof(*max));
    int *who = p3d_xcalloc((size_t)job->n_comms + 1, sizeof(*who));

    for (int i = 0; i < job->n_ranks; i++)
        for (int k = 0; k < job->ranks[i].n_comms; k++) {
            const struct p3d_rcomm *c = &job->ranks[i].comms[k];
            if (c->gcomm >= 0 && p3d_n_coll(c) > max[c->gcomm]) {
                max[c->gcomm] = p3d_n_coll(c);
                who[c->gcomm] = job->ranks[i].rank;
            }
        }
    for (int i = 0; i < job->n_ranks; i++)
        for (int k = 0; k < job->ranks[i].n_comms; k++) {
            const struct p3d_rcomm *c = &job->ranks[i].comms[k];
            struct p3d_mismatch m = {c->hash, 0, P3D_MM_ISSUED, 0, 0, 0, 0,
                                     0, -1, -1};
            if (c->gcomm < 0 || p3d_n_coll(c) >= max[c->gcomm])
                continue;
            m.rank_a = who[c->gcomm];
            m.va = (int64_t)max[c->gcomm];
            m.rank_b = job->ranks[i].rank;
            m.vb = (int64_t)p3d_n_coll(c);
            res->n_short++;
            p3d_mm_add(res, &m);
        }
    free(max);
    free(who);
}

void p3d_match_job(struct p3d_job *job)
{
    struct p3d_mstate s;

    memset(&s, 0, sizeof(s));
    s.job = job;
    s.res = p3d_xcalloc(1, sizeof(*s.res));
    s.cref = p3d_xcalloc((size_t)job->n_comms + 1, sizeof(*s.cref));
    for (int i = 0; i < job->n_ranks; i++)
        p3d_match_rank(&s, &job->ranks[i]);
    p3d_unmatched(&s);
    p3d_short_members(job, s.res);
    for (int i = 0; i < job->n_comms; i++)
        free(s.cref[i].v);
    free(s.cref);
    free(s.pairs);
    p3d_map_free(&s.pair_idx);
    job->match = s.res;
}
