/*
 * p3d_html_map.c - the TP x PP x DP (x CP) coordinate map as the seed
 * draws it ("8 GPUS · TP=2 · PP=2 · DP=2"): one panel per pipeline stage,
 * in it one row per data-parallel replica, each row's tensor-parallel
 * group(s) boxed; dashed lines (one height per TP position, drawn under
 * the cells) join a rank to the same position in the next stage (its PP
 * group); the group lists follow as text.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_html_parts.h"
#include "p3d_svg.h"
#include "p3d_util.h"

#define P3D_MAP_MAX 1024 /* ranks drawn at most */
#define P3D_MAP_PER_ROW 4 /* stages per row of panels */

struct p3d_mapgeo {
    int tp, cp, dp, pp;
    double cell, gap, pad, title;
    double pw, ph; /* panel size */
};

#define P3D_MAP_WIDTH 1120 /* the page's width for the figure */

static void p3d_map_geo(const struct p3d_layout *l, struct p3d_mapgeo *g)
{
    int across, cols;

    g->tp = l->size[P3D_AX_TP];
    g->cp = l->size[P3D_AX_CP];
    g->dp = l->size[P3D_AX_DP];
    g->pp = l->size[P3D_AX_PP];
    across = (g->pp < P3D_MAP_PER_ROW ? g->pp : P3D_MAP_PER_ROW) * g->tp *
             g->cp;
    g->cell = 1000.0 / (across + 2);
    g->cell = g->cell > 46 ? 46 : g->cell < 18 ? 18 : g->cell;
    g->gap = g->cell / 5;
    g->pad = 12;
    g->title = 26;
    cols = g->pp < P3D_MAP_PER_ROW ? g->pp : P3D_MAP_PER_ROW;
    for (;;) {
        g->gap = g->cell / 5;
        g->pw = g->cp * (g->tp * g->cell + 2 * g->gap) +
                (g->cp - 1) * g->gap + 2 * g->pad;
        if (g->cell <= 14 || cols * (g->pw + 40) + 10 <= P3D_MAP_WIDTH)
            break;
        g->cell -= 1; /* shrink until the panels fit the page */
    }
    g->ph = g->title + g->dp * (g->cell + 3 * g->gap) + g->pad;
}

/* Top-left of the cell of coordinates c. */
static void p3d_map_xy(const struct p3d_mapgeo *g, const int *c, double *x,
                       double *y)
{
    int s = c[P3D_AX_PP];
    double px = (s % P3D_MAP_PER_ROW) * (g->pw + 40) + 10;
    double py = (s / P3D_MAP_PER_ROW) * (g->ph + 30) + 10;

    *x = px + g->pad + c[P3D_AX_CP] * (g->tp * g->cell + 3 * g->gap) +
         g->gap + c[P3D_AX_TP] * g->cell;
    *y = py + g->title + c[P3D_AX_DP] * (g->cell + 3 * g->gap) + g->gap;
}

static void p3d_map_panels(FILE *f, const struct p3d_mapgeo *g)
{
    char t[64];

    for (int s = 0; s < g->pp; s++) {
        double px = (s % P3D_MAP_PER_ROW) * (g->pw + 40) + 10;
        double py = (s / P3D_MAP_PER_ROW) * (g->ph + 30) + 10;
        fprintf(f, "<g class=\"stage\">\n");
        p3d_svg_rect(f, px, py, g->pw, g->ph, "stagebox", NULL, NULL);
        snprintf(t, sizeof(t), "Pipeline stage %d", s);
        p3d_svg_text(f, px + 10, py + 18, "start", "stagetitle", t);
        for (int d = 0; d < g->dp; d++)
            for (int k = 0; k < g->cp; k++) {
                int c[P3D_AX_N] = {0};
                double x, y;
                c[P3D_AX_PP] = s, c[P3D_AX_DP] = d, c[P3D_AX_CP] = k;
                p3d_map_xy(g, c, &x, &y);
                p3d_svg_rect(f, x - g->gap, y - g->gap,
                             g->tp * g->cell + 2 * g->gap,
                             g->cell + 2 * g->gap, "tpbox", NULL, NULL);
            }
        fputs("</g>\n", f);
    }
}

static void p3d_map_cells(FILE *f, const struct p3d_job *job,
                          const struct p3d_mapgeo *g)
{
    const struct p3d_layout *l = &job->layout;
    char t[32], tip[96];

    for (int r = 0; r < job->world_size; r++) {
        int c[P3D_AX_N];
        double x, y;
        p3d_layout_coords(l, r, c);
        p3d_map_xy(g, c, &x, &y);
        snprintf(tip, sizeof(tip), "rank %d: TP %d, CP %d, DP %d, PP %d%s",
                 r, c[P3D_AX_TP], c[P3D_AX_CP], c[P3D_AX_DP], c[P3D_AX_PP],
                 p3d_job_rank(job, r) ? "" : " (no trace)");
        p3d_svg_rect(f, x + 2, y + 2, g->cell - 4, g->cell - 4,
                     p3d_job_rank(job, r) ? "rank" : "rank missing", NULL,
                     tip);
        snprintf(t, sizeof(t), "r%d", r);
        p3d_svg_text(f, x + g->cell / 2, y + g->cell / 2 + 4, "middle",
                     "ranktext", t);
    }
}

