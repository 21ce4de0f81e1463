/*
 * test_ops.c - the op table (analyzer/model/p3d_ops.c) generated from
 * P3D_OPS, and the bandwidth arithmetic that reads its traits
 * (p3d_bw.c): nccl-tests' busbw factors and buffer sizes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_bw.h"
#include "p3d_ops.h"

static void test_names_and_traits(void **state)
{
    (void)state;
    assert_string_equal(p3d_op_name[P3D_OP_ALLREDUCE], "AllReduce");
    assert_string_equal(p3d_op_name[P3D_OP_RECV], "Recv");
    for (int op = 0; op < P3D_OP_COUNT; op++) {
        assert_int_equal(!!(p3d_op_traits(op) & P3D_OPK_P2P),
                         P3D_OP_IS_P2P(op));
        /* a factor of 2(n-1)/n and one of (n-1)/n exclude each other */
        assert_false((p3d_op_traits(op) & P3D_OPK_BW_AR) &&
                     (p3d_op_traits(op) & P3D_OPK_BW_RING));
    }
    assert_true(p3d_op_rooted(P3D_OP_BROADCAST));
    assert_true(p3d_op_rooted(P3D_OP_REDUCE));
    assert_true(p3d_op_rooted(P3D_OP_GATHER));
    assert_true(p3d_op_rooted(P3D_OP_SCATTER));
    assert_false(p3d_op_rooted(P3D_OP_ALLREDUCE));
    assert_false(p3d_op_rooted(P3D_OP_SEND));
    assert_int_equal(p3d_op_traits(-1), 0);
    assert_int_equal(p3d_op_traits(P3D_OP_COUNT), 0);
}

static void test_busbw_factors(void **state)
{
    (void)state;
    assert_true(p3d_bw_factor(P3D_OP_ALLREDUCE, 4) == 1.5);
    assert_true(p3d_bw_factor(P3D_OP_REDUCESCATTER, 4) == 0.75);
    assert_true(p3d_bw_factor(P3D_OP_ALLGATHER, 8) == 0.875);
    assert_true(p3d_bw_factor(P3D_OP_ALLTOALL, 2) == 0.5);
    assert_true(p3d_bw_factor(P3D_OP_BROADCAST, 8) == 1.0);
    assert_true(p3d_bw_factor(P3D_OP_SEND, 2) == 1.0);
    assert_true(p3d_bw_factor(P3D_OP_ALLREDUCE, 0) == 1.0);
    /* RS and AG record one rank's part; nccl-tests measures the buffer */
    assert_true(p3d_bw_bytes(P3D_OP_REDUCESCATTER, 4, 100) == 400);
    assert_true(p3d_bw_bytes(P3D_OP_ALLGATHER, 2, 100) == 200);
    assert_true(p3d_bw_bytes(P3D_OP_ALLREDUCE, 4, 100) == 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_traits),
        cmocka_unit_test(test_busbw_factors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
