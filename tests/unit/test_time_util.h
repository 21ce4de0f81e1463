/*
 * test_time_util.h - one rank file loaded for the time analysis as a
 * one-rank job (p3d_time_load_rank), for the tests of the loader and of
 * its shortcuts.
 */
#ifndef TEST_TIME_UTIL_H
#define TEST_TIME_UTIL_H

#include <string.h>

#include "p3d_time.h"

struct loaded {
    struct p3d_job job;
    struct p3d_rank rank;
    struct p3d_time_res t;
    struct p3d_tl tl;
    struct p3d_tload *ld;
};

/* Load the rank file at path into l; shift != 0: with p3d_tload_shift. */
static inline void load_rank(struct loaded *l, const char *path,
                             int64_t shift)
{
    memset(l, 0, sizeof(*l));
    l->rank.path = (char *)path;
    l->job.ranks = &l->rank;
    l->job.n_ranks = 1;
    l->t.tl = &l->tl;
    l->t.n = 1;
    l->ld = p3d_tload_new();
    if (shift)
        p3d_tload_shift(l->ld, shift);
    p3d_time_load_rank(&l->job, &l->tl, 0, l->ld, 0);
}

static inline void unload_rank(struct loaded *l)
{
    p3d_time_unload(&l->tl, l->ld);
    p3d_tload_free(l->ld);
}

#endif
