/*
 * p3d_chrome_lane.h - give every event of a rank an output track such
 * that events on one track nest (no partial overlaps), as Perfetto and
 * chrome://tracing require of complete ("X") events.
 */
#ifndef P3D_CHROME_LANE_H
#define P3D_CHROME_LANE_H

#include "p3d_vrank.h"

#define P3D_LANES 64     /* sub-tracks per thread or stream */
#define P3D_LANE_DEPTH 64 /* nesting depth per sub-track */

/* Track class of an event: 0 host thread, 1 GPU compute, 2 GPU NCCL,
 * 3 GPU copies. */
int p3d_chrome_class(const struct p3d_vev *e);

/*
 * Sort v's events by (class, thread or stream, start, longest first) and
 * set lane and tid (tid / P3D_LANES - 1 = index of the thread or stream in
 * that order, tid % P3D_LANES = lane).  Events that fit no lane get kind
 * P3D_V_KIND_N; returns their number.
 */
size_t p3d_chrome_lanes(struct p3d_vrank *v);

#endif /* P3D_CHROME_LANE_H */
