/*
 * test_gpu_window.c - the kernel-record window schedule of the default
 * GPU timing (shim/p3d_gpu_window.c): parsing P3D_GPU_WINDOW and which
 * moments it records.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "p3d_gpu.h"

#define S 1000000000ull

static void test_gpu_window_default(void **state)
{
    struct p3d_gpu_window w;

    (void)state;
    assert_int_equal(p3d_gpu_window_parse(NULL, &w), 0);
    assert_int_equal(w.mode, P3D_WIN_SOME);
    assert_int_equal(w.first_ns, 300 * S);
    assert_int_equal(w.on_ns, 30 * S);
    assert_int_equal(w.every_ns, 600 * S);
    /* the first 300 s of GPU timing, whatever the wall clock says */
    assert_true(p3d_gpu_window_want(&w, 0, 5 * S));
    assert_true(p3d_gpu_window_want(&w, 299 * S, 5 * S));
    /* after that the last 30 s of every 600 s of wall-clock time, the
     * same moments on every rank */
    assert_false(p3d_gpu_window_want(&w, 301 * S, 1200 * S + 569 * S));
    assert_true(p3d_gpu_window_want(&w, 301 * S, 1200 * S + 570 * S));
    assert_true(p3d_gpu_window_want(&w, 9999 * S, 1799 * S));
    assert_false(p3d_gpu_window_want(&w, 9999 * S, 1800 * S));
}

static void test_gpu_window_forms(void **state)
{
    struct p3d_gpu_window w;

    (void)state;
    assert_int_equal(p3d_gpu_window_parse("all", &w), 0);
    assert_true(p3d_gpu_window_want(&w, 1000 * S, 1 * S));
    assert_int_equal(p3d_gpu_window_parse("off", &w), 0);
    assert_false(p3d_gpu_window_want(&w, 0, 0));
    assert_int_equal(p3d_gpu_window_parse("0", &w), 0);
    assert_int_equal(w.mode, P3D_WIN_NONE);
    /* FIRST alone: one window at the start */
    assert_int_equal(p3d_gpu_window_parse("2.5", &w), 0);
    assert_true(p3d_gpu_window_want(&w, 2 * S, 0));
    assert_false(p3d_gpu_window_want(&w, 3 * S, 599 * S));
    /* fractions of a second; ON >= EVERY records all the time */
    assert_int_equal(p3d_gpu_window_parse("0:0.25:1", &w), 0);
    assert_int_equal(w.on_ns, S / 4);
    assert_false(p3d_gpu_window_want(&w, 0, 10 * S + S / 2));
    assert_true(p3d_gpu_window_want(&w, 0, 10 * S + 3 * S / 4));
    assert_int_equal(p3d_gpu_window_parse("0:5:5", &w), 0);
    assert_true(p3d_gpu_window_want(&w, 7 * S, 1 * S));
    /* a schedule that never records is no schedule: CUPTI is not claimed */
    assert_int_equal(p3d_gpu_window_parse("0:0:600", &w), 0);
    assert_int_equal(w.mode, P3D_WIN_NONE);
    assert_int_equal(p3d_gpu_window_parse("0.0", &w), 0);
    assert_int_equal(w.mode, P3D_WIN_NONE);
}

static void test_gpu_window_bad(void **state)
{
    static const char *bad[] = {"sometimes", "1:2", "1:2:3:4", "-1:2:3",
                                "1:x:3", "1:2:0", "1:2:3s", ":2:3"};
    struct p3d_gpu_window w;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(p3d_gpu_window_parse(bad[i], &w), -1);
        /* not understood: the default, not half of what was parsed */
        assert_int_equal(w.mode, P3D_WIN_SOME);
        assert_int_equal(w.first_ns, 300 * S);
        assert_int_equal(w.every_ns, 600 * S);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_window_default),
        cmocka_unit_test(test_gpu_window_forms),
        cmocka_unit_test(test_gpu_window_bad),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
