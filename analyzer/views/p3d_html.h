/*
 * p3d_html.h - --html FILE: one self-contained HTML report (no network,
 * no scripts, no fonts) with the text report's findings and pictures.
 */
#ifndef P3D_HTML_H
#define P3D_HTML_H

#include <stdio.h>

#include "p3d_vsel.h"
#include "p3d_job.h"

/* Write the report of job to path ("-" = stdout).  Returns 0 or -1. */
int p3d_html_write(const char *path, const struct p3d_job *job,
                   const struct p3d_vsel *sel);

/* Write s[0..n) escaped for HTML text and attribute values. */
void p3d_html_esc(FILE *f, const char *s, size_t n);

#endif /* P3D_HTML_H */
