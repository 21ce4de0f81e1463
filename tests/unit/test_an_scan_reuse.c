/*
 * test_an_scan_reuse.c - a scan thread reuses its buffers (op index, GPU
 * records, matcher batch) from rank to rank: what one rank left in them
 * must not reach the next.  One thread scans two ranks: the second
 * rank's GPU records name op_ids that only the first rank has, so they
 * must find no op; and a rank scanned alone counts the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_job.h"
#include "p3d_util.h"
#include "test_an_build.h"

#define COMM 0x1234ull
#define N_OPS 10

static struct tab_file g_a, g_b;

/* Rank 0: N_OPS all-reduces, each followed by its GPU times (5 ns).
 * Rank 1: GPU records for those op_ids first, then ops 100.. without. */
static void build(void)
{
    tab_init(&g_a, 0, 2);
    for (int i = 0; i < N_OPS; i++) {
        tab_op(&g_a, (uint64_t)i, COMM, (uint64_t)i, P3D_OP_ALLREDUCE,
               1000 + 100 * (uint64_t)i);
        tab_gpu(&g_a, (uint64_t)i, 1001 + 100 * (uint64_t)i,
                1006 + 100 * (uint64_t)i);
    }
    assert_int_equal(tab_write(&g_a, "scan-reuse-a"), 0);
    tab_init(&g_b, 1, 2);
    for (int i = 0; i < N_OPS; i++)
        tab_gpu(&g_b, (uint64_t)i, 1001, 1006);
    for (int i = 0; i < 3; i++)
        tab_op(&g_b, 100 + (uint64_t)i, COMM, (uint64_t)i,
               P3D_OP_ALLREDUCE, 5000 + 100 * (uint64_t)i);
    assert_int_equal(tab_write(&g_b, "scan-reuse-b"), 0);
}

static void check_a(const struct p3d_rank *r)
{
    const struct p3d_opstat *st;

    assert_int_equal(r->failed, 0);
    assert_int_equal(r->n_ops, N_OPS);
    assert_int_equal(r->n_gpu_ops, N_OPS);
    assert_int_equal(r->n_comms, 1);
    st = &r->comms[0].st[P3D_OP_ALLREDUCE];
    assert_int_equal(st->calls, N_OPS);
    assert_int_equal(st->gpu_calls, N_OPS);
    assert_int_equal(st->gpu_ns, 5 * N_OPS);
    assert_int_equal(st->gpu_bytes, 1024 * N_OPS);
}

static void check_b(const struct p3d_rank *r)
{
    assert_int_equal(r->failed, 0);
    assert_int_equal(r->n_ops, 3);
    assert_int_equal(r->n_gpu_ops, 0); /* nothing left from rank 0 */
    assert_int_equal(r->comms[0].st[P3D_OP_ALLREDUCE].gpu_calls, 0);
}

static void test_one_thread_two_ranks(void **state)
{
    struct p3d_job job;

    (void)state;
    build();
    memset(&job, 0, sizeof(job));
    job.n_ranks = 2;
    job.ranks = p3d_xcalloc(2, sizeof(*job.ranks));
    job.ranks[0].path = strdup(g_a.path);
    job.ranks[0].rank = 0;
    job.ranks[1].path = strdup(g_b.path);
    job.ranks[1].rank = 1;
    p3d_job_scan(&job, 1);
    check_a(&job.ranks[0]);
    check_b(&job.ranks[1]);
    for (int i = 0; i < 2; i++)
        p3d_rank_free(&job.ranks[i]);
    free(job.ranks);
    unlink(g_a.path);
    unlink(g_b.path);
}

static void test_alone_same_counts(void **state)
{
    struct p3d_rank a, b;

    (void)state;
    build();
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    a.path = strdup(g_a.path);
    b.path = strdup(g_b.path);
    b.rank = 1;
    assert_int_equal(p3d_rank_scan(&b), 0);
    assert_int_equal(p3d_rank_scan(&a), 0);
    check_a(&a);
    check_b(&b);
    p3d_rank_free(&a);
    p3d_rank_free(&b);
    unlink(g_a.path);
    unlink(g_b.path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_thread_two_ranks),
        cmocka_unit_test(test_alone_same_counts),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
