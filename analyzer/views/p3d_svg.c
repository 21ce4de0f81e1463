/*
 * p3d_svg.c - inline SVG writing for the HTML report (p3d_svg.h).
 */
#include <string.h>

#include "p3d_html.h"
#include "p3d_layout.h"
#include "p3d_svg.h"

const char *p3d_svg_label_color(int label)
{
    switch (label) {
    case P3D_LBL_TP: case P3D_LBL_TP_CP: return "#4e79a7";
    case P3D_LBL_CP: return "#b07aa1";
    case P3D_LBL_DP: case P3D_LBL_DP_CP: return "#f28e2b";
    case P3D_LBL_PP: case P3D_LBL_P2P: return "#e15759";
    case P3D_LBL_EP: case P3D_LBL_EXPERT_DP: return "#76b7b2";
    case P3D_LBL_EMB: case P3D_LBL_POS_EMB: return "#edc948";
    case P3D_LBL_MP: return "#9c755f";
    case P3D_LBL_WORLD: return "#7f7f7f";
    default: return "#bab0ac";
    }
}

void p3d_svg_open(FILE *f, int w, int h, const char *cls, const char *title)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"%s\" "
            "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">",
            cls, w, h, w, h);
    if (title) {
        fputs("<title>", f);
        p3d_html_esc(f, title, strlen(title));
        fputs("</title>", f);
    }
    fputc('\n', f);
}

void p3d_svg_close(FILE *f)
{
    fputs("</svg>\n", f);
}

void p3d_svg_rect(FILE *f, double x, double y, double w, double h,
                  const char *cls, const char *fill, const char *title)
{
    fprintf(f, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" "
            "height=\"%.1f\"", cls, x, y, w > 0 ? w : 0, h);
    if (fill)
        fprintf(f, " fill=\"%s\"", fill);
    if (!title) {
        fputs("/>\n", f);
        return;
    }
    fputs("><title>", f);
    p3d_html_esc(f, title, strlen(title));
    fputs("</title></rect>\n", f);
}

void p3d_svg_text(FILE *f, double x, double y, const char *anchor,
                  const char *cls, const char *s)
{
    fprintf(f, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"%s\">", cls, x, y, anchor);
    p3d_html_esc(f, s, strlen(s));
    fputs("</text>\n", f);
}

void p3d_svg_line(FILE *f, double x1, double y1, double x2, double y2,
                  const char *cls)
{
    fprintf(f, "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
            "y2=\"%.1f\"/>\n", cls, x1, y1, x2, y2);
}

void p3d_svg_run_flush(struct p3d_svg_run *r)
{
    if (!r->open)
        return;
    p3d_svg_rect(r->f, r->x0, r->y, r->x1 - r->x0, r->h, r->cls, r->fill,
                 NULL);
    r->open = 0;
    r->n++;
}

void p3d_svg_run_add(struct p3d_svg_run *r, double x0, double x1,
                     const char *cls, const char *fill)
{
    if (r->open && r->fill == fill && r->cls == cls && x0 <= r->x1 + 0.5 &&
        x0 >= r->x0 - 0.5) {
        if (x1 > r->x1)
            r->x1 = x1;
        return;
    }
    p3d_svg_run_flush(r);
    r->open = 1;
    r->x0 = x0;
    r->x1 = x1 > x0 + 0.3 ? x1 : x0 + 0.3;
    r->cls = cls;
    r->fill = fill;
}
