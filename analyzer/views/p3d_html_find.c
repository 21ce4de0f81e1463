/*
 * p3d_html_find.c - the findings section of the HTML report (what the
 * text report says, in short) and the per-communicator traffic table.
 * Every string that comes from a trace (command line, host names, file
 * paths in messages) goes through p3d_html_esc.
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "p3d_findings.h"
#include "p3d_hang.h"
#include "p3d_html_parts.h"
#include "p3d_match.h"
#include "p3d_seedtab.h"
#include "p3d_svg.h"
#include "p3d_util.h"
#include "p3d_vfmt.h"

static void p3d_find_li(FILE *f, const char *head, const char *text)
{
    fprintf(f, "<li><b>%s</b> ", head);
    p3d_html_esc(f, text, strlen(text));
    fputs("</li>\n", f);
}

static void p3d_find_layout(FILE *f, const struct p3d_job *job)
{
    const struct p3d_layout *l = &job->layout;
    char s[160], t[320];

    if (!l->valid) {
        p3d_find_li(f, "Layout:", "unknown (no communicators)");
        return;
    }
    p3d_layout_str(l, s, sizeof(s));
    snprintf(t, sizeof(t), "%s (%s; %d of %d communicators of 2+ ranks are "
             "its groups)%s", s, l->source, l->explained, l->total,
             l->contradicted ? "; the traces fit another layout better" : "");
    p3d_find_li(f, "Layout:", t);
}

static void p3d_find_iters(FILE *f, const struct p3d_vjob *s)
{
    char t[256];

    if (!s->it.n) {
        p3d_find_li(f, "Iterations:", "no repeating pattern of NCCL calls "
                    "found; the pictures show the whole trace");
        return;
    }
    snprintf(t, sizeof(t), "%d found (%d NCCL calls each on the first "
             "rank); median steady step %.2f ms; pictures show iteration%s "
             "%d%s%.0d", s->it.n, s->it.period, s->step_ms,
             s->iter_b > s->iter_a ? "s" : "", s->iter_a,
             s->iter_b > s->iter_a ? "-" : "",
             s->iter_b > s->iter_a ? s->iter_b : 0);
    p3d_find_li(f, "Iterations:", t);
}

static void p3d_find_time(FILE *f, const struct p3d_job *job,
                          const struct p3d_vjob *s)
{
    struct p3d_sb t = P3D_SB_INIT;

    p3d_seed_obs(job, s, &t);
    p3d_find_li(f, "Time:", p3d_sb_str(&t));
    if (s->max_peak) {
        char b[48];
        p3d_fmt_bytes(b, sizeof(b), (double)s->max_peak);
        p3d_sb_reset(&t);
        p3d_sb_addf(&t, "%s on rank %d%s", b, s->max_peak_rank,
                    s->peak_used ? " (device-wide used memory)" : "");
        p3d_find_li(f, "Max memory per rank:", p3d_sb_str(&t));
    }
    p3d_sb_free(&t);
}

/* The time analysis's verdict, stages and stragglers. */
static void p3d_find_tres(FILE *f, const struct p3d_time_res *t)
{
    char b[400];

    if (!t)
        return;
    p3d_find_li(f, "Verdict:", t->why);
    for (int k = 0; k < t->n_stages && k < 16; k++) {
        p3d_fmt_stage(b, sizeof(b), &t->stages[k]);
        p3d_find_li(f, "Pipeline:", b);
    }
    if (t->n_strag > 0) {
        struct p3d_sb sb = P3D_SB_INIT;
        int s = p3d_time_straggler(t);

        if (s >= 0)
            p3d_sb_addf(&sb, "rank %d stands out; ", s);
        else
            p3d_sb_add(&sb, "none stands out (no rank caused 1.5x the "
                            "waiting of the next); ");
        for (int k = 0; k < t->n_strag && k < 3; k++)
            p3d_sb_addf(&sb, "%srank %d caused %.3f ms of waiting",
                        k ? ", " : "", t->strag[k].rank,
                        t->strag[k].caused_ms);
        p3d_find_li(f, s >= 0 ? "Straggler:" : "Stragglers:",
                    p3d_sb_str(&sb));
        p3d_sb_free(&sb);
    }
}

static void p3d_find_match(FILE *f, const struct p3d_job *job)
{
    const struct p3d_match_res *m = job->match;
    char t[256];

    if (!m)
        return;
    snprintf(t, sizeof(t), "%" PRIu64 " collective instances, %" PRIu64
             " send/recv pairs, %" PRIu64 " mismatches, %" PRIu64
             " unmatched sends/recvs, %" PRIu64 " members behind",
             m->n_coll, m->n_p2p, m->n_mismatch, m->n_unmatched_p2p,
             m->n_short);
    p3d_find_li(f, "Cross-rank matching:", t);
    for (int i = 0; i < m->n_kept && i < 5; i++) {
        const struct p3d_mismatch *x = &m->mm[i];
        int gi = p3d_map_get(&job->comm_idx, x->comm);
        const char *lab = gi >= 0 ? p3d_label_name[job->comms[gi].label]
                                  : "?";

        if (x->field >= P3D_MM_UNMATCHED) {
            const char *k = p3d_mm_other_text(x, lab, t, sizeof(t));
            p3d_find_li(f, k[0] == 'i' ? "Incomplete:" : "Unmatched:", t);
            continue;
        }
        snprintf(t, sizeof(t), "comm 0x%016" PRIx64 " (%s) seq %" PRIu64
                 ": %s differs between rank %d (%" PRId64 ") and rank %d (%"
                 PRId64 ")", x->comm, lab, x->seq,
                 p3d_mm_field_name[x->field], x->rank_a, x->va, x->rank_b,
                 x->vb);
        p3d_find_li(f, "Mismatch:", t);
    }
}

