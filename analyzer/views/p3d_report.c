/*
 * p3d_report.c - the text report.  It leads with the answer (job, layout
 * and its groups, a hang first when there is one, time, cross-rank
 * matching, findings, the seed row) and keeps what only a deeper look
 * needs behind --detail: the coordinate map stage by stage, every
 * communicator with its labels and traffic, per rank, message sizes.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "p3d_bw.h"
#include "p3d_hang.h"
#include "p3d_label.h"
#include "p3d_match.h"
#include "p3d_names.h"
#include "p3d_report.h"
#include "p3d_time.h"
#include "p3d_util.h"
#include "p3d_vfmt.h"


static void p3d_report_job(FILE *f, const struct p3d_job *job)
{
    char when[64], miss[256];

    p3d_job_started(job, when, sizeof(when));
    fprintf(f, "job '%s': %d of %d ranks have readable traces, started %s\n",
            job->job_id, p3d_job_ranks_found(job), job->world_size, when);
    if (p3d_missing_ranks(job, miss, sizeof(miss)))
        fprintf(f, "  missing ranks: %s\n", miss);
    for (int i = 0; i < job->n_ranks; i++) {
        const struct p3d_rank *r = &job->ranks[i];
        if (r->err[0] || r->warn[0])
            fprintf(f, "  rank %d: %s\n", r->rank, r->err[0] ? r->err
                                                           : r->warn);
    }
}

/* The batch settings the command line gave; those it did not give are
 * left out rather than printed as 0. */
static void p3d_report_batch(FILE *f, const struct p3d_layout *l)
{
    const char *name[] = {"micro-batch", "global batch", "seq-length",
                          "layers per virtual stage"};
    int val[] = {l->mbs, l->gbs, l->seq, l->vpp};
    int n = 0;

    for (int i = 0; i < 4; i++)
        if (val[i])
            fprintf(f, "%s%s %d", n++ ? ", " : "  ", name[i], val[i]);
    fputc('\n', f);
}

static void p3d_report_layout(FILE *f, const struct p3d_job *job)
{
    const struct p3d_layout *l = &job->layout;
    char s[128];

    if (!l->valid) {
        fprintf(f, "layout: unknown (no communicators)\n");
        return;
    }
    p3d_layout_str(l, s, sizeof(s));
    fprintf(f, "layout: %s (%s; %d of %d communicators of 2+ ranks are "
            "its groups)\n", s, l->source, l->explained, l->total);
    fprintf(f, "  confidence: %s: %s\n", p3d_conf_name[l->confidence],
            l->conf_why);
    for (int i = 0; i < l->n_alts && l->confidence >= P3D_CONF_AMBIGUOUS;
         i++)
        fprintf(f, "    or %s: %s\n", l->alts[i].text, l->alts[i].why);
    if (job->hint.valid) {
        p3d_layout_str(&job->hint, s, sizeof(s));
        fprintf(f, "  the job's command line says %s: the traces %s\n", s,
                job->hint_fits ? "agree" : "contradict it");
    }
    if (l->contradicted && l->best[0])
        fprintf(f, "  warning: the traces fit %s better (%d communicators "
                "explained)\n", l->best, l->best_explained);
    if (l->mbs || l->gbs || l->seq || l->vpp)
        p3d_report_batch(f, l);
}

static uint64_t p3d_sum_calls(const struct p3d_opstat *st)
{
    uint64_t c = 0;

    for (int k = 0; k < P3D_OP_COUNT; k++)
        c += st[k].calls;
    return c;
}

static uint64_t p3d_sum_bytes(const struct p3d_opstat *st)
{
    uint64_t b = 0;

    for (int k = 0; k < P3D_OP_COUNT; k++)
        b += st[k].bytes;
    return b;
}

static void p3d_labels_str(char *buf, size_t n, unsigned bits)
{
    size_t len = 0;

    buf[0] = 0;
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        if (bits & (1u << l))
            len += (size_t)snprintf(buf + len, n - len, "%s%s",
                                    len ? "," : "", p3d_label_name[l]);
}

