/*
 * test_an_match_batch.c - the scan hands ops to the matcher in batches
 * (a shard at a time, one lock per shard): the result is the one of
 * feeding every op on its own, mismatches, unmatched Send/Recv and ops
 * never matched included, whatever the batch size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_match.h"
#include "test_match_util.h"

#define N_RANKS 4
#define N_COMMS 24 /* spread over the 64 shards */
#define N_SEQ 20

/* The k-th op of `rank`: collectives on N_COMMS communicators, every
 * 7th a Send/Recv pair on comm 0, a few disagreeing or unusable. */
static struct p3d_rec_op mk(int rank, int k, int *comm_rank)
{
    struct p3d_rec_op o = match_coll_op(k, N_COMMS);

    o.count += (rank == 2 && k % 5 == 0); /* rank 2 disagrees */
    *comm_rank = rank;
    if (k % 7 == 0) { /* Send 0->1, 2->3; Recv the same */
        o.comm_hash = 0x77;
        o.seq = (uint64_t)(k / 7);
        o.op = rank % 2 ? P3D_OP_RECV : P3D_OP_SEND;
        o.peer = rank % 2 ? rank - 1 : rank + 1;
        o.count = 64 + (rank == 3 && k == 14); /* one count differs */
        if (rank == 1 && k == 21)
            o.peer = -1; /* never matched */
    }
    return o;
}

static struct p3d_match_res one_by_one(void)
{
    struct p3d_matcher *m = p3d_matcher_new();

    for (int r = 0; r < N_RANKS; r++)
        for (int k = 0; k < N_COMMS * N_SEQ - (r == 3); k++) {
            int cr;
            struct p3d_rec_op o = mk(r, k, &cr);
            p3d_matcher_op(m, r, cr, &o);
        }
    return match_finish(m);
}

/* Ranks interleaved batch by batch, as two scan threads would. */
static struct p3d_match_res batched(size_t every)
{
    struct p3d_matcher *m = p3d_matcher_new();
    struct p3d_mbatch b[N_RANKS];
    int n = N_COMMS * N_SEQ;

    memset(b, 0, sizeof(b));
    for (int k = 0; k < n; k++)
        for (int r = 0; r < N_RANKS; r++) {
            int cr;
            struct p3d_rec_op o;
            if (r == 3 && k == n - 1)
                continue;
            o = mk(r, k, &cr);
            p3d_mbatch_add(&b[r], cr, &o);
            if (b[r].n >= every)
                p3d_matcher_flush(m, r, &b[r]);
        }
    for (int r = 0; r < N_RANKS; r++) {
        p3d_matcher_flush(m, r, &b[r]);
        assert_int_equal(b[r].n, 0);
        p3d_mbatch_free(&b[r]);
    }
    return match_finish(m);
}

static void test_batches_match_single_ops(void **state)
{
    static const size_t sizes[] = {1, 3, 64, P3D_MBATCH_OPS, 100000};
    struct p3d_match_res ref = one_by_one();

    (void)state;
    /* the reference itself found what was planted */
    assert_true(ref.n_coll > 0);
    assert_true(ref.n_p2p > 0);
    assert_true(ref.n_mismatch >= 2);
    assert_true(ref.n_unmatched_p2p >= 1);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        struct p3d_match_res got = batched(sizes[i]);
        assert_same_match_res(&ref, &got);
    }
}

static void test_unmatched_ops_not_batched(void **state)
{
    struct p3d_mbatch b;
    struct p3d_rec_op o;
    int cr;

    (void)state;
    memset(&b, 0, sizeof(b));
    o = mk(1, 21, &cr); /* a Recv without a peer */
    p3d_mbatch_add(&b, cr, &o);
    o = mk(0, 7, &cr);  /* a Send, but its comm rank is unknown */
    p3d_mbatch_add(&b, -1, &o);
    o = mk(0, 1, &cr);
    o.op = P3D_OP_COUNT; /* not an op */
    p3d_mbatch_add(&b, cr, &o);
    assert_int_equal(b.n, 0);
    o = mk(0, 1, &cr);
    p3d_mbatch_add(&b, cr, &o);
    assert_int_equal(b.n, 1);
    p3d_mbatch_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_match_single_ops),
        cmocka_unit_test(test_unmatched_ops_not_batched),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
