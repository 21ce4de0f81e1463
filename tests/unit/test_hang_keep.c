/*
 * test_hang_keep.c - once every rank was read, the hang analysis keeps of
 * each rank only the ops its graph can ask for (p3d_hang_keep.c).  These
 * tests check each kind of question still finds its op after the rest
 * are dropped: pending ops with their flags, the collectives at a kept
 * mismatch's seq, the twin positions of every op count of the rank's
 * pipeline stage, its last op; and that the per-communicator counts and
 * the mismatch's uses are those of every op.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_hang_int.h"
#include "p3d_match.h"

#define WORLD 4
#define N_MAX 40

static struct p3d_rec_op recs[WORLD][N_MAX];
static const struct p3d_rec_op **ptrs[WORLD];
static struct p3d_job job;
static struct p3d_match_res mres;
static struct p3d_hjob hj;
static struct p3d_hrank hr[WORLD];

/* Rank r issues n ops alternating between comm 0xA (all-reduce) and
 * comm 0xB (send); op i has count 100 + i % 3. */
static void fill_rank(int r, size_t n)
{
    struct p3d_hrank *h = &hr[r];
    uint64_t seq[2] = {0, 0};

    memset(h, 0, sizeof(*h));
    h->rank = r;
    h->rd.fd = -1;
    h->open = h->mapped = 1;
    ptrs[r] = calloc(n + 1, sizeof(*ptrs[r]));
    for (size_t i = 0; i < n; i++) {
        struct p3d_rec_op *o = &recs[r][i];
        int c = (int)(i % 2);
        memset(o, 0, sizeof(*o));
        o->h.len = sizeof(*o);
        o->h.tag = P3D_REC_OP;
        o->comm_hash = c ? 0xB : 0xA;
        o->op = c ? P3D_OP_SEND : P3D_OP_ALLREDUCE;
        o->seq = seq[c]++;
        o->count = 100 + i % 3;
        o->op_id = i;
        ptrs[r][i] = o;
    }
    h->ops = ptrs[r];
    h->n_ops = h->n_kept = n;
    h->pend = calloc(n + 1, 1);
    h->done = calloc(n + 1, 1);
}

/* Layout tp 2 (fastest), pp 2: ranks 0, 1 are stage 0, ranks 2, 3 stage 1.
 * Op counts 10, 30 (stage 0) and 20, 40 (stage 1); rank 2's op 19 and
 * rank 3's op 35 pend; the matcher kept a count mismatch at seq 4 of
 * comm 0xA between ranks 0 and 1. */
static int setup(void **state)
{
    static const size_t n[WORLD] = {10, 30, 20, 40};

    (void)state;
    memset(&job, 0, sizeof(job));
    job.world_size = WORLD;
    job.layout.valid = 1;
    for (int a = 0; a < P3D_AX_N; a++)
        job.layout.size[a] = 1;
    job.layout.size[P3D_AX_TP] = 2;
    job.layout.size[P3D_AX_PP] = 2;
    job.layout.ord[0] = P3D_AX_TP;
    job.layout.ord[1] = P3D_AX_PP;
    job.layout.ord[2] = P3D_AX_CP;
    job.layout.ord[3] = P3D_AX_DP;
    memset(&mres, 0, sizeof(mres));
    mres.n_kept = 1;
    mres.mm[0] = (struct p3d_mismatch){.comm = 0xA, .seq = 4,
                                       .field = P3D_MM_COUNT, .rank_a = 0,
                                       .rank_b = 1, .va = 101, .vb = 102,
                                       .op = P3D_OP_ALLREDUCE};
    job.match = &mres;
    for (int r = 0; r < WORLD; r++)
        fill_rank(r, n[r]);
    hr[2].pend[19] = 1;
    hr[3].pend[35] = 1;
    hr[3].proven = calloc(41, 1);
    hr[3].proven[35] = 1;
    hj.hr = hr;
    hj.world = WORLD;
    p3d_hang_keep_all(&job, &hj);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int r = 0; r < WORLD; r++) /* with its op array, ptrs[r] */
        p3d_hang_rank_free(&hr[r]);
    return 0;
}

/* op_at(h, k) is a copy of op k, not a pointer into the "file". */
static void assert_copy_of(const struct p3d_hrank *h, int r, uint64_t k)
{
    const struct p3d_rec_op *o = p3d_hang_op_at(h, k);

    assert_non_null(o);
    assert_true(o != &recs[r][k]);
    assert_memory_equal(o, &recs[r][k], sizeof(*o));
}

static void test_twin_positions(void **state)
{
    (void)state;
    /* rank 1 (stage 0, 30 ops): rank 0 stopped at 10, so ops 9 and 10 */
    assert_copy_of(&hr[1], 1, 9);
    assert_copy_of(&hr[1], 1, 10);
    assert_null(p3d_hang_op_at(&hr[1], 11));
    assert_null(p3d_hang_op_at(&hr[1], 19)); /* 20 is stage 1's count */
    /* rank 3 (stage 1, 40 ops): rank 2 stopped at 20 */
    assert_copy_of(&hr[3], 3, 19);
    assert_copy_of(&hr[3], 3, 20);
    assert_null(p3d_hang_op_at(&hr[3], 9));
    /* the rank with the lowest count keeps no twin position */
    assert_null(p3d_hang_op_at(&hr[0], 3));
}

static void test_last_and_pending(void **state)
{
    (void)state;
    for (int r = 0; r < WORLD; r++)
        assert_copy_of(&hr[r], r, hr[r].n_ops - 1);
    assert_copy_of(&hr[3], 3, 35);
    for (size_t i = 0; i < hr[3].n_kept; i++) {
        int at35 = hr[3].at[i] == 35;
        assert_int_equal(hr[3].pend[i], at35);
        assert_int_equal(hr[3].proven[i], at35);
    }
    assert_int_equal(hr[2].n_ops, 20); /* the count stays every op's */
}

static void test_mismatch_seq(void **state)
{
    (void)state;
    /* seq 4 of comm 0xA (the all-reduces) is op 8 on every rank; the
     * sends' seq 4 (op 9) is not a collective */
    for (int r = 0; r < WORLD; r++)
        assert_copy_of(&hr[r], r, 8);
    assert_null(p3d_hang_op_at(&hr[0], 7));
}

static void test_counts_and_uses(void **state)
{
    (void)state;
    assert_int_equal(p3d_hang_count_comm(&hr[1], 0xA), 15);
    assert_int_equal(p3d_hang_count_comm(&hr[1], 0xB), 15);
    assert_int_equal(p3d_hang_count_comm(&hr[1], 0xC), 0);
    /* rank 0 (va 101): all-reduces are ops 0, 2, .., 8; count 101 at
     * i % 3 == 1: ops 4; rank 1 (vb 102): ops 2, 8, 14, 20, 26 */
    assert_int_equal(p3d_hang_mm_uses(&hr[0], 0), 1);
    assert_int_equal(p3d_hang_mm_uses(&hr[1], 0), 5);
    assert_int_equal(p3d_hang_mm_uses(&hr[2], 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_twin_positions),
        cmocka_unit_test(test_last_and_pending),
        cmocka_unit_test(test_mismatch_seq),
        cmocka_unit_test(test_counts_and_uses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
