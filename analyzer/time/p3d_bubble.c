/*
 * p3d_bubble.c - the measured pipeline bubble per stage and iteration.
 *
 * Bubble = time a stage spends in pipeline Send/Recv (ops whose peer is
 * in another stage: the kernel's interval, or the whole call up to the
 * return of its ncclGroupEnd when the call waited for the kernel, as the
 * synchronous CPU doubles do) with no compute kernel running, as a
 * fraction of the step (as Megatron's and torchtitan's
 * schedules leave a stage without work: the time it waits on a P2P).  Each such wait is put
 * in the warm-up / cool-down phase (up to the stage's first backward
 * receive, after its last forward send) or the steady state, and
 * receives are split Scalasca-style into late-sender wait (send start -
 * recv start) and transfer.  Theory: (p-1)/(m+p-1)/v with m and v from
 * the schedule (forward sends of stage 0 minus its forward receives from
 * the last stage, which only interleaving has) or the command line.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

struct p3d_split p3d_bubble_split(int64_t send_s, int64_t recv_s,
                                  int64_t recv_e)
{
    struct p3d_split r = {0, 0};
    int64_t from = send_s > recv_s ? send_s : recv_s;

    if (recv_e <= recv_s)
        return r;
    r.late = send_s > recv_s ? send_s - recv_s : 0;
    if (r.late > recv_e - recv_s)
        r.late = recv_e - recv_s;
    r.transfer = recv_e > from ? recv_e - from : 0;
    return r;
}

static int p3d_is_pp(const struct p3d_job *job, const struct p3d_tl *tl,
                     const struct p3d_top *o)
{
    return P3D_OP_IS_P2P(o->op) && o->peer >= 0 &&
           p3d_time_stage(job, o->peer) != tl->stage;
}

/* 1 if the op goes to / comes from the next stage. */
static int p3d_is_next(const struct p3d_job *job, const struct p3d_tl *tl,
                       const struct p3d_top *o, int pp)
{
    int ps = p3d_time_stage(job, o->peer);

    if (pp == 2)
        return tl->stage == 0;
    return ps == (tl->stage + 1) % pp;
}

/* Phase limits of iteration [a, z) of ops: fill before f, after c. */
static void p3d_bubble_phase(const struct p3d_job *job,
                             const struct p3d_tl *tl, size_t a, size_t z,
                             int pp, size_t *f, size_t *c)
{
    int last = tl->stage == pp - 1;

    *f = z;
    *c = z;
    for (size_t i = a; i < z; i++) {
        const struct p3d_top *o = &tl->ops[i];
        int nx;
        if (!p3d_is_pp(job, tl, o))
            continue;
        nx = p3d_is_next(job, tl, o, pp);
        if (*f == z && o->op == P3D_OP_RECV && nx != last)
            *f = i;
        if ((!last && o->op == P3D_OP_SEND && nx) ||
            (last && o->op == P3D_OP_RECV && !nx))
            *c = i;
    }
}

/* Pipeline waits of own iteration i (first_it is 0 while loading). */
static void p3d_bubble_rank(const struct p3d_job *job, struct p3d_tl *tl,
                            int i, int pp)
{
    struct p3d_tbreak *b = &tl->br[i];
    size_t a = tl->it_op[i], z = tl->it_op[i + 1], f, c, hint = 0;
    int64_t s, e, cur;

    if (!p3d_time_window(tl, i, &s, &e))
        return;
    p3d_bubble_phase(job, tl, a, z, pp, &f, &c);
    cur = s;
    for (size_t k = a; k < z; k++) {
        const struct p3d_top *o = &tl->ops[k];
        int sync = o->s >= o->h0 && o->e <= o->hg; /* call waited */
        int64_t a0 = sync ? o->hs : o->s, z0 = sync ? o->hg : o->e;
        int64_t x = a0 > cur ? a0 : cur, y = z0 < e ? z0 : e, w;
        if (!p3d_is_pp(job, tl, o) || y <= x)
            continue;
        w = p3d_iv_minus_from(x, y, &tl->compute, &hint);
        cur = y;
        b->pp_wait += w;
        if (k <= f || k > c)
            b->pp_fill += w;
        else
            b->pp_steady += w;
    }
}

/* Forward sends and wrapped receives of own iteration i (stage 0). */
static void p3d_bubble_count(const struct p3d_job *job, struct p3d_tl *tl,
                             int i, int pp)
{
    for (size_t k = tl->it_op[i]; k < tl->it_op[i + 1]; k++) {
        const struct p3d_top *o = &tl->ops[k];
        if (!p3d_is_pp(job, tl, o))
            continue;
        if (o->op == P3D_OP_SEND && p3d_is_next(job, tl, o, pp))
            tl->it_fwd[i]++;
        if (pp > 2 && o->op == P3D_OP_RECV && !p3d_is_next(job, tl, o, pp))
            tl->it_wrap[i]++;
    }
}

