/*
 * p3d_time.c - run the time analysis of a job: two streaming passes over
 * the rank files (p3d_pass.c) around the clock alignment and the job's
 * iterations, then breakdown, bubble and wait states; and
 * read the batch facts (global batch, sequence length, micro-batches,
 * virtual stages) from the recorded command line.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

static int p3d_time_stage_of(const struct p3d_job *job, int rank)
{
    int c[P3D_AX_N];

    if (!job->layout.valid || rank < 0)
        return 0;
    p3d_layout_coords(&job->layout, rank, c);
    return c[P3D_AX_PP];
}

/* Looked up per op: from the table of the running analysis if any. */
int p3d_time_stage(const struct p3d_job *job, int rank)
{
    const struct p3d_time_res *t = job->time;

    if (t && t->stage_of && rank >= 0 && rank < t->n_stage_of)
        return t->stage_of[rank];
    return p3d_time_stage_of(job, rank);
}

/* Stage of every global rank below the world size (or the highest). */
static void p3d_time_stages(const struct p3d_job *job,
                            struct p3d_time_res *t)
{
    int n = job->world_size;

    for (int i = 0; i < job->n_ranks; i++)
        n = job->ranks[i].rank >= n ? job->ranks[i].rank + 1 : n;
    t->stage_of = p3d_xcalloc((size_t)n + 1, sizeof(*t->stage_of));
    for (int r = 0; r < n; r++)
        t->stage_of[r] = p3d_time_stage_of(job, r);
    t->n_stage_of = n;
}

/* Integer value of flag `name` in a NUL-separated argv, 0 if absent. */
static int p3d_time_flag(const char *argv, size_t len, const char *name)
{
    size_t nl = strlen(name);

    for (size_t i = 0; i < len;) {
        const char *a = argv + i;
        size_t al = strnlen(a, len - i);
        if (!strncmp(a, name, nl) && a[nl] == '=')
            return atoi(a + nl + 1);
        if (al == nl && !strncmp(a, name, nl) && i + al + 1 < len)
            return atoi(a + al + 1);
        i += al + 1;
    }
    return 0;
}

static void p3d_time_cmdline(const struct p3d_job *job,
                             struct p3d_time_res *t)
{
    const struct p3d_rank *r = NULL;
    int mbs, dp, nl, lpv;

    for (int i = 0; i < job->n_ranks && !r; i++)
        if (job->ranks[i].cmdline)
            r = &job->ranks[i];
    if (!r)
        return;
    t->gbs = p3d_time_flag(r->cmdline, r->cmdline_len, "--global-batch-size");
    t->seq_len = p3d_time_flag(r->cmdline, r->cmdline_len, "--seq-length");
    mbs = p3d_time_flag(r->cmdline, r->cmdline_len, "--micro-batch-size");
    dp = job->layout.valid ? job->layout.size[P3D_AX_DP] : 0;
    if (t->gbs && mbs && dp && t->gbs % (mbs * dp) == 0) {
        t->m = t->m_cmd = t->gbs / (mbs * dp);
        t->m_src = 2;
    }
    t->v = p3d_time_flag(r->cmdline, r->cmdline_len,
                         "--virtual-pipeline-model-parallel-size");
    if (!t->v)
        t->v = p3d_time_flag(r->cmdline, r->cmdline_len, "--vpp");
    nl = p3d_time_flag(r->cmdline, r->cmdline_len, "--num-layers");
    lpv = p3d_time_flag(r->cmdline, r->cmdline_len,
                        "--num-layers-per-virtual-pipeline-stage");
    if (!t->v && nl && lpv && job->layout.valid)
        t->v = nl / job->layout.size[P3D_AX_PP] / lpv;
}

static void p3d_time_rates(struct p3d_time_res *t)
{
    if (t->step_ms <= 0)
        return;
    if (t->gbs && t->seq_len)
        t->tokens_per_s = (double)t->gbs * t->seq_len / (t->step_ms / 1e3);
    if (t->gbs)
        t->samples_per_s = (double)t->gbs / (t->step_ms / 1e3);
}