/* Dashed lines between a rank and the same position one stage later,
 * where both stages sit in one row of panels. */
static void p3d_map_pplines(FILE *f, const struct p3d_job *job,
                            const struct p3d_mapgeo *g)
{
    for (int r = 0; r < job->world_size; r++) {
        int c[P3D_AX_N];
        double x0, y0, x1, y1, dy;
        p3d_layout_coords(&job->layout, r, c);
        if (c[P3D_AX_PP] + 1 >= g->pp ||
            (c[P3D_AX_PP] + 1) % P3D_MAP_PER_ROW == 0)
            continue;
        p3d_map_xy(g, c, &x0, &y0);
        c[P3D_AX_PP]++;
        p3d_map_xy(g, c, &x1, &y1);
        /* one height per TP position, so parallel links stay apart */
        dy = g->cell * (g->tp > 1 ? 0.25 + 0.5 * c[P3D_AX_TP] / (g->tp - 1)
                                  : 0.5);
        p3d_svg_line(f, x0 + g->cell - 2, y0 + dy, x1 + 2, y1 + dy, "pp");
    }
}

void p3d_html_map(FILE *f, const struct p3d_job *job)
{
    const struct p3d_layout *l = &job->layout;
    struct p3d_mapgeo g;
    char title[160];
    int rows, cols;

    fputs("<section id=\"map\"><h2>Coordinate map</h2>\n", f);
    if (!l->valid || job->world_size > P3D_MAP_MAX) {
        fputs("<p class=\"note\">No layout to draw (layout unknown or too "
              "many ranks).</p></section>\n", f);
        return;
    }
    p3d_map_geo(l, &g);
    rows = (g.pp + P3D_MAP_PER_ROW - 1) / P3D_MAP_PER_ROW;
    cols = g.pp < P3D_MAP_PER_ROW ? g.pp : P3D_MAP_PER_ROW;
    snprintf(title, sizeof(title),
             "%d GPUS &#183; TP=%d &#183; PP=%d &#183; DP=%d%s",
             job->world_size, g.tp, g.pp, g.dp, g.cp > 1 ? " &#183; CP=" : "");
    if (g.cp > 1)
        snprintf(title + strlen(title), sizeof(title) - strlen(title), "%d",
                 g.cp);
    fprintf(f, "<h3 class=\"figtitle\">%s</h3>\n", title); /* ours */
    p3d_svg_open(f, (int)(cols * (g.pw + 40) + 10),
                 (int)(rows * (g.ph + 30) + 10), "coordmap", "coordinate map");
    p3d_map_panels(f, &g);
    p3d_map_pplines(f, job, &g);
    p3d_map_cells(f, job, &g);
    p3d_svg_close(f);
    p3d_html_groups(f, job);
    fputs("</section>\n", f);
}

#define P3D_MAP_LIST 32 /* groups listed per family */

/* Print the groups that vary axis ax only. */
static void p3d_map_family(FILE *f, const struct p3d_job *job, int ax,
                           const char *name)
{
    const struct p3d_layout *l = &job->layout;
    int w = job->world_size, n = 0, *c = p3d_xmalloc(sizeof(int) *
                                                     (size_t)w * P3D_AX_N);

    if (l->size[ax] < 2) {
        free(c);
        return;
    }
    for (int r = 0; r < w; r++)
        p3d_layout_coords(l, r, c + r * P3D_AX_N);
    fprintf(f, "<p class=\"groups\"><b>%s groups:</b> ", name);
    for (int r = 0; r < w && n <= P3D_MAP_LIST; r++) {
        if (c[r * P3D_AX_N + ax] != 0)
            continue;
        if (n++ == P3D_MAP_LIST) {
            fputs(", ...", f);
            break;
        }
        fprintf(f, "%s[", n > 1 ? ", " : "");
        for (int q = 0, k = 0; q < w; q++) {
            int same = 1;
            for (int a = 0; a < P3D_AX_N && same; a++)
                same = a == ax || c[q * P3D_AX_N + a] == c[r * P3D_AX_N + a];
            if (same)
                fprintf(f, "%s%d", k++ ? "," : "", q);
        }
        fputc(']', f);
    }
    fputs("</p>\n", f);
    free(c);
}

void p3d_html_groups(FILE *f, const struct p3d_job *job)
{
    p3d_map_family(f, job, P3D_AX_TP, "TP");
    p3d_map_family(f, job, P3D_AX_CP, "CP");
    p3d_map_family(f, job, P3D_AX_PP, "PP");
    p3d_map_family(f, job, P3D_AX_DP, "DP");
}
