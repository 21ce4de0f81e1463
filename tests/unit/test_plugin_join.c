/*
 * test_plugin_join.c - the join of NCCL profiler-plugin events to op
 * records (shim/p3d_plugin_join.c): collectives by (comm, function,
 * NCCL's per-function number), p2p by (comm, direction, peer, ordinal),
 * ops NCCL makes no task of, AlltoAll's hidden Send/Recv tasks; and the
 * v5+ join through API-event handles, graph-captured calls and replays.
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

/* v5+: put an op, then the API event NCCL starts inside the call. */
static void *api_call(uint64_t id, uint64_t comm, uint8_t kind,
                      int captured)
{
    put(id, comm, kind, kind == P3D_OP_SEND ? 1 : -1, 8);
    return p3d_plugin_join_api(comm, kind, captured);
}

/* The op comes back once from its task's parent, with its t_enter. */
static void test_plugin_join_api_handle(void **state)
{
    uint64_t t = 0;
    int replay = 1;
    void *a, *b;

    (void)state;
    p3d_plugin_join_use_api(1);
    a = api_call(31, 0xd1, P3D_OP_ALLREDUCE, 0);
    b = api_call(32, 0xd1, P3D_OP_SEND, 0);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    /* a wrong kind does not consume it */
    assert_int_equal(p3d_plugin_join_parent(a, P3D_OP_SEND, &t, &replay), 0);
    assert_int_equal(p3d_plugin_join_parent(b, P3D_OP_SEND, &t, &replay), 32);
    assert_int_equal(t, 32000);
    assert_int_equal(replay, 0);
    assert_int_equal(p3d_plugin_join_parent(a, P3D_OP_ALLREDUCE, &t,
                                            &replay), 31);
    assert_int_equal(p3d_plugin_join_parent(a, P3D_OP_ALLREDUCE, &t,
                                            &replay), 0);
    /* not a handle of ours (NULL, an address) */
    assert_int_equal(p3d_plugin_join_parent(NULL, P3D_OP_ALLREDUCE, &t,
                                            &replay), 0);
    assert_int_equal(p3d_plugin_join_parent(&t, P3D_OP_ALLREDUCE, &t,
                                            &replay), 0);
    assert_int_equal(replay, 0);
    p3d_plugin_join_use_api(0);
}

/* One API event per call: NCCL's inner calls, other comms, AlltoAll's
 * sends and a call with no op of ours get NULL (another comm's event
 * leaves the op for its own). */
static void test_plugin_join_api_only_its_call(void **state)
{
    (void)state;
    p3d_plugin_join_use_api(1);
    assert_non_null(api_call(41, 0xd2, P3D_OP_BROADCAST, 0));
    assert_null(p3d_plugin_join_api(0xd2, P3D_OP_BROADCAST, 0));
    put(42, 0xd2, P3D_OP_ALLGATHER, -1, 8);
    assert_null(p3d_plugin_join_api(0xd3, P3D_OP_ALLGATHER, 0));
    assert_non_null(p3d_plugin_join_api(0xd2, P3D_OP_ALLGATHER, 0));
    assert_null(p3d_plugin_join_api(0xd2, P3D_OP_ALLGATHER, 0));
    put(43, 0xd2, P3D_OP_ALLTOALL, -1, 8);
    assert_null(p3d_plugin_join_api(0xd2, P3D_OP_SEND, 0));
    put(44, 0xd2, P3D_OP_ALLREDUCE, -1, 0);   /* empty: no task */
    assert_null(p3d_plugin_join_api(0xd2, P3D_OP_ALLREDUCE, 0));
    p3d_plugin_join_use_api(0);
}

/* A captured call is not joined; every replay names the captured
 * handle; the eager ops around it still come back. */