static void p3d_report_ops(FILE *f, const struct p3d_opstat *st, int n,
                           int gpu, const char *indent)
{
    char b[32];

    for (int k = 0; k < P3D_OP_COUNT; k++) {
        double alg;
        if (!st[k].calls)
            continue;
        p3d_fmt_bytes(b, sizeof(b), (double)st[k].bytes);
        fprintf(f, "%s%-14s %10" PRIu64 " calls %12s", indent,
                p3d_op_name[k], st[k].calls, b);
        alg = p3d_algbw(&st[k], k, n);
        if (gpu && st[k].gpu_calls)
            fprintf(f, "  gpu %10.3f ms  algbw %8.2f GB/s  busbw %8.2f GB/s",
                    (double)st[k].gpu_ns / 1e6, alg,
                    alg * p3d_bw_factor(k, n));
        fputc('\n', f);
    }
}

static void p3d_report_comms(FILE *f, const struct p3d_job *job)
{
    char m[160], lb[128], b[32];

    fprintf(f, "\ncommunicators (%d; gpu = the members' kernel times "
               "summed, so algbw/busbw include time spent waiting for "
               "peers; the time section's busbw by group is the transfer "
               "alone):\n", job->n_comms);
    for (int i = 0; i < job->n_comms; i++) {
        const struct p3d_gcomm *g = &job->comms[i];
        p3d_fmt_ranks(m, sizeof(m), g->members, g->n_members);
        p3d_labels_str(lb, sizeof(lb), g->labels);
        p3d_fmt_bytes(b, sizeof(b), (double)p3d_sum_bytes(g->st));
        fprintf(f, "  0x%016" PRIx64 " %-8s size %-4d members [%s]  "
                "%" PRIu64 " calls, %s  (labels %s)%s%s\n", g->hash,
                p3d_label_name[g->label], g->size, m, p3d_sum_calls(g->st),
                b, lb, g->role ? "; " : "", g->role ? g->role : "");
        if (g->size_unknown)
            fprintf(f, "    no member recorded its creation: size unknown, "
                    "members are the ranks that used it\n");
        else if (g->n_missing)
            fprintf(f, "    %d of %d members have no trace file\n",
                    g->n_missing, g->size);
        if (g->inferred_members)
            fprintf(f, "    %d of %d members have no trace file; members "
                    "completed from the layout\n", g->inferred_members,
                    g->size);
        if (g->gpu_placed)
            fprintf(f, "    gpu: NCCL kernel spans the time analysis placed "
                    "on the ops (the traces link no kernel to its op)\n");
        p3d_report_ops(f, g->st, g->size, job->have_gpu || g->gpu_placed,
                       "      ");
    }
}

static void p3d_report_labels(FILE *f, const struct p3d_job *job)
{
    fprintf(f, "\ntraffic per label (calls and bytes summed over member "
            "ranks):\n");
    for (int l = 0; l < P3D_LBL_COUNT; l++) {
        struct p3d_opstat st[P3D_OP_COUNT];
        int n = 0, size = 0;
        memset(st, 0, sizeof(st));
        for (int i = 0; i < job->n_comms; i++) {
            const struct p3d_gcomm *g = &job->comms[i];
            if (g->label != l)
                continue;
            n++;
            size = g->size;
            for (int k = 0; k < P3D_OP_COUNT; k++) {
                st[k].calls += g->st[k].calls;
                st[k].bytes += g->st[k].bytes;
                st[k].gpu_calls += g->st[k].gpu_calls;
                st[k].gpu_bytes += g->st[k].gpu_bytes;
                st[k].gpu_ns += g->st[k].gpu_ns;
            }
        }
        if (!n)
            continue;
        fprintf(f, "  %s (%d communicator%s)\n", p3d_label_name[l], n,
                n == 1 ? "" : "s");
        p3d_report_ops(f, st, size, job->have_gpu, "      ");
    }
}

static void p3d_report_hist(FILE *f, const struct p3d_job *job)
{
    fprintf(f, "\nmessage sizes per label (calls per power-of-two "
            "bucket; <8.0 KiB:3 = 3 calls of 4 KiB up to 8 KiB):\n");
    for (int l = 0; l < P3D_LBL_COUNT; l++) {
        uint64_t h[P3D_HIST_N] = {0};
        int any = 0;
        for (int i = 0; i < job->n_comms; i++)
            if (job->comms[i].label == l)
                for (int b = 0; b < P3D_HIST_N; b++)
                    any |= !!(h[b] += job->comms[i].hist[b]);
        if (!any)
            continue;
        fprintf(f, "  %-9s", p3d_label_name[l]);
        for (int b = 0; b < P3D_HIST_N; b++) {
            char s[32];
            if (!h[b])
                continue;
            p3d_fmt_bytes(s, sizeof(s), b ? (double)(1ull << b) : 1);
            fprintf(f, " <%s:%" PRIu64, s, h[b]);
        }
        fputc('\n', f);
    }
}