/* While the rank is loaded: its pipeline waits per own iteration, and
 * stage 0's schedule counts. */
void p3d_bubble_rank_all(const struct p3d_job *job, struct p3d_tl *tl,
                         int pp)
{
    if (pp < 2 || !tl->br)
        return;
    for (int i = 0; i < tl->n_iter; i++)
        p3d_bubble_rank(job, tl, i, pp);
    if (tl->stage != 0)
        return;
    tl->it_fwd = p3d_xcalloc((size_t)tl->n_iter + 1, sizeof(*tl->it_fwd));
    tl->it_wrap = p3d_xcalloc((size_t)tl->n_iter + 1, sizeof(*tl->it_wrap));
    for (int i = 0; i < tl->n_iter; i++)
        p3d_bubble_count(job, tl, i, pp);
}

/* Job iteration whose window holds time x on timeline tl, -1 if none
 * (the first one, as windows of a rank whose times ascend are disjoint). */
static int p3d_bubble_iter(const struct p3d_time_res *t,
                           const struct p3d_tl *tl, int64_t x)
{
    int lo = 0, hi = t->n_iter;
    int64_t s, e;

    if (!tl->it_mono) {
        for (int j = 0; j < t->n_iter; j++)
            if (p3d_time_window(tl, j, &s, &e) && x >= s && x < e)
                return j;
        return -1;
    }
    while (lo < hi) { /* last window starting at or before x */
        int mid = (lo + hi) / 2;
        if (tl->it_t[tl->first_it + mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int j = lo - 1; j >= 0 && j >= lo - 2; j--)
        if (p3d_time_window(tl, j, &s, &e) && x >= s && x < e)
            return j;
    return -1;
}

/* tl's breakdowns for the pairs' parts; over several processes made at
 * the first pair (br_lazy: process 0 has them, p3d_pass_share). */
static struct p3d_tbreak *p3d_bubble_br(const struct p3d_time_res *t,
                                        struct p3d_tl *tl)
{
    if (!tl->br && tl->br_lazy)
        tl->br = p3d_xcalloc((size_t)t->n_iter + 1, sizeof(*tl->br));
    return tl->br;
}

/* Late sender / receiver and transfer of matched pipeline pair k of
 * channel g (pass 2: times aligned, windows known). */
void p3d_bubble_pair(const struct p3d_job *job, struct p3d_time_res *t,
                     const struct p3d_jgrp *g, size_t k)
{
    struct p3d_tl *rt = &t->tl[g->tl[1]], *st = &t->tl[g->tl[0]];
    size_t xs = p3d_jx(g, k, 0), xr = p3d_jx(g, k, 1);
    int64_t ss = g->s[xs], se = g->e[xs];
    int64_t rs = g->s[xr], re = g->e[xr];
    struct p3d_split sp;
    int j;

    if (g->src < 0 || p3d_time_stage(job, g->src) == rt->stage ||
        !p3d_bubble_br(t, rt))
        return;
    if ((j = p3d_bubble_iter(t, rt, rs)) < 0)
        return;
    sp = p3d_bubble_split(ss, rs, re);
    rt->br[j].late_sender += sp.late;
    rt->br[j].transfer += sp.transfer;
    sp = p3d_bubble_split(rs, ss, se);
    if (p3d_bubble_br(t, st))
        st->br[j].late_receiver += sp.late;
}

static void p3d_bubble_pair_use(void *ctx, const struct p3d_join *j,
                                const struct p3d_jgrp *g, size_t k)
{
    (void)ctx;
    if ((g->f[p3d_jx(g, k, 0)] & 1) && (g->f[p3d_jx(g, k, 1)] & 1))
        p3d_bubble_pair(j->job, j->t, g, k);
}

void p3d_bubble_use(struct p3d_join *j)
{
    p3d_join_use(j, NULL, p3d_bubble_pair_use, NULL);
}

/* The pairs' parts of timeline tl's iterations, as sums: [it][3]. */
static void p3d_bubble_parts(const struct p3d_time_res *t,
                             const struct p3d_tl *tl, uint64_t *v)
{
    for (int k = 0; k <= t->n_iter; k++) {
        v[3 * k] = (uint64_t)tl->br[k].late_sender;
        v[3 * k + 1] = (uint64_t)tl->br[k].transfer;
        v[3 * k + 2] = (uint64_t)tl->br[k].late_receiver;
    }
}

void p3d_bubble_pack(const struct p3d_time_res *t, struct p3d_bytes *b)
{
    size_t m = 3 * ((size_t)t->n_iter + 1), at = b->n;
    uint64_t *v = p3d_xcalloc(m, sizeof(*v)), n = 0;

    p3d_bytes_put(b, &n, sizeof(n)); /* the count, set below */
    for (int i = 0; i < t->n; i++) {
        uint64_t any = 0, ti = (uint64_t)i;
        if (!t->tl[i].br)
            continue;
        p3d_bubble_parts(t, &t->tl[i], v);
        for (size_t k = 0; k < m; k++)
            any |= v[k];
        if (!any)
            continue;
        p3d_bytes_put(b, &ti, sizeof(ti));
        p3d_bytes_put_sums(b, v, m);
        n++;
    }
    memcpy(b->p + at, &n, sizeof(n));
    free(v);
}

int p3d_bubble_merge(struct p3d_time_res *t, struct p3d_bytes_in *in)
{
    size_t m = 3 * ((size_t)t->n_iter + 1);
    uint64_t *v = p3d_xcalloc(m, sizeof(*v)), n = 0, ti;

    p3d_bytes_get(in, &n, sizeof(n));
    for (uint64_t r = 0; r < n && !in->bad; r++) {
        struct p3d_tl *tl;
        p3d_bytes_get(in, &ti, sizeof(ti));
        if (in->bad || ti >= (uint64_t)t->n || !t->tl[ti].br) {
            in->bad = 1; /* not a timeline with iterations here */
            break;
        }
        tl = &t->tl[ti];
        memset(v, 0, m * sizeof(*v));
        p3d_bytes_add_sums(in, v, m);
        for (int k = 0; !in->bad && k <= t->n_iter; k++) {
            tl->br[k].late_sender += (int64_t)v[3 * k];
            tl->br[k].transfer += (int64_t)v[3 * k + 1];
            tl->br[k].late_receiver += (int64_t)v[3 * k + 2];
        }
    }
    free(v);
    return in->bad ? -1 : 0;
}

/* m and v from stage 0's first steady iteration (0 if unknown). */
void p3d_bubble_sched(const struct p3d_job *job, struct p3d_time_res *t)
{
    int fwd = 0, wrap = 0;

    t->pp = job->layout.valid ? job->layout.size[P3D_AX_PP] : 1;
    if (t->pp < 2 || !t->n_iter)
        return;
    for (int i = 0; i < t->n && !fwd; i++) {
        const struct p3d_tl *tl = &t->tl[i];
        int k = tl->first_it + t->warm;
        if (tl->stage != 0 || !tl->br || k >= tl->n_iter || !tl->it_fwd)
            continue;
        fwd += tl->it_fwd[k];
        wrap += tl->it_wrap[k];
    }
    if (fwd > wrap) {
        t->m = fwd - wrap;
        t->m_src = 1;
        if (t->pp > 2 && t->v <= 1)
            t->v = fwd / t->m;
    }
    if (t->m && t->v > 1 && t->m_src == 1 && t->pp == 2)
        t->m /= t->v;
}

static void p3d_bubble_stage(struct p3d_time_res *t, int st)
{
    struct p3d_tstage *g = &t->stages[st];
    double step = 0, w = 0, late = 0, tr = 0, fill = 0, steady = 0, busy = 0;

    g->stage = st;
    for (int i = 0; i < t->n; i++) {
        const struct p3d_tl *tl = &t->tl[i];
        if (tl->stage != st || !tl->br)
            continue;
        g->n_ranks++;
        for (int k = t->warm; k < t->n_iter; k++) {
            const struct p3d_tbreak *b = &tl->br[k];
            if (b->nokern)
                continue; /* P2P time that compute may have hidden */
            step += (double)b->step;
            w += (double)b->pp_wait;
            late += (double)b->late_sender;
            tr += (double)b->transfer;
            fill += (double)b->pp_fill;
            steady += (double)b->pp_steady;
            busy += (double)b->compute;
        }
    }
    if (step <= 0)
        return;
    g->bubble_frac = w / step;
    g->late_frac = late / step;
    g->transfer_frac = tr / step;
    g->rest_frac = g->bubble_frac - g->late_frac - g->transfer_frac;
    g->fill_frac = fill / step;
    g->steady_frac = steady / step;
    g->busy_frac = busy / step;
}

/* After pass 2: theory and the measured bubble per stage. */
void p3d_bubble_all(struct p3d_job *job, struct p3d_time_res *t)
{
    double sum = 0, busy = -1;

    (void)job;
    if (t->pp < 2 || !t->n_iter)
        return;
    if (t->v < 1)
        t->v = 1;
    if (t->m)
        t->theory = (double)(t->pp - 1) / (t->m + t->pp - 1) / t->v;
    t->n_stages = t->pp;
    t->stages = p3d_xcalloc((size_t)t->pp, sizeof(*t->stages));
    for (int s = 0; s < t->pp; s++) {
        p3d_bubble_stage(t, s);
        sum += t->stages[s].bubble_frac;
        if (t->stages[s].busy_frac > busy) {
            busy = t->stages[s].busy_frac;
            t->worst_stage = s;
        }
    }
    t->measured = sum / t->pp;
}
