/*
 * test_time_pack.c - time/p3d_time_pack.c: pass 1's per-rank results of a
 * loaded timeline come back from bytes as they were on another process
 * (not its ops, which go to their communicators' owners), and cut bytes
 * are refused.
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
    p3d_ivs_add(&tl->compute, 10, 20);
    p3d_ivs_add(&tl->kwin, 0, 1000);
    p3d_ivs_add(&tl->kwin, 2000, 3000);
    tl->n_placed = 4;
    tl->src = P3D_TSRC_GPU;
    tl->peak_mem = 77;
    tl->kwin_on = -1;
    tl->windowed = 1;
    tl->n_iter = 2;
    tl->period = 2;
    tl->it_mono = 1;
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

static void free_tl(struct p3d_tl *tl)
{
    free(tl->ops);
    p3d_ivs_free(&tl->compute);
    p3d_ivs_free(&tl->kwin);
    P3D_FREE_ALL(tl->it_op, tl->it_t, tl->br, tl->br_lbl, tl->it_fwd,
                 tl->it_wrap);
}

static void test_round_trip(void **state)
{
    struct p3d_tl a, b;
    struct p3d_bytes bytes = {0};
    struct p3d_bytes_in in;
    int has_compute = 0;

    (void)state;
    fill(&a);
    p3d_tl_pack_results(&a, &bytes);
    memset(&b, 0, sizeof(b));
    in = (struct p3d_bytes_in){bytes.p, bytes.n, 0, 0};
    assert_int_equal(p3d_tl_unpack_results(&b, &in, &has_compute), 0);
    assert_int_equal(in.off, bytes.n);
    assert_int_equal(has_compute, 1);
    assert_null(b.ops);              /* the ops do not travel */
    assert_int_equal(b.n_ops, 5);    /* their count does */
    assert_int_equal(b.n_placed, 4);
    assert_int_equal(b.src, P3D_TSRC_GPU);
    assert_int_equal(b.peak_mem, 77);
    assert_int_equal(b.windowed, 1);
    assert_int_equal(b.kwin.n, 2);
    assert_int_equal(b.kwin.v[1].s, 2000);
    assert_int_equal(b.n_iter, 2);
    assert_int_equal(b.it_mono, 1);
    assert_int_equal(b.period, 2);
    assert_int_equal(b.it_op[1], 2);
    assert_int_equal(b.it_t[2], 400);
    assert_int_equal(b.br[1].pp_wait, 9);
    assert_int_equal(b.br_lbl[1], 5);
    assert_int_equal(b.lbl[0], 3);
    assert_null(b.it_fwd);
    free_tl(&b);
    for (size_t cut = 0; cut < bytes.n; cut += 13) {
        memset(&b, 0, sizeof(b));
        in = (struct p3d_bytes_in){bytes.p, cut, 0, 0};
        assert_int_equal(p3d_tl_unpack_results(&b, &in, &has_compute), -1);
        free_tl(&b);
    }
    p3d_bytes_free(&bytes);
    free_tl(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
