/*
 * p3d_clock.c - put every rank on one clock.
 *
 * Ranks of one host share CLOCK_MONOTONIC and keep it.  Other hosts are
 * first related through the header's (CLOCK_REALTIME, CLOCK_MONOTONIC)
 * anchors, then corrected from matched collective instances and
 * Send/Recv pairs.  Completions of a collective are near-simultaneous,
 * but a waiting member wakes later than the last arriver, so a plain
 * average of end times is biased by whoever arrives last; instead the
 * causality bounds (no completion before every member started, no
 * receive completion before its send started) bracket each host pair's
 * offset, tightened through chains of hosts, and the midpoint of the
 * bracket is taken (the constraints of Scalasca's controlled logical
 * clock, solved in closed form).  Offsets are reported against the host
 * of the lowest rank, the half-width of the bracket as the uncertainty
 * (negative: the bounds contradict each other by that much).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_bytes.h"
#include "p3d_clock_solve.h"
#include "p3d_dist.h"
#include "p3d_time.h"
#include "p3d_util.h"

int p3d_clock_hosts(struct p3d_job *job, struct p3d_time_res *t)
{
    t->hosts = p3d_xcalloc((size_t)t->n + 1, sizeof(*t->hosts));
    t->n_hosts = 0;
    for (int i = 0; i < t->n; i++) {
        char h[P3D_HOST_LEN + 1];
        int k;
        p3d_fixed_str(h, job->ranks[i].hdr.hostname, P3D_HOST_LEN);
        if (!h[0] && job->ranks[i].failed) {
            t->tl[i].host = 0;  /* no readable header: host unknown */
            continue;
        }
        for (k = 0; k < t->n_hosts && strcmp(t->hosts[k].name, h); k++)
            ;
        if (k == t->n_hosts) {
            memcpy(t->hosts[k].name, h, sizeof(h));
            t->hosts[k].shift = t->tl[i].rt_anchor;
            t->n_hosts++;
        }
        t->tl[i].host = k;
    }
    for (int k = t->n_hosts - 1; k >= 0; k--)
        t->hosts[k].shift -= t->hosts[0].shift;
    return t->n_hosts;
}

/*
 * Causality bounds.  No member of a collective completes before every
 * member started it, and no receive completes before its send started:
 * with D[h] added to host h, end_j + D[b] >= start_i + D[a], so
 * D[b] - D[a] >= start_i - end_j (p3d_clock_solve.c keeps and solves
 * them).
 */
struct p3d_cscr { /* bounds, and per-instance scratch per host */
    struct p3d_cbounds *b;
    int64_t *smax, *emin;
    int *mark, *list;
    int gen;
};

/*
 * Bounds from one collective instance: every pair of its hosts, or, for
 * instances spanning many hosts, the pairs with the host that started
 * last and the host that ended first (the tightest of each row/column).
 * Members are visited from the highest timeline down (ties between hosts
 * go to the first visited).
 */
static void p3d_clock_inst(void *ctx, const struct p3d_join *j,
                           const struct p3d_jgrp *g, size_t k)
{
    const struct p3d_time_res *t = j->t;
    struct p3d_cscr *c = ctx;
    int n = 0, late = -1, early = -1;

    c->gen++;
    for (int sl = g->m - 1; sl >= 0; sl--) {
        size_t x = p3d_jx(g, k, sl);
        int h;
        int64_t sh, s, e;
        if (!(g->f[x] & 1))
            continue;
        h = t->tl[g->tl[sl]].host;
        sh = t->hosts[h].shift;
        s = g->s[x] + sh;
        e = g->e[x] + sh;
        if (c->mark[h] != c->gen) {
            c->mark[h] = c->gen;
            c->list[n++] = h;
            c->smax[h] = s;
            c->emin[h] = e;
        }
        c->smax[h] = s > c->smax[h] ? s : c->smax[h];
        c->emin[h] = e < c->emin[h] ? e : c->emin[h];
    }
    for (int i = 0; i < n; i++) {
        int h = c->list[i];
        late = late < 0 || c->smax[h] > c->smax[late] ? h : late;
        early = early < 0 || c->emin[h] < c->emin[early] ? h : early;
    }
    for (int i = 0; i < n; i++)
        for (int jj = 0; jj < n; jj++) {
            int a = c->list[i], b = c->list[jj];
            if (n <= 16 || a == late || b == early)
                p3d_cbounds_add(c->b, a, b, c->smax[a] - c->emin[b]);
        }
}

static void p3d_clock_pair(void *ctx, const struct p3d_join *j,
                           const struct p3d_jgrp *g, size_t k)
{
    const struct p3d_time_res *t = j->t;
    struct p3d_cscr *c = ctx;
    size_t xs = p3d_jx(g, k, 0), xr = p3d_jx(g, k, 1);
    int hs, hr;

    if (!(g->f[xs] & 1) || !(g->f[xr] & 1))
        return;
    hs = t->tl[g->tl[0]].host;
    hr = t->tl[g->tl[1]].host;
    p3d_cbounds_add(c->b, hs, hr,
                    g->s[xs] + t->hosts[hs].shift - g->e[xr] -
                        t->hosts[hr].shift);
}

