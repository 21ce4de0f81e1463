/*
 * p3d_clock.c - put every rank on one clock.
 *
 * Ranks of one host share CLOCK_MONOTONIC and keep it.  Other hosts are
 * first related through the header's (CLOCK_REALTIME, CLOCK_MONOTONIC)
 * anchors, then corrected from collective instances, whose completions
 * are near-simultaneous on every member: each host's shift is moved by
 * the median difference between the other hosts' mean end and its own,
 * repeated until it settles (Gauss-Seidel over hosts).  Finally no
 * receive may complete before its send started: a host whose receives
 * would is moved forward just enough.  Offsets are reported against the
 * host of the lowest rank, with the standard error of the median.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

static int p3d_i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

static int64_t p3d_median(int64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), p3d_i64_cmp);
    return n ? v[n / 2] : 0;
}

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

/* One instance's estimate for host h: others' mean end - h's mean end. */
static int p3d_clock_diff(const struct p3d_time_res *t,
                          const struct p3d_itab *it, size_t k, int h,
                          int64_t *d)
{
    double in = 0, out = 0;
    int n_in = 0, n_out = 0;

    for (int e = it->inst[k].first; e >= 0; e = it->ents[e].next) {
        const struct p3d_tl *tl = &t->tl[it->ents[e].r.tl];
        double end = (double)(P3D_OPP(t, it->ents[e].r)->e +
                              t->hosts[tl->host].shift);
        if (tl->host == h) {
            in += end;
            n_in++;
        } else {
            out += end;
            n_out++;
        }
    }
    if (!n_in || !n_out)
        return 0;
    *d = (int64_t)llround(out / n_out - in / n_in);
    return 1;
}

static void p3d_clock_round(struct p3d_time_res *t, const struct p3d_itab *it,
                            int64_t *buf, int last)
{
    for (int h = 1; h < t->n_hosts; h++) {
        size_t n = 0;
        int64_t med, mad;
        for (size_t k = 0; k < it->n_inst; k++)
            n += (size_t)p3d_clock_diff(t, it, k, h, &buf[n]);
        if (!n)
            continue;
        med = p3d_median(buf, n);
        t->hosts[h].shift += med;
        t->hosts[h].n_inst = (int)n;
        if (!last)
            continue;
        for (size_t i = 0; i < n; i++)
            buf[i] = llabs(buf[i] - med);
        mad = p3d_median(buf, n);
        t->hosts[h].uncert_ns =
            (int64_t)(1.4826 * (double)mad / sqrt((double)n)) + 1;
    }
}

/* Receives completing before their send started: count, and move the
 * receiving host forward by the largest violation. */
static void p3d_clock_p2p(struct p3d_time_res *t, const struct p3d_itab *it)
{
    int64_t *need = p3d_xcalloc((size_t)t->n_hosts, sizeof(*need));

    for (size_t k = 0; k < it->n_pairs; k++) {
        const struct p3d_pair2 *p = &it->pairs[k];
        int hs, hr;
        int64_t s, e;
        if (p->have != 3)
            continue;
        hs = t->tl[p->send.tl].host;
        hr = t->tl[p->recv.tl].host;
        s = P3D_OPP(t, p->send)->s + t->hosts[hs].shift;
        e = P3D_OPP(t, p->recv)->e + t->hosts[hr].shift;
        if (hs != hr && e < s) {
            t->clock_violations++;
            if (s - e > need[hr])
                need[hr] = s - e;
        }
    }
    for (int h = 1; h < t->n_hosts; h++)
        if (need[h]) {
            t->hosts[h].shift += need[h];
            t->clock_fixed++;
        }
    free(need);
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

void p3d_clock_align(struct p3d_job *job, struct p3d_time_res *t)
{
    struct p3d_itab it;
    int64_t *buf;

    if (p3d_clock_hosts(job, t) < 2)
        return;
    p3d_itab_build(t, &it);
    buf = p3d_xcalloc(it.n_inst + 1, sizeof(*buf));
    for (int r = 0; r < 12; r++)
        p3d_clock_round(t, &it, buf, r == 11);
    p3d_clock_p2p(t, &it);
    for (int h = 0; h < t->n_hosts; h++)
        t->hosts[h].offset_ns = -(t->hosts[h].shift - t->hosts[0].shift);
    p3d_clock_apply(t);
    free(buf);
    p3d_itab_free(&it);
}
