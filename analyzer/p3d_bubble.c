/*
 * p3d_bubble.c - the measured pipeline bubble per stage and iteration.
 *
 * Bubble = time a stage spends in pipeline Send/Recv (ops whose peer is
 * in another stage: the kernel's interval, or the whole call up to the
 * return of its ncclGroupEnd when the call waited for the kernel, as the
 * synchronous CPU doubles do) with no compute kernel running, as a
 * fraction of the step (analysis.md section 10).  Each such wait is put
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

static void p3d_bubble_rank(const struct p3d_job *job, struct p3d_tl *tl,
                            int k, int pp)
{
    struct p3d_tbreak *b = &tl->br[k];
    int i0 = tl->first_it + k;
    size_t a = tl->it_op[i0], z = tl->it_op[i0 + 1], f, c;
    int64_t s, e, cur;

    if (!p3d_time_window(tl, k, &s, &e))
        return;
    p3d_bubble_phase(job, tl, a, z, pp, &f, &c);
    cur = s;
    for (size_t i = a; i < z; i++) {
        const struct p3d_top *o = &tl->ops[i];
        int sync = o->s >= o->h0 && o->e <= o->hg; /* call waited */
        int64_t a0 = sync ? o->hs : o->s, z0 = sync ? o->hg : o->e;
        int64_t x = a0 > cur ? a0 : cur, y = z0 < e ? z0 : e, w;
        if (!p3d_is_pp(job, tl, o) || y <= x)
            continue;
        w = p3d_iv_minus(x, y, &tl->compute);
        cur = y;
        b->pp_wait += w;
        if (i <= f || i > c)
            b->pp_fill += w;
        else
            b->pp_steady += w;
    }
}

/* Late sender / receiver and transfer of every matched pipeline pair. */
static void p3d_bubble_pairs(const struct p3d_job *job,
                             struct p3d_time_res *t)
{
    struct p3d_itab it;

    p3d_itab_build(t, &it);
    for (size_t k = 0; k < it.n_pairs; k++) {
        const struct p3d_pair2 *p = &it.pairs[k];
        const struct p3d_top *sd, *rv;
        struct p3d_tl *rt;
        struct p3d_split sp;
        if (p->have != 3)
            continue;
        sd = P3D_OPP(t, p->send);
        rv = P3D_OPP(t, p->recv);
        rt = &t->tl[p->recv.tl];
        if (!p3d_is_pp(job, rt, rv) || !rt->br)
            continue;
        sp = p3d_bubble_split(sd->s, rv->s, rv->e);
        for (int j = 0; j < t->n_iter; j++) {
            int64_t s, e;
            if (!p3d_time_window(rt, j, &s, &e) || rv->s < s || rv->s >= e)
                continue;
            rt->br[j].late_sender += sp.late;
            rt->br[j].transfer += sp.transfer;
            sp = p3d_bubble_split(rv->s, sd->s, sd->e);
            if (t->tl[p->send.tl].br)
                t->tl[p->send.tl].br[j].late_receiver += sp.late;
            break;
        }
    }
    p3d_itab_free(&it);
}

/* m and v from stage 0's first steady iteration (0 if unknown). */
static void p3d_bubble_sched(const struct p3d_job *job,
                             struct p3d_time_res *t)
{
    int fwd = 0, wrap = 0;

    for (int i = 0; i < t->n && !fwd; i++) {
        const struct p3d_tl *tl = &t->tl[i];
        int k = tl->first_it + t->warm;
        if (tl->stage != 0 || !tl->br || k >= tl->n_iter)
            continue;
        for (size_t j = tl->it_op[k]; j < tl->it_op[k + 1]; j++) {
            const struct p3d_top *o = &tl->ops[j];
            if (!p3d_is_pp(job, tl, o))
                continue;
            if (o->op == P3D_OP_SEND && p3d_is_next(job, tl, o, t->pp))
                fwd++;
            if (t->pp > 2 && o->op == P3D_OP_RECV &&
                !p3d_is_next(job, tl, o, t->pp))
                wrap++;
        }
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
    g->fill_frac = fill / step;
    g->steady_frac = steady / step;
    g->busy_frac = busy / step;
}

void p3d_bubble_all(struct p3d_job *job, struct p3d_time_res *t)
{
    double sum = 0, busy = -1;

    t->pp = job->layout.valid ? job->layout.size[P3D_AX_PP] : 1;
    if (t->pp < 2 || !t->n_iter)
        return;
    for (int i = 0; i < t->n; i++)
        for (int k = 0; k < t->n_iter && t->tl[i].br; k++)
            p3d_bubble_rank(job, &t->tl[i], k, t->pp);
    p3d_bubble_pairs(job, t);
    p3d_bubble_sched(job, t);
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
