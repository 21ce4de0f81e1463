/*
 * p3d_seedtab.c - the seed's record template, a run as one row
 * (p3d_seedtab.h): filled from an analysed job, written as Markdown or
 * JSON.  Anything the traces cannot tell is "n/a".  Numbers come from the
 * time analysis (p3d_time.h) when it found iterations, else from the
 * views' own estimate (p3d_html_sum.c).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_hang.h"
#include "p3d_layout.h"
#include "p3d_match.h"
#include "p3d_seedtab.h"
#include "p3d_util.h"
#include "p3d_vfmt.h"

/* Append an observation, after a "; " when there are some. */
static void p3d_cobs(struct p3d_sb *sb, const char *fmt, ...) P3D_PRINTF(2, 3);

static void p3d_cobs(struct p3d_sb *sb, const char *fmt, ...)
{
    char *piece = NULL;
    va_list ap;
    int k;

    va_start(ap, fmt);
    k = vasprintf(&piece, fmt, ap);
    va_end(ap);
    if (k < 0)
        p3d_die("out of memory");
    p3d_sb_addf(sb, "%s%s", sb->len ? "; " : "", piece);
    free(piece);
}

/* "TP 15%, DP 6%": the two groups with the most exposed time. */
static void p3d_cobs_groups(const struct p3d_vbreak *t, struct p3d_sb *g)
{
    int best[2] = {-1, -1};

    for (int l = 0; l <= P3D_LBL_COUNT; l++) {
        if (!t->exposed[l])
            continue;
        if (best[0] < 0 || t->exposed[l] > t->exposed[best[0]])
            best[1] = best[0], best[0] = l;
        else if (best[1] < 0 || t->exposed[l] > t->exposed[best[1]])
            best[1] = l;
    }
    for (int i = 0; i < 2 && best[i] >= 0; i++) {
        double f = p3d_vfrac(t->exposed[best[i]], t->span);
        if (f < 0.005)
            continue;
        p3d_sb_addf(g, "%s%s %.0f%%", g->len ? ", " : "",
                    best[i] < P3D_LBL_COUNT ? p3d_label_name[best[i]]
                                            : "other",
                    100 * f);
    }
}

static void p3d_cobs_time(const struct p3d_job *job, const struct p3d_vjob *s,
                          struct p3d_sb *sb)
{
    const struct p3d_vbreak *t = &s->total;
    struct p3d_sb g = P3D_SB_INIT;
    int pp = job->layout.valid ? job->layout.size[P3D_AX_PP] : 1;

    if (!t->span)
        return;
    p3d_cobs_groups(t, &g);
    p3d_cobs(sb, "exposed NCCL %.0f%% of step%s%s%s",
             100 * p3d_vfrac(t->exposed_all, t->span), g.len ? " (" : "",
             p3d_sb_str(&g), g.len ? ")" : "");
    p3d_sb_free(&g);
    if (pp > 1 && s->bubble_theory >= 0)
        p3d_cobs(sb, "bubble %.0f%% vs %.0f%% theory",
                 100 * p3d_vfrac(t->bubble, t->span),
                 100 * s->bubble_theory);
    else if (pp > 1)
        p3d_cobs(sb, "bubble %.0f%%",
                 100 * p3d_vfrac(t->bubble, t->span));
    p3d_cobs(sb, "compute %.0f%%%s",
             100 * p3d_vfrac(t->compute, t->span),
             t->host_only ? " (estimated: no GPU kernel times)" : "");
    if (p3d_vfrac(t->idle, t->span) >= 0.1)
        p3d_cobs(sb, "idle %.0f%%",
                 100 * p3d_vfrac(t->idle, t->span));
    if (p3d_vfrac(t->exposed_all, t->span) > p3d_vfrac(t->compute, t->span))
        p3d_cobs(sb, "NCCL dominates");
}

/* "TP 15%, DP 6%" from the time analysis's exposed shares. */
static void p3d_cobs_tgroups(const struct p3d_time_res *t, struct p3d_sb *g)
{
    struct p3d_vbreak b;

    memset(&b, 0, sizeof(b));
    b.span = 1000000;
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        b.exposed[l] = (uint64_t)(t->f_lbl[l] * 1e6);
    p3d_cobs_groups(&b, g);
}

