/*
 * p3d_hang_root.c - hang analysis: what a root rank owes.  Its next op is
 * read from a "twin" (a rank of the same pipeline stage runs the same
 * program) and matched against the waits on the root.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_hang_int.h"
#include "p3d_label.h"
#include "p3d_match.h"
#include "p3d_util.h"

/* Pipeline stage of a global rank under the job's layout, -1 unknown. */
int p3d_hg_stage(const struct p3d_job *job, int rank)
{
    const struct p3d_layout *l = &job->layout;
    int stride = 1;

    if (!l->valid)
        return -1;
    for (int j = 0; j < P3D_AX_N; j++) {
        int ax = l->ord[j];
        if (ax == P3D_AX_PP)
            return l->size[ax] > 0 ? (rank / stride) % l->size[ax] : -1;
        stride *= l->size[ax] > 0 ? l->size[ax] : 1;
    }
    return -1;
}

/*
 * What root r would have issued next, read from a "twin": a rank of the
 * same pipeline stage (same program) that got further and agrees on r's
 * last op.  Returns the twin's next op, or NULL.  Not for a trace that
 * lost records, on either side: its op count is then not the count of
 * ops it issued, nor its op k the k-th it issued.
 */
static const struct p3d_rec_op *p3d_hg_twin_find(const struct p3d_hg *g,
                                                  int r, int st)
{
    const struct p3d_hrank *h = &g->hj->hr[r];
    size_t n = h->n_ops;

    for (int t = 0; t < g->hj->world; t++) {
        const struct p3d_hrank *x = &g->hj->hr[t];
        const struct p3d_rec_op *a, *b;
        if (t == r || !p3d_hg_has_file(g, t) || x->n_ops <= n ||
            p3d_hg_stage(g->job, t) != st || p3d_hg_lost_records(g, t))
            continue;
        if (n == 0)
            return p3d_hang_op_at(x, 0);
        a = p3d_hang_op_at(h, n - 1);
        b = p3d_hang_op_at(x, n - 1);
        if (a && b && a->op == b->op && a->seq == b->seq &&
            p3d_hang_label(g->job, a->comm_hash) ==
                p3d_hang_label(g->job, b->comm_hash))
            return p3d_hang_op_at(x, n);
    }
    return NULL;
}

/*
 * The answer depends on r only through its stage, its op count and its
 * last op (a twin has more ops than r, so it is never r, nor a rank of
 * the same key): at 16k ranks, 8k roots and 8k ranks outside NCCL each
 * walked the world; one walk per key now (g->memo, when there is one).
 */
const struct p3d_rec_op *p3d_hg_twin_next(const struct p3d_hg *g, int r)
{
    const struct p3d_hrank *h = &g->hj->hr[r];
    const struct p3d_rec_op *last;
    struct p3d_hg_memo *m = g->memo;
    struct p3d_hg_twin key = {.st = p3d_hg_stage(g->job, r), .op = -1,
                              .label = -1, .n = h->n_ops};
    uint64_t hk;

    if (key.st < 0 || p3d_hg_lost_records(g, r))
        return NULL;
    if (m == NULL)
        return p3d_hg_twin_find(g, r, key.st);
    last = key.n ? p3d_hang_op_at(h, key.n - 1) : NULL;
    if (key.n && last == NULL) /* not kept: no key */
        return p3d_hg_twin_find(g, r, key.st);
    if (last) {
        key.op = last->op, key.seq = last->seq;
        key.label = p3d_hang_label(g->job, last->comm_hash);
    }
    hk = ((uint64_t)key.n * 0x9e3779b97f4a7c15ull) ^
         ((uint64_t)(uint32_t)key.st << 40) ^ ((uint64_t)key.op << 32) ^
         (key.seq * 0xff51afd7ed558ccdull) ^ (uint64_t)(uint32_t)key.label;
    for (int k = p3d_map_get(&m->tw_idx, hk); k >= 0; k = m->tw[k].prev)
        if (m->tw[k].st == key.st && m->tw[k].n == key.n &&
            m->tw[k].op == key.op && m->tw[k].seq == key.seq &&
            m->tw[k].label == key.label)
            return m->tw[k].next;
    key.next = p3d_hg_twin_find(g, r, key.st);
    m->cap_tw = p3d_grow((void **)&m->tw, m->cap_tw, m->n_tw, sizeof(*m->tw));
    key.prev = p3d_map_push(&m->tw_idx, hk, (int)m->n_tw);
    m->tw[m->n_tw++] = key;
    return key.next;
}

/* Members of the owed op's communicator (for the report). */
static void p3d_hg_owed_members(const struct p3d_hg *g,
                                const struct p3d_hedge *e,
                                struct p3d_hang_root *rt)
{
    int gi = p3d_map_get(&g->job->comm_idx, e->comm), lbl, n = 0;
    int *buf = NULL;
    const int *mem = NULL;

    if (gi >= 0) {
        mem = g->job->comms[gi].members;
        n = g->job->comms[gi].n_members;
    } else if (e->op == P3D_HANG_OP_INIT) {
        buf = p3d_xcalloc((size_t)g->hj->world + 1, sizeof(int));
        mem = p3d_hg_init_members(g, e->from, e->comm, buf, &n, &lbl);
    }
    for (int i = 0; i < n && i < P3D_HANG_MEMBERS; i++)
        rt->owed_members[rt->n_owed_members++] = mem[i];
    free(buf);
}

/* The hard waits on a root, and the one it owes first: the op of its
 * pipeline twin's next op if one matches (how 3, or 2 by label alone),
 * else the earliest; on a tie the first in edge order (key). */
