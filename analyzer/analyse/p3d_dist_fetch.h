/*
 * p3d_dist_fetch.h - p3d-analyze-mpi --local: process 0 fetches the rank
 * files the --chrome and --html views read from the processes whose
 * folders hold them.
 */
#ifndef P3D_DIST_FETCH_H
#define P3D_DIST_FETCH_H

#include "p3d_dist.h"
#include "p3d_job.h"

/* Every process calls it after the hang analysis (nothing without
 * d->local); views: --chrome or --html will read the files. */
void p3d_dist_fetch(struct p3d_dist *d, struct p3d_job *job, int views);
/* Remove process 0's copies (at exit; also before an abort, which skips
 * atexit). */
void p3d_dist_fetch_clean(void);

#endif /* P3D_DIST_FETCH_H */