/* A hang first: everything after it describes the run up to the hang. */
static void p3d_find_hang(FILE *f, const struct p3d_job *job)
{
    char b[160], t[320];

    p3d_hang_brief(job, b, sizeof(b));
    if (!b[0])
        return;
    snprintf(t, sizeof(t), "%s; %d rank(s) wait inside NCCL (the text "
             "report, p3d-analyze DIR, has the chain of waits and the "
             "root's call site)", b, job->hang->n_waiting);
    p3d_find_li(f, "Hang:", t);
}

/* The findings (analyzer/findings/), as the text report lists them. */
static void p3d_find_findings(FILE *f, const struct p3d_job *job)
{
    const struct p3d_findings *fs = p3d_findings_of(job);

    for (int i = 0; fs && i < fs->n; i++) {
        const struct p3d_finding *x = &fs->f[i];
        char head[32];
        snprintf(head, sizeof(head), "Finding (%s):", p3d_sev_name[x->sev]);
        fprintf(f, "<li><b>%s</b> ", head);
        p3d_html_esc(f, x->what, strlen(x->what));
        fputs("<br><i>Next:</i> ", f);
        p3d_html_esc(f, x->next, strlen(x->next));
        fputs("</li>\n", f);
    }
}

static void p3d_find_ranks(FILE *f, const struct p3d_job *job)
{
    char miss[256];

    if (p3d_missing_ranks(job, miss, sizeof(miss)))
        p3d_find_li(f, "Ranks without a readable trace:", miss);
    for (int i = 0; i < job->n_ranks; i++) {
        if (job->ranks[i].err[0])
            p3d_find_li(f, "Error:", job->ranks[i].err);
        if (job->ranks[i].warn[0])
            p3d_find_li(f, "Warning:", job->ranks[i].warn);
    }
}

void p3d_html_findings(FILE *f, const struct p3d_job *job,
                       const struct p3d_vjob *s)
{
    fputs("<section id=\"findings\"><h2>Findings</h2>\n<ul class=\"findings\">"
          "\n", f);
    p3d_find_hang(f, job);
    p3d_find_findings(f, job);
    p3d_find_layout(f, job);
    p3d_find_iters(f, s);
    p3d_find_time(f, job, s);
    p3d_find_tres(f, s->time);
    p3d_find_match(f, job);
    p3d_find_ranks(f, job);
    fputs("</ul>\n", f);
    if (s->total.host_only)
        fputs("<p class=\"note\">These traces have no GPU kernel times: "
              "compute is estimated as the time outside NCCL ops.</p>\n", f);
    if (s->time)
        fprintf(f, "<p class=\"note\">Numbers from the time analysis, as "
                "in the text report and the JSON (p3d-analyze --detail=time "
                "adds the wait states per group); %s</p>\n", s->bars_steady
                ? "the bars below show the same figures per rank, the "
                  "timeline the window it names."
                : "the timeline and the bars show the window chosen with "
                  "--window.");
    else
        fputs("<p class=\"note\">Iterations and time shares are the "
              "views' own estimate (clocks: CLOCK_REALTIME per host, no "
              "cross-host offset correction).</p>\n", f);
    fputs("</section>\n", f);
}

static void p3d_traffic_row(FILE *f, const struct p3d_gcomm *g)
{
    uint64_t calls = 0, bytes = 0, ns = 0;
    char mem[128], b[48];
    int l = g->label >= 0 && g->label < P3D_LBL_COUNT ? g->label
                                                       : P3D_LBL_COUNT;

    for (int k = 0; k < P3D_OP_COUNT; k++) {
        calls += g->st[k].calls;
        bytes += g->st[k].bytes;
        ns += g->st[k].gpu_ns;
    }
    p3d_fmt_ranks(mem, sizeof(mem), g->members, g->n_members);
    p3d_fmt_bytes(b, sizeof(b), (double)bytes);
    fprintf(f, "<tr><td><code>0x%016" PRIx64 "</code></td><td><i class=\"sw\" "
            "style=\"background:%s\"></i>%s</td><td>%d</td><td>%s</td>"
            "<td>%" PRIu64 "</td><td>%s</td><td>%.3f</td></tr>\n", g->hash,
            p3d_svg_label_color(l), l < P3D_LBL_COUNT ? p3d_label_name[l] :
            "?", g->size, mem, calls, b, (double)ns / 1e6);
}

void p3d_html_traffic(FILE *f, const struct p3d_job *job)
{
    fputs("<section id=\"traffic\"><h2>Communicators</h2>\n<table class="
          "\"traffic\"><tr><th>id</th><th>used as</th><th>size</th>"
          "<th>members</th><th>calls (all members)</th><th>bytes</th>"
          "<th>GPU ms</th></tr>\n", f);
    for (int i = 0; i < job->n_comms && i < 200; i++)
        p3d_traffic_row(f, &job->comms[i]);
    fputs("</table>\n", f);
    if (job->n_comms > 200)
        fprintf(f, "<p class=\"note\">%d more communicators: see the text "
                "report.</p>\n", job->n_comms - 200);
    fputs("</section>\n", f);
}
