/*
 * p3d_time_join.c - join the ops of all ranks into collective instances,
 * keyed by (communicator, seq), and Send/Recv pairs, keyed by
 * (communicator, src, dst, per-pair seq), while ranks stream in.
 *
 * Ranks are merged one at a time (under the caller's lock).  A rank's
 * ops of one group come in seq order, so each slot keeps a cursor on the
 * record it expects next; records appended in ascending seq are found by
 * bisection otherwise, and a seq map is built only when seqs come out of
 * order.  Once every rank of a group is merged, its records are folded
 * (each registered consumer's inst / pair, p3d_join_use) and freed: memory holds only the groups still
 * waiting for a member, not every op of the job.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

/*
 * A slot's next records are fetched ahead of its ops: a group's records
 * were last touched when the previous member was merged, long out of
 * the cache, and a rank's ops alternate between groups (several streams
 * the hardware prefetcher does not keep up with; ~20% of the join's CPU
 * at 1,024 ranks).
 */
#define P3D_JOIN_AHEAD 8

static uint64_t p3d_jmix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

void p3d_join_init(struct p3d_join *j, const struct p3d_job *job,
                   struct p3d_time_res *t)
{
    memset(j, 0, sizeof(*j));
    j->job = job;
    j->t = t;
    j->n_coll = job->n_comms;
    j->coll = p3d_xmalloc(((size_t)j->n_coll + 1) * sizeof(*j->coll));
    memset(j->coll, 0xff, ((size_t)j->n_coll + 1) * sizeof(*j->coll));
    for (int i = 0; i < t->n; i++)
        j->world = t->tl[i].rank >= j->world ? t->tl[i].rank + 1 : j->world;
    j->rank_tl = p3d_xmalloc(((size_t)j->world + 1) * sizeof(*j->rank_tl));
    memset(j->rank_tl, 0xff, ((size_t)j->world + 1) * sizeof(*j->rank_tl));
    for (int i = t->n - 1; i >= 0; i--)
        if (t->tl[i].rank >= 0)
            j->rank_tl[t->tl[i].rank] = i;
    j->done = p3d_xcalloc((size_t)t->n + 1, 1);
    for (int i = 0; i < P3D_JCHAN_CACHE; i++)
        j->cc[i].k = -1;
}

void p3d_join_share(struct p3d_join *j, int n, uint64_t block)
{
    j->share = n;
    j->share_block = block;
}

void p3d_join_use(struct p3d_join *j, p3d_jfold inst, p3d_jfold pair,
                  void *ctx)
{
    if (j->n_use >= P3D_JOIN_USES)
        p3d_die("internal: more than %d consumers of the join",
                P3D_JOIN_USES);
    j->use[j->n_use++] = (struct p3d_juse){inst, pair, ctx};
}

static int p3d_join_tl(const struct p3d_join *j, int rank)
{
    return rank >= 0 && rank < j->world ? j->rank_tl[rank] : -1;
}

/* A new group of m slots; local: all its slots on one host. */
static int p3d_join_group(struct p3d_join *j, int gcomm, int src, int dst,
                          int m)
{
    struct p3d_jgrp *g;
    j->cap_g = p3d_grow((void **)&j->g, j->cap_g, j->n_g, sizeof(*j->g));
    g = &j->g[j->n_g];
    memset(g, 0, sizeof(*g));
    g->gcomm = gcomm;
    g->src = src;
    g->dst = dst;
    g->m = m;
    g->tl = p3d_xcalloc((size_t)m, sizeof(*g->tl));
    g->cur = p3d_xcalloc((size_t)m, sizeof(*g->cur));
    g->sorted = g->live = g->local = 1;
    g->mark = -1;
    return (int)j->n_g++;
}

static void p3d_join_local(struct p3d_join *j, struct p3d_jgrp *g)
{
    int h = -1;

    for (int s = 0; s < g->m; s++) {
        int ti = g->tl[s];
        int hs = ti >= 0 ? j->t->tl[ti].host : -1;
        if (hs < 0 || (h >= 0 && hs != h))
            g->local = 0;
        h = hs >= 0 ? hs : h;
    }
}

/* Members of a communicator; n 0: unknown (a test's bare timelines). */
static const int *p3d_join_members(const struct p3d_join *j, int gcomm,
                                   int *n)
{
    *n = 0;
    if (gcomm >= j->job->n_comms || !j->job->comms)
        return NULL;
    *n = j->job->comms[gcomm].n_members;
    return j->job->comms[gcomm].members;
}

/* Collectives per member of a communicator, from the scan's counts: the
 * records its group will hold, allocated at once (growing column by
 * column copies them all each time). */
