/*
 * p3d_overlap.c - where the time of a step goes, per rank per iteration,
 * with interval unions (HTA / Megatron-Bridge definitions): compute busy,
 * NCCL busy, exposed NCCL (not overlapped by compute) split by the label
 * of the group whose op it was, overlapped NCCL, idle.  Then the job's
 * step time over steady iterations and the verdict: NCCL dominates when
 * exposed communication is the largest share of the step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

static int p3d_op_label(const struct p3d_job *job, const struct p3d_top *o)
{
    return o->gcomm >= 0 ? job->comms[o->gcomm].label : P3D_LBL_OTHER;
}

/*
 * Op ranges of a window: ops are in op_id order, not time order, so
 * pmax[i] (latest end of ops 0..i) and smin[i] (earliest start of ops
 * i..n-1) are monotone and bound by binary search the ops that can touch
 * a window.  The ops outside the bounds cannot overlap it, so the sweep
 * over the bounded range gives exactly what a sweep over all ops gives.
 */
struct p3d_opidx {
    int64_t *pmax, *smin;
    /* the previous window's bounds: its s, e and answers (windows
     * mostly ascend, so the next answers are at or after these) */
    int64_t ls, le;
    size_t l0, l1;
    int have;
};

static void p3d_opidx_build(const struct p3d_tl *tl, struct p3d_opidx *x)
{
    size_t n = tl->n_ops;

    x->pmax = p3d_xmalloc((n + 1) * sizeof(*x->pmax));
    x->smin = p3d_xmalloc((n + 1) * sizeof(*x->smin));
    x->have = 0;
    for (size_t i = 0; i < n; i++)
        x->pmax[i] = i && x->pmax[i - 1] > tl->ops[i].e ? x->pmax[i - 1]
                                                         : tl->ops[i].e;
    for (size_t i = n; i-- > 0;)
        x->smin[i] = i + 1 < n && x->smin[i + 1] < tl->ops[i].s
                         ? x->smin[i + 1] : tl->ops[i].s;
}

/* [*i0, *i1): the ops with e > s (from the first) and s < e (to the last).
 * A window that does not start (end) before the previous one searches
 * from the previous answer: the same answer as from 0. */
static void p3d_opidx_range(struct p3d_opidx *x, size_t n, int64_t s,
                            int64_t e, size_t *i0, size_t *i1)
{
    *i0 = p3d_gallop(x->pmax, sizeof(*x->pmax), n,
                     x->have && s >= x->ls ? x->l0 : 0, s, 0);
    *i1 = p3d_gallop(x->smin, sizeof(*x->smin), n,
                     x->have && e >= x->le ? x->l1 : 0, e, 1);
    x->ls = s;
    x->le = e;
    x->l0 = *i0;
    x->l1 = *i1;
    x->have = 1;
}

/* Exposed time of each op, overlaps between ops given to the earlier. */
static void p3d_overlap_lbl(const struct p3d_job *job,
                            const struct p3d_tl *tl,
                            struct p3d_opidx *x, int64_t s, int64_t e,
                            int64_t *row)
{
    int64_t cur = s;
    size_t i0, i1, hint = 0;

    p3d_opidx_range(x, tl->n_ops, s, e, &i0, &i1);
    for (size_t i = i0; i < i1; i++) {
        const struct p3d_top *o = &tl->ops[i];
        int64_t a = o->s > cur ? o->s : cur, z = o->e < e ? o->e : e;
        if (z <= a)
            continue;
        row[p3d_op_label(job, o)] +=
            p3d_iv_minus_from(a, z, &tl->compute, &hint);
        cur = z;
    }
}

/*
 * Whether the rank recorded every kernel of iteration [s, e): its trace
 * has no kernel windows, or one covers the iteration and the one before
 * it (a step's kernels can run a step after their launch, and a window
 * records only kernels launched inside it).
 */
static int p3d_overlap_kernels(const struct p3d_tl *tl, int64_t s, int64_t e)
{
    return p3d_time_kern_cover(tl, s - (e - s), e);
}

static void p3d_overlap_one(const struct p3d_job *job, struct p3d_tl *tl,
                            const struct p3d_ivs *busy,
                            struct p3d_opidx *x, int k, int64_t *row)
{
    struct p3d_tbreak *b = &tl->br[k];
    int64_t s, e;

