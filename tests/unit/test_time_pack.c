/*
 * test_time_pack.c - time/p3d_time_pack.c: a loaded timeline and pass 1's
 * per-rank results come back from bytes as they were (into the loading
 * buffers of another process), pass 2's message carries the load alone,
 * and cut bytes are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_time.h"
#include "p3d_util.h"

static void fill(struct p3d_tl *tl)
{
    memset(tl, 0, sizeof(*tl));
    tl->n_ops = tl->cap_ops = 5;
    tl->ops = p3d_xcalloc(5, sizeof(*tl->ops));
    for (int i = 0; i < 5; i++) {
        tl->ops[i].h0 = 100 * i;
        tl->ops[i].e = 100 * i + 50;
        tl->ops[i].seq = (uint64_t)i;
        tl->ops[i].gcomm = i % 2;
    }
    p3d_ivs_add(&tl->compute, 10, 20);
    p3d_ivs_add(&tl->compute, 30, 40);
    p3d_ivs_add(&tl->kwin, 0, 1000);
    tl->n_placed = 4;
    tl->src = P3D_TSRC_GPU;
    tl->peak_mem = 77;
    tl->kwin_on = -1;
    tl->n_iter = 2;
    tl->period = 2;
    tl->it_op = p3d_xcalloc(3, sizeof(*tl->it_op));
    tl->it_t = p3d_xcalloc(3, sizeof(*tl->it_t));
    tl->br = p3d_xcalloc(3, sizeof(*tl->br));
    tl->it_op[1] = 2;
    tl->it_t[2] = 400;
    tl->br[1].pp_wait = 9;
    tl->n_lbl = 1;
    tl->lbl[0] = 3;
    tl->br_lbl = p3d_xcalloc(4, sizeof(*tl->br_lbl));
    tl->br_lbl[1] = 5;
}

/* a to bytes (into *bytes, emptied first) and back into b, whole */
static void round_trip(const struct p3d_tl *a, int found,
                       struct p3d_bytes *bytes, struct p3d_tl *b,
                       struct p3d_tload *ld)
{
    struct p3d_bytes_in in;

    bytes->n = 0;
    memset(b, 0, sizeof(*b));
    p3d_tl_pack(a, found, bytes);
    in = (struct p3d_bytes_in){bytes->p, bytes->n, 0, 0};
    assert_int_equal(p3d_tl_unpack(b, ld, found, &in), 0);
    assert_int_equal(in.off, bytes->n);
    assert_int_equal(b->n_ops, 5);
}

static void test_round_trip(void **state)
{
    struct p3d_tl a, b;
    struct p3d_bytes bytes = {0};
    struct p3d_bytes_in in;
    struct p3d_tload *ld = p3d_tload_new();

    (void)state;
    fill(&a);
    round_trip(&a, 1, &bytes, &b, ld);
    assert_memory_equal(b.ops, a.ops, 5 * sizeof(*a.ops));
    assert_int_equal(b.compute.n, 2);
    assert_int_equal(b.compute.v[1].e, 40);
    assert_int_equal(b.kwin.n, 1);
    assert_int_equal(b.n_placed, 4);
    assert_int_equal(b.peak_mem, 77);
    assert_int_equal(b.n_iter, 2);
    assert_int_equal(b.it_op[1], 2);
    assert_int_equal(b.it_t[2], 400);
    assert_int_equal(b.br[1].pp_wait, 9);
    assert_int_equal(b.br_lbl[1], 5);
    assert_int_equal(b.lbl[0], 3);
    assert_null(b.it_fwd);
    p3d_time_unload(&b, ld);
    P3D_FREE_ALL(b.it_op, b.it_t, b.br, b.br_lbl);
    p3d_ivs_free(&b.kwin);
    /* pass 2: the load only */
    round_trip(&a, 0, &bytes, &b, ld);
    assert_int_equal(b.n_iter, 0);
    assert_null(b.it_op);
    p3d_time_unload(&b, ld);
    p3d_ivs_free(&b.kwin);
    for (size_t cut = 0; cut < bytes.n; cut += 13) {
        memset(&b, 0, sizeof(b));
        in = (struct p3d_bytes_in){bytes.p, cut, 0, 0};
        assert_int_equal(p3d_tl_unpack(&b, ld, 0, &in), -1);
        p3d_time_unload(&b, ld);
        p3d_ivs_free(&b.kwin);
    }
    p3d_bytes_free(&bytes);
    p3d_tload_free(ld);
    free(a.ops);
    p3d_ivs_free(&a.compute);
    p3d_ivs_free(&a.kwin);
    P3D_FREE_ALL(a.it_op, a.it_t, a.br, a.br_lbl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