static void p3d_report_rank(FILE *f, const struct p3d_job *job,
                            const struct p3d_rank *r)
{
    fprintf(f, "  rank %d: %" PRIu64 " records, %" PRIu64 " ops, %d "
            "communicators%s", r->rank, r->n_records, r->n_ops, r->n_comms,
            r->closed ? "" : " (not closed cleanly)");
    if (r->n_nocolor)
        fprintf(f, ", %" PRIu64 " NCCL_SPLIT_NOCOLOR splits (no comm)",
                r->n_nocolor);
    fputc('\n', f);
    for (int k = 0; k < r->n_comms; k++) {
        const struct p3d_rcomm *c = &r->comms[k];
        const struct p3d_gcomm *g = c->gcomm >= 0 ? &job->comms[c->gcomm]
                                                  : NULL;
        fprintf(f, "    0x%016" PRIx64 " %-8s rank %d of %d\n", c->hash,
                g ? p3d_label_name[g->label] : "?", c->rank, c->nranks);
        p3d_report_ops(f, c->st, c->nranks, job->have_gpu, "        ");
    }
}

/* Entries i..j-1 that differ from rank_a in the same way: one line. */
static int p3d_same_diff(const struct p3d_mismatch *a,
                         const struct p3d_mismatch *b)
{
    return a->field == b->field && a->comm == b->comm && a->seq == b->seq &&
           a->rank_a == b->rank_a && a->va == b->va && a->vb == b->vb &&
           a->field < P3D_MM_UNMATCHED;
}

static void p3d_report_mm(FILE *f, const struct p3d_mismatch *x, int n,
                          const char *lab)
{
    char a[32], b[32];

    fprintf(f, "  mismatch: comm 0x%016" PRIx64 " (%s) %s #%" PRIu64
            ": %s differs: rank %d has %s, rank%s", x->comm, lab,
            p3d_op_name[x->op % P3D_OP_COUNT], x->seq,
            p3d_mm_field_name[x->field], x->rank_a,
            p3d_mm_value(x->field, x->va, a, sizeof(a)), n > 1 ? "s" : "");
    for (int k = 0; k < n; k++)
        fprintf(f, "%s%d", k ? "," : " ", x[k].rank_b);
    fprintf(f, " ha%s %s\n", n > 1 ? "ve" : "s",
            p3d_mm_value(x->field, x->vb, b, sizeof(b)));
}


/* Members behind on one communicator, against the same rank, by the same
 * counts: one line (a world collective half the ranks never reached has
 * thousands). */
static int p3d_same_behind(const struct p3d_mismatch *a,
                           const struct p3d_mismatch *b)
{
    return a->field == P3D_MM_ISSUED && b->field == P3D_MM_ISSUED &&
           a->comm == b->comm && a->rank_a == b->rank_a && a->va == b->va &&
           a->vb == b->vb;
}

static void p3d_report_other(FILE *f, const struct p3d_mismatch *x, int n,
                             const char *lab)
{
    char b[256], who[160];
    const char *kind = p3d_mm_other_text(x, lab, b, sizeof(b));
    int *r;

    if (n == 1) {
        fprintf(f, "  %s: %s\n", kind, b);
        return;
    }
    r = p3d_xcalloc((size_t)n, sizeof(*r));
    for (int k = 0; k < n; k++)
        r[k] = x[k].rank_b;
    p3d_fmt_ranks(who, sizeof(who), r, n);
    free(r);
    fprintf(f, "  %s: comm 0x%016" PRIx64 " (%s): %d ranks (%s) issued %"
            PRId64 " collectives, rank %d issued %" PRId64 "\n", kind,
            x->comm, lab, n, who, x->vb, x->rank_a, x->va);
}

/* Ranks whose traces lost records: what they lack is not a schedule
 * gone wrong (p3d_lost_records). */
static void p3d_report_lost(FILE *f, const struct p3d_job *job)
{
    uint64_t lost;
    char who[256];

    if (!p3d_fmt_lost_ranks(who, sizeof(who), job, &lost))
        return;
    fprintf(f, "  rank(s) %s lost %" PRIu64 " records while recording (the "
            "P3D_MAX_MB size cap was reached, or buffers were full): the "
            "collectives missing from their traces are not counted as "
            "members behind, and their unmatched sends/recvs may be records "
            "lost\n", who, lost);
}

