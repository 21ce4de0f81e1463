/*
 * p3d_progress.h - progress of a long analysis on a terminal: which pass
 * runs and, while the scan reads them, how many rank files are read, on
 * one line of stderr that each update overwrites.  Nothing when stderr is
 * not a terminal, with -q, or before the analysis has taken
 * P3D_PROGRESS_AFTER seconds (default 2).
 */
#ifndef P3D_PROGRESS_H
#define P3D_PROGRESS_H

#include "p3d_job.h"

struct p3d_progress;

/* NULL when there is nothing to show (not a terminal, -q). */
struct p3d_progress *p3d_progress_start(const struct p3d_job *job,
                                        int n_passes);
/* Pass k (named) begins. */
void p3d_progress_pass(struct p3d_progress *p, int k, const char *name);
/* Clear the line, so that a message can be printed. */
void p3d_progress_clear(struct p3d_progress *p);
void p3d_progress_stop(struct p3d_progress *p);

#endif /* P3D_PROGRESS_H */
