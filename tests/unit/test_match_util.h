/*
 * test_match_util.h - a matcher's result by value, and one assertion that
 * two results are the same (counts and every kept mismatch, field by
 * field: struct padding may differ), for the tests that compare orders
 * and batchings of one input.
 */
#ifndef TEST_MATCH_UTIL_H
#define TEST_MATCH_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "p3d_job.h"
#include "p3d_match.h"

/* The k-th op of a rank spread over n_comms communicators: an 8-byte
 * all-reduce of count 100, seq k / n_comms (the tests vary it from here). */
static inline struct p3d_rec_op match_coll_op(int k, int n_comms)
{
    struct p3d_rec_op o;

    memset(&o, 0, sizeof(o));
    o.h.tag = P3D_REC_OP;
    o.h.len = sizeof(o);
    o.comm_hash = 0x9e3779b97f4a7c15ull * (uint64_t)(k % n_comms + 1);
    o.seq = (uint64_t)(k / n_comms);
    o.op = P3D_OP_ALLREDUCE;
    o.count = 100;
    o.dtype = 7;
    o.peer = -1;
    return o;
}

/* Finish m (freeing it) and return its result by value. */
static inline struct p3d_match_res match_finish(struct p3d_matcher *m)
{
    struct p3d_job job;
    struct p3d_match_res res;

    memset(&job, 0, sizeof(job));
    p3d_matcher_finish(m, &job);
    res = *job.match;
    free(job.match);
    return res;
}

static inline void assert_same_match_res(const struct p3d_match_res *a,
                                         const struct p3d_match_res *b)
{
    assert_int_equal(a->n_coll, b->n_coll);
    assert_int_equal(a->n_p2p, b->n_p2p);
    assert_int_equal(a->n_mismatch, b->n_mismatch);
    assert_int_equal(a->n_unmatched_p2p, b->n_unmatched_p2p);
    assert_int_equal(a->n_short, b->n_short);
    assert_int_equal(a->n_kept, b->n_kept);
    for (int i = 0; i < a->n_kept; i++) {
        const struct p3d_mismatch *x = &a->mm[i], *y = &b->mm[i];
        assert_int_equal(x->comm, y->comm);
        assert_int_equal(x->seq, y->seq);
        assert_int_equal(x->field, y->field);
        assert_int_equal(x->rank_a, y->rank_a);
        assert_int_equal(x->rank_b, y->rank_b);
        assert_int_equal(x->va, y->va);
        assert_int_equal(x->vb, y->vb);
        assert_int_equal(x->op, y->op);
        assert_int_equal(x->p2p_src, y->p2p_src);
        assert_int_equal(x->p2p_dst, y->p2p_dst);
    }
}

#endif
