/*
 * p3d_vsel.c - --window / --ranks parsing, and the iterations a
 * window selects, taken from the time analysis (see p3d_vsel.h).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_vsel.h"
#include "p3d_vclock.h"
#include "p3d_util.h"

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

void p3d_viters_free(struct p3d_viters *it)
{
    free(it->start);
    memset(it, 0, sizeof(*it));
}

/*
 * The time analysis's iterations (p3d_vclock.c), the only finder:
 * when it found none, the views show none either, so --window iter:, the
 * HTML and the text report agree on what an iteration is.
 */
int p3d_viters_job(const struct p3d_job *job, const struct p3d_vsel *s,
                   struct p3d_viters *it)
{
    memset(it, 0, sizeof(*it));
    return p3d_vtime_iters(job, s, it);
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