static size_t p3d_join_hint(const struct p3d_join *j, int gcomm)
{
    const struct p3d_gcomm *c;
    uint64_t n = 0;

    if (!j->job->comms || gcomm >= j->job->n_comms)
        return 0;
    c = &j->job->comms[gcomm];
    for (int op = 0; op < P3D_OP_COUNT; op++)
        n += P3D_OP_IS_P2P(op) ? 0 : c->st[op].calls;
    n /= (uint64_t)(c->n_members > 0 ? c->n_members : 1);
    if (j->share > 1 && n / (uint64_t)j->share + j->share_block < n)
        n = n / (uint64_t)j->share + j->share_block; /* its blocks */
    return n < (1u << 26) ? (size_t)n + 1 : 0;
}

/* Group of a collective communicator: a slot per known member (every
 * timeline when the communicator has no member list). */
static int p3d_join_coll(struct p3d_join *j, int gcomm)
{
    int n, k, m;
    const int *mem = p3d_join_members(j, gcomm, &n);

    if (gcomm >= j->n_coll) {
        size_t old = (size_t)j->n_coll;
        j->n_coll = gcomm + 1;
        j->coll = p3d_xrealloc(j->coll, (size_t)j->n_coll, sizeof(*j->coll));
        memset(j->coll + old, 0xff, ((size_t)j->n_coll - old) * sizeof(int));
    }
    if ((k = j->coll[gcomm]) >= 0)
        return k;
    m = n > 0 ? n : j->t->n;
    k = p3d_join_group(j, gcomm, -1, -1, m);
    j->g[k].hint = p3d_join_hint(j, gcomm);
    for (int s = 0; s < m; s++)
        j->g[k].tl[s] = n > 0 ? p3d_join_tl(j, mem[s]) : s;
    p3d_join_local(j, &j->g[k]);
    j->coll[gcomm] = k;
    return k;
}

static int p3d_join_chan(struct p3d_join *j, int gcomm, int src, int dst)
{
    uint64_t key = p3d_jmix(p3d_jmix(p3d_jmix(3, (uint64_t)gcomm),
                                     (uint64_t)src), (uint64_t)dst);
    struct p3d_jchan *c = &j->cc[key % P3D_JCHAN_CACHE];
    int k;

    if (c->k >= 0 && c->gcomm == gcomm && c->src == src && c->dst == dst)
        return c->k;
    k = p3d_map_get(&j->chan, key);
    if (k < 0) {
        k = p3d_join_group(j, gcomm, src, dst, 2);
        j->g[k].tl[0] = p3d_join_tl(j, src);
        j->g[k].tl[1] = p3d_join_tl(j, dst);
        p3d_join_local(j, &j->g[k]);
        p3d_map_put(&j->chan, key, k);
    }
    *c = (struct p3d_jchan){gcomm, src, dst, k};
    return k;
}