static void p3d_report_match(FILE *f, const struct p3d_job *job)
{
    const struct p3d_match_res *m = job->match;
    /* no hang shown: the hang section after this one lists the members
     * behind, with what they mean; not twice */
    int behind_below = job->hang && !job->hang->detected &&
                       !job->hang->stopped.n_in_nccl;
    int hidden = 0;

    if (!m)
        return;
    fprintf(f, "\ncross-rank matching: %" PRIu64 " collective instances, "
            "%" PRIu64 " send/recv pairs, %" PRIu64 " mismatches, %" PRIu64
            " unmatched sends/recvs, %" PRIu64 " members behind\n", m->n_coll,
            m->n_p2p, m->n_mismatch, m->n_unmatched_p2p, m->n_short);
    p3d_report_lost(f, job);
    for (int i = 0, j; i < m->n_kept; i = j) {
        const struct p3d_mismatch *x = &m->mm[i];
        int gi = p3d_map_get(&job->comm_idx, x->comm);
        const char *lab = gi >= 0 ? p3d_label_name[job->comms[gi].label]
                                  : "?";
        for (j = i + 1; j < m->n_kept && (p3d_same_diff(x, &m->mm[j]) ||
                                         p3d_same_behind(x, &m->mm[j]));
             j++)
            ;
        if (behind_below && x->field == P3D_MM_ISSUED)
            hidden += j - i;
        else if (x->field >= P3D_MM_UNMATCHED)
            p3d_report_other(f, x, j - i, lab);
        else
            p3d_report_mm(f, x, j - i, lab);
    }
    if (hidden)
        fprintf(f, "  members behind: in the hang analysis below\n");
    if (m->n_kept == P3D_MM_KEEP)
        fprintf(f, "  ... (only the first %d shown)\n", m->n_kept);
}

int p3d_detail_parse(const char *spec, unsigned *out)
{
    static const char *const word[] = {"ranks", "comms", "map", "time",
                                       "hang", "all"};
    static const unsigned bit[] = {P3D_DETAIL_RANKS, P3D_DETAIL_COMMS,
                                   P3D_DETAIL_MAP, P3D_DETAIL_TIME,
                                   P3D_DETAIL_HANG, P3D_DETAIL_ALL};
    const char *p = spec;

    *out = 0;
    while (*p) {
        size_t n = strcspn(p, ",");
        int k = 0;
        while (k < 6 && (strlen(word[k]) != n || strncmp(p, word[k], n)))
            k++;
        if (k == 6)
            return p3d_error("bad --detail '%s': expected a list of ranks, "
                             "comms, map, time, hang (or all)", spec);
        *out |= bit[k];
        p += n + (p[n] == ',');
    }
    if (!*out)
        return p3d_error("bad --detail '%s': expected a list of ranks, "
                         "comms, map, time, hang (or all)", spec);
    return 0;
}

/* The sections behind --detail, after the answer. */
static void p3d_report_detail(FILE *f, const struct p3d_job *job,
                              unsigned detail)
{
    if (detail & P3D_DETAIL_MAP)
        p3d_report_coords(f, job, 1);
    if (detail & P3D_DETAIL_COMMS) {
        p3d_report_comms(f, job);
        p3d_report_labels(f, job);
        p3d_report_hist(f, job);
    }
    if (detail & P3D_DETAIL_RANKS) {
        fprintf(f, "\nper rank (per communicator, per op kind):\n");
        for (int i = 0; i < job->n_ranks; i++)
            if (!job->ranks[i].failed)
                p3d_report_rank(f, job, &job->ranks[i]);
    }
    if ((detail & P3D_DETAIL_ALL) != P3D_DETAIL_ALL)
        fprintf(f, "\nmore: --detail=ranks,comms,map,time,hang (or "
                "--detail for all) adds per-rank, per-communicator, map, "
                "per-iteration and wait-state detail\n");
}

void p3d_report_text(FILE *f, const struct p3d_job *job, unsigned detail)
{
    int hung = job->hang && job->hang->detected;

    p3d_report_job(f, job);
    p3d_report_layout(f, job);
    p3d_report_coords(f, job, 0);
    if (hung) /* the answer to a hung job comes first */
        p3d_hang_report(f, job, detail);
    p3d_time_report(f, job, detail);
    p3d_report_match(f, job);
    if (!hung)
        p3d_hang_report(f, job, detail);
    p3d_report_findings(f, job, detail);
    p3d_seed_report(f, job);
    p3d_report_detail(f, job, detail);
}
