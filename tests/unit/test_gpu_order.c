/*
 * test_gpu_order.c - linking NCCL kernels to ops by launch order per
 * stream (shim/p3d_cupti_order.c), the fallback for kernels NCCL launches
 * from its own thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "p3d_gpu.h"

static void test_gpu_order_fifo_per_stream(void **state)
{
    uint64_t key = 0;

    (void)state;
    p3d_cupti_order_push(7, 1, 1);
    p3d_cupti_order_push(9, 2, 1);
    p3d_cupti_order_push(7, 3, 2);          /* a group: 2 comms */
    assert_true(p3d_cupti_order_match(9, &key));
    assert_int_equal(key, 2);
    assert_true(p3d_cupti_order_match(7, &key));
    assert_int_equal(key, 1);
    assert_true(p3d_cupti_order_match(7, &key));
    assert_int_equal(key, 3);
    assert_true(p3d_cupti_order_match(7, &key));
    assert_int_equal(key, 3);               /* its second kernel */
    assert_false(p3d_cupti_order_match(7, &key));
    assert_false(p3d_cupti_order_match(9, &key));
}

static void test_gpu_order_linked_retires_older(void **state)
{
    uint64_t key = 0;

    (void)state;
    p3d_cupti_order_push(5, 10, 1);         /* launched no kernel */
    p3d_cupti_order_push(5, 11, 1);
    p3d_cupti_order_push(5, 12, 1);
    p3d_cupti_order_linked(5, 11);          /* 11's kernel came linked */
    assert_true(p3d_cupti_order_match(5, &key));
    assert_int_equal(key, 12);              /* not 10 */
    /* A linked key never queued changes nothing. */
    p3d_cupti_order_push(5, 13, 1);
    p3d_cupti_order_linked(5, 99);
    assert_true(p3d_cupti_order_match(5, &key));
    assert_int_equal(key, 13);
}

static void test_gpu_order_ring_wraps(void **state)
{
    uint64_t key = 0, i;

    (void)state;
    for (i = 0; i < 10000; i++)
        p3d_cupti_order_push(3, 1000 + i, 1);
    assert_true(p3d_cupti_order_match(3, &key));
    assert_true(key >= 1000 + 10000 - 4096);   /* oldest kept unit */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_order_fifo_per_stream),
        cmocka_unit_test(test_gpu_order_linked_retires_older),
        cmocka_unit_test(test_gpu_order_ring_wraps),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
