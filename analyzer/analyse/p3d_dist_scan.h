/*
 * p3d_dist_scan.h - the scan over several processes (model/p3d_dist.h):
 * each reads its block of rank files and sends each op to the process
 * that matches its communicator; process 0 takes the others' scan
 * results, then every process gets every rank's results.
 */
#ifndef P3D_DIST_SCAN_H
#define P3D_DIST_SCAN_H

#include "p3d_dist.h"
#include "p3d_job.h"

struct p3d_matcher;
/* The scan pass on process d->self; sink: this process's matcher m (its
 * p3d_matcher_sink), fed the ops of its communicators' blocks of seqs,
 * or NULL for both (--no-match). */
void p3d_dist_scan(struct p3d_dist *d, struct p3d_job *job, int threads,
                   const struct p3d_op_sink *sink, struct p3d_matcher *m);

#endif /* P3D_DIST_SCAN_H */
