/*
 * p3d_dist_fetch.h - p3d-analyze-mpi --local: process 0 fetches the rank
 * files it must read again (the hang analysis, --chrome, --html) from the
 * processes whose folders hold them; then those processes leave.
 */
#ifndef P3D_DIST_FETCH_H
#define P3D_DIST_FETCH_H

#include "p3d_dist.h"
#include "p3d_job.h"

/* Every process calls it after the time passes (nothing without
 * d->local); views: --chrome or --html will read the files.  Processes
 * other than 0 do not return. */
void p3d_dist_fetch(struct p3d_dist *d, struct p3d_job *job, int views);
/* Remove process 0's copies (at exit; also before an abort, which skips
 * atexit). */
void p3d_dist_fetch_clean(void);

#endif /* P3D_DIST_FETCH_H */