/* Observations from the time analysis (p3d_time.h). */
static void p3d_cobs_tres(const struct p3d_time_res *t, struct p3d_sb *sb)
{
    struct p3d_sb g = P3D_SB_INIT;
    int strag = p3d_time_straggler(t);

    p3d_cobs_tgroups(t, &g);
    p3d_cobs(sb, "exposed NCCL %.0f%% of step%s%s%s", 100 * t->f_exposed,
             g.len ? " (" : "", p3d_sb_str(&g), g.len ? ")" : "");
    p3d_sb_free(&g);
    if (t->pp > 1 && t->stages)
        p3d_cobs(sb, "bubble %.0f%% vs %.0f%% theory",
                 100 * t->measured, 100 * t->theory);
    if (t->have_compute)
        p3d_cobs(sb, "compute %.0f%%", 100 * t->f_compute);
    else
        p3d_cobs(sb, "no GPU compute times");
    if (t->f_idle >= 0.1)
        p3d_cobs(sb, "idle %.0f%%", 100 * t->f_idle);
    if (t->dominates && t->top_lbl >= 0 && t->top_lbl < P3D_LBL_COUNT)
        p3d_cobs(sb, "NCCL dominates (mostly %s)",
                 p3d_label_name[t->top_lbl]);
    if (strag >= 0)
        p3d_cobs(sb, "straggler rank %d", strag);
    if (t->n_hosts > 1)
        p3d_cobs(sb, "clocks of %d hosts aligned", t->n_hosts);
}

/* What every summary says first: a hang, missing ranks. */
static void p3d_cobs_head(const struct p3d_job *job, struct p3d_sb *sb)
{
    char miss[128], hang[160];
    int k;

    p3d_hang_brief(job, hang, sizeof(hang));
    if (hang[0])
        p3d_cobs(sb, "%s", hang);
    k = p3d_missing_ranks(job, miss, sizeof(miss));
    if (k)
        p3d_cobs(sb, "%d of %d ranks missing (%s)", k,
                 job->world_size, miss);
}

/* ... and last: what the matcher found. */
static void p3d_cobs_tail(const struct p3d_job *job, struct p3d_sb *sb)
{
    if (job->match && job->match->n_mismatch)
        p3d_cobs(sb, "%" PRIu64 " cross-rank mismatches",
                 job->match->n_mismatch);
    if (job->match && job->match->n_unmatched_p2p)
        p3d_cobs(sb, "%" PRIu64 " unmatched send/recv",
                 job->match->n_unmatched_p2p);
    if (!sb->len)
        p3d_sb_add(sb, "n/a");
}

void p3d_seed_obs(const struct p3d_job *job, const struct p3d_vjob *s,
                  struct p3d_sb *sb)
{
    p3d_cobs_head(job, sb);
    if (!s->it.n)
        p3d_cobs(sb, "no repeating iteration found");
    if (s->time)
        p3d_cobs_tres(s->time, sb);
    else
        p3d_cobs_time(job, s, sb);
    p3d_cobs_tail(job, sb);
}

void p3d_seed_obs_time(const struct p3d_job *job,
                       const struct p3d_time_res *t, struct p3d_sb *sb)
{
    p3d_cobs_head(job, sb);
    p3d_cobs_tres(t, sb);
    p3d_cobs_tail(job, sb);
}

void p3d_seed_row_init(struct p3d_crow *row, const struct p3d_job *job,
                       const char *name)
{
    const struct p3d_layout *l = &job->layout;

    memset(row, 0, sizeof(*row));
    snprintf(row->config, sizeof(row->config), "%s", name);
    if (l->valid && l->confidence != P3D_CONF_NONE) { /* else n/a */
        row->tp = l->size[P3D_AX_TP];
        row->pp = l->size[P3D_AX_PP];
        row->cp = l->size[P3D_AX_CP];
        row->dp = l->size[P3D_AX_DP];
        row->ep = l->ep;
    }
}