struct p3d_hg_owe {
    const struct p3d_rec_op *nx;
    int lbl, how, n;
    int have;
    struct p3d_hedge best;
    size_t key;
};

static void p3d_hg_owe_one(void *ctx, const struct p3d_hedge *e, size_t key)
{
    struct p3d_hg_owe *w = ctx;
    int eh = w->nx && e->label == w->lbl ? (e->op == w->nx->op ? 3 : 2) : 0;

    w->n++;
    if (!w->have || eh > w->how ||
        (eh == w->how && (e->t < w->best.t ||
                          (e->t == w->best.t && key < w->key)))) {
        w->best = *e, w->how = eh, w->key = key;
        w->have = 1;
    }
}

/* Pick the op root r owes first among the hard waits on it. */
static void p3d_hg_owed(const struct p3d_hg *g, struct p3d_hang_root *rt)
{
    struct p3d_hg_owe w = {.nx = p3d_hg_twin_next(g, rt->rank)};
    const struct p3d_hedge *best = &w.best;
    int how;

    w.lbl = w.nx ? p3d_hang_label(g->job, w.nx->comm_hash) : -1;
    p3d_hg_hard_in(g, rt->rank, p3d_hg_owe_one, &w);
    rt->n_waiters = w.n;
    how = w.how;
    if (!w.have)
        return;
    rt->owed_comm = best->comm;
    rt->owed_label = best->label;
    rt->owed_op = best->op == P3D_OP_SEND ? P3D_OP_RECV
                  : best->op == P3D_OP_RECV ? P3D_OP_SEND : best->op;
    rt->owed_seq = best->seq;
    rt->owed_how = how ? 1 : rt->n_waiters == 1 ? 2 : 0;
    rt->issued_on_comm = p3d_hang_count_comm(&g->hj->hr[rt->rank],
                                             best->comm);
    p3d_hg_owed_members(g, best, rt);
}

/* The watchdog of the waiting rank reported the op of wait e pending
 * for at least `ns`. */
static int p3d_hg_reported_for(const struct p3d_hrank *a,
                               const struct p3d_hedge *e, uint64_t ns)
{
    for (int k = 0; k < a->n_hang; k++)
        if (a->hang[k]->op == e->op && a->hang[k]->comm_hash == e->comm &&
            a->hang[k]->seq == e->seq && a->hang[k]->pending_ns >= ns)
            return 1;
    return 0;
}

/*
 * A root whose trace lost records (P3D_HS_DROPPED) may still be known
 * not to have waited inside NCCL, from its watchdog (shim/p3d_watchdog.c):
 *   - it noted its timeout T when it started, and T > 0;
 *   - it wrote the SIGTERM note, after a last scan that reports the
 *     oldest op pending longer than T (the SIGTERM path scans first), and
 *     its reports go to the file's spare chunk (shim/p3d_writer.c), so a
 *     full file does not lose them;
 *   - it reported nothing: when the signal came, no op of r had been
 *     pending for T; and it noted no op it could not track (a full
 *     in-flight table: "watchdog: untracked_ops N");
 *   - a rank waiting on r had had that op pending for at least T (its
 *     own report of the op; a duration on its own clock).
 * Had r issued its part more than T before the signal, that part could
 * not have completed (the waiter's did not) and r would have reported
 * it.  So r issued it less than T before its end, or never: the others
 * waited on r, not on NCCL or the network.
 */
struct p3d_hg_silent {
    const struct p3d_hg *g;
    int r, found;
};

static void p3d_hg_silent_one(void *ctx, const struct p3d_hedge *e,
                              size_t key)
{
    struct p3d_hg_silent *s = ctx;
    const struct p3d_hrank *h = &s->g->hj->hr[s->r];

    (void)key;
    s->found |= e->from != s->r &&
                p3d_hg_reported_for(&s->g->hj->hr[e->from], e,
                                    h->wd_timeout_ns);
}

static int p3d_hg_watchdog_silent(const struct p3d_hg *g, int r)
{
    const struct p3d_hrank *h = &g->hj->hr[r];
    struct p3d_hg_silent s = {g, r, 0};

    if (!h->term || !h->wd_known || h->wd_timeout_ns == 0 || h->n_hang > 0 ||
        h->wd_untracked > 0)
        return 0;
    p3d_hg_hard_in(g, r, p3d_hg_silent_one, &s);
    return s.found;
}

void p3d_hg_fill_root(const struct p3d_hg *g, int r,
                             struct p3d_hang_root *rt, uint64_t t_end)
{
    const struct p3d_hrank *h = &g->hj->hr[r];

    memset(rt, 0, sizeof(*rt));
    rt->rank = r;
    rt->state = h->odd ? P3D_HS_MISMATCH : h->cycle ? P3D_HS_CYCLE
                : h->state == P3D_HS_WAITING ? P3D_HS_STUCK : h->state;
    rt->owed_label = rt->owed_op = -1;
    rt->last = h->n_ops ? p3d_hang_op_at(h, h->n_ops - 1) : NULL;
    rt->t_last = h->t_last;
    rt->since_ns = t_end > h->t_last && h->t_last ? t_end - h->t_last : 0;
    if (rt->state == P3D_HS_DROPPED && p3d_hg_watchdog_silent(g, r)) {
        rt->state = P3D_HS_NOT_IN_NCCL;
        rt->wd_silent = 1;
        rt->wd_timeout_ns = h->wd_timeout_ns;
    }
    p3d_hg_owed(g, rt);
}
