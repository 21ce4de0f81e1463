/*
 * p3d_html_parts.h - the sections of the HTML report, each in its own
 * file: findings (p3d_html_find.c), coordinate map (p3d_html_map.c),
 * timeline (p3d_html_tl.c), time bars and memory (p3d_html_bars.c).
 */
#ifndef P3D_HTML_PARTS_H
#define P3D_HTML_PARTS_H

#include <stdio.h>

#include "p3d_html.h"
#include "p3d_html_sum.h"
#include "p3d_layout.h"


void p3d_html_findings(FILE *f, const struct p3d_job *job,
                       const struct p3d_vjob *s);
void p3d_html_traffic(FILE *f, const struct p3d_job *job);
void p3d_html_map(FILE *f, const struct p3d_job *job);
/* The TP/CP/DP/PP group lists of the layout, as the seed writes them. */
void p3d_html_groups(FILE *f, const struct p3d_job *job);
void p3d_html_timeline(FILE *f, const struct p3d_job *job,
                       const struct p3d_vjob *s);
void p3d_html_bars(FILE *f, const struct p3d_job *job,
                   const struct p3d_vjob *s);
void p3d_html_memory(FILE *f, const struct p3d_job *job,
                     const struct p3d_vjob *s);
/* Legend of the colours used by the timeline and bars. */
void p3d_html_legend(FILE *f, const struct p3d_job *job,
                     const struct p3d_vjob *s);

#endif /* P3D_HTML_PARTS_H */
