/*
 * p3d_chrome_iter.c - --window / --ranks parsing and the stand-in
 * iteration finder of the views (see p3d_chrome_iter.h).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_chrome_iter.h"
#include "p3d_chrome_time.h"
#include "p3d_util.h"

#define P3D_VITER_MAX_OPS 20000 /* calls looked at for the period */

int p3d_vsel_window(struct p3d_vsel *s, const char *spec)
{
    char *end;

    s->iter_a = s->iter_b = -1;
    s->ms_b = -1;
    if (!strncmp(spec, "iter:", 5)) {
        s->iter_a = (int)strtol(spec + 5, &end, 10);
        s->iter_b = *end == '-' ? (int)strtol(end + 1, &end, 10) : s->iter_a;
        if (end == spec + 5 || *end || s->iter_a < 0 || s->iter_b < s->iter_a)
            goto bad;
        return 0;
    }
    if (!strncmp(spec, "t:", 2)) {
        s->ms_a = strtod(spec + 2, &end);
        if (end == spec + 2 || *end != '-')
            goto bad;
        s->ms_b = strtod(end + 1, &end);
        if (*end || s->ms_a < 0 || s->ms_b <= s->ms_a)
            goto bad;
        return 0;
    }
bad:
    s->iter_a = s->iter_b = -1;
    s->ms_b = -1;
    return p3d_error("bad --window '%s': expected iter:A-B (iterations, "
                     "from 0) or t:START-END (ms from the job's start)",
                     spec);
}

static int p3d_vint_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

int p3d_vsel_ranks(struct p3d_vsel *s, const char *spec)
{
    const char *p = spec;
    char *end;

    free(s->ranks);
    s->ranks = NULL;
    s->n_ranks = 0;
    for (size_t cap = 0; *p;) {
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0)
            goto bad;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
            if (end == p || b < a || b - a > 1000000)
                goto bad;
        }
        for (long r = a; r <= b; r++) {
            cap = p3d_grow((void **)&s->ranks, cap, (size_t)s->n_ranks,
                           sizeof(int));
            s->ranks[s->n_ranks++] = (int)r;
        }
        if (*end && *end != ',')
            goto bad;
        p = *end ? end + 1 : end;
    }
    if (!s->n_ranks)
        goto bad;
    qsort(s->ranks, (size_t)s->n_ranks, sizeof(int), p3d_vint_cmp);
    return 0;
bad:
    return p3d_error("bad --ranks '%s': expected a list such as 0-7,12",
                     spec);
}

int p3d_vsel_has(const struct p3d_vsel *s, int r)
{
    if (!s || !s->ranks)
        return 1;
    return bsearch(&r, s->ranks, (size_t)s->n_ranks, sizeof(int),
                   p3d_vint_cmp) != NULL;
}

void p3d_vsel_free(struct p3d_vsel *s)
{
    free(s->ranks);
    s->ranks = NULL;
    s->n_ranks = 0;
}

static int p3d_vev_t0_cmp(const void *a, const void *b)
{
    const struct p3d_vev *x = *(const struct p3d_vev *const *)a;
    const struct p3d_vev *y = *(const struct p3d_vev *const *)b;

    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return (x->op_id > y->op_id) - (x->op_id < y->op_id);
}

/* The host NCCL calls of v in time order; returns their number. */
static size_t p3d_vcalls(const struct p3d_vrank *v, const struct p3d_vev ***out)
{
    const struct p3d_vev **c = p3d_xmalloc((v->n + 1) * sizeof(*c));
    size_t n = 0;

    for (size_t i = 0; i < v->n; i++)
        if (v->ev[i].kind == P3D_V_HOST && v->ev[i].op != P3D_V_INIT)
            c[n++] = &v->ev[i];
    qsort(c, n, sizeof(*c), p3d_vev_t0_cmp);
    *out = c;
    return n;
}

static uint64_t p3d_vsig(const struct p3d_vev *e)
{
    return e->comm * 0x9e3779b97f4a7c15ull ^ (e->bytes << 8) ^ e->op;
}

/*
 * Smallest period p such that sig[i] != sig[i+p] at most 4 + 2% of the
 * time: a start-up prefix and a tail cost a constant, while a wrong
 * period (e.g. 1 in a run of identical TP all-reduces) misses a few
 * calls in every iteration.
 */
static int p3d_vperiod(const uint64_t *sig, int n)
{
    for (int p = 1; p <= n / 2; p++) {
        int miss = 0, limit = 4 + (n - p) / 50;
        for (int i = 0; i + p < n && miss <= limit; i++)
            miss += sig[i] != sig[i + p];
        if (miss <= limit)
            return p;
    }
    return 0;
}

