/*
 * test_gpu_span.c - span merging of the compute timeline and the CUPTI
 * clock conversion (shim/p3d_gpu_span.c, shim/p3d_gpu_clock.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_gpu.h"
#include "p3d_shim.h"

#define MAXOUT 1024

static struct p3d_span_open out[MAXOUT];
static int n_out;
static struct p3d_span_set set;

static void capture(const struct p3d_span_open *s, void *arg)
{
    (void)arg;
    assert_true(n_out < MAXOUT);
    out[n_out++] = *s;
}

static int setup(void **state)
{
    (void)state;
    n_out = 0;
    p3d_span_init(&set, capture, NULL);
    return 0;
}

static void test_gpu_span_merges_small_gaps(void **state)
{
    uint64_t t = 1000000;
    int i;

    (void)state;
    for (i = 0; i < 100; i++, t += 3000)      /* 2 us busy, 1 us gap */
        p3d_span_add(&set, 0, 7, P3D_SPAN_COMPUTE, t, t + 2000);
    assert_int_equal(n_out, 0);
    p3d_span_flush(&set);
    assert_int_equal(n_out, 1);
    assert_int_equal(out[0].n, 100);
    assert_int_equal(out[0].busy, 200000);
    assert_int_equal(out[0].start, 1000000);
    assert_int_equal(out[0].end, 1000000 + 99 * 3000 + 2000);
    assert_int_equal(out[0].kind, P3D_SPAN_COMPUTE);
    assert_int_equal(out[0].stream, 7);
}

static void test_gpu_span_splits_on_idle_gap(void **state)
{
    (void)state;
    p3d_span_add(&set, 0, 7, P3D_SPAN_COMPUTE, 0, 1000);
    p3d_span_add(&set, 0, 7, P3D_SPAN_COMPUTE, 1000 + P3D_SPAN_GAP_NS,
                 2000 + P3D_SPAN_GAP_NS);
    assert_int_equal(n_out, 0);     /* a gap of exactly the limit merges */
    p3d_span_add(&set, 0, 7, P3D_SPAN_COMPUTE, 50000000, 50001000);
    assert_int_equal(n_out, 1);
    assert_int_equal(out[0].n, 2);
    p3d_span_flush(&set);
    assert_int_equal(n_out, 2);
    assert_int_equal(out[1].start, 50000000);
}

static void test_gpu_span_max_length(void **state)
{
    uint64_t t = 0;

    (void)state;
    while (t < 3 * (uint64_t)P3D_SPAN_MAX_NS) {
        p3d_span_add(&set, 1, 9, P3D_SPAN_COMPUTE, t, t + 100000);
        t += 100000;
    }
    p3d_span_flush(&set);
    assert_int_equal(n_out, 3);
    for (int i = 0; i < n_out; i++)
        assert_true(out[i].end - out[i].start <= P3D_SPAN_MAX_NS);
}

static void test_gpu_span_cut_by_nccl_kernel(void **state)
{
    (void)state;
    p3d_span_add(&set, 0, 1, P3D_SPAN_COMPUTE, 0, 100);
    p3d_span_add(&set, 0, 1, P3D_SPAN_COPY, 0, 100);
    p3d_span_add(&set, 0, 2, P3D_SPAN_COMPUTE, 0, 100);
    p3d_span_cut(&set, 0, 1);
    assert_int_equal(n_out, 2);               /* both kinds of stream 1 */
    assert_int_equal(out[0].stream, 1);
    assert_int_equal(out[1].stream, 1);
    p3d_span_add(&set, 0, 1, P3D_SPAN_COMPUTE, 150, 200);
    p3d_span_flush(&set);
    assert_int_equal(n_out, 4);               /* stream 2 + new stream 1 */
}

static void test_gpu_span_kinds_and_devices_apart(void **state)
{
    (void)state;
    p3d_span_add(&set, 0, 5, P3D_SPAN_COMPUTE, 0, 100);
    p3d_span_add(&set, 0, 5, P3D_SPAN_COPY, 50, 150);
    p3d_span_add(&set, 1, 5, P3D_SPAN_COMPUTE, 0, 100);
    p3d_span_flush(&set);
    assert_int_equal(n_out, 3);
}

static void test_gpu_span_table_full(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < P3D_SPAN_STREAMS + 10; i++)
        p3d_span_add(&set, 0, 1000 + i, P3D_SPAN_COMPUTE, 0, 100);
    assert_int_equal(n_out, 10);              /* emitted at once, unmerged */
    assert_int_equal(set.overflow, 10);
    p3d_span_flush(&set);
    assert_int_equal(n_out, P3D_SPAN_STREAMS + 10);
}

static uint64_t fake_gpu_clock(void)
{
    return p3d_now() + 777777777ull;
}

static uint64_t zero_clock(void)
{
    return 0;
}

static void test_gpu_clock_pair(void **state)
{
    struct p3d_clock_map m;
    int64_t err;

    (void)state;
    memset(&m, 0, sizeof(m));
    assert_int_equal(p3d_clock_pair(&m, fake_gpu_clock, -1, 5), 0);
    assert_true(m.valid);
    err = m.offset + 777777777;
    assert_true(err <= (int64_t)m.uncert + 1000 &&
                -err <= (int64_t)m.uncert + 1000);
    assert_int_equal(p3d_clock_to_host(&m, 1777777777ull),
                     (uint64_t)(1777777777ll + m.offset));
    assert_int_equal(p3d_clock_to_host(&m, 0), 0);
    assert_int_equal(p3d_clock_pair(&m, zero_clock, -1, 5), -1);
}

static void test_gpu_mode_parse(void **state)
{
    (void)state;
    assert_int_equal(p3d_gpu_mode_parse(NULL), P3D_GPU_AUTO);
    assert_int_equal(p3d_gpu_mode_parse("cupti"), P3D_GPU_CUPTI);
    assert_int_equal(p3d_gpu_mode_parse("events"), P3D_GPU_EVENTS);
    assert_int_equal(p3d_gpu_mode_parse("off"), P3D_GPU_OFF);
    assert_int_equal(p3d_gpu_mode_parse("bogus"), P3D_GPU_AUTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_gpu_span_merges_small_gaps, setup),
        cmocka_unit_test_setup(test_gpu_span_splits_on_idle_gap, setup),
        cmocka_unit_test_setup(test_gpu_span_max_length, setup),
        cmocka_unit_test_setup(test_gpu_span_cut_by_nccl_kernel, setup),
        cmocka_unit_test_setup(test_gpu_span_kinds_and_devices_apart, setup),
        cmocka_unit_test_setup(test_gpu_span_table_full, setup),
        cmocka_unit_test(test_gpu_clock_pair),
        cmocka_unit_test(test_gpu_mode_parse),
    };

    setenv("P3D_DISABLE", "1", 1);   /* no trace file from record calls */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