    if (!p3d_time_window(tl, k, &s, &e))
        return;
    b->step = e - s;
    b->nokern = !p3d_overlap_kernels(tl, s, e);
    b->compute = p3d_ivs_cover(&tl->compute, s, e);
    b->copy = p3d_ivs_cover(&tl->copy, s, e);
    b->nccl = p3d_ivs_cover(&tl->nccl, s, e);
    b->exposed = p3d_ivs_minus(&tl->nccl, &tl->compute, s, e);
    b->overlapped = b->nccl - b->exposed;
    b->idle = b->step - p3d_ivs_cover(busy, s, e);
    p3d_overlap_lbl(job, tl, x, s, e, row);
}

/* The labels' columns of full ([n_iter][P3D_LBL_COUNT]) that are not all
 * zero into tl->br_lbl (the others would only add zeros to the sums). */
static void p3d_overlap_pack(struct p3d_tl *tl, const int64_t *full)
{
    size_t n = (size_t)tl->n_iter, c = 0;

    tl->n_lbl = 0;
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        for (size_t k = 0; k < n; k++)
            if (full[k * P3D_LBL_COUNT + (size_t)l]) {
                tl->lbl[tl->n_lbl++] = (uint8_t)l;
                break;
            }
    tl->br_lbl = p3d_xcalloc((n + 1) * (size_t)tl->n_lbl + 1,
                             sizeof(*tl->br_lbl));
    for (size_t k = 0; k < n; k++)
        for (int j = 0; j < tl->n_lbl; j++)
            tl->br_lbl[c++] = full[k * P3D_LBL_COUNT + tl->lbl[j]];
}

/* While the rank is loaded: its breakdown per own iteration. */
void p3d_overlap_rank_all(const struct p3d_job *job, struct p3d_tl *tl)
{
    struct p3d_ivs busy = {0};
    const struct p3d_ivs *l[3] = {&tl->compute, &tl->copy, &tl->nccl};
    struct p3d_opidx x;
    int64_t *full;

    if (!tl->n_iter)
        return;
    tl->br = p3d_xcalloc((size_t)tl->n_iter + 1, sizeof(*tl->br));
    for (int j = 0; j < 3; j++)
        for (size_t i = 0; i < l[j]->n; i++)
            p3d_ivs_add(&busy, l[j]->v[i].s, l[j]->v[i].e);
    p3d_ivs_union(&busy);
    p3d_opidx_build(tl, &x);
    full = p3d_xcalloc((size_t)tl->n_iter * P3D_LBL_COUNT + 1,
                       sizeof(*full));
    for (int k = 0; k < tl->n_iter; k++)
        p3d_overlap_one(job, tl, &busy, &x, k,
                        full + (size_t)k * P3D_LBL_COUNT);
    p3d_overlap_pack(tl, full);
    free(full);
    p3d_ivs_free(&busy);
    free(x.pmax);
    free(x.smin);
}

/* Own-iteration breakdowns to job iterations (none if the job has no
 * iteration every rank shares). */
static void p3d_overlap_renumber(struct p3d_time_res *t)
{
    for (int i = 0; i < t->n; i++) {
        struct p3d_tl *tl = &t->tl[i];
        struct p3d_tbreak *b = NULL;
        int64_t *x = NULL;
        size_t m = (size_t)tl->n_lbl;
        if (!tl->br)
            continue;
        if (t->n_iter) {
            b = p3d_xcalloc((size_t)t->n_iter + 1, sizeof(*b));
            memcpy(b, tl->br + tl->first_it, (size_t)t->n_iter * sizeof(*b));
            x = p3d_xcalloc(((size_t)t->n_iter + 1) * m + 1, sizeof(*x));
            memcpy(x, tl->br_lbl + (size_t)tl->first_it * m,
                   (size_t)t->n_iter * m * sizeof(*x));
        }
        free(tl->br);
        free(tl->br_lbl);
        tl->br = b;
        tl->br_lbl = x;
        tl->n_lbl = x ? tl->n_lbl : 0;
    }
}

static int p3d_dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static int p3d_dbl_cmp(const void *a, const void *b);

/*
 * Warm-up: leading iterations (communicator creation, allocator growth,
 * compilation) that took over 1.25 times the median of the later ones;
 * at least two iterations stay.
 */
