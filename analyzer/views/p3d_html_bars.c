/*
 * p3d_html_bars.c - "where the time goes": one stacked bar per rank over
 * the steady iterations (compute, exposed NCCL per group, bubble, idle),
 * the memory peak per rank, and the colour legend.
 */
#include <string.h>

#include "p3d_html_parts.h"
#include "p3d_svg.h"
#include "p3d_vfmt.h"

#define P3D_BAR_W 1120
#define P3D_BAR_LEFT 190
#define P3D_BAR_PLOT 680
#define P3D_BAR_ROW 20

static void p3d_bar_seg(FILE *f, double *x, double frac, double y,
                        const char *fill, const char *what)
{
    char tip[96];
    double w = frac * P3D_BAR_PLOT;

    if (w <= 0)
        return;
    snprintf(tip, sizeof(tip), "%s %.1f%%", what, 100 * frac);
    p3d_svg_rect(f, *x, y, w, P3D_BAR_ROW - 5, "seg", fill, tip);
    *x += w;
}

static void p3d_bar_row(FILE *f, const struct p3d_vbreak *b, int rank,
                        double y)
{
    char s[96];
    double x = P3D_BAR_LEFT;

    fprintf(f, "<g class=\"bar\" data-rank=\"%d\">\n", rank);
    snprintf(s, sizeof(s), "rank %d", rank);
    p3d_svg_text(f, P3D_BAR_LEFT - 8, y + P3D_BAR_ROW / 2.0 + 2, "end",
                 "rowlabel", s);
    p3d_bar_seg(f, &x, p3d_vfrac(b->compute, b->span), y, P3D_SVG_COMPUTE,
                "compute");
    for (int l = 0; l <= P3D_LBL_COUNT; l++)
        p3d_bar_seg(f, &x, p3d_vfrac(b->exposed[l], b->span), y,
                    p3d_svg_label_color(l), l < P3D_LBL_COUNT ?
                    p3d_label_name[l] : "NCCL (unknown group)");
    p3d_bar_seg(f, &x, p3d_vfrac(b->bubble, b->span), y, P3D_SVG_BUBBLE,
                "bubble");
    p3d_bar_seg(f, &x, p3d_vfrac(b->idle, b->span), y, P3D_SVG_IDLE, "idle");
    snprintf(s, sizeof(s), "compute %.0f%%  NCCL %.0f%%  bubble %.0f%%",
             100 * p3d_vfrac(b->compute, b->span),
             100 * p3d_vfrac(b->exposed_all, b->span),
             100 * p3d_vfrac(b->bubble, b->span));
    p3d_svg_text(f, P3D_BAR_LEFT + P3D_BAR_PLOT + 8,
                 y + P3D_BAR_ROW / 2.0 + 2, "start", "barlabel", s);
    fputs("</g>\n", f);
}

static int p3d_bar_rows(const struct p3d_job *job, const struct p3d_vjob *s)
{
    int n = 0;

    for (int i = 0; i < job->n_ranks && n < P3D_HTML_MAX_ROWS; i++)
        n += p3d_vjob_shown(job, s, i);
    return n;
}

void p3d_html_bars(FILE *f, const struct p3d_job *job,
                   const struct p3d_vjob *s)
{
    int rows = p3d_bar_rows(job, s), k = 0;

    fprintf(f, "<section id=\"bars\"><h2>Where the time goes</h2>\n<p>"
            "Share of %s, per rank. NCCL counts only where no compute runs "
            "(exposed); PP waits without compute count as bubble.</p>\n",
            s->bars_steady ? "the steady iterations (the time analysis's "
            "figures, as in the text report and the JSON)" : "the window "
            "shown in the timeline");
    p3d_svg_open(f, P3D_BAR_W, rows * P3D_BAR_ROW + 10, "bars",
                 "time per rank");
    for (int i = 0; i < job->n_ranks && k < rows; i++)
        if (p3d_vjob_shown(job, s, i))
            p3d_bar_row(f, &s->br[i], job->ranks[i].rank,
                        5 + k++ * P3D_BAR_ROW);
    p3d_svg_close(f);
    fputs("</section>\n", f);
}

void p3d_html_memory(FILE *f, const struct p3d_job *job,
                     const struct p3d_vjob *s)
{
    int rows = p3d_bar_rows(job, s), k = 0;
    char b[48], t[96];

    fprintf(f, "<section id=\"memory\"><h2>Memory peak per rank</h2>\n"
            "<p>%s</p>\n", s->peak_used ? "Device-wide used memory "
            "(cudaMemGetInfo): no framework allocations were recorded." :
            "Peak of the framework's device allocations (cudaMalloc and "
            "friends).");
    if (!s->max_peak) {
        fputs("<p class=\"note\">No memory records.</p></section>\n", f);
        return;
    }
    p3d_svg_open(f, P3D_BAR_W, rows * P3D_BAR_ROW + 10, "membars",
                 "memory peak per rank");
    for (int i = 0; i < job->n_ranks && k < rows; i++) {
        double y = 5 + k * P3D_BAR_ROW;
        if (!p3d_vjob_shown(job, s, i))
            continue;
        k++;
        snprintf(t, sizeof(t), "rank %d", job->ranks[i].rank);
        p3d_svg_text(f, P3D_BAR_LEFT - 8, y + P3D_BAR_ROW / 2.0 + 2, "end",
                     "rowlabel", t);
        p3d_fmt_bytes(b, sizeof(b), (double)s->peak[i]);
        p3d_svg_rect(f, P3D_BAR_LEFT, y, P3D_BAR_PLOT *
                     p3d_vfrac(s->peak[i], s->max_peak), P3D_BAR_ROW - 5,
                     "mem", "#8cd17d", b);
        p3d_svg_text(f, P3D_BAR_LEFT + P3D_BAR_PLOT + 8,
                     y + P3D_BAR_ROW / 2.0 + 2, "start", "barlabel", b);
    }
    p3d_svg_close(f);
    fputs("</section>\n", f);
}

static void p3d_legend_item(FILE *f, const char *fill, const char *name)
{
    fprintf(f, "<span class=\"key\"><i style=\"background:%s\"></i>", fill);
    p3d_html_esc(f, name, strlen(name));
    fputs("</span>\n", f);
}

/* The legend names compute, the groups the job's communicators are
 * (no others), other NCCL, and the bubble when the job has stages. */
void p3d_html_legend(FILE *f, const struct p3d_job *job,
                     const struct p3d_vjob *s)
{
    unsigned has = 0;

    for (int i = 0; i < job->n_comms; i++)
        if (job->comms[i].label >= 0 && job->comms[i].label < P3D_LBL_COUNT)
            has |= 1u << job->comms[i].label;
    fputs("<div class=\"legend\">\n", f);
    p3d_legend_item(f, P3D_SVG_COMPUTE, "compute");
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        if (has >> l & 1)
            p3d_legend_item(f, p3d_svg_label_color(l), p3d_label_name[l]);
    if (s->total.exposed[P3D_LBL_COUNT])
        p3d_legend_item(f, p3d_svg_label_color(P3D_LBL_COUNT),
                        "other NCCL");
    if (has >> P3D_LBL_PP & 1)
        p3d_legend_item(f, P3D_SVG_BUBBLE, "bubble");
    p3d_legend_item(f, P3D_SVG_IDLE, "idle");
    fputs("</div>\n", f);
}
