/*
 * test_hang_stop.c - a job stopped by SIGTERM while it ran is not a hang
 * (p3d_hang_stop.c): every rank alive until SIGTERM, no watchdog report,
 * no mismatch, and every wait at the signal shorter than the longest
 * steady step and than the waiting rank's longest op that completed.  Each condition is broken once, and the wait is measured to
 * the SIGTERM note's time, not to the file's later close.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_hang_int.h"
#include "p3d_match.h"
#include "p3d_time.h"

#define WORLD 4
#define MS 1000000ull

static struct p3d_job job;
static struct p3d_time_res tres;
static struct p3d_match_res mres;
static struct p3d_rank ranks[WORLD];
static struct p3d_hrank hr[WORLD];
static struct p3d_hjob hj = {hr, WORLD};
static struct p3d_hang_wait waits[WORLD];
static struct p3d_hang_res res;
static struct p3d_rec_hang report;

/* Steady steps of at most 10 ms; ranks 0-2 wait in an all-reduce entered
 * 1, 2, 3 ms before SIGTERM (at 1000 ms), and each had ops that took up
 * to 5 ms to complete; every file closes 600 ms after the signal; rank 3
 * computes. */
static int setup(void **state)
{
    (void)state;
    memset(&job, 0, sizeof(job));
    memset(&tres, 0, sizeof(tres));
    memset(&mres, 0, sizeof(mres));
    memset(&res, 0, sizeof(res));
    job.world_size = WORLD;
    job.time = &tres;
    job.match = &mres;
    tres.n_iter = 5;
    tres.warm = 1;
    tres.step_max_ms = 10.0;
    for (int a = 0; a < WORLD; a++) {
        memset(&hr[a], 0, sizeof(hr[a]));
        hr[a].rank = a;
        hr[a].r = &ranks[a];
        hr[a].open = hr[a].term = hr[a].closed = 1;
        hr[a].t_term = 1000 * MS;
        hr[a].t_close = 1600 * MS;
        hr[a].t_last = 999 * MS;
        hr[a].state = a < 3 ? P3D_HS_WAITING : P3D_HS_NOT_IN_NCCL;
        hr[a].longest_done_ns = 5 * MS;
    }
    for (int i = 0; i < 3; i++) {
        memset(&waits[i], 0, sizeof(waits[i]));
        waits[i].rank = i;
        waits[i].op = P3D_OP_ALLREDUCE;
        waits[i].t_enter = (1000 - 1 - (uint64_t)i) * MS;
    }
    res.wait = waits;
    res.n_waiting = 3;
    return 0;
}

static void test_stopped_while_running(void **state)
{
    (void)state;
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 1);
    assert_int_equal(res.stopped.n_in_nccl, 3);
    assert_int_equal(res.stopped.longest_wait_ns, 3 * MS); /* to SIGTERM */
    assert_int_equal(res.stopped.step_bound_ns, 10 * MS);
}

static void test_wait_longer_than_a_step(void **state)
{
    (void)state;
    waits[1].t_enter = 990 * MS; /* 10 ms: a whole step */
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
    assert_int_equal(res.stopped.n_in_nccl, 0);
}

static void test_wait_longer_than_its_ops(void **state)
{
    (void)state;
    hr[2].longest_done_ns = 2 * MS; /* its wait of 3 ms is its longest */
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
    hr[2].longest_done_ns = 0;      /* nothing completed: no bound */
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
}

static void test_close_time_without_note_time(void **state)
{
    (void)state;
    for (int a = 0; a < WORLD; a++) /* an older shim's note: no time */
        hr[a].t_term = 0;
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
}

static void test_watchdog_report(void **state)
{
    (void)state;
    hr[3].hang[0] = &report;
    hr[3].n_hang = 1;
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
}

static void test_rank_without_sigterm(void **state)
{
    (void)state;
    hr[3].term = 0; /* exited, or died */
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
}

static void test_rank_without_trace(void **state)
{
    (void)state;
    hr[2].r = NULL;
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
}

static void test_mismatch(void **state)
{
    (void)state;
    mres.n_mismatch = 1;
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
}

static void test_no_steady_step(void **state)
{
    (void)state;
    tres.warm = tres.n_iter;
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
    job.time = NULL;
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
}

static void test_init_wait(void **state)
{
    (void)state;
    waits[0].op = P3D_HANG_OP_INIT; /* blocked making a communicator */
    assert_int_equal(p3d_hang_stopped_running(&job, &hj, &res), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_stopped_while_running, setup),
        cmocka_unit_test_setup(test_wait_longer_than_a_step, setup),
        cmocka_unit_test_setup(test_wait_longer_than_its_ops, setup),
        cmocka_unit_test_setup(test_close_time_without_note_time, setup),
        cmocka_unit_test_setup(test_watchdog_report, setup),
        cmocka_unit_test_setup(test_rank_without_sigterm, setup),
        cmocka_unit_test_setup(test_rank_without_trace, setup),
        cmocka_unit_test_setup(test_mismatch, setup),
        cmocka_unit_test_setup(test_no_steady_step, setup),
        cmocka_unit_test_setup(test_init_wait, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