void p3d_seed_row(const struct p3d_job *job, const struct p3d_vjob *s,
                     const char *name, struct p3d_crow *row)
{
    p3d_seed_row_init(row, job, name);
    row->micro_batches = s->micro_batches;
    row->max_mem = s->max_peak;
    row->max_mem_rank = s->max_peak_rank;
    row->step_ms = s->step_ms;
    row->tokens_s = s->tokens_s;
    p3d_seed_obs(job, s, &row->obs);
}

/* Markdown cell text: '|' and newlines would break the table. */
static void p3d_md_cell(FILE *f, const char *s)
{
    fputc(' ', f);
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', f);
        else
            fputc(*s, f);
    }
    fputs(" |", f);
}

/* A Markdown cell: the value when known, else "n/a". */
static void p3d_md_opt(FILE *f, int known, const char *fmt, ...)
    P3D_PRINTF(3, 4);

static void p3d_md_opt(FILE *f, int known, const char *fmt, ...)
{
    va_list ap;

    if (!known) {
        fputs(" n/a |", f);
        return;
    }
    fputc(' ', f);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputs(" |", f);
}

void p3d_seed_md_head(FILE *f)
{
    fputs("| config | TP | PP | CP | DP | micro-batches | max mem/rank | "
          "step time | tokens/s | observations |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n", f);
}

void p3d_seed_row_free(struct p3d_crow *row)
{
    p3d_sb_free(&row->obs);
}

void p3d_seed_md_row(FILE *f, const struct p3d_crow *r)
{
    char b[48];

    p3d_fmt_bytes(b, sizeof(b), (double)r->max_mem);
    fputc('|', f);
    p3d_md_cell(f, r->config);
    p3d_md_opt(f, r->tp > 0, "%d", r->tp);
    p3d_md_opt(f, r->pp > 0, "%d", r->pp);
    p3d_md_opt(f, r->cp > 0, "%d", r->cp);
    p3d_md_opt(f, r->dp > 0, "%d", r->dp);
    p3d_md_opt(f, r->micro_batches > 0, "%d", r->micro_batches);
    p3d_md_opt(f, r->max_mem > 0, "%s (rank %d)", b, r->max_mem_rank);
    p3d_md_opt(f, r->step_ms > 0, "%.1f ms", r->step_ms);
    p3d_md_opt(f, r->tokens_s > 0, "%.0f", r->tokens_s);
    p3d_md_cell(f, p3d_sb_str(&r->obs));
    fputc('\n', f);
}

/* A JSON member: the value when known, else null. */
static void p3d_json_opt(FILE *f, const char *key, int known,
                         const char *fmt, ...) P3D_PRINTF(4, 5);

static void p3d_json_opt(FILE *f, const char *key, int known,
                         const char *fmt, ...)
{
    va_list ap;

    fprintf(f, ", \"%s\": ", key);
    if (!known) {
        fputs("null", f);
        return;
    }
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
}

void p3d_seed_json_row(FILE *f, const struct p3d_crow *r)
{
    fputs("  {\"config\": ", f);
    p3d_json_str(f, r->config, strlen(r->config));
    p3d_json_opt(f, "tp", r->tp > 0, "%d", r->tp);
    p3d_json_opt(f, "pp", r->pp > 0, "%d", r->pp);
    p3d_json_opt(f, "cp", r->cp > 0, "%d", r->cp);
    p3d_json_opt(f, "dp", r->dp > 0, "%d", r->dp);
    p3d_json_opt(f, "micro_batches", r->micro_batches > 0, "%d",
                 r->micro_batches);
    p3d_json_opt(f, "max_mem_bytes", r->max_mem > 0, "%" PRIu64, r->max_mem);
    p3d_json_opt(f, "max_mem_rank", r->max_mem > 0, "%d", r->max_mem_rank);
    p3d_json_opt(f, "step_time_ms", r->step_ms > 0, "%.3f", r->step_ms);
    p3d_json_opt(f, "tokens_per_s", r->tokens_s > 0, "%.1f", r->tokens_s);
    fputs(", \"observations\": ", f);
    p3d_json_str(f, p3d_sb_str(&r->obs), r->obs.len);
    fputc('}', f);
}

