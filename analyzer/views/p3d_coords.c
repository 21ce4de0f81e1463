/*
 * p3d_coords.c - the coordinate map in text: the seed's TP x PP x DP
 * figure for the job's layout.  Per pipeline stage a grid of global ranks
 * (columns tp, rows dp/cp), then the TP, PP, DP, CP groups.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_layout.h"
#include "p3d_report.h"
#include "p3d_util.h"

#define P3D_MAP_MAX_WORLD 256 /* larger jobs get the group lists only */

/*
 * A group's ranks: runs as a-b, and a strided group of six or more (a
 * DP or PP group in Megatron's order) as its first two, ... and its
 * last, so a 1,024-rank job's group lines stay readable.
 */
static void p3d_group_fmt(char *buf, size_t n, const int *m, int k)
{
    int step = k >= 6 ? m[1] - m[0] : 0;

    for (int i = 2; step > 1 && i < k; i++)
        if (m[i] - m[i - 1] != step)
            step = 0;
    if (step > 1)
        snprintf(buf, n, "%d,%d,...,%d", m[0], m[1], m[k - 1]);
    else
        p3d_fmt_ranks(buf, n, m, k);
}

/* Groups of `mask`; only those on pipeline stage `stage` unless -1. */
static void p3d_groups_line(FILE *f, const struct p3d_layout *l, int w,
                            const char *name, unsigned mask, int stage)
{
    int *m = malloc(sizeof(int) * (size_t)w);
    char *done = calloc((size_t)w, 1);
    int shown = 0;

    fprintf(f, stage < 0 ? "  %s groups:" : "    %s:", name);
    for (int r = 0; m && done && r < w; r++) {
        char buf[128];
        int n, c[P3D_AX_N];
        p3d_layout_coords(l, r, c);
        if (done[r] || (stage >= 0 && c[P3D_AX_PP] != stage))
            continue;
        n = p3d_layout_group(l, w, r, mask, m);
        for (int i = 0; i < n; i++)
            done[m[i]] = 1;
        if (shown++ == 16) { /* a layout's groups are all one size */
            fprintf(f, " ... (%d groups of %d in all)",
                    (stage < 0 ? w : w / l->size[P3D_AX_PP]) / n, n);
            break;
        }
        p3d_group_fmt(buf, sizeof(buf), m, n);
        fprintf(f, " [%s]", buf);
    }
    fputc('\n', f);
    free(m);
    free(done);
}

static void p3d_stage_grid(FILE *f, const struct p3d_layout *l, int w,
                           int stage)
{
    int tp = l->size[P3D_AX_TP], cp = l->size[P3D_AX_CP];
    int dp = l->size[P3D_AX_DP], c[P3D_AX_N];
    int *grid = malloc(sizeof(int) * (size_t)(tp * cp * dp));

    for (int r = 0; grid && r < w; r++) {
        p3d_layout_coords(l, r, c);
        if (c[P3D_AX_PP] == stage)
            grid[(c[P3D_AX_DP] * cp + c[P3D_AX_CP]) * tp + c[P3D_AX_TP]] = r;
    }
    fprintf(f, "  stage %-3d%*s", stage, 7, "");
    for (int t = 0; t < tp; t++)
        fprintf(f, " %5s%d", "tp", t);
    fputc('\n', f);
    for (int row = 0; grid && row < dp * cp; row++) {
        char lab[32];
        if (cp > 1)
            snprintf(lab, sizeof(lab), "dp%d cp%d", row / cp, row % cp);
        else
            snprintf(lab, sizeof(lab), "dp%d", row);
        fprintf(f, "    %-14s", lab);
        for (int t = 0; t < tp; t++)
            fprintf(f, " %6d", grid[row * tp + t]);
        fputc('\n', f);
    }
    free(grid);
}

void p3d_report_coords(FILE *f, const struct p3d_job *job, int stages)
{
    const struct p3d_layout *l = &job->layout;
    int w = l->size[0] * l->size[1] * l->size[2] * l->size[3];

    if (!l->valid)
        return;
    if (stages)
        fprintf(f, "\ncoordinate map (global ranks; order %s, first axis "
                "fastest):\n", l->order);
    else
        fprintf(f, "groups (global ranks; --detail=map draws them stage by "
                "stage):\n");
    for (int s = 0; stages && w <= P3D_MAP_MAX_WORLD &&
                    s < l->size[P3D_AX_PP]; s++) {
        p3d_stage_grid(f, l, w, s);
        p3d_groups_line(f, l, w, "TP groups", 1u << P3D_AX_TP, s);
        p3d_groups_line(f, l, w, "DP groups", 1u << P3D_AX_DP, s);
        if (l->size[P3D_AX_CP] > 1)
            p3d_groups_line(f, l, w, "CP groups", 1u << P3D_AX_CP, s);
    }
    /* the summary leaves out a dimension of size 1 (groups of one) */
    if (stages || l->size[P3D_AX_TP] > 1)
        p3d_groups_line(f, l, w, "TP", 1u << P3D_AX_TP, -1);
    if (stages || l->size[P3D_AX_PP] > 1)
        p3d_groups_line(f, l, w, "PP", 1u << P3D_AX_PP, -1);
    if (stages || l->size[P3D_AX_DP] > 1)
        p3d_groups_line(f, l, w, "DP", 1u << P3D_AX_DP, -1);
    if (l->size[P3D_AX_CP] > 1) {
        p3d_groups_line(f, l, w, "CP", 1u << P3D_AX_CP, -1);
        p3d_groups_line(f, l, w, "DP-CP",
                        1u << P3D_AX_DP | 1u << P3D_AX_CP, -1);
    }
}
