/*
 * test_hang_shim.c - the shim side of hang diagnosis: the in-flight table
 * (add, issued, GPU completion, stream order, groups, inits, slot reuse),
 * strict parsing of P3D_HANG_TIMEOUT, the watchdog's report text, stack
 * interning (one id per distinct pc array), and the writer pin that lets
 * an op record be completed in place.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "p3d_format.h"
#include "p3d_inflight.h"
#include "p3d_stack.h"
#include "p3d_watchdog.h"

static int reset(void **state)
{
    (void)state;
    p3d_inflight_reset();
    unsetenv("P3D_GPU_TIMING");
    return 0;
}

static struct p3d_op_ctx ctx(uint64_t id, uint64_t comm, int in_group)
{
    struct p3d_op_ctx c;

    memset(&c, 0, sizeof(c));
    c.op_id = id;
    c.comm_hash = comm;
    c.seq = id * 10;
    c.stream = (void *)0x1000;
    c.op = P3D_OP_ALLREDUCE;
    c.peer = -1;
    c.in_group = (uint8_t)in_group;
    return c;
}

/* Without GPU completions only ops inside their call are pending. */
static void test_hang_inflight_host(void **state)
{
    struct p3d_op_ctx a = ctx(1, 0xaa, 0), b = ctx(2, 0xbb, 0);
    struct p3d_inflight_op o[4];

    (void)state;
    p3d_inflight_add(&a, 100, 7);
    p3d_inflight_add(&b, 200, 0);
    assert_int_equal(p3d_inflight_pending(o, 4), 2);
    assert_int_equal(o[0].op_id, 1);        /* oldest first */
    assert_int_equal(o[0].stack_id, 7);
    assert_int_equal(o[0].seq, 10);
    assert_int_equal(o[1].comm_hash, 0xbb);
    p3d_inflight_issued(1);
    assert_int_equal(p3d_inflight_pending(o, 4), 1);
    assert_int_equal(o[0].op_id, 2);
    assert_int_equal(p3d_inflight_pending_on(0xbb), 1);
    assert_int_equal(p3d_inflight_pending_on(0xaa), 0);
}

/* With GPU completions an issued op stays pending until completed,
 * and a completion also completes earlier ops of the same stream. */
static void test_hang_inflight_gpu(void **state)
{
    struct p3d_op_ctx a = ctx(1, 0xaa, 0), b = ctx(2, 0xaa, 0);
    struct p3d_op_ctx c = ctx(3, 0xaa, 0);
    struct p3d_inflight_op o[4];

    (void)state;
    c.stream = (void *)0x2000;
    p3d_inflight_add(&a, 100, 0);
    p3d_inflight_add(&b, 200, 0);
    p3d_inflight_add(&c, 300, 0);
    p3d_inflight_issued(1);
    p3d_inflight_issued(2);
    p3d_inflight_issued(3);
    p3d_inflight_complete(99);              /* unknown id: live, no-op */
    assert_true(p3d_inflight_gpu_live());
    assert_int_equal(p3d_inflight_pending(o, 4), 3);
    p3d_inflight_complete(2);               /* op 1: same stream, earlier */
    assert_int_equal(p3d_inflight_pending(o, 4), 1);
    assert_int_equal(o[0].op_id, 3);
    assert_int_equal(o[0].issued, 1);
}

/* P3D_GPU_TIMING=off: completion unknown, issued ops never pending. */
static void test_hang_inflight_gpu_off(void **state)
{
    struct p3d_op_ctx a = ctx(5, 0xaa, 0);
    struct p3d_inflight_op o[2];

    (void)state;
    setenv("P3D_GPU_TIMING", "off", 1);
    p3d_inflight_add(&a, 1, 0);
    p3d_inflight_issued(5);
    assert_false(p3d_inflight_gpu_live());
    assert_int_equal(p3d_inflight_pending(o, 2), 0);
}

/* Grouped ops and inits carry their state into the snapshot. */
static void test_hang_inflight_group_init(void **state)
{
    struct p3d_op_ctx g = ctx(8, 0xcc, 1);
    struct p3d_inflight_op o[4];
    uint64_t tok;

    (void)state;
    p3d_inflight_add(&g, 50, 0);
    tok = p3d_inflight_init_begin(0xdd, 4, 2);
    assert_int_equal(p3d_inflight_pending(o, 4), 2);
    assert_int_equal(o[0].grouped, 1);
    assert_int_equal(o[1].op, P3D_INFLIGHT_INIT);
    assert_int_equal(o[1].comm_hash, 0xdd);
    assert_int_equal(o[1].seq, 4);          /* nranks */
    assert_int_equal(o[1].peer, 2);
    p3d_inflight_done(tok);
    assert_int_equal(p3d_inflight_pending(o, 4), 1);
}

/* A slot whose op is still pending is never overwritten: the newer op
 * takes a nearby slot, both stay visible. */
static void test_hang_inflight_collision(void **state)
{
    struct p3d_op_ctx a = ctx(3, 1, 0);
    struct p3d_op_ctx b = ctx(3 + P3D_INFLIGHT_SLOTS, 2, 0);
    struct p3d_inflight_op o[4];

    (void)state;
    p3d_inflight_add(&a, 10, 0);
    p3d_inflight_add(&b, 20, 0);
    assert_int_equal(p3d_inflight_pending(o, 4), 2);
    p3d_inflight_issued(3 + P3D_INFLIGHT_SLOTS);
    assert_int_equal(p3d_inflight_pending(o, 4), 1);
    assert_int_equal(o[0].op_id, 3);
    assert_int_equal(p3d_inflight_overflow(), 0);
}