static int p3d_overlap_warm(const struct p3d_time_res *t)
{
    double *v = p3d_xcalloc((size_t)t->n_iter + 1, sizeof(*v));
    int w = 0;

    for (; w <= t->n_iter - 3; w++) {
        int n = 0;
        for (int k = w + 1; k < t->n_iter; k++)
            v[n++] = (double)t->step[k];
        qsort(v, (size_t)n, sizeof(*v), p3d_dbl_cmp);
        if ((double)t->step[w] <= 1.25 * v[n / 2])
            break;
    }
    free(v);
    return w;
}

/* 1 if some rank created a communicator inside the first iteration
 * (lazy creation: that iteration is warm-up whatever its length). */
static int p3d_overlap_inits(const struct p3d_job *job,
                             const struct p3d_time_res *t)
{
    for (int i = 0; i < t->n; i++) {
        const struct p3d_tl *tl = &t->tl[i];
        int64_t s, e, sh = t->n_hosts > 1 ? t->hosts[tl->host].shift : 0;
        if (!p3d_time_window(tl, 0, &s, &e))
            continue;
        for (int k = 0; k < job->ranks[i].n_comms; k++) {
            int64_t c = (int64_t)job->ranks[i].comms[k].t_create + sh;
            if (job->ranks[i].comms[k].created && c >= s && c < e)
                return 1;
        }
    }
    return 0;
}

/* Mean step over ranks per iteration; warm-up; steady median. */
static void p3d_overlap_steps(const struct p3d_job *job,
                              struct p3d_time_res *t)
{
    double *v = p3d_xcalloc((size_t)t->n_iter + 1, sizeof(*v));
    int n = 0;

    t->step = p3d_xcalloc((size_t)t->n_iter + 1, sizeof(*t->step));
    for (int k = 0; k < t->n_iter; k++) {
        int64_t sum = 0, cnt = 0;
        for (int i = 0; i < t->n; i++)
            if (t->tl[i].br && t->tl[i].br[k].step) {
                sum += t->tl[i].br[k].step;
                cnt++;
            }
        t->step[k] = cnt ? sum / cnt : 0;
    }
    t->warm = p3d_overlap_warm(t);
    if (!t->warm && t->n_iter >= 3 && p3d_overlap_inits(job, t))
        t->warm = 1;
    for (int k = t->warm; k < t->n_iter; k++)
        v[n++] = (double)t->step[k] / 1e6;
    qsort(v, (size_t)n, sizeof(*v), p3d_dbl_cmp);
    if (n) {
        t->step_ms = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        t->step_min_ms = v[0];
        t->step_max_ms = v[n - 1];
    }
    for (int k = 0; k < t->warm; k++)
        t->warm_ms += (double)t->step[k] / 1e6 / t->warm;
    free(v);
}

/*
 * One rank's steady iterations whose kernels were recorded, summed (ns)
 * into sum[P3D_SUM_*] and sum[P3D_SUM_LBL + label]; returns how many
 * steady iterations it has (*kern: how many of them were summed).
 */
static int p3d_overlap_rank_sum(const struct p3d_time_res *t,
                                const struct p3d_tl *tl, double *sum,
                                int *kern)
{
    int n = 0;

    for (int k = t->warm; k < t->n_iter && tl->br; k++) {
        const struct p3d_tbreak *b = &tl->br[k];
        const int64_t *lbl = tl->br_lbl + (size_t)k * (size_t)tl->n_lbl;
        n++;
        if (b->nokern)
            continue;
        (*kern)++;
        sum[P3D_SUM_STEP] += (double)b->step;
        sum[P3D_SUM_COMPUTE] += (double)b->compute;
        sum[P3D_SUM_NCCL] += (double)b->nccl;
        sum[P3D_SUM_EXPOSED] += (double)b->exposed;
        sum[P3D_SUM_OVERLAPPED] += (double)b->overlapped;
        sum[P3D_SUM_IDLE] += (double)b->idle;
        sum[P3D_SUM_COPY] += (double)b->copy;
        sum[P3D_SUM_BUBBLE] += (double)b->pp_wait;
        for (int c = 0; c < tl->n_lbl; c++) /* others: all 0 */
            sum[P3D_SUM_LBL + tl->lbl[c]] += (double)lbl[c];
    }
    return n;
}

