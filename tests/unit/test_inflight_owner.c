/*
 * test_inflight_owner.c - the ownership rule of the in-flight table that
 * lets the hot path mark an op issued with a plain store: a slot is free
 * for a new op only once its owner set ISSUED (a GPU completion that came
 * first does not free it), completions from another thread are never
 * lost, and the slot handle of p3d_inflight_enter is checked.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_format.h"
#include "p3d_inflight.h"

#define OPS 20000

static int reset(void **state)
{
    (void)state;
    p3d_inflight_reset();
    unsetenv("P3D_GPU_TIMING");
    return 0;
}

static struct p3d_op_ctx ctx(uint64_t id, uint64_t stream)
{
    struct p3d_op_ctx c;

    memset(&c, 0, sizeof(c));
    c.op_id = id;
    c.comm_hash = 0xaa;
    c.stream = (void *)(uintptr_t)stream;
    c.op = P3D_OP_ALLREDUCE;
    c.peer = -1;
    return c;
}

/* Completed on the GPU before its call returned: not pending, but its
 * slot stays its own until the owner marks it issued. */
static void test_inflight_done_before_issued(void **state)
{
    struct p3d_op_ctx a = ctx(7, 0x100);
    struct p3d_op_ctx b = ctx(7 + P3D_INFLIGHT_SLOTS, 0x200);
    struct p3d_op_ctx c = ctx(7 + 2 * P3D_INFLIGHT_SLOTS, 0x300);
    struct p3d_inflight_op o[4];
    int sa, sb, sc;

    (void)state;
    sa = p3d_inflight_enter(&a, 10, 0, 1);
    assert_true(sa >= 0);
    p3d_inflight_complete(7);
    assert_int_equal(p3d_inflight_pending(o, 4), 0);
    sb = p3d_inflight_enter(&b, 20, 0, 1);   /* same home slot */
    assert_true(sb >= 0);
    assert_int_not_equal(sb, sa);
    p3d_inflight_issued_at(sa, 7);
    sc = p3d_inflight_enter(&c, 30, 0, 1);   /* now the home is free */
    assert_int_equal(sc, sa);
    assert_int_equal(p3d_inflight_pending(o, 4), 2);
}

/* A handle marks only its own op: a wrong id or slot changes nothing. */
static void test_inflight_handle_checked(void **state)
{
    struct p3d_op_ctx a = ctx(3, 0x100);
    struct p3d_inflight_op o[2];
    int s;

    (void)state;
    s = p3d_inflight_enter(&a, 10, 5, 9);
    p3d_inflight_issued_at(s, 4);
    p3d_inflight_issued_at(-1, 3);
    p3d_inflight_issued_at(1 << 20, 3);
    assert_int_equal(p3d_inflight_pending(o, 2), 1);
    assert_int_equal(o[0].op_id, 3);
    assert_int_equal(o[0].issued, 0);
    assert_int_equal(o[0].tid, 9);
    assert_int_equal(o[0].stack_id, 5);
    p3d_inflight_issued_at(s, 3);
    assert_int_equal(p3d_inflight_pending(o, 2), 0);
}

static uint64_t added, completed;

/* The GPU side: completes every op as soon as it was added. */
static void *completer(void *arg)
{
    uint64_t next = 1;

    (void)arg;
    while (next <= OPS) {
        if (next <= __atomic_load_n(&added, __ATOMIC_ACQUIRE)) {
            p3d_inflight_complete(next);
            __atomic_store_n(&completed, next++, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

/* Owner and completer race on every op: no completion is lost (each op
 * has its own stream, so none is done through a later one). */
static void test_inflight_race_complete(void **state)
{
    struct p3d_inflight_op o[4];
    pthread_t th;

    (void)state;
    added = completed = 0;
    p3d_inflight_complete(999999999);       /* GPU completions are live */
    assert_int_equal(pthread_create(&th, NULL, completer, NULL), 0);
    for (uint64_t id = 1; id <= OPS; id++) {
        struct p3d_op_ctx c = ctx(id, id << 4);
        int s = p3d_inflight_enter(&c, id, 0, 1);

        __atomic_store_n(&added, id, __ATOMIC_RELEASE);
        p3d_inflight_issued_at(s, id);
        while (id - __atomic_load_n(&completed, __ATOMIC_ACQUIRE) > 1000)
            ;                               /* stay within the table */
    }
    pthread_join(th, NULL);
    assert_int_equal(p3d_inflight_pending(o, 4), 0);
    assert_int_equal(p3d_inflight_overflow(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_inflight_done_before_issued, reset),
        cmocka_unit_test_setup(test_inflight_handle_checked, reset),
        cmocka_unit_test_setup(test_inflight_race_complete, reset),
    };

    setenv("P3D_DISABLE", "1", 1);          /* no trace file */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
