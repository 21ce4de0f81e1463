/*
 * p3d_dist_match.h - the match pass over several processes: each process
 * matched the communicators it owns during the scan (p3d_dist_scan.c);
 * process 0 folds their results into the job's.
 */
#ifndef P3D_DIST_MATCH_H
#define P3D_DIST_MATCH_H

#include "p3d_dist.h"
#include "p3d_match.h"

/* Finish this process's matcher m (freed); on process 0, fold in the
 * others' results and set job->match as one process would have. */
void p3d_dist_match(struct p3d_dist *d, struct p3d_matcher *m,
                    struct p3d_job *job);

#endif /* P3D_DIST_MATCH_H */
