/*
 * p3d_html_sum.c - steady-iteration window, step time, micro-batches,
 * per-rank breakdown and memory peaks (p3d_html_sum.h).  The window is
 * the first two iterations after the warm-up.  Step time, tokens/s,
 * micro-batches and the theoretical bubble come from the time analysis
 * when it ran (p3d_time.h), else from the views' own estimates.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_vclock.h"
#include "p3d_html_sum.h"
#include "p3d_util.h"

double p3d_vfrac(uint64_t part, uint64_t span)
{
    return span ? (double)part / (double)span : 0;
}

static int p3d_vdbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The first steady iteration (and the one after it) inside every rank's
 * kernel windows, when the traces record kernels in windows only. */
static int p3d_vjob_first_kern(const struct p3d_job *job,
                               const struct p3d_viters *it)
{
    const struct p3d_time_res *t = p3d_vtime(job);
    int a = it->warm < it->n ? it->warm : 0;

    if (!t || !t->windowed)
        return a;
    for (int k = a; k + 1 < it->n; k++) {
        uint64_t e = k + 2 < it->n ? it->start[k + 2] : it->end;
        int all = 1;
        for (int i = 0; i < t->n && all; i++)
            all = p3d_time_kern_cover(&t->tl[i],
                                      (int64_t)it->start[k > 0 ? k - 1 : 0],
                                      (int64_t)e);
        if (all)
            return k;
    }
    return a;
}

static void p3d_vjob_window(const struct p3d_job *job,
                            const struct p3d_vsel *sel, struct p3d_vjob *s)
{
    const struct p3d_viters *it = &s->it;
    struct p3d_vwin w;

    s->iter_a = s->iter_b = -1;
    if (sel && (sel->iter_a >= 0 || sel->ms_b >= 0) &&
        p3d_vsel_resolve(job, sel, &w) == 0) {
        s->w0 = w.t0;
        s->w1 = w.t1;
        s->iter_a = sel->iter_a;
        s->iter_b = sel->iter_b;
        return;
    }
    if (it->n) {
        s->iter_a = p3d_vjob_first_kern(job, it);
        s->iter_b = s->iter_a + 1 < it->n ? s->iter_a + 1 : s->iter_a;
        s->w0 = it->start[s->iter_a];
        s->w1 = s->iter_b + 1 < it->n ? it->start[s->iter_b + 1] : it->end;
    }
}

static void p3d_vjob_step(const struct p3d_job *job, struct p3d_vjob *s)
{
    const struct p3d_viters *it = &s->it;
    double *d = p3d_xmalloc(((size_t)it->n + 1) * sizeof(double));
    int n = 0;
    const struct p3d_layout *l = &job->layout;

    for (int k = it->warm < it->n ? it->warm : 0; k < it->n; k++) {
        uint64_t e = k + 1 < it->n ? it->start[k + 1] : it->end;
        d[n++] = (double)(e - it->start[k]) / 1e6;
    }
    if (n) {
        qsort(d, (size_t)n, sizeof(double), p3d_vdbl_cmp);
        s->step_ms = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
    }
    free(d);
    if (s->step_ms > 0 && l->gbs > 0 && l->seq > 0)
        s->tokens_s = (double)l->gbs * l->seq / (s->step_ms / 1e3);
}

/* Micro-batches from the command line, else forward PP sends of one
 * stage-0 rank per iteration. */
static void p3d_vjob_mb(const struct p3d_job *job, const struct p3d_vrank *v,
                        struct p3d_vjob *s)
{
    const struct p3d_layout *l = &job->layout;
    int c[P3D_AX_N], n = 0, iters = s->iter_b - s->iter_a + 1;
    int pp = l->valid ? l->size[P3D_AX_PP] : 1, vpp = l->vpp > 0 ? l->vpp : 1;

    if (l->gbs > 0 && l->mbs > 0 && l->valid && l->size[P3D_AX_DP] > 0)
        s->micro_batches = l->gbs / (l->mbs * l->size[P3D_AX_DP]);
    if (!s->micro_batches && pp > 1 && s->iter_a >= 0) {
        p3d_layout_coords(l, v->rank, c);
        if (c[P3D_AX_PP] != 0)
            return;
        for (size_t i = 0; i < v->n; i++)
            n += v->ev[i].kind == P3D_V_HOST &&
                 v->ev[i].op == P3D_OP_SEND && v->ev[i].label == P3D_LBL_PP &&
                 v->ev[i].t0 >= s->w0 && v->ev[i].t0 < s->w1;
        s->micro_batches = n / (iters > 0 ? iters : 1) / vpp;
    }
    if (s->micro_batches > 0 && pp > 1)
        s->bubble_theory = (double)(pp - 1) /
                           (s->micro_batches + pp - 1) / vpp;
}

static void p3d_vjob_add(struct p3d_vbreak *t, const struct p3d_vbreak *b)
{
    t->span += b->span;
    t->compute += b->compute;
    t->overlapped += b->overlapped;
    for (int l = 0; l <= P3D_LBL_COUNT; l++)
        t->exposed[l] += b->exposed[l];
    t->exposed_all += b->exposed_all;
    t->bubble += b->bubble;
    t->idle += b->idle;
    t->host_only |= b->host_only;
}

static void p3d_vjob_rank(const struct p3d_job *job, int i,
                          struct p3d_vjob *s, int *mb_done, int *kept)
{
    struct p3d_vwin w = {s->w0, s->w1};
    struct p3d_vrank v;
    uint64_t t1;

