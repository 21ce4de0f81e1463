/*
 * test_time_bubble.c - the Scalasca split of a pipeline receive into
 * late-sender wait (send start - recv start) and transfer (recv end -
 * the later start), and the attribution of NCCL kernel spans to ops
 * when the trace has no GPU_OP records, and a stage's bubble parts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "p3d_time.h"
#include "p3d_util.h"

static void test_late_sender(void **state)
{
    struct p3d_split s = p3d_bubble_split(150, 100, 200);

    (void)state;
    assert_int_equal(s.late, 50);
    assert_int_equal(s.transfer, 50);
}

static void test_early_sender(void **state)
{
    struct p3d_split s = p3d_bubble_split(50, 100, 130);

    (void)state;
    assert_int_equal(s.late, 0);
    assert_int_equal(s.transfer, 30);
}

static void test_clipped(void **state)
{
    /* send started after the receive ended (clocks off): the wait is
     * clipped to the receive, no transfer */
    struct p3d_split s = p3d_bubble_split(500, 100, 200);

    (void)state;
    assert_int_equal(s.late, 100);
    assert_int_equal(s.transfer, 0);
    s = p3d_bubble_split(100, 100, 100);
    assert_int_equal(s.late + s.transfer, 0);
}

static struct p3d_topx ax[8]; /* load-time fields of the ops */

static void add_op(struct p3d_tl *tl, int64_t h0, uint64_t stream,
                   uint32_t group)
{
    struct p3d_top *o;

    tl->cap_ops = p3d_grow((void **)&tl->ops, tl->cap_ops, tl->n_ops,
                           sizeof(*tl->ops));
    o = &tl->ops[tl->n_ops++];
    memset(o, 0, sizeof(*o));
    o->h0 = h0;
    o->h1 = h0 + 5;
    ax[tl->n_ops - 1].stream = stream;
    ax[tl->n_ops - 1].group_id = group;
}

static void add_span(struct p3d_tl *tl, int64_t s, int64_t e, uint64_t id)
{
    size_t n = tl->nsp_raw.n;

    p3d_ivs_add(&tl->nsp_raw, s, e);
    tl->nsp_cap = p3d_grow((void **)&tl->nsp_stream, tl->nsp_cap, n,
                           sizeof(*tl->nsp_stream));
    tl->nsp_stream[n] = id;
}

/*
 * Two op streams (0xA0: TP, 0xB0: a grouped send+recv) and two CUPTI
 * stream ids (7, 28): the pairing follows time order; the grouped ops
 * share one kernel.
 */
static void test_attribute(void **state)
{
    struct p3d_tl tl;

    (void)state;
    memset(&tl, 0, sizeof(tl));
    add_op(&tl, 100, 0xA0, 0);
    add_op(&tl, 300, 0xB0, 5);
    add_op(&tl, 301, 0xB0, 5);
    add_op(&tl, 1000, 0xA0, 0);
    add_span(&tl, 120, 180, 28);  /* TP op 1 */
    add_span(&tl, 400, 900, 7);   /* the send/recv batch */
    add_span(&tl, 1010, 1100, 28); /* TP op 2 */
    p3d_time_attribute(&tl, ax);
    for (size_t i = 0; i < tl.n_ops; i++)
        assert_true(tl.ops[i].has_gpu);
    assert_int_equal(tl.ops[0].s, 120);
    assert_int_equal(tl.ops[0].e, 180);
    assert_int_equal(tl.ops[1].s, 400);
    assert_int_equal(tl.ops[2].s, 400);
    assert_int_equal(tl.ops[2].e, 900);
    assert_int_equal(tl.ops[3].s, 1010);
    assert_int_equal(tl.ops[3].e, 1100);
    free(tl.ops);
    p3d_ivs_free(&tl.nsp_raw);
    free(tl.nsp_stream);
}

/* Ops placed on kernel spans fill the communicator table where no GPU_OP
 * record gave times, and only there. */
