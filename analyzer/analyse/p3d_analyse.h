/*
 * p3d_analyse.h - the one pipeline from a discovered job to its results:
 * every caller (the command line, --compare, the fuzz harness) runs the
 * same passes in the same order, so none can skip or reorder one.
 */
#ifndef P3D_ANALYSE_H
#define P3D_ANALYSE_H

#include "p3d_job.h"

struct p3d_analyse_opts {
    int threads;        /* reader threads, 1 or more */
    int match;          /* 0: skip cross-rank matching (--no-match) */
    const char *layout; /* --layout: NULL, "infer" or a layout spec */
    int progress;       /* progress on a terminal once the run is slow
                           (p3d_progress.h) */
    int views;          /* --chrome/--html will read the rank files again
                           (p3d-analyze-mpi --local fetches them) */
};

/*
 * Scan the job's rank files, join communicators, set the layout and the
 * labels, match, then the time and hang analyses.  Rank files' problems
 * are printed as they are found.  Returns -1 (message printed) when
 * --layout does not fit the job; its results are then incomplete.
 */
int p3d_analyse_job(struct p3d_job *job, const struct p3d_analyse_opts *o);

/* Free what p3d_analyse_job added to the job (the time and hang
 * results), then the job. */
void p3d_analysed_free(struct p3d_job *job);

#endif /* P3D_ANALYSE_H */
