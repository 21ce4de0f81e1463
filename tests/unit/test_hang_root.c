/*
 * test_hang_root.c - a root whose trace lost records (P3D_MAX_MB) is named
 * "not inside NCCL" only on its watchdog's word (p3d_hang_root.c,
 * p3d_hg_watchdog_silent): it noted a timeout T > 0, noted SIGTERM,
 * tracked every op and reported nothing, while a rank waiting on it
 * reported that very op pending for at least T.  Each condition is broken
 * once; the root then stays "records_dropped".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_hang_int.h"
#include "p3d_util.h"

#define WORLD 2
#define S 1000000000ull

static struct p3d_job job;
static struct p3d_rank ranks[WORLD];
static struct p3d_hrank hr[WORLD];
static struct p3d_hjob hj = {hr, WORLD};
static struct p3d_rec_op wait_op;
static struct p3d_rec_hang report;
static struct p3d_hedge edge;
static struct p3d_hg g = {.job = &job, .hj = &hj, .e = &edge, .n = 1,
                          .cap = 1};
static struct p3d_hang_root rt;

/* Rank 0 waits in all-reduce seq 7 of comm 0xC for rank 1, and its
 * watchdog (T = 1 s) reported it pending 1.5 s; rank 1's trace lost
 * records, it noted T = 1 s and SIGTERM, and reported nothing. */
static int setup(void **state)
{
    (void)state;
    memset(&job, 0, sizeof(job));
    job.world_size = WORLD;
    for (int a = 0; a < WORLD; a++) {
        memset(&ranks[a], 0, sizeof(ranks[a]));
        memset(&hr[a], 0, sizeof(hr[a]));
        hr[a].rank = a;
        hr[a].r = &ranks[a];
        hr[a].open = hr[a].term = hr[a].closed = 1;
        hr[a].wd_known = 1;
        hr[a].wd_timeout_ns = 1 * S;
    }
    ranks[1].hdr.flags = P3D_F_DROPPED;
    ranks[1].hdr.dropped_records = 100;
    hr[1].state = P3D_HS_DROPPED;
    hr[0].state = P3D_HS_WAITING;
    memset(&wait_op, 0, sizeof(wait_op));
    wait_op.op = P3D_OP_ALLREDUCE;
    wait_op.comm_hash = 0xC;
    wait_op.seq = 7;
    memset(&report, 0, sizeof(report));
    report.op = P3D_OP_ALLREDUCE;
    report.comm_hash = 0xC;
    report.seq = 7;
    report.pending_ns = 3 * S / 2;
    hr[0].hang[0] = &report;
    hr[0].n_hang = 1;
    memset(&edge, 0, sizeof(edge));
    edge.from = 0, edge.to = 1, edge.hard = 1, edge.o = &wait_op;
    edge.comm = 0xC, edge.seq = 7, edge.op = P3D_OP_ALLREDUCE;
    edge.label = -1;
    p3d_hg_index(&g); /* the root reads the waits on it from the index */
    return 0;
}

static int free_index(void **state)
{
    (void)state;
    p3d_bucket_free(&g.out);
    p3d_bucket_free(&g.in);
    return 0;
}

static void fill(void)
{
    p3d_hg_fill_root(&g, 1, &rt, 10 * S);
}

static void expect_dropped(void)
{
    fill();
    assert_int_equal(rt.state, P3D_HS_DROPPED);
    assert_int_equal(rt.wd_silent, 0);
}

static void test_silent_watchdog_names_it(void **state)
{
    (void)state;
    fill();
    assert_int_equal(rt.state, P3D_HS_NOT_IN_NCCL);
    assert_int_equal(rt.wd_silent, 1);
    assert_int_equal(rt.wd_timeout_ns, 1 * S);
    assert_int_equal(rt.owed_op, P3D_OP_ALLREDUCE);
    assert_int_equal(rt.owed_seq, 7);
}

static void test_it_reported(void **state)
{
    (void)state;
    hr[1].hang[0] = &report;
    hr[1].n_hang = 1;
    expect_dropped();
}

static void test_no_sigterm(void **state)
{
    (void)state;
    hr[1].term = 0;
    expect_dropped();
}

static void test_timeout_unknown_or_off(void **state)
{
    (void)state;
    hr[1].wd_known = 0;
    expect_dropped();
    hr[1].wd_known = 1;
    hr[1].wd_timeout_ns = 0;
    expect_dropped();
}

static void test_untracked_ops(void **state)
{
    (void)state;
    hr[1].wd_untracked = 2;
    expect_dropped();
}

static void test_waiter_reported_too_soon(void **state)
{
    (void)state;
    hr[1].wd_timeout_ns = 2 * S; /* the waiter's 1.5 s is shorter */
    expect_dropped();
}

static void test_waiter_reported_another_op(void **state)
{
    (void)state;
    report.seq = 6;
    expect_dropped();
}

static void test_trace_complete(void **state)
{
    (void)state;
    ranks[1].hdr.flags = 0; /* nothing lost: the rule is not asked */
    hr[1].state = P3D_HS_NOT_IN_NCCL;
    fill();
    assert_int_equal(rt.state, P3D_HS_NOT_IN_NCCL);
    assert_int_equal(rt.wd_silent, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_silent_watchdog_names_it, setup),
        cmocka_unit_test_setup(test_it_reported, setup),
        cmocka_unit_test_setup(test_no_sigterm, setup),
        cmocka_unit_test_setup(test_timeout_unknown_or_off, setup),
        cmocka_unit_test_setup(test_untracked_ops, setup),
        cmocka_unit_test_setup(test_waiter_reported_too_soon, setup),
        cmocka_unit_test_setup(test_waiter_reported_another_op, setup),
        cmocka_unit_test_setup(test_trace_complete, setup),
    };
    return cmocka_run_group_tests(tests, NULL, free_index);
}
