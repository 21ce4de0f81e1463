/*
 * test_time_ivl.c - interval arithmetic of the time analysis: unions
 * merge overlapping and touching intervals, cover and difference are
 * measured inside a window, so exposed NCCL = |NCCL \ compute| and idle
 * come out right.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "p3d_time.h"

static void test_union_merges(void **state)
{
    struct p3d_ivs l = {0};

    (void)state;
    p3d_ivs_add(&l, 50, 60);
    p3d_ivs_add(&l, 0, 10);
    p3d_ivs_add(&l, 5, 20);
    p3d_ivs_add(&l, 20, 30); /* touches: merged */
    p3d_ivs_add(&l, 40, 40); /* empty: dropped */
    p3d_ivs_add(&l, 55, 58); /* inside */
    p3d_ivs_union(&l);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[0].s, 0);
    assert_int_equal(l.v[0].e, 30);
    assert_int_equal(l.v[1].s, 50);
    assert_int_equal(l.v[1].e, 60);
    p3d_ivs_free(&l);
}

static void test_cover_window(void **state)
{
    struct p3d_ivs u = {0};

    (void)state;
    p3d_ivs_add(&u, 0, 30);
    p3d_ivs_add(&u, 50, 60);
    p3d_ivs_add(&u, 100, 200);
    p3d_ivs_union(&u);
    assert_int_equal(p3d_ivs_cover(&u, 0, 1000), 30 + 10 + 100);
    assert_int_equal(p3d_ivs_cover(&u, 25, 55), 5 + 5);
    assert_int_equal(p3d_ivs_cover(&u, 30, 50), 0);
    assert_int_equal(p3d_ivs_cover(&u, 150, 160), 10);
    assert_int_equal(p3d_ivs_cover(&u, 300, 400), 0);
    p3d_ivs_free(&u);
}

/* NCCL [10,40) and [60,90), compute [0,20) and [30,70): exposed NCCL is
 * [20,30) and [70,90) = 30 of the 60 NCCL. */
static void test_minus_exposed(void **state)
{
    struct p3d_ivs nccl = {0}, comp = {0};

    (void)state;
    p3d_ivs_add(&nccl, 10, 40);
    p3d_ivs_add(&nccl, 60, 90);
    p3d_ivs_add(&comp, 0, 20);
    p3d_ivs_add(&comp, 30, 70);
    p3d_ivs_union(&nccl);
    p3d_ivs_union(&comp);
    assert_int_equal(p3d_ivs_minus(&nccl, &comp, 0, 100), 30);
    assert_int_equal(p3d_ivs_minus(&nccl, &comp, 0, 80), 20);
    assert_int_equal(p3d_iv_minus(15, 35, &comp), 10);
    assert_int_equal(p3d_iv_minus(35, 15, &comp), 0);
    assert_int_equal(p3d_ivs_minus(&comp, &nccl, 0, 100), 30);
    p3d_ivs_free(&nccl);
    p3d_ivs_free(&comp);
}

/* Many random intervals against a brute-force bitmap. */
static void test_random_against_bitmap(void **state)
{
    unsigned char a[1000] = {0}, b[1000] = {0};
    struct p3d_ivs ua = {0}, ub = {0};
    int64_t want_a = 0, want_minus = 0;

    (void)state;
    srand(7);
    for (int i = 0; i < 60; i++) {
        int s = rand() % 950, e = s + rand() % 50;
        int t = rand() % 950, f = t + rand() % 50;
        p3d_ivs_add(&ua, s, e);
        p3d_ivs_add(&ub, t, f);
        for (int k = s; k < e; k++)
            a[k] = 1;
        for (int k = t; k < f; k++)
            b[k] = 1;
    }
    p3d_ivs_union(&ua);
    p3d_ivs_union(&ub);
    for (int k = 200; k < 700; k++) {
        want_a += a[k];
        want_minus += a[k] && !b[k];
    }
    assert_int_equal(p3d_ivs_cover(&ua, 200, 700), want_a);
    assert_int_equal(p3d_ivs_minus(&ua, &ub, 200, 700), want_minus);
    p3d_ivs_free(&ua);
    p3d_ivs_free(&ub);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_union_merges),
        cmocka_unit_test(test_cover_window),
        cmocka_unit_test(test_minus_exposed),
        cmocka_unit_test(test_random_against_bitmap),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
