/*
 * test_time_clock_solve.c - the host offsets from causality bounds: the
 * sparse solver (beyond P3D_CBOUNDS_DENSE hosts) gives what the dense
 * one gives wherever the bounds agree, flags a host whose own bounds
 * contradict, and brackets the true offsets of a job with more hosts
 * than the dense table takes; bounds gathered in parts (p3d-analyze-mpi's
 * processes) and merged in any order solve as if gathered in one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_bytes.h"
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

/* The bounds of a random job (with a contradiction) dealt to 3 parts in
 * random order and merged back into an empty store, for both stores:
 * every figure as in one store that took them all, in first-seen order. */
static void test_parts_merge_as_one(void **state)
{
    static struct p3d_csol one[MAX_NH], merged[MAX_NH];

    (void)state;
    for (int seed = 0; seed < 200; seed++) {
        int nh = (int)pick(3, MAX_NH), sparse = seed % 2;
        int pairs = (int)pick(0, 6 * nh);
        struct p3d_cbounds *all = p3d_cbounds_new(nh, sparse);
        struct p3d_cbounds *part[3], *back = p3d_cbounds_new(nh, sparse);
        struct p3d_bytes b = {0};
        for (int k = 0; k < 3; k++)
            part[k] = p3d_cbounds_new(nh, sparse);
        for (int k = 0; k < pairs + 2; k++) {
            int a = (int)pick(0, nh - 1), c = (int)pick(0, nh - 1);
            int64_t v = pick(-50000000, 50000000);
            if (k >= pairs) { /* hosts 0 and 1 contradict */
                a = k == pairs ? 0 : 1;
                c = 1 - a;
                v = k == pairs ? 100000 : -50000;
            }
            p3d_cbounds_add(all, a, c, v);
            p3d_cbounds_add(part[pick(0, 2)], a, c, v);
        }
        for (int k = 2; k >= 0; k--) { /* the parts in another order */
            struct p3d_bytes_in in;
            b.n = 0;
            p3d_cbounds_pack(part[k], &b);
            in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
            assert_int_equal(p3d_cbounds_merge(back, &in), 0);
            assert_int_equal(in.off, b.n);
            p3d_cbounds_free(part[k]);
        }
        p3d_cbounds_solve(all, one);
        p3d_cbounds_solve(back, merged);
        assert_memory_equal(one, merged, (size_t)nh * sizeof(*one));
        p3d_cbounds_free(all);
        p3d_cbounds_free(back);
        p3d_bytes_free(&b);
    }
}

/* A bound naming a host the store does not have is refused. */
static void test_merge_refuses_bad(void **state)
{
    struct p3d_cbounds *big = p3d_cbounds_new(5, 0), *small;
    struct p3d_bytes b = {0};
    struct p3d_bytes_in in;

    (void)state;
    p3d_cbounds_add(big, 4, 1, 7);
    p3d_cbounds_pack(big, &b);
    small = p3d_cbounds_new(3, 0);
    in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
    assert_int_equal(p3d_cbounds_merge(small, &in), -1);
    in = (struct p3d_bytes_in){b.p, b.n - 1, 0, 0}; /* cut short */
    assert_int_equal(p3d_cbounds_merge(big, &in), -1);
    p3d_cbounds_free(big);
    p3d_cbounds_free(small);
    p3d_bytes_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sparse_equals_dense),
        cmocka_unit_test(test_contradictions_flagged),
        cmocka_unit_test(test_more_hosts_than_dense),
        cmocka_unit_test(test_parts_merge_as_one),
        cmocka_unit_test(test_merge_refuses_bad),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
