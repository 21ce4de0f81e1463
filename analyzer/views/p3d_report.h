/*
 * p3d_report.h - the default text report and its pieces.
 */
#ifndef P3D_REPORT_H
#define P3D_REPORT_H

#include <stdio.h>

#include "p3d_job.h"

void p3d_report_text(FILE *f, const struct p3d_job *job);
/* The seed's TP x PP x DP picture: per stage its ranks and groups. */
void p3d_report_coords(FILE *f, const struct p3d_job *job);
/* "1.5 MiB" */
void p3d_fmt_bytes(char *buf, size_t n, double bytes);

/*
 * An "issued" or "unmatched" entry of the matcher as words (buf) and its
 * kind ("incomplete" / "unmatched"), shared by the text and HTML reports.
 */
struct p3d_mismatch;
const char *p3d_mm_other_text(const struct p3d_mismatch *x,
                              const char *lab, char *buf, size_t n);

#endif /* P3D_REPORT_H */
