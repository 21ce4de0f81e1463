/*
 * p3d_html_tl.c - the per-rank timeline of the steady iterations as
 * inline SVG: per rank a row with idle and bubble time as background,
 * compute in the upper half and NCCL ops (coloured by group) in the
 * lower half; iteration starts as vertical lines; a millisecond axis.
 */
#include <math.h>
#include <string.h>

#include "p3d_html_parts.h"
#include "p3d_svg.h"

#define P3D_TL_W 1120
#define P3D_TL_LEFT 190
#define P3D_TL_PLOT (P3D_TL_W - P3D_TL_LEFT - 20)
#define P3D_TL_ROW 26
#define P3D_TL_TOP 28

struct p3d_tlv {
    FILE *f;
    uint64_t t0, t1;
    double y;
    struct p3d_svg_run bg, top, bot;
};

static double p3d_tl_x(const struct p3d_tlv *t, uint64_t ns)
{
    if (ns < t->t0)
        ns = t->t0;
    if (ns > t->t1)
        ns = t->t1;
    return P3D_TL_LEFT + (double)(ns - t->t0) * P3D_TL_PLOT /
                             (double)(t->t1 - t->t0);
}

static void p3d_tl_state(uint64_t a, uint64_t b, int st, int label, void *ctx)
{
    struct p3d_tlv *t = ctx;

    (void)label;
    if (p3d_tl_x(t, b) - p3d_tl_x(t, a) < 0.4) /* invisible: skip */
        return;
    if (st == P3D_VS_BUBBLE)
        p3d_svg_run_add(&t->bg, p3d_tl_x(t, a), p3d_tl_x(t, b), "bubble",
                        P3D_SVG_BUBBLE);
    else if (st == P3D_VS_IDLE)
        p3d_svg_run_add(&t->bg, p3d_tl_x(t, a), p3d_tl_x(t, b), "idle",
                        P3D_SVG_IDLE);
}

static void p3d_tl_label(FILE *f, const struct p3d_job *job, int rank,
                         double y)
{
    char s[96];
    int c[P3D_AX_N];

    if (job->layout.valid) {
        p3d_layout_coords(&job->layout, rank, c);
        int k = snprintf(s, sizeof(s), "rank %d  TP%d PP%d DP%d", rank,
                         c[P3D_AX_TP], c[P3D_AX_PP], c[P3D_AX_DP]);
        if (job->layout.size[P3D_AX_CP] > 1)
            snprintf(s + k, sizeof(s) - (size_t)k, " CP%d", c[P3D_AX_CP]);
    } else {
        snprintf(s, sizeof(s), "rank %d", rank);
    }
    p3d_svg_text(f, P3D_TL_LEFT - 8, y + P3D_TL_ROW / 2.0 + 2, "end",
                 "rowlabel", s);
}

static void p3d_tl_row(struct p3d_tlv *t, const struct p3d_job *job,
                       const struct p3d_vrank *v)
{
    FILE *f = t->f;
    double h = P3D_TL_ROW - 6;

    fprintf(f, "<g class=\"tl-rank\" data-rank=\"%d\">\n", v->rank);
    p3d_tl_label(f, job, v->rank, t->y);
    t->bg = (struct p3d_svg_run){f, 0, 0, t->y + 1, h, NULL, NULL, 0, 0};
    t->top = (struct p3d_svg_run){f, 0, 0, t->y + 1, h / 2, NULL, NULL, 0, 0};
    t->bot = (struct p3d_svg_run){f, 0, 0, t->y + 1 + h / 2, h / 2, NULL,
                                  NULL, 0, 0};
    p3d_vstates(v, t->t0, t->t1, p3d_tl_state, t);
    p3d_svg_run_flush(&t->bg);
    for (size_t i = 0; i < v->n; i++) {
        const struct p3d_vev *e = &v->ev[i];
        if (e->t1 <= t->t0 || e->t0 >= t->t1)
            continue;
        if (e->kind == P3D_V_COMPUTE)
            p3d_svg_run_add(&t->top, p3d_tl_x(t, e->t0), p3d_tl_x(t, e->t1),
                            "compute", P3D_SVG_COMPUTE);
    }
    p3d_svg_run_flush(&t->top);
    for (size_t i = 0; i < v->n; i++) {
        const struct p3d_vev *e = &v->ev[i];
        if (e->t1 <= t->t0 || e->t0 >= t->t1 || !p3d_vis_nccl(v, e))
            continue;
        p3d_svg_run_add(&t->bot, p3d_tl_x(t, e->t0), p3d_tl_x(t, e->t1),
                        "nccl", p3d_svg_label_color(e->label >= 0 ? e->label
                                                    : P3D_LBL_COUNT));
    }
    p3d_svg_run_flush(&t->bot);
    fputs("</g>\n", f);
}

