/*
 * test_time_clock.c - clock alignment across hosts from causality
 * brackets: two hosts, the second's clock 10 ms ahead; collectives whose
 * last arriver completes at once and whose waiter wakes 30 us later
 * (which biases a plain average of end times by whoever is late).  The
 * estimate must land within the wake-up latency of the truth, and the
 * ops of the second host must be moved onto the first host's clock.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_time.h"
#include "p3d_util.h"

#define OFF 10000000 /* host B is 10 ms ahead */
#define N 40

static void add(struct p3d_tl *tl, uint64_t seq, int64_t s, int64_t e)
{
    struct p3d_top *o;

    tl->cap_ops = p3d_grow((void **)&tl->ops, tl->cap_ops, tl->n_ops,
                           sizeof(*tl->ops));
    o = &tl->ops[tl->n_ops++];
    memset(o, 0, sizeof(*o));
    o->s = o->h0 = s;
    o->e = o->h1 = o->hg = e;
    o->seq = seq;
    o->op = P3D_OP_ALLREDUCE;
    o->gcomm = 0;
    o->peer = -1;
}

#define MAX_H 16

/* One job of n ranks, rank i on hosts[i], each with its own timeline. */
struct fixture {
    struct p3d_job job;
    struct p3d_rank ranks[MAX_H];
    struct p3d_time_res t;
    struct p3d_tl tl[MAX_H];
};

static void fixture_init(struct fixture *f, int n, const char *const *hosts)
{
    memset(f, 0, sizeof(*f));
    for (int i = 0; i < n; i++)
        snprintf(f->ranks[i].hdr.hostname, sizeof(f->ranks[i].hdr.hostname),
                 "%s", hosts[i]);
    f->job.ranks = f->ranks;
    f->job.n_ranks = n;
    f->t.tl = f->tl;
    f->t.n = n;
}

static void fixture_free(struct fixture *f)
{
    for (int i = 0; i < f->t.n; i++)
        free(f->tl[i].ops);
    free(f->t.hosts);
}

static void test_two_hosts(void **state)
{
    static const char *const hosts[] = {"hostA", "hostB"};
    static struct fixture f;
    struct p3d_tl *tl = f.tl;

    (void)state;
    fixture_init(&f, 2, hosts);
    for (int k = 0; k < N; k++) {
        int64_t t0 = 1000000 + (int64_t)k * 100000;
        int64_t a = t0, b = t0 + (k % 2 ? -2000 : 3000); /* arrivals */
        int64_t last = a > b ? a : b, done = last + 5000;
        add(&tl[0], (uint64_t)k, a, done + (a < b ? 30000 : 0));
        add(&tl[1], (uint64_t)k, b + OFF, done + (b < a ? 30000 : 0) + OFF);
    }
    p3d_clock_align(&f.job, &f.t);
    assert_int_equal(f.t.n_hosts, 2);
    assert_true(llabs(f.t.hosts[1].offset_ns - OFF) <= 30000);
    assert_true(f.t.hosts[1].uncert_ns >= 0 &&
                f.t.hosts[1].uncert_ns <= 30000);
    /* host B's ops now on host A's clock */
    assert_true(llabs(tl[1].ops[0].s - (1000000 + 3000)) <= 30000);
    assert_int_equal(f.t.clock_violations, 0);
    fixture_free(&f);
}

static void test_one_host_untouched(void **state)
{
    static const char *const hosts[] = {"same", "same"};
    static struct fixture f;
    struct p3d_tl *tl = f.tl;

    (void)state;
    fixture_init(&f, 2, hosts);
    add(&tl[0], 0, 100, 200);
    add(&tl[1], 0, 5000, 6000); /* inconsistent, but one clock: kept */
    p3d_clock_align(&f.job, &f.t);
    assert_int_equal(f.t.n_hosts, 1);
    assert_int_equal(tl[1].ops[0].s, 5000);
    fixture_free(&f);
}

/*
 * Bounds that contradict each other (every op "ends" 0.4e18 ns before it
 * starts) on 16 hosts: the chains of the solution get shorter every
 * round and overflowed int64 (offsets of +-9.2e18 ns, undefined
 * behaviour); they must stop at the floor and flag the contradiction
 * (contra_ns), with an uncertainty that is never negative.
 */
static void test_contradiction_no_overflow(void **state)
{
    enum { H = MAX_H };
    static const char *const hosts[H] = {"h0", "h1", "h2", "h3", "h4", "h5",
        "h6", "h7", "h8", "h9", "h10", "h11", "h12", "h13", "h14", "h15"};
    static struct fixture f;

    (void)state;
    fixture_init(&f, H, hosts);
    for (int i = 0; i < H; i++)
        add(&f.tl[i], 0, 400000000000000000LL, 0);
    p3d_clock_align(&f.job, &f.t);
    assert_int_equal(f.t.n_hosts, H);
    for (int h = 1; h < H; h++) {
        /* the contradiction is flagged; the uncertainty stays >= 0 */
        assert_true(f.t.hosts[h].contra_ns > 0);
        assert_true(f.t.hosts[h].uncert_ns >= 0);
        assert_true(f.t.hosts[h].uncert_ns <= INT64_MAX / 2);
        assert_true(llabs(f.t.hosts[h].offset_ns) <= INT64_MAX / 2);
    }
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_hosts),
        cmocka_unit_test(test_one_host_untouched),
        cmocka_unit_test(test_contradiction_no_overflow),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