void p3d_time_shift_ivs(struct p3d_tl *tl, int64_t d)
{
    struct p3d_ivs *l[4] = {&tl->compute, &tl->copy, &tl->nccl, &tl->kwin};

    for (int j = 0; d && j < 4; j++)
        for (size_t k = 0; k < l[j]->n; k++) {
            l[j]->v[k].s += d;
            l[j]->v[k].e += d;
        }
}

void p3d_time_shift_ops(struct p3d_tl *tl, int64_t d)
{
    for (size_t k = 0; k < tl->n_ops; k++)
        p3d_time_shift_op(&tl->ops[k], d);
    p3d_time_shift_ivs(tl, d);
}

/* Timelines with what the headers say, and the hosts. */
static void p3d_time_prepare(struct p3d_job *job, struct p3d_time_res *t)
{
    t->n = job->n_ranks;
    t->tl = p3d_xcalloc((size_t)job->n_ranks + 1, sizeof(*t->tl));
    p3d_time_stages(job, t);
    for (int i = 0; i < t->n; i++) {
        const struct p3d_rank *rk = &job->ranks[i];
        struct p3d_tl *tl = &t->tl[i];
        tl->rank = rk->rank;
        tl->stage = p3d_time_stage(job, rk->rank);
        if (rk->hdr.start_realtime_ns < (1ull << 62) &&
            rk->hdr.start_mono_ns < (1ull << 62))
            tl->rt_anchor = (int64_t)rk->hdr.start_realtime_ns -
                            (int64_t)rk->hdr.start_mono_ns;
    }
    p3d_clock_hosts(job, t);
    t->n_span_comms = job->n_comms;
    if (job->n_comms)
        t->span_gpu = p3d_xcalloc((size_t)job->n_comms * P3D_OP_COUNT * 3,
                                  sizeof(*t->span_gpu));
}

void p3d_time_job(struct p3d_job *job)
{
    struct p3d_time_res *t = p3d_xcalloc(1, sizeof(*t));
    size_t n_ops = 0;

    job->time = t;
    p3d_time_prepare(job, t);
    p3d_pass_one(job, t); /* loads, per-rank results, clocks */
    p3d_time_span_fill(job, t);
    for (int i = 0; i < t->n; i++)
        n_ops += t->tl[i].n_ops;
    p3d_pass_agree(t, &n_ops);
    if (!n_ops) { /* as if nothing had been analysed */
        free(t->hosts);
        t->hosts = NULL;
        t->n_hosts = 0;
        t->clock_violations = 0;
        return;
    }
    p3d_steps_match(job, t);
    p3d_time_cmdline(job, t);
    p3d_overlap_all(job, t);
    p3d_bubble_sched(job, t);
    p3d_pass_share(t);
    p3d_pass_two(job, t); /* waits, pipeline pairs, bandwidths */
    if (p3d_pass_helper())
        return; /* the job's figures are process 0's */
    p3d_bubble_all(job, t);
    p3d_time_rates(t);
}

void p3d_time_free(struct p3d_job *job)
{
    struct p3d_time_res *t = job->time;

    if (!t)
        return;
    for (int i = 0; i < t->n; i++) {
        struct p3d_tl *tl = &t->tl[i];
        free(tl->ops);
        p3d_ivs_free(&tl->compute);
        p3d_ivs_free(&tl->copy);
        p3d_ivs_free(&tl->nccl);
        p3d_ivs_free(&tl->nsp_raw);
        p3d_ivs_free(&tl->kwin);
        P3D_FREE_ALL(tl->nsp_stream, tl->it_op, tl->it_t, tl->br, tl->br_lbl,
                     tl->it_fwd, tl->it_wrap);
    }
    P3D_FREE_ALL(t->tl, t->hosts, t->step, t->stages, t->strag, t->stage_of,
                 t->span_gpu, t);
    job->time = NULL;
}
