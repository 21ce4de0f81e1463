/*
 * test_views_model.c - the views' building blocks on hand-made events:
 * lanes make overlapping events nest, a Send and its Recv get one flow
 * id, --window / --ranks parsing, the state sweep (compute, exposed NCCL
 * by group, bubble, idle), the iteration finder, HTML and Markdown
 * escaping.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_chrome_flow.h"
#include "p3d_vsel.h"
#include "p3d_chrome_lane.h"
#include "p3d_seedtab.h"
#include "p3d_html.h"
#include "p3d_html_time.h"
#include "p3d_layout.h"
#include "p3d_util.h"

static struct p3d_vev *add(struct p3d_vrank *v, int kind, uint64_t t0,
                           uint64_t t1)
{
    struct p3d_vev *e;

    v->cap = p3d_grow((void **)&v->ev, v->cap, v->n, sizeof(*v->ev));
    e = &v->ev[v->n++];
    memset(e, 0, sizeof(*e));
    e->kind = (uint8_t)kind;
    e->t0 = t0;
    e->t1 = t1;
    e->label = -1;
    e->peer = e->comm_rank = -1;
    e->op_id = v->n;
    return e;
}

/* Every pair of events on one tid is nested or disjoint. */
static void assert_nested(const struct p3d_vrank *v)
{
    for (size_t i = 0; i < v->n; i++)
        for (size_t j = 0; j < v->n; j++) {
            const struct p3d_vev *a = &v->ev[i], *b = &v->ev[j];
            if (i == j || a->tid != b->tid || a->kind == P3D_V_KIND_N)
                continue;
            int disjoint = a->t1 <= b->t0 || b->t1 <= a->t0;
            int a_in_b = a->t0 >= b->t0 && a->t1 <= b->t1;
            int b_in_a = b->t0 >= a->t0 && b->t1 <= a->t1;
            assert_true(disjoint || a_in_b || b_in_a);
        }
}

static void test_lanes_nest(void **state)
{
    struct p3d_vrank v = {0};
    uint32_t tid_a, tid_b, tid_c;

    (void)state;
    add(&v, P3D_V_GROUP, 100, 200)->track = 7;   /* group */
    add(&v, P3D_V_HOST, 110, 120)->track = 7;    /* inside it */
    add(&v, P3D_V_HOST, 150, 260)->track = 7;    /* partial overlap */
    add(&v, P3D_V_HOST, 250, 300)->track = 7;    /* overlaps the one above */
    add(&v, P3D_V_GPU_NCCL, 100, 200)->track = 9; /* another track */
    add(&v, P3D_V_GPU_NCCL, 100, 200)->track = 9; /* identical: nests */
    assert_int_equal(p3d_chrome_lanes(&v), 0);
    assert_nested(&v);
    /* sorted: the group, then 110-120 (lane 0), 150-260 (lane 1) */
    tid_a = v.ev[0].tid;
    tid_b = v.ev[1].tid;
    tid_c = v.ev[2].tid;
    assert_int_equal(tid_a, tid_b);
    assert_int_not_equal(tid_a, tid_c);
    assert_int_equal(v.ev[4].tid, v.ev[5].tid); /* identical ones nest */
    assert_int_not_equal(v.ev[4].tid / P3D_LANES, tid_a / P3D_LANES);
    free(v.ev);
}

static void test_lanes_many(void **state)
{
    struct p3d_vrank v = {0};

    (void)state;
    for (int i = 0; i < 500; i++) /* staircase: each overlaps the next */
        add(&v, P3D_V_HOST, (uint64_t)i * 10, (uint64_t)i * 10 + 25)->track
            = 1;
    assert_int_equal(p3d_chrome_lanes(&v), 0);
    assert_nested(&v);
    free(v.ev);
}

static void test_flow_ids(void **state)
{
    struct p3d_vev s = {0}, r = {0}, r2;

    (void)state;
    s.kind = P3D_V_GPU_NCCL, s.op = P3D_OP_SEND, s.comm = 0xabc;
    s.comm_rank = 0, s.peer = 1, s.seq = 5;
    r.kind = P3D_V_HOST, r.op = P3D_OP_RECV, r.comm = 0xabc;
    r.comm_rank = 1, r.peer = 0, r.seq = 5;
    assert_true(p3d_flow_id(&s) != 0);
    assert_true(p3d_flow_id(&s) == p3d_flow_id(&r));
    assert_true(p3d_flow_id(&s) < (1ull << 53));
    r2 = r, r2.seq = 6;
    assert_true(p3d_flow_id(&r2) != p3d_flow_id(&s));
    r2 = r, r2.peer = 2; /* a receive from another rank */
    assert_true(p3d_flow_id(&r2) != p3d_flow_id(&s));
    r2 = r, r2.op = P3D_OP_ALLREDUCE;
    assert_true(p3d_flow_id(&r2) == 0);
}

