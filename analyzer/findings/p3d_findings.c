/*
 * p3d_findings.c - the findings (p3d_findings.h) from the results of the
 * match, time and hang analyses.  The thresholds are where a share of the
 * step starts to matter for a user tuning a job, and the advice is what
 * the frameworks offer for that group:
 *   TP: Megatron's tensor-parallel all-reduces / reduce-scatters sit on
 *       the critical path of every layer (megatron/core/tensor_parallel/
 *       layers.py); they need NVLink, or fewer TP ranks, or overlap
 *       (--tp-comm-overlap with Transformer Engine, sequence parallel).
 *   PP: the 1F1B bubble is (p-1)/(m+p-1)/v (Narayanan et al. 2021): more
 *       micro-batches or interleaving (virtual stages) shrink it.
 *   DP: gradient reduce-scatter / all-reduce and parameter all-gather
 *       overlap with backward and forward when asked (Megatron
 *       --overlap-grad-reduce --overlap-param-gather, DDP's buckets,
 *       bucket_cap_mb; FSDP2's prefetch); bigger buckets mean fewer calls.
 *   CP: the K/V exchange of ring attention overlaps the attention compute
 *       of the previous block (TE cp_comm_type p2p); when exposed, lower
 *       CP or use a2a for many heads.
 *   EP: MoE token all-to-all (Megatron --moe-token-dispatcher-type
 *       alltoall, --overlap-moe-expert-parallel-comm); keep EP in a node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_findings.h"
#include "p3d_hang.h"
#include "p3d_layout.h"
#include "p3d_match.h"
#include "p3d_time.h"
#include "p3d_util.h"

const char *const p3d_sev_name[] = {"note", "warn", "bad"};
/* the findings' key among the job's results: only its address counts */
static const char p3d_findings_key = 0;

/* Exposed NCCL time of a group at or above this share of the step is a
 * finding; at P3D_BAD_SHARE it is the first thing to fix. */
#define P3D_NOTE_SHARE 0.05
#define P3D_BAD_SHARE 0.20

static const char *p3d_next_for(int label, const struct p3d_time_res *t)
{
    switch (label) {
    case P3D_LBL_TP:
    case P3D_LBL_TP_CP:
    case P3D_LBL_TP_DP:
        return "keep TP inside one NVLink domain, overlap it "
               "(--tp-comm-overlap with Transformer Engine, "
               "--sequence-parallel), or use fewer TP ranks";
    case P3D_LBL_PP:
        if (t && t->measured >= 0.5 * t->f_lbl[P3D_LBL_PP])
            return "it is mostly the pipeline bubble: more micro-batches "
                   "per step (global batch / (micro-batch x DP)) or "
                   "interleaving (--num-layers-per-virtual-pipeline-stage)";
        return "the transfers between stages are slow: check the link "
               "between the stages' GPUs (NVLink or NIC) and the message "
               "size";
    case P3D_LBL_DP:
    case P3D_LBL_DP_CP:
    case P3D_LBL_EXPERT_DP:
    case P3D_LBL_DP_SHARD:
    case P3D_LBL_DP_REP:
        return "overlap gradient reduction and parameter gathering with "
               "compute (Megatron --overlap-grad-reduce "
               "--overlap-param-gather; DDP/FSDP2 do by default) and try "
               "larger buckets (--ddp-bucket-size, DDP bucket_cap_mb)";
    case P3D_LBL_CP:
        return "the K/V exchange of context parallelism is not hidden by "
               "attention: longer sequences per rank hide it, or lower CP "
               "(or cp_comm_type a2a for many heads)";
    case P3D_LBL_EXPERT_TP:
        return "the experts' tensor parallelism gathers and scatters the "
               "tokens around every expert layer: keep the expert TP group "
               "inside one NVLink domain or lower "
               "--expert-tensor-parallel-size (1 leaves the experts whole "
               "and moves their split to EP)";
    case P3D_LBL_EP:
    case P3D_LBL_TP_EP:
    case P3D_LBL_TP_EP_PP:
        return "MoE token all-to-all: overlap it "
               "(--overlap-moe-expert-parallel-comm), keep EP inside a "
               "node, or lower EP";
    default:
        return "step-level small collectives (loss, grad norm, "
               "embedding sync) wait for the slowest rank: their time is "
               "mostly other ranks arriving late (see stragglers)";
    }
}