/* Receive k of channel g completed before its send started (times
 * already on one clock). */
int p3d_clock_violates(const struct p3d_time_res *t, const struct p3d_jgrp *g,
                       size_t k)
{
    size_t xs = p3d_jx(g, k, 0), xr = p3d_jx(g, k, 1);

    return (g->f[xs] & 1) && (g->f[xr] & 1) &&
           t->tl[g->tl[0]].host != t->tl[g->tl[1]].host &&
           g->e[xr] < g->s[xs];
}

static void p3d_clock_check(void *ctx, const struct p3d_join *j,
                            const struct p3d_jgrp *g, size_t k)
{
    (void)ctx;
    j->t->clock_violations += p3d_clock_violates(j->t, g, k);
}

void p3d_clock_check_use(struct p3d_join *j)
{
    p3d_join_use(j, NULL, p3d_clock_check, NULL);
}

/* Shift the ops held in memory onto the reference clock. */
static void p3d_clock_apply(struct p3d_time_res *t)
{
    for (int i = 0; i < t->n; i++) {
        struct p3d_tl *tl = &t->tl[i];
        int64_t d = t->hosts[tl->host].shift;
        if (d)
            p3d_time_shift_ops(tl, d);
    }
}

void *p3d_clock_begin(struct p3d_job *job, struct p3d_time_res *t,
                      struct p3d_join *j)
{
    size_t nh = (size_t)t->n_hosts;
    struct p3d_cscr *c;

    (void)job;
    if (nh < 2)
        return NULL;
    c = p3d_xcalloc(1, sizeof(*c));
    c->b = p3d_cbounds_new((int)nh, 0);
    c->smax = p3d_xcalloc(nh, sizeof(*c->smax));
    c->emin = p3d_xcalloc(nh, sizeof(*c->emin));
    c->mark = p3d_xcalloc(nh, sizeof(*c->mark));
    c->list = p3d_xcalloc(nh, sizeof(*c->list));
    p3d_join_use(j, p3d_clock_inst, p3d_clock_pair, c);
    j->skip_local = 1;
    return c;
}

void p3d_clock_end(struct p3d_time_res *t, void *ctx)
{
    struct p3d_cscr *c = ctx;
    int nh = t->n_hosts;
    struct p3d_csol *sol;

    if (!c) { /* one host, or too many: the anchors only */
        for (int h = 0; h < nh; h++)
            t->hosts[h].offset_ns = -(t->hosts[h].shift - t->hosts[0].shift);
        return;
    }
    if (p3d_dist_active && p3d_dist_active->self != 0) {
        /* its bounds went to process 0, which solves all of them and
         * sends the shifts (p3d_pass_agree); clock_checked comes with
         * the iterations (p3d_pass_share) */
        p3d_cbounds_free(c->b);
        P3D_FREE_ALL(c->smax, c->emin, c->mark, c->list, c);
        return;
    }
    sol = p3d_xcalloc((size_t)nh, sizeof(*sol));
    p3d_cbounds_solve(c->b, sol);
    for (int h = 0; h < nh; h++) {
        struct p3d_thost *th = &t->hosts[h];
        if (sol[h].solved) {
            th->uncert_ns = sol[h].uncert;
            th->contra_ns = sol[h].contra;
            th->n_inst = sol[h].n_inst;
            th->offset_unknown = th->contra_ns > P3D_CONTRA_HUGE_NS;
            t->n_clock_unknown += th->offset_unknown;
        }
        th->shift += sol[h].d;
        th->offset_ns = -(th->shift - t->hosts[0].shift);
        th->anchor_err_ns = -sol[h].d;
    }
    t->clock_checked = 1;
    p3d_cbounds_free(c->b);
    P3D_FREE_ALL(sol, c->smax, c->emin, c->mark, c->list, c);
}

void p3d_clock_pack(const void *ctx, struct p3d_bytes *b)
{
    const struct p3d_cscr *c = ctx;

    if (c)
        p3d_cbounds_pack(c->b, b);
}

int p3d_clock_merge(void *ctx, struct p3d_bytes_in *in)
{
    struct p3d_cscr *c = ctx;

    return c ? p3d_cbounds_merge(c->b, in) : 0;
}

/* Join every timeline held in memory, then fold the rest. */
static void p3d_clock_join_all(struct p3d_time_res *t, struct p3d_join *j)
{
    for (int i = 0; i < t->n; i++)
        p3d_join_rank(j, i);
    p3d_join_finish(j);
}

void p3d_clock_align(struct p3d_job *job, struct p3d_time_res *t)
{
    struct p3d_join j;
    void *on;

    if (p3d_clock_hosts(job, t) < 2)
        return;
    p3d_join_init(&j, job, t);
    on = p3d_clock_begin(job, t, &j);
    if (on)
        p3d_clock_join_all(t, &j);
    else
        p3d_join_finish(&j);
    p3d_clock_end(t, on);
    p3d_clock_apply(t);
    if (!on)
        return;
    p3d_join_init(&j, job, t);
    p3d_clock_check_use(&j);
    p3d_clock_join_all(t, &j);
}
