/*
 * test_time_clock_solve.c - the host offsets from causality bounds: the
 * sparse solver (beyond P3D_CBOUNDS_DENSE hosts) gives what the dense
 * one gives wherever the bounds agree, flags a host whose own bounds
 * contradict, and brackets the true offsets of a job with more hosts
 * than the dense table takes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_clock_solve.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t pick(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1));
}

#define MAX_NH 40

/* A random job of nh hosts with true offsets d, its bounds kept dense and
 * sparse alike, and both solutions. */
struct job {
    int nh;
    int64_t d[MAX_NH];
    struct p3d_cbounds *dn, *sp;
    struct p3d_csol a[MAX_NH], b[MAX_NH]; /* dense, sparse */
};

static void add_both(struct job *j, int a, int b, int64_t v)
{
    p3d_cbounds_add(j->dn, a, b, v);
    p3d_cbounds_add(j->sp, a, b, v);
}

/* Bounds D[b] - D[a] >= v between `pairs` random host pairs, each at most
 * the truth (the slack: the wake-up latency). */
static void job_make(struct job *j, int nh, int pairs)
{
    j->nh = nh;
    j->dn = p3d_cbounds_new(nh, 0);
    j->sp = p3d_cbounds_new(nh, 1);
    for (int h = 0; h < nh; h++)
        j->d[h] = h ? pick(-50000000, 50000000) : 0;
    for (int k = 0; k < pairs; k++) {
        int a = (int)pick(0, nh - 1), b = (int)pick(0, nh - 1);
        add_both(j, a, b, j->d[b] - j->d[a] - pick(0, 100000));
    }
}

static void job_solve_free(struct job *j)
{
    p3d_cbounds_solve(j->dn, j->a);
    p3d_cbounds_solve(j->sp, j->b);
    p3d_cbounds_free(j->dn);
    p3d_cbounds_free(j->sp);
}

static void test_sparse_equals_dense(void **state)
{
    static struct job j;

    (void)state;
    for (int seed = 0; seed < 300; seed++) {
        int nh = (int)pick(2, MAX_NH);
        job_make(&j, nh, (int)pick(0, 6 * nh));
        job_solve_free(&j);
        for (int h = 0; h < nh; h++) {
            const struct p3d_csol *a = &j.a[h], *b = &j.b[h];
            assert_int_equal(a->solved, b->solved);
            assert_int_equal(a->d, b->d);
            assert_int_equal(a->uncert, b->uncert);
            assert_int_equal(a->contra, 0);
            assert_int_equal(b->contra, 0);
            assert_int_equal(a->n_inst, b->n_inst);
            if (a->solved) /* the truth lies in the bracket */
                assert_true(llabs(a->d - j.d[h]) <= a->uncert + 1);
        }
    }
}

/* Host 1's own bounds against host 0 contradict (D1 - D0 >= x and
 * D0 - D1 >= y with x + y > 0): both solvers flag it, and the sparse one
 * keeps the anchor estimate (D = 0) of every host the contradiction
 * reaches instead of a figure compounded around the cycle. */
static void test_contradictions_flagged(void **state)
{
    static struct job j;

    (void)state;
    for (int seed = 0; seed < 300; seed++) {
        int nh = (int)pick(3, 30);
        job_make(&j, nh, (int)pick(0, 4 * nh));
        add_both(&j, 0, 1, j.d[1] + 100000);
        add_both(&j, 1, 0, -j.d[1] - 50000);
        job_solve_free(&j);
        assert_true(j.a[1].contra > 0 && j.b[1].contra > 0);
        for (int h = 1; h < nh; h++)
            if (j.b[h].contra)
                assert_int_equal(j.b[h].d, 0);
            else /* out of the contradiction's reach: as dense */
                assert_int_equal(j.b[h].d, j.a[h].d);
    }
}

/* 3,000 hosts (a 24k-GPU job at 8 a host): each host meets host 0 through
 * a DP-like chain and a star of 7 hubs; every truth is bracketed, and
 * each bracket is at most the slack of the 7 bounds of a path each way. */
static void test_more_hosts_than_dense(void **state)
{
    enum { NH = 3000 };
    static int64_t d[NH];
    static struct p3d_csol s[NH];
    struct p3d_cbounds *c = p3d_cbounds_new(NH, 0);

    (void)state;
    for (int h = 0; h < NH; h++)
        d[h] = h ? pick(-5000000, 5000000) : 0;
    for (int h = 1; h < NH; h++) {
        int p = h - 1, hub = (int)(h % 7);
        p3d_cbounds_add(c, p, h, d[h] - d[p] - pick(0, 30000));
        p3d_cbounds_add(c, h, p, d[p] - d[h] - pick(0, 30000));
        p3d_cbounds_add(c, hub, h, d[h] - d[hub] - pick(0, 30000));
        p3d_cbounds_add(c, h, hub, d[hub] - d[h] - pick(0, 30000));
    }
    p3d_cbounds_solve(c, s);
    for (int h = 1; h < NH; h++) {
        assert_true(s[h].solved);
        assert_int_equal(s[h].contra, 0);
        assert_true(llabs(s[h].d - d[h]) <= s[h].uncert + 1);
        assert_true(s[h].uncert <= 7 * 30000);
    }
    p3d_cbounds_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparse_equals_dense),
        cmocka_unit_test(test_contradictions_flagged),
        cmocka_unit_test(test_more_hosts_than_dense),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
