/*
 * p3d_vclock.c - the views' bridge to the time analysis (issue 6,
 * p3d_time.h): its host clock shifts and its iteration boundaries, turned
 * into the views' clock (ns since the job's earliest CLOCK_REALTIME
 * start).  The time analysis works in host 0's CLOCK_MONOTONIC plus a
 * per-host shift; adding C = rt_anchor(host 0) - t0 - shift(host 0) maps
 * that onto the views' clock, which equals it when no cross-host offset
 * was estimated.
 */
#include <stdlib.h>

#include "p3d_vclock.h"
#include "p3d_util.h"

const struct p3d_time_res *p3d_vtime(const struct p3d_job *job)
{
    const struct p3d_time_res *t = job->time;

    if (!t || !t->tl || !t->hosts || t->n != job->n_ranks || !t->n_hosts)
        return NULL;
    return t;
}

uint64_t p3d_vjob_t0(const struct p3d_job *job)
{
    uint64_t t0 = UINT64_MAX;

    for (int i = 0; i < job->n_ranks; i++)
        if (!job->ranks[i].failed && job->ranks[i].hdr.start_realtime_ns < t0)
            t0 = job->ranks[i].hdr.start_realtime_ns;
    return t0 == UINT64_MAX ? 0 : t0;
}

int p3d_vtime_base(const struct p3d_job *job, int64_t *c)
{
    const struct p3d_time_res *t = p3d_vtime(job);

    if (!t)
        return -1;
    for (int i = 0; i < t->n; i++)
        if (!job->ranks[i].failed && t->tl[i].host == 0) {
            *c = t->tl[i].rt_anchor - (int64_t)p3d_vjob_t0(job) -
                 t->hosts[0].shift;
            return 0;
        }
    return -1;
}

int p3d_vtime_shift(const struct p3d_job *job, const struct p3d_rank *r,
                    int64_t *shift)
{
    const struct p3d_time_res *t = p3d_vtime(job);
    int64_t c;
    long i = r - job->ranks;

    if (!t || i < 0 || i >= t->n || p3d_vtime_base(job, &c) != 0)
        return -1;
    if (t->tl[i].host < 0 || t->tl[i].host >= t->n_hosts)
        return -1;
    *shift = t->hosts[t->tl[i].host].shift + c;
    return 0;
}

/* Whether rank index i has every job iteration. */
static int p3d_vtime_full(const struct p3d_time_res *t, int i)
{
    int64_t s, e;

    for (int k = 0; k < t->n_iter; k++)
        if (!p3d_time_window(&t->tl[i], k, &s, &e))
            return 0;
    return t->n_iter > 0;
}

int p3d_vtime_iters(const struct p3d_job *job, const struct p3d_vsel *sel,
                    struct p3d_viters *it)
{
    const struct p3d_time_res *t = p3d_vtime(job);
    int64_t c, s, e = 0;

    if (!t || !t->n_iter || p3d_vtime_base(job, &c) != 0)
        return -1;
    for (int i = 0; i < t->n; i++) {
        if (job->ranks[i].failed || !p3d_vsel_has(sel, job->ranks[i].rank) ||
            !p3d_vtime_full(t, i))
            continue;
        it->start = p3d_xmalloc(((size_t)t->n_iter + 1) * sizeof(uint64_t));
        for (int k = 0; k < t->n_iter; k++) {
            p3d_time_window(&t->tl[i], k, &s, &e);
            it->start[k] = s + c > 0 ? (uint64_t)(s + c) : 0;
        }
        it->n = t->n_iter;
        it->end = e + c > 0 ? (uint64_t)(e + c) : 0;
        it->period = (int)t->tl[i].period;
        it->first_op = 0;
        it->warm = t->warm;
        return 0;
    }
    return -1;
}