/* Slot of timeline ti in a collective group, -1 if not a member. */
static int p3d_join_slot(const struct p3d_join *j, const struct p3d_jgrp *g,
                         int ti)
{
    int rank = j->t->tl[ti].rank, lo = 0, hi, n;
    const int *mem = p3d_join_members(j, g->gcomm, &n);

    if (n <= 0)
        return ti < g->m ? ti : -1;
    hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (mem[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && mem[lo] == rank ? lo : -1;
}

static long p3d_join_bisect(const struct p3d_jgrp *g, uint64_t seq)
{
    size_t lo = 0, hi = g->n_rec;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->rec[mid].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->n_rec && g->rec[lo].seq == seq ? (long)lo : -1;
}

static long p3d_join_lookup(struct p3d_jgrp *g, uint64_t seq)
{
    if (g->sorted)
        return p3d_join_bisect(g, seq);
    if (!g->idx.cap)
        for (size_t k = 0; k < g->n_rec; k++)
            p3d_map_put(&g->idx, g->rec[k].seq, (int)k);
    return p3d_map_get(&g->idx, seq);
}

/* The slot columns from capacity cap to g->cap_rec; f is zero past the
 * records (so a new record has no slot present). */
static void p3d_join_regrow(struct p3d_jgrp *g, size_t cap, size_t m)
{
    size_t nc = g->cap_rec, n = g->n_rec;
    int64_t *s = p3d_xmalloc(nc * m * sizeof(*s));
    int64_t *e = p3d_xmalloc(nc * m * sizeof(*e));
    uint8_t *f = p3d_xcalloc(nc * m, 1);

    for (size_t sl = 0; sl < m && n; sl++) {
        memcpy(s + sl * nc, g->s + sl * cap, n * sizeof(*s));
        memcpy(e + sl * nc, g->e + sl * cap, n * sizeof(*e));
        memcpy(f + sl * nc, g->f + sl * cap, n);
    }
    free(g->s);
    free(g->e);
    free(g->f);
    g->s = s;
    g->e = e;
    g->f = f;
}

static size_t p3d_join_new(struct p3d_jgrp *g, uint64_t seq)
{
    size_t k = g->n_rec, m = (size_t)g->m, cap = g->cap_rec;

    if (k && g->rec[k - 1].seq >= seq && g->sorted) {
        g->sorted = 0;
        p3d_join_lookup(g, seq); /* builds the map */
    }
    if (k == cap) {
        g->cap_rec = !cap && g->hint > 16 ? g->hint : cap ? 2 * cap : 16;
        g->rec = p3d_xrealloc(g->rec, g->cap_rec, sizeof(*g->rec));
        p3d_join_regrow(g, cap, m);
    }
    memset(&g->rec[k], 0, sizeof(g->rec[k]));
    g->rec[k].seq = seq;
    g->rec[k].ckey = UINT64_MAX;
    if (!g->sorted)
        p3d_map_put(&g->idx, seq, (int)k);
    g->n_rec++;
    return k;
}

/* Record of seq for slot s (created if new). */
static size_t p3d_join_find(struct p3d_jgrp *g, int s, uint64_t seq)
{
    size_t k = g->cur[s];
    long f;

    if (k >= g->n_rec && g->sorted &&
        (!g->n_rec || g->rec[g->n_rec - 1].seq < seq)) {
        k = p3d_join_new(g, seq); /* past the last: nothing to look up */
    } else if (k >= g->n_rec || g->rec[k].seq != seq) {
        f = p3d_join_lookup(g, seq);
        k = f >= 0 ? (size_t)f : p3d_join_new(g, seq);
    }
    g->cur[s] = k + 1;
    return k;
}

static void p3d_join_touch(struct p3d_join *j, int k)
{
    if (j->g[k].mark == j->gen)
        return;
    j->g[k].mark = j->gen;
    j->cap_touched = p3d_grow((void **)&j->touched, j->cap_touched,
                              j->n_touched, sizeof(*j->touched));
    j->touched[j->n_touched++] = k;
}

/* Slot s of record k takes the op (a second op in a slot keeps the
 * latest start and the earliest end: what clock bounds use). */
static void p3d_join_put(struct p3d_jgrp *g, size_t k, int s, int ti,
                         uint32_t oi, const struct p3d_top *o)
{
    struct p3d_jrec *r = &g->rec[k];
    size_t x = p3d_jx(g, k, s);
    uint64_t key = (uint64_t)ti << 32 | oi;

    if (k + P3D_JOIN_AHEAD < g->cap_rec) {
        __builtin_prefetch(&g->rec[k + P3D_JOIN_AHEAD], 1);
        __builtin_prefetch(&g->s[x + P3D_JOIN_AHEAD], 1);
        __builtin_prefetch(&g->e[x + P3D_JOIN_AHEAD], 1);
    }

    if ((g->f[x] & 1) && g->src < 0) {
        r->dup = 1;
        g->s[x] = o->s > g->s[x] ? o->s : g->s[x];
        g->e[x] = o->e < g->e[x] ? o->e : g->e[x];
        g->f[x] &= (uint8_t)(o->has_gpu ? 3 : 1);
    } else {
        g->s[x] = o->s;
        g->e[x] = o->e;
        g->f[x] = (uint8_t)(o->has_gpu ? 3 : 1);
    }
    r->n++;
    r->ckey = key < r->ckey ? key : r->ckey;
    if (g->src < 0 && (r->n == 1 || key > r->hkey)) {
        r->hkey = key;
        r->op = o->op;
        r->bytes = o->bytes;
    }
    if (g->src >= 0 && s == 1)
        r->bytes = o->bytes;
}

/* The group op o of timeline ti joins: its communicator's, or its
 * channel's (-1: none, a Send/Recv without a peer). */
static int p3d_join_group_of(struct p3d_join *j, int ti,
                             const struct p3d_top *o)
{
    int rank = j->t->tl[ti].rank, send = o->op == P3D_OP_SEND;

    if (!P3D_OP_IS_P2P(o->op))
        return p3d_join_coll(j, o->gcomm);
    if (o->peer < 0)
        return -1;
    return p3d_join_chan(j, o->gcomm, send ? rank : o->peer,
                         send ? o->peer : rank);
}

int p3d_join_skips(struct p3d_join *j, int ti, const struct p3d_top *o)
{
    int k;

    if (!j->skip_local || o->gcomm < 0)
        return 0;
    k = p3d_join_group_of(j, ti, o); /* made empty where not owned */
    return k >= 0 && j->g[k].local;
}

static void p3d_join_op(struct p3d_join *j, int ti, uint32_t oi,
                        const struct p3d_top *o)
{
    int k, s;

    if (o->gcomm < 0 || (k = p3d_join_group_of(j, ti, o)) < 0)
        return;
    if (P3D_OP_IS_P2P(o->op)) {
        s = o->op == P3D_OP_SEND ? 0 : 1;
    } else {
        if (j->g[k].slot_gen != j->gen) { /* once per rank and group */
            j->g[k].slot = p3d_join_slot(j, &j->g[k], ti);
            j->g[k].slot_gen = j->gen;
        }
        if ((s = j->g[k].slot) < 0)
            return; /* not a member: no slot to put it in */
    }
    if (j->skip_local && j->g[k].local)
        return;
    if (!j->g[k].live)
        return; /* already folded: every member was merged */
    p3d_join_put(&j->g[k], p3d_join_find(&j->g[k], s, o->seq), s, ti, oi,
                 o);
    p3d_join_touch(j, k);
}

static void p3d_join_fold(struct p3d_join *j, struct p3d_jgrp *g)
{
    for (size_t k = 0; k < g->n_rec; k++)
        for (int u = 0; u < j->n_use; u++) {
            p3d_jfold fold = g->src >= 0 ? j->use[u].pair : j->use[u].inst;
            if (fold)
                fold(j->use[u].ctx, j, g, k);
        }
    P3D_FREE_ALL(g->rec, g->s, g->e, g->f, g->cur);
    p3d_map_free(&g->idx);
    g->rec = NULL;
    g->s = g->e = NULL;
    g->f = NULL;
    g->cur = NULL;
    g->n_rec = g->cap_rec = 0;
    g->live = 0;
}

static int p3d_join_complete(const struct p3d_join *j,
                             const struct p3d_jgrp *g)
{
    for (int s = 0; s < g->m; s++)
        if (g->tl[s] >= 0 && !j->done[g->tl[s]])
            return 0;
    return 1;
}

/* Timeline ti is merged: fold the groups it touched that are complete. */
static void p3d_join_done(struct p3d_join *j, int ti)
{
    j->done[ti] = 1;
    for (size_t i = 0; i < j->n_touched; i++) {
        struct p3d_jgrp *g = &j->g[j->touched[i]];
        if (g->live && p3d_join_complete(j, g))
            p3d_join_fold(j, g);
    }
}

void p3d_join_rank(struct p3d_join *j, int ti)
{
    const struct p3d_tl *tl = &j->t->tl[ti];

    j->gen++;
    j->n_touched = 0;
    /* op indexes are 32-bit: 2^32 ops would take 320 GiB anyway */
    for (size_t oi = 0; oi < tl->n_ops && oi < UINT32_MAX; oi++)
        p3d_join_op(j, ti, (uint32_t)oi, &tl->ops[oi]);
    p3d_join_done(j, ti);
}

void p3d_jop_of(struct p3d_jop *k, const struct p3d_top *o, uint32_t oi)
{
    *k = (struct p3d_jop){.s = o->s, .e = o->e, .seq = o->seq,
                          .bytes = o->bytes, .gcomm = o->gcomm,
                          .peer = o->peer, .oi = oi, .op = o->op,
                          .has_gpu = o->has_gpu}; /* .pad zero */
}

void p3d_join_rank_ops(struct p3d_join *j, int ti, const struct p3d_jop *k,
                       size_t n)
{
    j->gen++;
    j->n_touched = 0;
    for (size_t i = 0; i < n; i++) {
        struct p3d_top o = {.s = k[i].s, .e = k[i].e, .seq = k[i].seq,
                            .bytes = k[i].bytes, .gcomm = k[i].gcomm,
                            .peer = k[i].peer, .op = k[i].op,
                            .has_gpu = k[i].has_gpu};
        p3d_join_op(j, ti, k[i].oi, &o);
    }
    p3d_join_done(j, ti);
}

void p3d_join_finish(struct p3d_join *j)
{
    for (size_t k = 0; k < j->n_g; k++) {
        if (j->g[k].live)
            p3d_join_fold(j, &j->g[k]);
        free(j->g[k].tl);
    }
    P3D_FREE_ALL(j->g, j->coll, j->rank_tl, j->done, j->touched);
    p3d_map_free(&j->chan);
    memset(j, 0, sizeof(*j));
}
