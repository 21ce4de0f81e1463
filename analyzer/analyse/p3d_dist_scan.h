/*
 * p3d_dist_scan.h - the scan over several processes (model/p3d_dist.h):
 * each reads its block of rank files; process 0 takes the others' scan
 * results and feeds their ops to the op sink (the matcher) as if it had
 * read them, then every process gets every rank's results.
 */
#ifndef P3D_DIST_SCAN_H
#define P3D_DIST_SCAN_H

#include "p3d_dist.h"
#include "p3d_job.h"

/* The scan pass on process d->self; sink: process 0's op sink, or NULL
 * (--no-match). */
void p3d_dist_scan(struct p3d_dist *d, struct p3d_job *job, int threads,
                   const struct p3d_op_sink *sink);

#endif /* P3D_DIST_SCAN_H */
