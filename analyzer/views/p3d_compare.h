/*
 * p3d_compare.h - --compare DIR DIR ...: one row per run of the seed's
 * table (p3d_seedtab.h), as Markdown or a JSON array.
 */
#ifndef P3D_COMPARE_H
#define P3D_COMPARE_H

#include <stdio.h>

#include "p3d_job.h"

/* Analyses one run's job; -1 (message printed) when it cannot be, e.g.
 * --layout does not fit its world: the run's row then says so. */
typedef int (*p3d_analyse_fn)(struct p3d_job *job, void *ctx);

/*
 * Analyse the newest job under each of dirs[0..n) with fn and print one
 * row per run to stdout (Markdown), or a JSON array to json ("-" =
 * stdout) when json is set.  Returns the exit status.
 */
int p3d_compare_run(char **dirs, int n, const char *json, p3d_analyse_fn fn,
                    void *ctx);

#endif /* P3D_COMPARE_H */