static void test_plugin_join_api_graph(void **state)
{
    uint64_t t, c0 = p3d_plugin_join_captured();
    int replay = 0, r;
    void *before, *cap, *after;

    (void)state;
    p3d_plugin_join_use_api(1);
    before = api_call(51, 0xd4, P3D_OP_ALLREDUCE, 0);
    cap = api_call(52, 0xd4, P3D_OP_ALLREDUCE, 1);
    after = api_call(53, 0xd4, P3D_OP_ALLREDUCE, 0);
    assert_int_equal(p3d_plugin_join_captured() - c0, 1);
    assert_non_null(cap);
    for (r = 0; r < 3; r++) {
        replay = 0;
        assert_int_equal(p3d_plugin_join_parent(cap, P3D_OP_ALLREDUCE, &t,
                                                &replay), 0);
        assert_int_equal(replay, 1);
    }
    assert_int_equal(p3d_plugin_join_parent(after, P3D_OP_ALLREDUCE, &t,
                                            &replay), 53);
    assert_int_equal(replay, 0);
    assert_int_equal(p3d_plugin_join_parent(before, P3D_OP_ALLREDUCE, &t,
                                            &replay), 51);
    p3d_plugin_join_use_api(0);
}

/* Handles are a fixed ring: one far older than the ring is not joined. */
static void test_plugin_join_api_bounded(void **state)
{
    uint64_t t, i;
    int replay;
    void *old, *last = NULL;

    (void)state;
    p3d_plugin_join_use_api(1);
    old = api_call(61, 0xd5, P3D_OP_REDUCE, 0);
    for (i = 0; i < 100000; i++)
        last = api_call(100 + i, 0xd5, P3D_OP_REDUCE, 0);
    assert_int_equal(p3d_plugin_join_parent(old, P3D_OP_REDUCE, &t,
                                            &replay), 0);
    assert_int_equal(p3d_plugin_join_parent(last, P3D_OP_REDUCE, &t,
                                            &replay), 100 + 99999);
    p3d_plugin_join_use_api(0);
}

/*
 * A call preempted while it writes its handle's slot, and meanwhile the
 * call 16,384 handles later (the same slot): each handle gives back its
 * own op and t_enter, or nothing, never one's id with the other's time
 * (before the writers' claim, the older handle named the newer op).
 */
static void *race_old, *race_new;
static uint64_t race_n;

static void race_midwrite(void)
{
    p3d_plugin_join_midwrite = NULL;   /* once, and not in the calls below */
    for (uint64_t i = 1; i <= 16384; i++)
        race_new = api_call(90000 + i, 0xd6, P3D_OP_BROADCAST, 0);
    race_n = 16384;
}

static void test_plugin_join_api_midwrite(void **state)
{
    uint64_t t = 0, id;
    int replay;

    (void)state;
    p3d_plugin_join_use_api(1);
    p3d_plugin_join_midwrite = race_midwrite;
    race_old = api_call(71, 0xd6, P3D_OP_BROADCAST, 0);
    assert_int_equal(race_n, 16384);
    assert_non_null(race_old);
    assert_int_equal(p3d_plugin_join_parent(race_old, P3D_OP_BROADCAST, &t,
                                            &replay), 71);
    assert_int_equal(t, 71000);
    /* the later call gave way: no handle, so its task is not joined */
    assert_null(race_new);
    id = p3d_plugin_join_parent(race_new, P3D_OP_BROADCAST, &t, &replay);
    assert_int_equal(id, 0);
    p3d_plugin_join_use_api(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plugin_join_coll_per_function),
        cmocka_unit_test(test_plugin_join_p2p_after_alltoall),
        cmocka_unit_test(test_plugin_join_bounded),
        cmocka_unit_test(test_plugin_join_api_handle),
        cmocka_unit_test(test_plugin_join_api_only_its_call),
        cmocka_unit_test(test_plugin_join_api_graph),
        cmocka_unit_test(test_plugin_join_api_bounded),
        cmocka_unit_test(test_plugin_join_api_midwrite),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
