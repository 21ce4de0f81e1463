/*
 * p3d_dist_discover.h - p3d-analyze-mpi --local: every process finds the
 * trace files in its own folders, and all agree on the union (the jobs
 * process 0 sorts them into), each file owned by the process that found
 * it (model/p3d_dist.h, p3d_dist_owner_of).
 */
#ifndef P3D_DIST_DISCOVER_H
#define P3D_DIST_DISCOVER_H

#include "p3d_discover.h"
#include "p3d_dist.h"

/* p3d_discover over every process of d (all call it); returns 0, as the
 * walk's problems are messages (process 0 prints the others'). */
int p3d_dist_discover(struct p3d_dist *d, char **paths, int n,
                      struct p3d_jobset *set);

#endif /* P3D_DIST_DISCOVER_H */