static void p3d_tl_axis(FILE *f, const struct p3d_tlv *t, double bottom)
{
    double span = (double)(t->t1 - t->t0) / 1e6, x;
    double step = pow(10, floor(log10(span / 8)));
    char s[32];

    if (span / step > 16)
        step *= 5;
    else if (span / step > 8)
        step *= 2;
    for (double ms = 0; ms <= span + 1e-9; ms += step) {
        x = p3d_tl_x(t, t->t0 + (uint64_t)(ms * 1e6));
        p3d_svg_line(f, x, P3D_TL_TOP - 4, x, bottom, "tick");
        snprintf(s, sizeof(s), "%g ms", ms);
        p3d_svg_text(f, x, P3D_TL_TOP - 8, "middle", "ticklabel", s);
    }
}

static void p3d_tl_iters(FILE *f, const struct p3d_tlv *t,
                         const struct p3d_vjob *s, double bottom)
{
    for (int k = 0; k < s->it.n; k++) {
        if (s->it.start[k] <= t->t0 || s->it.start[k] >= t->t1)
            continue;
        double x = p3d_tl_x(t, s->it.start[k]);
        p3d_svg_line(f, x, P3D_TL_TOP - 2, x, bottom, "iterline");
    }
}

static int p3d_tl_rows(const struct p3d_job *job, const struct p3d_vjob *s)
{
    int n = 0;

    for (int i = 0; i < job->n_ranks; i++)
        n += p3d_vjob_shown(job, s, i);
    return n < P3D_HTML_MAX_ROWS ? n : P3D_HTML_MAX_ROWS;
}

void p3d_html_timeline(FILE *f, const struct p3d_job *job,
                       const struct p3d_vjob *s)
{
    struct p3d_tlv t = {f, s->w0, s->w1, P3D_TL_TOP, {0}, {0}, {0}};
    int rows = p3d_tl_rows(job, s), k = 0;
    double bottom = P3D_TL_TOP + rows * P3D_TL_ROW;

    for (int i = 0; i < job->n_ranks && !s->w1; i++)
        if (s->w0 + s->br[i].span > t.t1)
            t.t1 = s->w0 + s->br[i].span;
    fputs("<section id=\"timeline\"><h2>Timeline</h2>\n", f);
    if (t.t1 <= t.t0 || !rows) {
        fputs("<p class=\"note\">No events to draw.</p></section>\n", f);
        return;
    }
    if (s->iter_a >= 0)
        fprintf(f, "<p>Iteration%s %d%s%.0d", s->iter_b > s->iter_a ? "s" :
                "", s->iter_a, s->iter_b > s->iter_a ? "-" : "",
                s->iter_b > s->iter_a ? s->iter_b : 0);
    else if (s->sel && s->sel->ms_b >= 0)
        fputs("<p>Time window", f);
    else
        fputs("<p>Whole trace", f);
    fprintf(f, ": %.2f ms from %.2f ms after the job's start (dotted: "
            "iteration starts). Upper half: compute; lower half: NCCL by "
            "group; background: bubble (red) and idle (grey).</p>\n",
            (double)(t.t1 - t.t0) / 1e6, (double)t.t0 / 1e6);
    p3d_svg_open(f, P3D_TL_W, (int)bottom + 8, "timeline",
                 "per-rank timeline");
    p3d_tl_axis(f, &t, bottom);
    for (int i = 0; i < job->n_ranks && k < rows; i++) {
        struct p3d_vwin w = {t.t0, t.t1};
        struct p3d_vrank v;
        if (!p3d_vjob_shown(job, s, i))
            continue;
        if (s->vr[i].rank == job->ranks[i].rank && s->vr[i].ev) {
            t.y = P3D_TL_TOP + k++ * P3D_TL_ROW; /* read with the sums */
            p3d_tl_row(&t, job, &s->vr[i]);
            continue;
        }
        if (p3d_vrank_load(job, &job->ranks[i], &w, &v) != 0)
            continue;
        t.y = P3D_TL_TOP + k++ * P3D_TL_ROW;
        p3d_tl_row(&t, job, &v);
        p3d_vrank_free(&v);
    }
    p3d_tl_iters(f, &t, s, bottom);
    p3d_svg_close(f);
    p3d_html_legend(f, job, s);
    fputs("</section>\n", f);
}
