/*
 * test_gpu_shared.c - ranks per visible GPU, which decides whether the
 * shim warns that CUPTI slows a GPU the ranks time-slice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "p3d_gpu.h"

static void test_ranks_per_device(void **state)
{
    (void)state;
    assert_int_equal(p3d_gpu_ranks_per_device(8, 1), 8);
    assert_int_equal(p3d_gpu_ranks_per_device(8, 8), 1);
    assert_int_equal(p3d_gpu_ranks_per_device(4, 8), 1);
    assert_int_equal(p3d_gpu_ranks_per_device(3, 2), 2);
    assert_int_equal(p3d_gpu_ranks_per_device(9, 8), 2);
}

static void test_unknown_is_zero(void **state)
{
    (void)state;
    assert_int_equal(p3d_gpu_ranks_per_device(-1, 1), 0);
    assert_int_equal(p3d_gpu_ranks_per_device(0, 1), 0);
    assert_int_equal(p3d_gpu_ranks_per_device(8, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks_per_device),
        cmocka_unit_test(test_unknown_is_zero),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
