/*
 * p3d_chrome.h - --chrome FILE: the job as Chrome trace-event JSON for
 * Perfetto (ui.perfetto.dev) and chrome://tracing.
 */
#ifndef P3D_CHROME_H
#define P3D_CHROME_H

#include <stdio.h>

#include "p3d_vsel.h"
#include "p3d_job.h"

/*
 * Write the selected ranks and window of job to path ("-" = stdout), one
 * rank at a time.  Returns 0, or -1 with a message printed.
 */
int p3d_chrome_write(const char *path, const struct p3d_job *job,
                     const struct p3d_vsel *sel);

/* Name of a views event ("TP AllReduce", "compute", ...) into buf. */
void p3d_chrome_name(char *buf, size_t n, const struct p3d_vev *e);

/* Write ns as microseconds with three decimals (exact). */
void p3d_chrome_us(FILE *f, uint64_t ns);

#endif /* P3D_CHROME_H */
