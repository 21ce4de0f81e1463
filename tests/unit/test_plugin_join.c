/*
 * test_plugin_join.c - the join of NCCL profiler-plugin events to op
 * records (shim/p3d_plugin_join.c): collectives by (comm, function,
 * NCCL's per-function number), p2p by (comm, direction, peer, ordinal),
 * ops NCCL makes no task of, AlltoAll's hidden Send/Recv tasks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "p3d_format.h"
#include "p3d_plugin.h"

static struct p3d_op_ctx op(uint64_t id, uint64_t comm, uint8_t kind,
                            int32_t peer, uint64_t count)
{
    struct p3d_op_ctx c = {0};

    c.op_id = id;
    c.comm_hash = comm;
    c.op = kind;
    c.peer = peer;
    c.count = count;
    c.comm_nranks = 2;
    c.comm_rank = 0;
    return c;
}

static void put(uint64_t id, uint64_t comm, uint8_t kind, int32_t peer,
                uint64_t count)
{
    struct p3d_op_ctx c = op(id, comm, kind, peer, count);

    p3d_plugin_join_op(&c, id * 1000); /* t_enter: derived from the id */
}

/* Take the op of a key; its t_enter must come back with it. */
static uint64_t take(uint64_t comm, uint8_t kind, int32_t peer, uint64_t seq)
{
    uint64_t t = 0, id = p3d_plugin_join_take(comm, kind, peer, seq, &t);

    if (id)
        assert_int_equal(t, id * 1000);
    return id;
}

/* Numbers count per function: AllReduce #1 after an AllGather is seq 1. */
static void test_plugin_join_coll_per_function(void **state)
{
    (void)state;
    put(11, 0xa1, P3D_OP_ALLREDUCE, -1, 8);
    put(12, 0xa1, P3D_OP_ALLGATHER, -1, 8);
    put(13, 0xa1, P3D_OP_ALLREDUCE, -1, 8);
    put(14, 0xa1, P3D_OP_ALLREDUCE, -1, 0);   /* empty: no task */
    put(15, 0xa1, P3D_OP_ALLREDUCE, -1, 8);
    assert_int_equal(take(0xa1, P3D_OP_ALLGATHER, -1, 0),
                     12);
    assert_int_equal(take(0xa1, P3D_OP_ALLREDUCE, -1, 1),
                     13);
    assert_int_equal(take(0xa1, P3D_OP_ALLREDUCE, -1, 2),
                     15);
    assert_int_equal(take(0xa1, P3D_OP_ALLREDUCE, -1, 0),
                     11);
    /* taken once; other comms do not see it */
    assert_int_equal(take(0xa1, P3D_OP_ALLREDUCE, -1, 0), 0);
    assert_int_equal(take(0xa2, P3D_OP_ALLGATHER, -1, 0), 0);
}

/* AlltoAll sends to and receives from every rank: later sends shift. */
static void test_plugin_join_p2p_after_alltoall(void **state)
{
    uint64_t ord;

    (void)state;
    put(21, 0xb1, P3D_OP_SEND, 1, 8);
    put(22, 0xb1, P3D_OP_ALLTOALL, -1, 8);
    put(23, 0xb1, P3D_OP_SEND, 1, 8);
    put(24, 0xb1, P3D_OP_RECV, 1, 8);
    ord = p3d_plugin_join_p2p_next(0xb1, P3D_OP_SEND, 1);
    assert_int_equal(take(0xb1, P3D_OP_SEND, 1, ord), 21);
    ord = p3d_plugin_join_p2p_next(0xb1, P3D_OP_SEND, 1); /* AlltoAll's */
    assert_int_equal(take(0xb1, P3D_OP_SEND, 1, ord), 0);
    ord = p3d_plugin_join_p2p_next(0xb1, P3D_OP_SEND, 1);
    assert_int_equal(take(0xb1, P3D_OP_SEND, 1, ord), 23);
    ord = p3d_plugin_join_p2p_next(0xb1, P3D_OP_RECV, 1); /* AlltoAll's */
    ord = p3d_plugin_join_p2p_next(0xb1, P3D_OP_RECV, 1);
    assert_int_equal(take(0xb1, P3D_OP_RECV, 1, ord), 24);
}

/* Far more ops than slots: memory stays fixed, losses are counted. */
static void test_plugin_join_bounded(void **state)
{
    uint64_t put0, lost0, put1, lost1, i;

    (void)state;
    p3d_plugin_join_counts(&put0, &lost0);
    for (i = 0; i < 100000; i++)
        put(1000 + i, 0xc1, P3D_OP_REDUCE, -1, 8);
    p3d_plugin_join_counts(&put1, &lost1);
    assert_int_equal(put1 - put0, 100000);
    assert_true(lost1 > lost0);
    /* the newest is still there */
    assert_int_equal(take(0xc1, P3D_OP_REDUCE, -1, 99999),
                     1000 + 99999);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plugin_join_coll_per_function),
        cmocka_unit_test(test_plugin_join_p2p_after_alltoall),
        cmocka_unit_test(test_plugin_join_bounded),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