static void test_span_fill(void **state)
{
    struct p3d_gcomm comms[2];
    struct p3d_job job;
    struct p3d_time_res t;
    struct p3d_top ops[3];
    struct p3d_tl tl;

    (void)state;
    memset(comms, 0, sizeof(comms));
    memset(&job, 0, sizeof(job));
    memset(&t, 0, sizeof(t));
    memset(&tl, 0, sizeof(tl));
    memset(ops, 0, sizeof(ops));
    job.comms = comms;
    job.n_comms = 2;
    comms[1].st[P3D_OP_ALLREDUCE].gpu_calls = 5; /* from GPU_OP records */
    comms[1].st[P3D_OP_ALLREDUCE].gpu_ns = 999;
    t.n_span_comms = 2;
    t.span_gpu = calloc(2 * P3D_OP_COUNT * 3, sizeof(*t.span_gpu));
    ops[0] = (struct p3d_top){.s = 100, .e = 150, .bytes = 64, .gcomm = 0,
                              .op = P3D_OP_ALLREDUCE, .has_gpu = 1};
    ops[1] = (struct p3d_top){.s = 200, .e = 230, .bytes = 64, .gcomm = 0,
                              .op = P3D_OP_ALLREDUCE, .has_gpu = 1};
    ops[2] = (struct p3d_top){.s = 300, .e = 340, .bytes = 8, .gcomm = 1,
                              .op = P3D_OP_ALLREDUCE, .has_gpu = 1};
    tl.ops = ops;
    tl.n_ops = 3;
    tl.src = P3D_TSRC_GPU; /* GPU_OP records: nothing is summed */
    p3d_time_span_sums(&t, &tl);
    tl.src = P3D_TSRC_SPAN;
    p3d_time_span_sums(&t, &tl);
    p3d_time_span_fill(&job, &t);
    assert_int_equal(comms[0].st[P3D_OP_ALLREDUCE].gpu_calls, 2);
    assert_int_equal(comms[0].st[P3D_OP_ALLREDUCE].gpu_bytes, 128);
    assert_int_equal(comms[0].st[P3D_OP_ALLREDUCE].gpu_ns, 80);
    assert_true(comms[0].gpu_placed);
    assert_int_equal(comms[1].st[P3D_OP_ALLREDUCE].gpu_ns, 999);
    assert_false(comms[1].gpu_placed);
    free(t.span_gpu);
}

/* A stage's bubble parts add up: rest is what the pairs leave. */
static void test_stage_rest(void **state)
{
    struct p3d_tbreak br[2][1] = {
        {{.step = 100, .pp_wait = 20, .late_sender = 5, .transfer = 3,
          .compute = 60}},
        {{.step = 100, .pp_wait = 4, .late_sender = 5, .transfer = 3,
          .compute = 70}}};
    struct p3d_tl tl[2];
    struct p3d_time_res t;
    struct p3d_job job;

    (void)state;
    memset(tl, 0, sizeof(tl));
    memset(&t, 0, sizeof(t));
    memset(&job, 0, sizeof(job));
    for (int i = 0; i < 2; i++) {
        tl[i].stage = i;
        tl[i].br = br[i];
    }
    t.tl = tl;
    t.n = 2;
    t.pp = 2;
    t.n_iter = 1;
    p3d_bubble_all(&job, &t);
    assert_int_equal(t.n_stages, 2);
    assert_true(fabs(t.stages[0].bubble_frac - 0.20) < 1e-12);
    assert_true(fabs(t.stages[0].rest_frac - 0.12) < 1e-12);
    assert_true(fabs(t.stages[1].rest_frac + 0.04) < 1e-12); /* hid */
    for (int s = 0; s < 2; s++)
        assert_true(fabs(t.stages[s].late_frac + t.stages[s].transfer_frac +
                         t.stages[s].rest_frac - t.stages[s].bubble_frac) <
                    1e-12);
    free(t.stages);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_span_fill),
        cmocka_unit_test(test_late_sender),
        cmocka_unit_test(test_early_sender),
        cmocka_unit_test(test_clipped),
        cmocka_unit_test(test_attribute),
        cmocka_unit_test(test_stage_rest),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