int p3d_time_rank_sums(const struct p3d_time_res *t, int i,
                       double sum[P3D_SUM_N])
{
    int kern = 0;

    memset(sum, 0, P3D_SUM_N * sizeof(*sum));
    if (i < 0 || i >= t->n)
        return 0;
    p3d_overlap_rank_sum(t, &t->tl[i], sum, &kern);
    return kern;
}

/* Fractions over the steady iterations whose kernels were recorded. */
static void p3d_overlap_fracs(struct p3d_time_res *t)
{
    double sum[P3D_SUM_N] = {0};

    for (int i = 0; i < t->n; i++) {
        t->windowed |= t->tl[i].windowed;
        t->n_steady_it += p3d_overlap_rank_sum(t, &t->tl[i], sum,
                                               &t->n_kern_it);
    }
    if (t->windowed && !t->n_kern_it)
        t->have_compute = 0;  /* no steady iteration inside a window */
    if (sum[P3D_SUM_STEP] <= 0)
        return;
    t->f_compute = sum[P3D_SUM_COMPUTE] / sum[P3D_SUM_STEP];
    t->f_nccl = sum[P3D_SUM_NCCL] / sum[P3D_SUM_STEP];
    t->f_exposed = sum[P3D_SUM_EXPOSED] / sum[P3D_SUM_STEP];
    t->f_overlapped = sum[P3D_SUM_OVERLAPPED] / sum[P3D_SUM_STEP];
    t->f_idle = sum[P3D_SUM_IDLE] / sum[P3D_SUM_STEP];
    t->f_copy = sum[P3D_SUM_COPY] / sum[P3D_SUM_STEP];
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        t->f_lbl[l] = sum[P3D_SUM_LBL + l] / sum[P3D_SUM_STEP];
}

/* A verdict from some ranks only says so: the others may differ. */
static void p3d_overlap_partial(const struct p3d_job *job,
                                struct p3d_time_res *t)
{
    int w = p3d_job_world(job);
    int found = p3d_job_ranks_found(job);
    size_t n = strlen(t->why);

    if (found < w && n < sizeof(t->why))
        snprintf(t->why + n, sizeof(t->why) - n, " (from the %d of %d ranks "
                 "traced only)", found, w);
}

static void p3d_overlap_verdict(const struct p3d_job *job,
                                struct p3d_time_res *t)
{
    double top = 0;
    int unknown_groups = job->layout.confidence == P3D_CONF_NONE;

    t->top_lbl = -1;
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        if (t->f_lbl[l] > top) {
            top = t->f_lbl[l];
            t->top_lbl = l;
        }
    t->dominates = t->f_exposed > t->f_compute && t->f_exposed > t->f_idle;
    if (!t->have_compute) {
        t->dominates = 0;
        t->no_verdict = 1;
        snprintf(t->why, sizeof(t->why), "cannot tell: the traces have no "
                 "compute kernel times%s; NCCL busy %.1f%% of the step%s%s",
                 t->windowed ? " in a steady iteration (no kernel window "
                               "covers one: P3D_GPU_WINDOW)" : "",
                 100 * t->f_nccl, t->top_lbl >= 0 ? ", mostly on " : "",
                 t->top_lbl >= 0 ? p3d_label_name[t->top_lbl] : "");
        p3d_overlap_partial(job, t);
        return;
    }
    snprintf(t->why, sizeof(t->why),
             "NCCL %s: exposed NCCL %.1f%% of the step vs compute %.1f%% "
             "and idle %.1f%%%s%s%s", t->dominates ? "dominates"
                                                   : "does not dominate",
             100 * t->f_exposed, 100 * t->f_compute, 100 * t->f_idle,
             t->top_lbl >= 0 ? "; most exposed time is on " : "",
             t->top_lbl < 0 ? ""
             : unknown_groups ? "communicators whose group these traces "
                                "cannot tell"
             : p3d_label_name[t->top_lbl],
             t->top_lbl >= 0 && !unknown_groups ? " ops" : "");
    p3d_overlap_partial(job, t);
}

/* After pass 1 and the job iterations. */
void p3d_overlap_all(struct p3d_job *job, struct p3d_time_res *t)
{
    p3d_overlap_renumber(t);
    if (!t->n_iter)
        return;
    p3d_overlap_steps(job, t);
    p3d_overlap_fracs(t);
    p3d_overlap_verdict(job, t);
}