static void test_hang_timeout_parse(void **state)
{
    uint64_t ns = 7;

    (void)state;
    assert_int_equal(p3d_watchdog_parse_timeout("300", &ns), 0);
    assert_int_equal(ns, 300000000000ull);
    assert_int_equal(p3d_watchdog_parse_timeout("0.25", &ns), 0);
    assert_int_equal(ns, 250000000ull);
    assert_int_equal(p3d_watchdog_parse_timeout("0", &ns), 0);
    assert_int_equal(ns, 0);
    ns = 7;
    assert_int_equal(p3d_watchdog_parse_timeout("", &ns), -1);
    assert_int_equal(p3d_watchdog_parse_timeout("5s", &ns), -1);
    assert_int_equal(p3d_watchdog_parse_timeout("-1", &ns), -1);
    assert_int_equal(p3d_watchdog_parse_timeout("1.", &ns), -1);
    assert_int_equal(p3d_watchdog_parse_timeout(" 1", &ns), -1);
    assert_int_equal(p3d_watchdog_parse_timeout("99999999999", &ns), -1);
    assert_int_equal(ns, 7);                /* untouched on error */
}

/* The report: every line prefixed, op, comm, name, pending time. */
static void test_hang_report_format(void **state)
{
    struct p3d_inflight_op o[2];
    char buf[4096], *line;
    size_t n;
    int lines = 0;

    (void)state;
    memset(o, 0, sizeof(o));
    o[0].op_id = 12;
    o[0].t_enqueue = 1000000000ull;
    o[0].comm_hash = 0xab;
    o[0].seq = 41;
    o[0].op = P3D_OP_SEND;
    o[0].peer = 3;
    o[1].op_id = 13;
    o[1].t_enqueue = 1500000000ull;
    o[1].comm_hash = 0xcd;
    o[1].op = P3D_INFLIGHT_INIT;
    p3d_watchdog_comm_name(0xab, "PIPELINE_MODEL_PARALLEL_GROUP:3");
    n = p3d_watchdog_format(buf, sizeof(buf), o, 2, 5, 4000000000ull);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "Send seq 41 on comm 0x00000000000000ab "
                                "(PIPELINE_MODEL_PARALLEL_GROUP:3) peer 3 (comm rank)"));
    assert_non_null(strstr(buf, "pending 3.0 s"));
    assert_non_null(strstr(buf, "5 op(s) pending"));
    assert_non_null(strstr(buf, "communicator init/split of comm "
                                "0x00000000000000cd"));
    for (line = buf; *line; line = strchr(line, '\n') + 1, lines++)
        assert_memory_equal(line, "p3dtrace: ", 10);
    assert_true(lines >= 4);
}

/* Equal pc arrays get one id; different ones another; ids are stable. */
static void test_hang_stack_intern(void **state)
{
    uint64_t a[3] = {0x401000, 0x402000, 0x403000};
    uint64_t b[3] = {0x401000, 0x402000, 0x403004};
    uint64_t got[16];
    uint32_t ia, ib;

    (void)state;
    p3d_stack_reset();
    ia = p3d_stack_intern(a, 3);
    ib = p3d_stack_intern(b, 3);
    assert_true(ia != 0 && ib != 0 && ia != ib);
    assert_int_equal(p3d_stack_intern(a, 3), ia);
    assert_int_equal(p3d_stack_intern(b, 2), p3d_stack_intern(a, 2));
    assert_int_equal(p3d_stack_get(ia, got, 16), 3);
    assert_memory_equal(got, a, sizeof(a));
}

/* This thread's CPU time: a loaded machine's preemptions do not count, so
 * the cost bound below cannot fail for want of a CPU. */
static double now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static __attribute__((noinline)) uint32_t capture_deep(int d)
{
    uint32_t id = d > 0 ? capture_deep(d - 1) : p3d_stack_capture(0);

    __asm__ volatile("" ::: "memory");     /* keep the frames */
    return id;
}

static __attribute__((noinline)) uint32_t capture_other(int d)
{
    uint32_t id = d > 1 ? capture_other(d - 2) : p3d_stack_capture(0);

    __asm__ volatile("" ::: "memory");
    return id;
}

/* Captures through the same frames give the same id, other frames
 * another (deep enough that all kept frames are the recursion's);
 * skipped when libunwind is absent. */
static void test_hang_stack_capture(void **state)
{
    uint32_t id[3];
    double t0, ns;

    (void)state;
    if (!p3d_stack_enabled())
        skip();
    id[0] = capture_deep(30);
    id[1] = capture_deep(30);
    id[2] = capture_other(30);
    assert_int_not_equal(id[0], 0);
    assert_int_equal(id[0], id[1]);
    assert_int_not_equal(id[0], id[2]);
    t0 = now_ns();
    for (int i = 0; i < 2000; i++)
        capture_deep(30);                   /* 16 frames kept */
    ns = (now_ns() - t0) / 2000;
    print_message("stack capture + intern: %.0f ns per call (16 frames)\n",
                  ns);
    assert_true(ns < 20000);                /* libunwind: ~600 ns */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_hang_inflight_host, reset),
        cmocka_unit_test_setup(test_hang_inflight_gpu, reset),
        cmocka_unit_test_setup(test_hang_inflight_gpu_off, reset),
        cmocka_unit_test_setup(test_hang_inflight_group_init, reset),
        cmocka_unit_test_setup(test_hang_inflight_collision, reset),
        cmocka_unit_test(test_hang_timeout_parse),
        cmocka_unit_test(test_hang_report_format),
        cmocka_unit_test(test_hang_stack_intern),
        cmocka_unit_test(test_hang_stack_capture),
    };

    setenv("P3D_DISABLE", "1", 1);          /* no trace file */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
