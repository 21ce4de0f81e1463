/*
 * test_an_offer.c - a scan thread offers its batch to the matcher and
 * only the shards whose lock is free take their ops; the others' ops
 * stay in the batch, in arrival order, for the next offer.  The result
 * is the one of feeding every op on its own, however many offers found
 * shards busy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_match_int.h"
#include "test_match_util.h"

#define N_RANKS 3
#define N_COMMS 12
#define N_SEQ 30

/* The k-th op of `rank`: collectives on N_COMMS communicators, rank 2
 * disagreeing now and then, every 5th a Send/Recv on comm 0x77. */
static struct p3d_rec_op mk(int rank, int k, int *comm_rank)
{
    struct p3d_rec_op o = match_coll_op(k, N_COMMS);

    o.count += (rank == 2 && k % 9 == 0);
    *comm_rank = rank;
    if (k % 5 == 0) { /* rank 0 sends to 1, 1 receives */
        o.comm_hash = 0x77;
        o.seq = (uint64_t)(k / 5);
        o.op = rank == 1 ? P3D_OP_RECV : P3D_OP_SEND;
        o.peer = rank == 1 ? 0 : 1;
        o.count = 64 + (rank == 1 && k == 10);
    }
    return o;
}

static struct p3d_match_res one_by_one(void)
{
    struct p3d_matcher *m = p3d_matcher_new();

    for (int r = 0; r < N_RANKS; r++)
        for (int k = 0; k < N_COMMS * N_SEQ; k++) {
            int cr;
            struct p3d_rec_op o = mk(r, k, &cr);
            p3d_matcher_op(m, r, cr, &o);
        }
    return match_finish(m);
}

static int shard_of(uint64_t hash)
{
    return (int)((hash * 0x9e3779b97f4a7c15ull) >> 58);
}

/* Ops left in b belong to busy shards and keep their order (seqs of one
 * communicator ascend). */
static void check_left(const struct p3d_mbatch *b, const int *busy)
{
    for (size_t i = 0; i < b->n; i++) {
        assert_true(busy[shard_of(b->o[i].comm_hash)]);
        for (size_t k = 0; k < i; k++)
            if (b->o[k].comm_hash == b->o[i].comm_hash)
                assert_true(b->o[k].seq < b->o[i].seq);
    }
}

/* Each rank offers every `every` ops while the shards of the comms in
 * `lock_mask` (bit per comm index) are held by "another thread". */
static struct p3d_match_res offered(int every, unsigned lock_mask)
{
    struct p3d_matcher *m = p3d_matcher_new();
    int busy[P3D_SHARDS] = {0}, left = 0;

    for (int c = 0; c < N_COMMS; c++)
        if (lock_mask >> c & 1)
            busy[shard_of(0x9e3779b97f4a7c15ull * (uint64_t)(c + 1))] = 1;
    for (int s = 0; s < P3D_SHARDS; s++)
        if (busy[s])
            pthread_mutex_lock(&m->shard[s].lock);
    for (int r = 0; r < N_RANKS; r++) {
        struct p3d_mbatch b;
        memset(&b, 0, sizeof(b));
        for (int k = 0; k < N_COMMS * N_SEQ; k++) {
            int cr;
            struct p3d_rec_op o = mk(r, k, &cr);
            p3d_mbatch_add(&b, cr, &o);
            if (k % every == every - 1) {
                p3d_matcher_offer(m, r, &b);
                check_left(&b, busy);
                left += b.n > 0;
                assert_int_equal(b.due, b.n + P3D_MBATCH_OPS);
            }
        }
        if (r == N_RANKS - 1) /* the other thread lets go */
            for (int s = 0; s < P3D_SHARDS; s++)
                if (busy[s])
                    pthread_mutex_unlock(&m->shard[s].lock);
        if (r < N_RANKS - 1) { /* still busy: must stay, then wait */
            p3d_matcher_offer(m, r, &b);
            check_left(&b, busy);
            for (int s = 0; s < P3D_SHARDS; s++)
                if (busy[s])
                    pthread_mutex_unlock(&m->shard[s].lock);
            p3d_matcher_flush(m, r, &b);
            for (int s = 0; s < P3D_SHARDS; s++)
                if (busy[s])
                    pthread_mutex_lock(&m->shard[s].lock);
        } else {
            p3d_matcher_offer(m, r, &b);
        }
        assert_int_equal(b.n, 0);
        p3d_mbatch_free(&b);
    }
    if (lock_mask)
        assert_true(left > 0); /* some offer did find a shard busy */
    return match_finish(m);
}

static void test_offers_match_single_ops(void **state)
{
    static const unsigned masks[] = {0, 1, 0x5, 0xfff};
    static const int every[] = {1, 7, 100};
    struct p3d_match_res ref = one_by_one();

    (void)state;
    assert_true(ref.n_coll > 0);
    assert_true(ref.n_p2p > 0);
    assert_true(ref.n_mismatch >= 2);
    for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++)
        for (size_t k = 0; k < sizeof(every) / sizeof(every[0]); k++) {
            struct p3d_match_res got = offered(every[k], masks[i]);
            assert_same_match_res(&ref, &got);
        }
}

/* A batch is due at P3D_MBATCH_OPS ops, then P3D_MBATCH_OPS after what
 * an offer left. */
static void test_due(void **state)
{
    struct p3d_matcher *m = p3d_matcher_new();
    struct p3d_mbatch b;
    int cr;

    (void)state;
    memset(&b, 0, sizeof(b));
    for (int k = 0; k < P3D_MBATCH_OPS - 1; k++) {
        struct p3d_rec_op o = mk(0, k, &cr);
        p3d_mbatch_add(&b, cr, &o);
    }
    assert_false(p3d_mbatch_due(&b));
    {
        struct p3d_rec_op o = mk(0, P3D_MBATCH_OPS - 1, &cr);
        p3d_mbatch_add(&b, cr, &o);
    }
    assert_true(p3d_mbatch_due(&b));
    p3d_matcher_offer(m, 0, &b);
    assert_int_equal(b.n, 0);
    assert_false(p3d_mbatch_due(&b));
    p3d_mbatch_free(&b);
    match_finish(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offers_match_single_ops),
        cmocka_unit_test(test_due),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