    if (p3d_vrank_load(job, &job->ranks[i], &w, &v) != 0)
        return;
    t1 = s->w1 ? s->w1 : v.t_end;
    p3d_vbreak_rank(&v, s->w0, t1, &s->br[i]);
    p3d_vjob_add(&s->total, &s->br[i]);
    s->peak[i] = v.peak[P3D_MEM_DEVICE];
    if (!s->peak[i] && v.peak[P3D_MEM_DEVICE_USED]) {
        s->peak[i] = v.peak[P3D_MEM_DEVICE_USED];
        s->peak_used = 1;
    }
    if (s->peak[i] > s->max_peak) {
        s->max_peak = s->peak[i];
        s->max_peak_rank = job->ranks[i].rank;
    }
    if (!*mb_done && job->layout.valid) {
        int c[P3D_AX_N];
        p3d_layout_coords(&job->layout, v.rank, c);
        if (c[P3D_AX_PP] == 0 || job->layout.gbs > 0) {
            p3d_vjob_mb(job, &v, s);
            *mb_done = 1;
        }
    }
    if (s->w1 && *kept < P3D_HTML_MAX_ROWS && p3d_vjob_shown(job, s, i)) {
        s->vr[i] = v; /* the timeline draws this window: no second read */
        (*kept)++;
        return;
    }
    p3d_vrank_free(&v);
}

/* The time analysis's numbers replace the views' estimates. */
static void p3d_vjob_time(const struct p3d_job *job, struct p3d_vjob *s)
{
    const struct p3d_time_res *t = p3d_vtime(job);

    s->time = t && t->n_iter ? t : NULL;
    if (!s->time)
        return;
    s->step_ms = t->step_ms;
    s->tokens_s = t->tokens_per_s;
    if (t->m > 0) {
        s->micro_batches = t->m;
        s->bubble_theory = t->pp > 1 ? t->theory : -1;
    }
}

/*
 * Without --window, each rank's bar is the time analysis's own figures
 * over the steady iterations (p3d_time_rank_sums), so the bars, the text
 * and the JSON show the same shares.  Exposed PP time that is bubble is
 * drawn as bubble.  With --window the bars measure the window drawn.
 */
static void p3d_vjob_time_bars(const struct p3d_job *job, struct p3d_vjob *s)
{
    const struct p3d_time_res *t = s->time;
    double sum[P3D_SUM_N];

    if (!t || (s->sel && (s->sel->iter_a >= 0 || s->sel->ms_b >= 0)))
        return;
    s->bars_steady = 1;
    memset(&s->total, 0, sizeof(s->total));
    for (int i = 0; i < job->n_ranks; i++) {
        struct p3d_vbreak *b = &s->br[i];
        int host_only = b->host_only;
        if (t->tl[i].rank != job->ranks[i].rank ||
            !p3d_time_rank_sums(t, i, sum))
            continue;
        memset(b, 0, sizeof(*b));
        b->host_only = host_only;
        b->span = (uint64_t)sum[P3D_SUM_STEP];
        b->compute = (uint64_t)sum[P3D_SUM_COMPUTE];
        b->overlapped = (uint64_t)sum[P3D_SUM_OVERLAPPED];
        b->exposed_all = (uint64_t)sum[P3D_SUM_EXPOSED];
        b->bubble = (uint64_t)sum[P3D_SUM_BUBBLE];
        b->idle = (uint64_t)sum[P3D_SUM_IDLE];
        for (int l = 0; l < P3D_LBL_COUNT; l++)
            b->exposed[l] = (uint64_t)sum[P3D_SUM_LBL + l];
        b->exposed[P3D_LBL_PP] -= b->bubble < b->exposed[P3D_LBL_PP]
                                      ? b->bubble : b->exposed[P3D_LBL_PP];
        p3d_vjob_add(&s->total, b);
    }
}

void p3d_vjob_sum(const struct p3d_job *job, const struct p3d_vsel *sel,
                  struct p3d_vjob *s)
{
    int mb_done = 0, kept = 0;

    memset(s, 0, sizeof(*s));
    s->sel = sel;
    s->bubble_theory = -1;
    s->max_peak_rank = -1;
    p3d_viters_job(job, NULL, &s->it);
    p3d_vjob_window(job, sel, s);
    p3d_vjob_step(job, s);
    s->br = p3d_xcalloc((size_t)job->n_ranks + 1, sizeof(*s->br));
    s->peak = p3d_xcalloc((size_t)job->n_ranks + 1, sizeof(*s->peak));
    s->vr = p3d_xcalloc((size_t)job->n_ranks + 1, sizeof(*s->vr));
    s->n_vr = job->n_ranks;
    for (int i = 0; i < job->n_ranks; i++)
        if (!job->ranks[i].failed)
            p3d_vjob_rank(job, i, s, &mb_done, &kept);
    p3d_vjob_time(job, s);
    p3d_vjob_time_bars(job, s);
}

int p3d_vjob_shown(const struct p3d_job *job, const struct p3d_vjob *s,
                   int i)
{
    return !job->ranks[i].failed && p3d_vsel_has(s->sel, job->ranks[i].rank);
}

void p3d_vjob_free(struct p3d_vjob *s)
{
    p3d_viters_free(&s->it);
    for (int i = 0; s->vr && i < s->n_vr; i++)
        p3d_vrank_free(&s->vr[i]);
    free(s->vr);
    free(s->br);
    free(s->peak);
    memset(s, 0, sizeof(*s));
}
