/*
 * p3d_svg.h - small helpers that write inline SVG elements for the HTML
 * report, and the report's colours.
 */
#ifndef P3D_SVG_H
#define P3D_SVG_H

#include <stdio.h>

/* Colour of a group label (P3D_LBL_*, P3D_LBL_COUNT = unknown). */
const char *p3d_svg_label_color(int label);

#define P3D_SVG_COMPUTE "#59a14f"
#define P3D_SVG_BUBBLE "#f3a6a6"
#define P3D_SVG_IDLE "#e2e2e2"

void p3d_svg_open(FILE *f, int w, int h, const char *cls, const char *title);
void p3d_svg_close(FILE *f);
/* A rectangle; title (escaped) becomes a tooltip when not NULL. */
void p3d_svg_rect(FILE *f, double x, double y, double w, double h,
                  const char *cls, const char *fill, const char *title);
/* Text at (x, y); anchor "start", "middle" or "end"; s is escaped. */
void p3d_svg_text(FILE *f, double x, double y, const char *anchor,
                  const char *cls, const char *s);
void p3d_svg_line(FILE *f, double x1, double y1, double x2, double y2,
                  const char *cls);

/*
 * Rectangles of one row merged while they touch (gaps under half a
 * pixel), so a timeline of many short ops stays small.
 */
struct p3d_svg_run {
    FILE *f;
    double x0, x1, y, h;
    const char *cls, *fill;
    int open;
    long n;  /* rectangles written */
};

void p3d_svg_run_add(struct p3d_svg_run *r, double x0, double x1,
                     const char *cls, const char *fill);
void p3d_svg_run_flush(struct p3d_svg_run *r);

#endif /* P3D_SVG_H */
