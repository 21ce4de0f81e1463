/*
 * test_time_steps.c - period detection: the true iteration length is
 * found, not a sub-pattern (the micro-batch loop) or a multiple, even
 * with set-up ops before and tear-down ops after the iterations; and the
 * stretch it reports covers exactly the repeated part.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_time.h"

/* One "iteration": m micro-batches of (TP x3, PP), then DP x2, MP. */
static size_t iteration(uint64_t *v, size_t n, int m)
{
    for (int i = 0; i < m; i++) {
        v[n++] = 1;
        v[n++] = 1;
        v[n++] = 1;
        v[n++] = 2;
    }
    v[n++] = 3;
    v[n++] = 3;
    v[n++] = 4;
    return n;
}

static void test_plain(void **state)
{
    uint64_t v[256];
    size_t n = 0, r0, r1;

    (void)state;
    for (int k = 0; k < 5; k++)
        n = iteration(v, n, 4);
    assert_int_equal(p3d_steps_period(v, n, &r0, &r1), 19);
    assert_int_equal(r0, 0);
    assert_int_equal(r1, n);
}

static void test_setup_and_teardown(void **state)
{
    uint64_t v[256];
    size_t n = 0, r0, r1;

    (void)state;
    v[n++] = 9; /* start-up all-reduces */
    v[n++] = 9;
    v[n++] = 8;
    for (int k = 0; k < 4; k++)
        n = iteration(v, n, 3);
    v[n++] = 4; /* Megatron's extra all-reduce after the last one */
    v[n++] = 7;
    assert_int_equal(p3d_steps_period(v, n, &r0, &r1), 15);
    assert_int_equal(r0, 3);
    assert_true(r1 >= 3 + 4 * 15 && r1 <= n);
}

static void test_none(void **state)
{
    uint64_t v[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    size_t r0, r1;

    (void)state;
    assert_int_equal(p3d_steps_period(v, 16, &r0, &r1), 0);
    /* one iteration and a half is not a period either */
    {
        uint64_t w[6] = {1, 2, 3, 4, 1, 2};
        assert_int_equal(p3d_steps_period(w, 6, &r0, &r1), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_setup_and_teardown),
        cmocka_unit_test(test_none),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
