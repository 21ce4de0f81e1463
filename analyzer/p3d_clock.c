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

#include "p3d_time.h"
#include "p3d_util.h"

static int p3d_clock_hosts(struct p3d_job *job, struct p3d_time_res *t)
{
    t->hosts = p3d_xcalloc((size_t)t->n + 1, sizeof(*t->hosts));
    for (int i = 0; i < t->n; i++) {
        char h[P3D_HOST_LEN + 1];
        int k;
        p3d_fixed_str(h, job->ranks[i].hdr.hostname, P3D_HOST_LEN);
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
 * D[b] - D[a] >= start_i - end_j.  lo[a * H + b] keeps the largest such
 * bound over all instances; D[b] - D[a] lies in
 * [lo[a][b], -lo[b][a]], whose width is the smallest wake-up latency seen.
 */
static void p3d_clock_bound(int64_t *lo, int *cnt, int nh, int a, int b,
                            int64_t v)
{
    if (a == b)
        return;
    if (!cnt[a * nh + b] || v > lo[a * nh + b])
        lo[a * nh + b] = v;
    cnt[a * nh + b]++;
}

struct p3d_cscr { /* per-instance scratch, one slot per host */
    int64_t *smax, *emin;
    int *mark, *list;
    int gen;
};

/*
 * Bounds from one collective instance: every pair of its hosts, or, for
 * instances spanning many hosts, the pairs with the host that started
 * last and the host that ended first (the tightest of each row/column).
 */
static void p3d_clock_inst(const struct p3d_time_res *t,
                           const struct p3d_itab *it, size_t k,
                           int64_t *lo, int *cnt, struct p3d_cscr *c)
{
    int nh = t->n_hosts, n = 0, late = -1, early = -1;

    c->gen++;
    for (int e = it->inst[k].first; e >= 0; e = it->ents[e].next) {
        const struct p3d_top *o = P3D_OPP(t, it->ents[e].r);
        int h = t->tl[it->ents[e].r.tl].host;
        int64_t sh = t->hosts[h].shift;
        if (c->mark[h] != c->gen) {
            c->mark[h] = c->gen;
            c->list[n++] = h;
            c->smax[h] = o->s + sh;
            c->emin[h] = o->e + sh;
        }
        c->smax[h] = o->s + sh > c->smax[h] ? o->s + sh : c->smax[h];
        c->emin[h] = o->e + sh < c->emin[h] ? o->e + sh : c->emin[h];
    }
    for (int i = 0; i < n; i++) {
        int h = c->list[i];
        late = late < 0 || c->smax[h] > c->smax[late] ? h : late;
        early = early < 0 || c->emin[h] < c->emin[early] ? h : early;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int a = c->list[i], b = c->list[j];
            if (n <= 16 || a == late || b == early)
                p3d_clock_bound(lo, cnt, nh, a, b, c->smax[a] - c->emin[b]);
        }
}

static void p3d_clock_pairs(const struct p3d_time_res *t,
                            const struct p3d_itab *it, int64_t *lo, int *cnt)
{
    for (size_t k = 0; k < it->n_pairs; k++) {
        const struct p3d_pair2 *p = &it->pairs[k];
        int hs, hr;
        if (p->have != 3)
            continue;
        hs = t->tl[p->send.tl].host;
        hr = t->tl[p->recv.tl].host;
        p3d_clock_bound(lo, cnt, t->n_hosts, hs, hr,
                        P3D_OPP(t, p->send)->s + t->hosts[hs].shift -
                            P3D_OPP(t, p->recv)->e - t->hosts[hr].shift);
    }
}

/*
 * D from the bounds: U[a][b] >= D[b] - D[a] (from lo[b][a]), tightened
 * through every chain of hosts (Floyd-Warshall on the difference
 * constraints); each host is put in the middle of its bracket against
 * host 0, half the bracket is its uncertainty.  Hosts with no bracket
 * keep the anchor-only estimate.
 */
#define P3D_NOBOUND INT64_MAX

static void p3d_clock_solve(struct p3d_time_res *t, const int64_t *lo,
                            const int *cnt, int64_t *d)
{
    int nh = t->n_hosts;
    int64_t *u = p3d_xcalloc((size_t)nh * (size_t)nh, sizeof(*u));

    for (int a = 0; a < nh; a++)
        for (int b = 0; b < nh; b++)
            u[a * nh + b] = a == b ? 0 : cnt[b * nh + a] ? -lo[b * nh + a]
                                                           : P3D_NOBOUND;
    for (int k = 0; k < nh; k++)
        for (int a = 0; a < nh; a++)
            for (int b = 0; b < nh; b++)
                if (u[a * nh + k] != P3D_NOBOUND &&
                    u[k * nh + b] != P3D_NOBOUND &&
                    u[a * nh + k] + u[k * nh + b] < u[a * nh + b])
                    u[a * nh + b] = u[a * nh + k] + u[k * nh + b];
    for (int b = 1; b < nh; b++) {
        int64_t hi = u[b], lo_b = u[b * nh] == P3D_NOBOUND ? P3D_NOBOUND
                                                           : -u[b * nh];
        if (hi == P3D_NOBOUND || lo_b == P3D_NOBOUND)
            continue;
        d[b] = lo_b + (hi - lo_b) / 2;
        t->hosts[b].uncert_ns = (hi - lo_b) / 2;
        t->hosts[b].n_inst = cnt[b] + cnt[b * nh];
    }
    free(u);
}

/* Receives completing before their send started, after correction. */
static void p3d_clock_check(struct p3d_time_res *t, const struct p3d_itab *it)
{
    for (size_t k = 0; k < it->n_pairs; k++) {
        const struct p3d_pair2 *p = &it->pairs[k];
        int hs, hr;
        if (p->have != 3)
            continue;
        hs = t->tl[p->send.tl].host;
        hr = t->tl[p->recv.tl].host;
        if (hs != hr && P3D_OPP(t, p->recv)->e + t->hosts[hr].shift <
                            P3D_OPP(t, p->send)->s + t->hosts[hs].shift)
            t->clock_violations++;
    }
}

static void p3d_clock_apply(struct p3d_time_res *t)
{
    for (int i = 0; i < t->n; i++) {
        struct p3d_tl *tl = &t->tl[i];
        int64_t d = t->hosts[tl->host].shift;
        struct p3d_ivs *l[3] = {&tl->compute, &tl->copy, &tl->nccl};
        if (!d)
            continue;
        for (size_t k = 0; k < tl->n_ops; k++) {
            tl->ops[k].h0 += d;
            tl->ops[k].h1 += d;
            tl->ops[k].hg += d;
            tl->ops[k].hs += d;
            tl->ops[k].s += d;
            tl->ops[k].e += d;
        }
        for (int j = 0; j < 3; j++)
            for (size_t k = 0; k < l[j]->n; k++) {
                l[j]->v[k].s += d;
                l[j]->v[k].e += d;
            }
    }
}

#define P3D_CLOCK_MAX_HOSTS 1024 /* lo/cnt are hosts x hosts */

static void p3d_clock_bounds(const struct p3d_time_res *t,
                             const struct p3d_itab *it, int64_t *lo,
                             int *cnt)
{
    size_t nh = (size_t)t->n_hosts;
    struct p3d_cscr c;

    c.smax = p3d_xcalloc(nh, sizeof(*c.smax));
    c.emin = p3d_xcalloc(nh, sizeof(*c.emin));
    c.mark = p3d_xcalloc(nh, sizeof(*c.mark));
    c.list = p3d_xcalloc(nh, sizeof(*c.list));
    c.gen = 0;
    for (size_t k = 0; k < it->n_inst; k++)
        p3d_clock_inst(t, it, k, lo, cnt, &c);
    p3d_clock_pairs(t, it, lo, cnt);
    free(c.smax);
    free(c.emin);
    free(c.mark);
    free(c.list);
}

void p3d_clock_align(struct p3d_job *job, struct p3d_time_res *t)
{
    struct p3d_itab it;
    int nh;
    int64_t *lo, *d;
    int *cnt;

    if ((nh = p3d_clock_hosts(job, t)) < 2)
        return;
    if (nh > P3D_CLOCK_MAX_HOSTS) {
        p3d_warning("job '%s': %d hosts; clocks aligned by the realtime "
                    "anchors only (at most %d are aligned from collectives)",
                    job->job_id, nh, P3D_CLOCK_MAX_HOSTS);
        for (int h = 0; h < nh; h++)
            t->hosts[h].offset_ns = -(t->hosts[h].shift - t->hosts[0].shift);
        p3d_clock_apply(t);
        return;
    }
    p3d_itab_build(t, &it);
    lo = p3d_xcalloc((size_t)nh * (size_t)nh, sizeof(*lo));
    cnt = p3d_xcalloc((size_t)nh * (size_t)nh, sizeof(*cnt));
    d = p3d_xcalloc((size_t)nh, sizeof(*d));
    p3d_clock_bounds(t, &it, lo, cnt);
    p3d_clock_solve(t, lo, cnt, d);
    for (int h = 0; h < nh; h++) {
        t->hosts[h].shift += d[h];
        t->hosts[h].offset_ns = -(t->hosts[h].shift - t->hosts[0].shift);
        t->hosts[h].anchor_err_ns = -d[h];
    }
    p3d_clock_check(t, &it);
    p3d_clock_apply(t);
    free(lo);
    free(cnt);
    free(d);
    p3d_itab_free(&it);
}
