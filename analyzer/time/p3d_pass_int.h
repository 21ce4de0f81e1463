/*
 * p3d_pass_int.h - what the time passes in one process (p3d_pass.c) and
 * over several (p3d_pass_dist.c) share: the state of a pass and its
 * reader threads.  Private to time/.
 */
#ifndef P3D_PASS_INT_H
#define P3D_PASS_INT_H

#include <pthread.h>

#include "p3d_dist.h"
#include "p3d_time.h"

#define P3D_PASS_SPARE 2 /* loaded ranks that may wait beyond the threads */

struct p3d_pass {
    struct p3d_job *job;
    struct p3d_time_res *t;
    struct p3d_join *join; /* NULL: nothing to join */
    int which, next, pp;
    int *order; /* timelines in the order they are read and merged */
    int turn;   /* position (in order) of the rank merged next */
    int merging; /* a thread is merging */
    struct p3d_tload **ready; /* [n]: loaded, waiting to be merged */
    struct p3d_tload **pool;  /* free buffers */
    int n_pool;
    int *mine, n_mine; /* over several processes: the positions (in
                          order) of this process's ranks */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* Reader threads: load ranks of p->order (p->mine over several
 * processes) and analyse them on their own (p3d_pass.c). */
void *p3d_pass_worker(void *arg);
/* p->order: the ranks group by group (a group's records wait for its
 * last member). */
void p3d_pass_order(struct p3d_pass *p);
void p3d_pass_free(struct p3d_pass *p);
/* The pass over several processes (p3d_pass_dist.c), and what the
 * processes other than 0 gathered in it added to process 0's (ctx: the
 * pass's consumer state, NULL for none), once the join is finished. */
void p3d_pass_dist(struct p3d_pass *p, struct p3d_dist *d);
void p3d_pass_dist_sums(struct p3d_pass *p, struct p3d_dist *d, void *ctx);

#endif /* P3D_PASS_INT_H */