static struct p3d_finding *p3d_add(struct p3d_findings *fs, int sev,
                                   int label, double value,
                                   const char *unit)
{
    struct p3d_finding *f;

    if (fs->n >= P3D_MAX_FINDINGS)
        return NULL;
    f = &fs->f[fs->n++];
    memset(f, 0, sizeof(*f));
    f->sev = sev;
    f->label = label;
    f->value = value;
    f->unit = unit;
    return f;
}

static void p3d_find_hang(const struct p3d_job *job, struct p3d_findings *fs)
{
    char b[160];
    struct p3d_finding *f;

    if (!job->hang || !job->hang->detected)
        return;
    p3d_hang_brief(job, b, sizeof(b));
    f = p3d_add(fs, P3D_SEV_BAD, -1, job->hang->n_waiting, "ranks");
    if (!f)
        return;
    snprintf(f->what, sizeof(f->what), "%s; %d rank(s) wait inside NCCL",
             b, job->hang->n_waiting);
    f->next = job->hang->stall
                  ? "no rank is behind: NCCL or the network stalled; run "
                    "with NCCL_RAS_ENABLE=1 and NCCL_DEBUG=INFO"
                  : "look at the root rank's call site and what it did "
                    "instead (the hang section above)";
}

static void p3d_find_match(const struct p3d_job *job,
                           struct p3d_findings *fs)
{
    const struct p3d_match_res *m = job->match;
    struct p3d_finding *f;

    if (!m || !m->n_mismatch)
        return;
    f = p3d_add(fs, P3D_SEV_BAD, -1, (double)m->n_mismatch, "ops");
    if (!f)
        return;
    snprintf(f->what, sizeof(f->what), "%llu collective(s) disagree "
             "between ranks (count, type, datatype or reduction)",
             (unsigned long long)m->n_mismatch);
    f->next = "the ranks run different code paths or shapes: compare the "
              "first mismatch's ranks (listed above)";
}

static void p3d_find_groups(const struct p3d_time_res *t,
                            struct p3d_findings *fs)
{
    for (int l = 0; l < P3D_LBL_COUNT; l++) {
        double x = t->f_lbl[l];
        struct p3d_finding *f;

        if (x < P3D_NOTE_SHARE)
            continue;
        /* without compute times nothing is known to hide NCCL time: it
         * is all counted exposed, an upper bound, so it only warns */
        f = p3d_add(fs, x >= P3D_BAD_SHARE && t->have_compute ? P3D_SEV_BAD
                                                              : P3D_SEV_WARN,
                    l, 100 * x, "% of step");
        if (!f)
            return;
        if (t->have_compute)
            snprintf(f->what, sizeof(f->what), "%s: exposed NCCL %.1f%% of "
                     "the step", p3d_label_name[l], 100 * x);
        else
            snprintf(f->what, sizeof(f->what), "%s: NCCL %.1f%% of the "
                     "step (no compute times: at most that much is "
                     "exposed)", p3d_label_name[l], 100 * x);
        if (t->busbw[l] > 0 && t->best_busbw > 0) {
            size_t n = strlen(f->what);
            snprintf(f->what + n, sizeof(f->what) - n, "; its transfers "
                     "reach %.2f GB/s bus bandwidth (%.0f%% of the job's "
                     "best op)", t->busbw[l],
                     100 * t->busbw[l] / t->best_busbw);
        }
        f->next = p3d_next_for(l, t);
    }
}

static void p3d_find_bubble(const struct p3d_time_res *t,
                            struct p3d_findings *fs)
{
    double excess = t->measured - t->theory;
    struct p3d_finding *f;