/* First index from which one whole period repeats exactly. */
static int p3d_vphase(const uint64_t *sig, int n, int p)
{
    for (int s = 0; s + 2 * p <= n; s++) {
        int ok = 1;
        for (int i = s; i < s + p && ok; i++)
            ok = sig[i] == sig[i + p];
        if (ok)
            return s;
    }
    return -1;
}

void p3d_viters_find(const struct p3d_vrank *v, struct p3d_viters *it)
{
    const struct p3d_vev **c;
    size_t n = p3d_vcalls(v, &c);
    int m = n > P3D_VITER_MAX_OPS ? P3D_VITER_MAX_OPS : (int)n, p, s = -1;
    uint64_t *sig = p3d_xmalloc(((size_t)m + 1) * sizeof(*sig));

    memset(it, 0, sizeof(*it));
    for (int i = 0; i < m; i++)
        sig[i] = p3d_vsig(c[i]);
    p = p3d_vperiod(sig, m);
    if (p)
        s = p3d_vphase(sig, m, p);
    if (p && s >= 0) {
        it->period = p;
        it->first_op = s;
        it->start = p3d_xmalloc((n / (size_t)p + 1) * sizeof(uint64_t));
        for (size_t k = (size_t)s; k + (size_t)p <= n; k += (size_t)p)
            it->start[it->n++] = c[k]->t0;
        size_t e = (size_t)s + (size_t)it->n * (size_t)p;
        it->end = e < n ? c[e]->t0 : v->t_end;
        it->warm = it->n >= 3;
    }
    free(sig);
    free(c);
}

void p3d_viters_free(struct p3d_viters *it)
{
    free(it->start);
    memset(it, 0, sizeof(*it));
}

int p3d_viters_job(const struct p3d_job *job, const struct p3d_vsel *s,
                   struct p3d_viters *it)
{
    struct p3d_vwin all = {0, 0};
    struct p3d_vrank v;

    memset(it, 0, sizeof(*it));
    if (p3d_vtime_iters(job, s, it) == 0)
        return 0;
    for (int i = 0; i < job->n_ranks; i++) {
        const struct p3d_rank *r = &job->ranks[i];
        if (r->failed || !p3d_vsel_has(s, r->rank))
            continue;
        if (p3d_vrank_load(job, r, &all, &v) != 0)
            continue;
        p3d_viters_find(&v, it);
        p3d_vrank_free(&v);
        return it->n ? 0 : -1;
    }
    return -1;
}

/* The latest clean close of a rank file in job ns, 0 if none closed. */
static uint64_t p3d_vjob_end(const struct p3d_job *job)
{
    int64_t end = 0;

    for (int i = 0; i < job->n_ranks; i++) {
        const struct p3d_rank *r = &job->ranks[i];
        int64_t t;
        if (r->failed || !r->hdr.end_mono_ns)
            continue;
        t = (int64_t)r->hdr.end_mono_ns + p3d_vclock_shift(job, r);
        end = t > end ? t : end;
    }
    return (uint64_t)end;
}

int p3d_vsel_resolve(const struct p3d_job *job, const struct p3d_vsel *s,
                     struct p3d_vwin *w)
{
    struct p3d_viters it;
    uint64_t end;

    w->t0 = w->t1 = 0;
    if (s->ms_b >= 0) {
        w->t0 = (uint64_t)(s->ms_a * 1e6);
        w->t1 = (uint64_t)(s->ms_b * 1e6);
        end = p3d_vjob_end(job);
        if (end && w->t0 >= end) {
            p3d_error("job '%s': --window t:%.15g-%.15g starts after the "
                      "trace ends (%.1f ms after the job's start)",
                      job->job_id, s->ms_a, s->ms_b, (double)end / 1e6);
            return -1;
        }
        return 0;
    }
    if (s->iter_a < 0)
        return 0;
    if (p3d_viters_job(job, s, &it) != 0 || s->iter_a >= it.n) {
        p3d_error("job '%s': --window iter:%d-%d asks for iterations the "
                  "trace does not have (%d found)", job->job_id, s->iter_a,
                  s->iter_b, it.n);
        p3d_viters_free(&it);
        return -1;
    }
    w->t0 = it.start[s->iter_a];
    w->t1 = s->iter_b + 1 < it.n ? it.start[s->iter_b + 1] : it.end;
    p3d_viters_free(&it);
    return 0;
}
