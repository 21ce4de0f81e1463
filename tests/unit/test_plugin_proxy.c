/*
 * test_plugin_proxy.c - NCCL's proxy events in the shim's table of network
 * transfers in flight (shim/p3d_plugin_proxy.c): what the watchdog's
 * report says of them (direction, comm rank, steps done, the oldest step
 * in flight and its state, the op id), that a finished transfer leaves
 * the table, that a full table keeps none and says so, and that handles
 * not the table's are left alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_hooks.h"
#include "p3d_nccl_profiler_abi.h"
#include "p3d_plugin.h"

static void *op_start(uint64_t comm, uint64_t op_id, int peer, int send,
                      int steps)
{
    struct p3d_np_proxy_op d;
    void *h = NULL;

    memset(&d, 0, sizeof(d));
    d.channel_id = 1;
    d.peer = peer;
    d.n_steps = steps;
    d.is_send = send;
    p3d_plugin_proxy_op_start(&h, comm, op_id, &d);
    return h;
}

static void *step_start(void *op, int step, int state)
{
    void *h = NULL;

    p3d_plugin_proxy_step_start(&h, op, step);
    if (h != NULL && state)
        p3d_plugin_proxy_record(h, state);
    return h;
}

static size_t report(char *buf, size_t cap)
{
    size_t n = p3d_hook_hang_detail(buf, cap - 1);

    buf[n] = '\0';
    return n;
}

static void test_send_waiting_for_receiver(void **state)
{
    char buf[4096];
    void *op = op_start(0xabcull, 42, 3, 1, 4);
    void *s0, *s1, *s2;

    (void)state;
    assert_non_null(op);
    s0 = step_start(op, 0, P3D_NP_STEP_SEND_WAIT);
    s1 = step_start(op, 1, P3D_NP_STEP_SEND_PEER_WAIT);
    s2 = step_start(op, 2, P3D_NP_STEP_SEND_GPU_WAIT);
    assert_non_null(s0);
    assert_non_null(s1);
    assert_non_null(s2);
    p3d_plugin_proxy_stop(s0);    /* step 0 done: step 1 is the oldest */
    report(buf, sizeof(buf));
    assert_non_null(strstr(buf, "proxy: comm 0x0000000000000abc send to "
                                "comm rank 3, channel 1: 1 of 4 steps "
                                "done, step 1 waits for the receiver's "
                                "buffer for "));
    assert_non_null(strstr(buf, "(op_id 42)"));
    p3d_plugin_proxy_stop(s1);
    p3d_plugin_proxy_stop(s2);
    p3d_plugin_proxy_stop(op);
    assert_int_equal(report(buf, sizeof(buf)), 0); /* freed */
}

static void test_receive_without_step(void **state)
{
    char buf[4096];
    void *op = op_start(0x77ull, 0, 0, 0, 2);

    (void)state;
    report(buf, sizeof(buf));
    assert_non_null(strstr(buf, "receive from comm rank 0, channel 1: 0 of "
                                "2 steps done, no step in flight"));
    assert_null(strstr(buf, "op_id")); /* not known: not said */
    step_start(op, 0, P3D_NP_STEP_RECV_WAIT);
    report(buf, sizeof(buf));
    assert_non_null(strstr(buf, "step 0 waits for the peer's data"));
    p3d_plugin_proxy_stop(op);
    assert_int_equal(report(buf, sizeof(buf)), 0);
}

static void test_foreign_handles(void **state)
{
    int x = 0;
    void *h = &x;

    (void)state;
    assert_false(p3d_plugin_proxy_owns(&x));
    assert_false(p3d_plugin_proxy_owns(NULL));
    p3d_plugin_proxy_stop(&x);            /* no effect, no crash */
    p3d_plugin_proxy_record(&x, P3D_NP_STEP_RECV_WAIT);
    p3d_plugin_proxy_step_start(&h, &x, 0);
    assert_ptr_equal(h, &x);              /* not a ProxyOp of ours */
}

static void test_full_table(void **state)
{
    static void *ops[1100];
    char buf[8192];
    int kept = 0;

    (void)state;
    for (int i = 0; i < 1100; i++) {
        ops[i] = op_start(0x5ull, (uint64_t)i + 1, 1, 1, 1);
        kept += ops[i] != NULL;
    }
    assert_int_equal(kept, 1024);
    report(buf, sizeof(buf));
    assert_non_null(strstr(buf, "1024 network transfers in flight"));
    assert_non_null(strstr(buf, "76 not kept, table full"));
    for (int i = 0; i < 1100; i++)
        if (ops[i] != NULL)
            p3d_plugin_proxy_stop(ops[i]);
    assert_non_null(op_start(0x5ull, 9, 1, 1, 1)); /* room again */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_send_waiting_for_receiver),
        cmocka_unit_test(test_receive_without_step),
        cmocka_unit_test(test_foreign_handles),
        cmocka_unit_test(test_full_table),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