    if (t->pp < 2 || !t->stages || excess < 0.02)
        return;
    f = p3d_add(fs, excess >= 0.05 ? P3D_SEV_BAD : P3D_SEV_WARN, P3D_LBL_PP,
                100 * excess, "points");
    if (!f)
        return;
    snprintf(f->what, sizeof(f->what), "pipeline bubble %.1f%%, %.1f "
             "points above the schedule's %.1f%%; busiest stage %d",
             100 * t->measured, 100 * excess, 100 * t->theory,
             t->worst_stage);
    f->next = "the stages are not equally fast: move layers off the "
              "busiest stage (--decoder-first-pipeline-num-layers / "
              "--decoder-last-pipeline-num-layers) or look for a straggler";
}

static void p3d_find_straggler(const struct p3d_time_res *t,
                               struct p3d_findings *fs)
{
    int s = p3d_time_straggler(t);
    struct p3d_finding *f;

    if (s < 0)
        return;
    f = p3d_add(fs, P3D_SEV_WARN, -1, t->strag[0].caused_ms, "ms");
    if (!f)
        return;
    snprintf(f->what, sizeof(f->what), "rank %d is a straggler: its peers "
             "waited %.3f ms for it, at least 1.5x what any other rank "
             "caused", s, t->strag[0].caused_ms);
    f->next = "check that rank's GPU (clocks, temperature, ECC) and host "
              "(CPU binding, data loading)";
}

static void p3d_find_idle(const struct p3d_time_res *t,
                          struct p3d_findings *fs)
{
    struct p3d_finding *f;

    if (!t->have_compute || t->f_idle < 0.10)
        return;
    f = p3d_add(fs, t->f_idle >= 0.25 ? P3D_SEV_BAD : P3D_SEV_WARN, -1,
                100 * t->f_idle, "% of step");
    if (!f)
        return;
    snprintf(f->what, sizeof(f->what), "the GPUs are idle %.1f%% of the "
             "step (neither compute nor NCCL)", 100 * t->f_idle);
    f->next = "the host does not keep the GPU fed: data loading, Python "
              "overhead or kernel launch (CUDA graphs help the last)";
}

static int p3d_cmp_finding(const void *a, const void *b)
{
    const struct p3d_finding *x = a, *y = b;

    if (x->sev != y->sev)
        return y->sev - x->sev;
    if (strcmp(x->unit, y->unit)) /* equal units: the larger first */
        return 0;
    return (y->value > x->value) - (y->value < x->value);
}

void p3d_findings_job(struct p3d_job *job)
{
    struct p3d_findings *fs = p3d_xcalloc(1, sizeof(*fs));
    const struct p3d_time_res *t = job->time;

    p3d_find_hang(job, fs);
    p3d_find_match(job, fs);
    /* a hung job's steps are what ran before the hang, perhaps one
     * micro-batch taken for an iteration: no advice from them */
    if (t && t->n_iter && !(job->hang && job->hang->detected)) {
        p3d_find_groups(t, fs);
        p3d_find_bubble(t, fs);
        p3d_find_straggler(t, fs);
        p3d_find_idle(t, fs);
    }
    /* a stable sort keeps the order above among equals */
    for (int i = 1; i < fs->n; i++)
        for (int k = i; k > 0 && p3d_cmp_finding(&fs->f[k - 1],
                                                 &fs->f[k]) > 0; k--) {
            struct p3d_finding x = fs->f[k];
            fs->f[k] = fs->f[k - 1];
            fs->f[k - 1] = x;
        }
    p3d_job_keep(job, &p3d_findings_key, fs, free);
}

const struct p3d_findings *p3d_findings_of(const struct p3d_job *job)
{
    return p3d_job_result(job, &p3d_findings_key);
}

void p3d_findings_free(struct p3d_job *job)
{
    p3d_job_drop(job, &p3d_findings_key);
}