static void test_window_ranks(void **state)
{
    struct p3d_vsel s = {0};

    (void)state;
    p3d_quiet = 1;
    assert_int_equal(p3d_vsel_window(&s, "iter:3-4"), 0);
    assert_int_equal(s.iter_a, 3);
    assert_int_equal(s.iter_b, 4);
    assert_int_equal(p3d_vsel_window(&s, "iter:2"), 0);
    assert_int_equal(s.iter_b, 2);
    assert_int_equal(p3d_vsel_window(&s, "t:10.5-20"), 0);
    assert_true(s.ms_a == 10.5 && s.ms_b == 20 && s.iter_a == -1);
    assert_int_equal(p3d_vsel_window(&s, "iter:4-3"), -1);
    assert_int_equal(p3d_vsel_window(&s, "t:5-5"), -1);
    assert_int_equal(p3d_vsel_window(&s, "5-6"), -1);
    assert_int_equal(p3d_vsel_ranks(&s, "12,0-3,7"), 0);
    assert_int_equal(s.n_ranks, 6);
    assert_true(p3d_vsel_has(&s, 0) && p3d_vsel_has(&s, 3) &&
                p3d_vsel_has(&s, 12) && p3d_vsel_has(&s, 7));
    assert_false(p3d_vsel_has(&s, 4) || p3d_vsel_has(&s, 11));
    assert_int_equal(p3d_vsel_ranks(&s, "3-1"), -1);
    assert_int_equal(p3d_vsel_ranks(&s, "1,,x"), -1);
    assert_int_equal(p3d_vsel_ranks(&s, ""), -1);
    p3d_vsel_free(&s);
    assert_true(p3d_vsel_has(&s, 99)); /* no selection: all */
}

static void test_states(void **state)
{
    struct p3d_vrank v = {0};
    struct p3d_vbreak b;

    (void)state;
    v.have_gpu = v.have_spans = 1;
    add(&v, P3D_V_COMPUTE, 0, 40);
    add(&v, P3D_V_GPU_NCCL, 30, 50)->label = P3D_LBL_TP; /* 10 exposed */
    add(&v, P3D_V_GPU_NCCL, 60, 80)->label = P3D_LBL_PP; /* bubble */
    add(&v, P3D_V_GPU_NCCL, 70, 75)->label = P3D_LBL_DP; /* DP wins */
    add(&v, P3D_V_HOST, 0, 100)->label = P3D_LBL_TP; /* host: ignored */
    p3d_vbreak_rank(&v, 0, 100, &b);
    assert_int_equal(b.span, 100);
    assert_int_equal(b.compute, 40);
    assert_int_equal(b.exposed[P3D_LBL_TP], 10);
    assert_int_equal(b.exposed[P3D_LBL_DP], 5);
    assert_int_equal(b.bubble, 15);
    assert_int_equal(b.idle, 30);
    assert_int_equal(b.overlapped, 10);
    assert_int_equal(b.compute + b.exposed_all + b.bubble + b.idle, b.span);
    p3d_vbreak_rank(&v, 20, 60, &b); /* a window cuts the intervals */
    assert_int_equal(b.compute, 20);
    assert_int_equal(b.exposed[P3D_LBL_TP], 10);
    assert_int_equal(b.idle, 10);
    /* GPU NCCL times but no kernel spans: compute = time outside NCCL */
    v.have_spans = 0;
    v.ev[0].kind = P3D_V_HOST; /* drop the compute span */
    p3d_vbreak_rank(&v, 0, 100, &b);
    assert_true(b.host_only);
    assert_int_equal(b.exposed[P3D_LBL_TP], 20);
    assert_int_equal(b.bubble, 15);
    assert_int_equal(b.compute, 60);
    assert_int_equal(b.idle, 0);
    free(v.ev);
}

static char *capture(void (*fn)(FILE *, const char *, size_t), const char *s)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    fn(f, s, strlen(s));
    fclose(f);
    return out;
}

static void test_html_escape(void **state)
{
    char *o = capture(p3d_html_esc, "<script>a=\"x\" & 'y'</script>\x01\xe9");

    (void)state;
    assert_string_equal(o, "&lt;script&gt;a=&quot;x&quot; &amp; &#39;y&#39;"
                           "&lt;/script&gt;&#9217;&#233;");
    free(o);
}

static void test_markdown_row(void **state)
{
    struct p3d_crow r;
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    (void)state;
    memset(&r, 0, sizeof(r));
    snprintf(r.config, sizeof(r.config), "a|b");
    r.tp = 2, r.pp = 1, r.cp = 1, r.dp = 4;
    r.step_ms = 12.34;
    p3d_sb_add(&r.obs, "x\ny");
    p3d_seed_md_row(f, &r);
    p3d_seed_row_free(&r);
    fclose(f);
    assert_string_equal(out, "| a\\|b | 2 | 1 | 1 | 4 | n/a | n/a | "
                             "12.3 ms | n/a | x y |\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lanes_nest),
        cmocka_unit_test(test_lanes_many),
        cmocka_unit_test(test_flow_ids),
        cmocka_unit_test(test_window_ranks),
        cmocka_unit_test(test_states),
        cmocka_unit_test(test_html_escape),
        cmocka_unit_test(test_markdown_row),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
