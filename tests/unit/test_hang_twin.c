/*
 * test_hang_twin.c - what a rank would issue next, read from a twin of
 * its pipeline stage (p3d_hang_root.c, p3d_hg_twin_next), is the same
 * with the memo of earlier searches as without it: on pseudo-random jobs
 * whose ranks ran one program per stage for different lengths, some
 * with a different op at one place, every rank asked twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_hang_int.h"
#include "p3d_util.h"
#include "test_rand.h"

#define W 16
#define MAX_OPS 8

static struct p3d_job job;
static struct p3d_rank ranks[W];
static struct p3d_hrank hr[W];
static struct p3d_hjob hj = {hr, W};
static struct p3d_rec_op ops[W][MAX_OPS];
static const struct p3d_rec_op *opp[W][MAX_OPS];


/* tp 1, cp 1, dp W/2, pp 2 (pp slowest): ranks 0..W/2-1 are stage 0.
 * Op k of a rank of stage s: all-reduce (s even k) or all-gather, seq k;
 * a few ranks ran a broadcast at one place instead. */
static void make_job(void)
{
    memset(&job, 0, sizeof(job));
    job.world_size = W;
    job.layout.valid = 1;
    job.layout.size[P3D_AX_TP] = job.layout.size[P3D_AX_CP] = 1;
    job.layout.size[P3D_AX_DP] = W / 2;
    job.layout.size[P3D_AX_PP] = 2;
    for (int j = 0; j < P3D_AX_N; j++)
        job.layout.ord[j] = j; /* tp, cp, dp, pp */
    for (int a = 0; a < W; a++) {
        int st = a / (W / 2), odd = rnd(5) == 0 ? (int)rnd(MAX_OPS) : -1;
        memset(&hr[a], 0, sizeof(hr[a]));
        memset(&ranks[a], 0, sizeof(ranks[a]));
        hr[a].rank = a;
        hr[a].r = &ranks[a];
        hr[a].open = 1;
        hr[a].n_ops = hr[a].n_kept = rnd(MAX_OPS + 1);
        hr[a].ops = opp[a];
        for (int k = 0; k < MAX_OPS; k++) {
            ops[a][k] = (struct p3d_rec_op){
                .op = k == odd ? P3D_OP_BROADCAST
                      : (st + k) % 2 ? P3D_OP_ALLGATHER : P3D_OP_ALLREDUCE,
                .seq = (uint64_t)k, .comm_hash = 0xC0 + (uint64_t)st,
                .op_id = (uint64_t)k + 1};
            opp[a][k] = &ops[a][k];
        }
    }
}

static void test_twin_memo_same(void **state)
{
    int hits = 0;

    (void)state;
    seed = 29;
    for (int round = 0; round < 300; round++) {
        struct p3d_hg plain = {.job = &job, .hj = &hj};
        struct p3d_hg memo = {.job = &job, .hj = &hj,
                              .memo = p3d_xcalloc(1, sizeof(*memo.memo))};
        make_job();
        for (int pass = 0; pass < 2; pass++)
            for (int a = 0; a < W; a++) {
                const struct p3d_rec_op *want = p3d_hg_twin_next(&plain, a);
                assert_ptr_equal(p3d_hg_twin_next(&memo, a), want);
                hits += want != NULL;
            }
        assert_true(memo.memo->n_tw <= W); /* the second pass searched none */
        p3d_hg_free(&memo);
        p3d_hg_free(&plain);
    }
    assert_true(hits > 1000); /* twins were found, not only NULL */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_twin_memo_same),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
