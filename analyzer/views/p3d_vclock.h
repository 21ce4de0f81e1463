/*
 * p3d_vclock.h - the views' use of the time analysis (p3d_time.h):
 * clock shifts and iteration boundaries on the views' clock.  Each call
 * fails (-1 / NULL) when the time analysis has not run or found nothing,
 * and the views fall back to their own estimates.
 */
#ifndef P3D_VCLOCK_H
#define P3D_VCLOCK_H

#include "p3d_vsel.h"
#include "p3d_time.h"

/* job->time if it is usable by the views, else NULL. */
const struct p3d_time_res *p3d_vtime(const struct p3d_job *job);
/* The job's earliest CLOCK_REALTIME start (the views' time 0). */
uint64_t p3d_vjob_t0(const struct p3d_job *job);
/* C such that views ns = time-analysis ns + C.  Returns 0 or -1. */
int p3d_vtime_base(const struct p3d_job *job, int64_t *c);
/* Views shift of rank file r (monotonic + shift = views ns); 0 or -1. */
int p3d_vtime_shift(const struct p3d_job *job, const struct p3d_rank *r,
                    int64_t *shift);
/* Job iterations of the lowest selected rank that has them all. */
int p3d_vtime_iters(const struct p3d_job *job, const struct p3d_vsel *sel,
                    struct p3d_viters *it);

#endif /* P3D_VCLOCK_H */
