/*
 * test_an_match.c - cross-rank comparison of one collective instance:
 * every differing field is reported with both ranks and both values, and
 * matching goes on after a mismatch; the scan's agreement test says
 * "agree" exactly when the comparison finds nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_match_int.h"

static struct p3d_rec_op op(int kind, uint64_t count, int dtype, int redop,
                            int root)
{
    struct p3d_rec_op o;

    memset(&o, 0, sizeof(o));
    o.op = (uint8_t)kind;
    o.count = count;
    o.dtype = (uint8_t)dtype;
    o.redop = (uint8_t)redop;
    o.peer = root;
    return o;
}

static void test_equal_is_silent(void **state)
{
    struct p3d_match_res res;
    struct p3d_rec_op a = op(P3D_OP_ALLREDUCE, 100, 7, 0, -1);

    (void)state;
    memset(&res, 0, sizeof(res));
    p3d_match_coll(&res, 0xab, 5, 0, &a, 1, &a);
    assert_int_equal(res.n_mismatch, 0);
    assert_int_equal(res.n_kept, 0);
}

static void test_count_mismatch_names_both(void **state)
{
    struct p3d_match_res res;
    struct p3d_rec_op a = op(P3D_OP_ALLREDUCE, 100, 7, 0, -1);
    struct p3d_rec_op b = op(P3D_OP_ALLREDUCE, 101, 7, 0, -1);

    (void)state;
    memset(&res, 0, sizeof(res));
    p3d_match_coll(&res, 0xab, 5, 2, &a, 3, &b);
    assert_int_equal(res.n_mismatch, 1);
    assert_int_equal(res.mm[0].field, P3D_MM_COUNT);
    assert_int_equal(res.mm[0].rank_a, 2);
    assert_int_equal(res.mm[0].rank_b, 3);
    assert_int_equal(res.mm[0].va, 100);
    assert_int_equal(res.mm[0].vb, 101);
    assert_int_equal(res.mm[0].seq, 5);
    /* the next instance is still compared */
    p3d_match_coll(&res, 0xab, 6, 2, &a, 3, &a);
    p3d_match_coll(&res, 0xab, 7, 2, &a, 4, &b);
    assert_int_equal(res.n_mismatch, 2);
    assert_int_equal(res.mm[1].seq, 7);
    assert_int_equal(res.mm[1].rank_b, 4);
}

static void test_fields(void **state)
{
    struct p3d_match_res res;
    struct p3d_rec_op a = op(P3D_OP_BROADCAST, 8, 7, P3D_REDOP_NONE, 0);
    struct p3d_rec_op b = op(P3D_OP_BROADCAST, 8, 9, P3D_REDOP_NONE, 1);
    struct p3d_rec_op c = op(P3D_OP_ALLREDUCE, 8, 7, 2, -1);
    struct p3d_rec_op d = op(P3D_OP_ALLREDUCE, 8, 7, 0, -1);

    (void)state;
    memset(&res, 0, sizeof(res));
    p3d_match_coll(&res, 1, 0, 0, &a, 1, &b); /* dtype and root */
    assert_int_equal(res.n_mismatch, 2);
    assert_int_equal(res.mm[0].field, P3D_MM_DTYPE);
    assert_int_equal(res.mm[1].field, P3D_MM_ROOT);
    p3d_match_coll(&res, 1, 1, 0, &c, 1, &d); /* redop */
    assert_int_equal(res.mm[2].field, P3D_MM_REDOP);
    assert_int_equal(res.mm[2].va, 2);
    p3d_match_coll(&res, 1, 2, 0, &a, 1, &c); /* op: nothing else */
    assert_int_equal(res.n_mismatch, 4);
    assert_int_equal(res.mm[3].field, P3D_MM_OP);
    assert_int_equal(res.mm[3].va, P3D_OP_BROADCAST);
    assert_int_equal(res.mm[3].vb, P3D_OP_ALLREDUCE);
}

/* p3d_ref_agrees (the scan) and p3d_match_coll (the report) agree. */
static void test_agrees_iff_no_mismatch(void **state)
{
    static const int ops[] = {P3D_OP_ALLREDUCE, P3D_OP_BROADCAST,
                              P3D_OP_REDUCE, P3D_OP_ALLGATHER};
    struct p3d_rec_op v[64];
    int n = 0, n_agree = 0;

    (void)state;
    for (int o = 0; o < 4; o++)
        for (int bits = 0; bits < 16; bits++)
            v[n++] = op(ops[o], 100 + (bits & 1), bits & 2 ? 9 : 7,
                        bits & 4 ? 2 : 0, bits & 8 ? 1 : 0);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            struct p3d_match_res res;
            struct p3d_ref r;
            memset(&res, 0, sizeof(res));
            memset(&r, 0, sizeof(r));
            p3d_ref_set(&r, &v[i], 0);
            p3d_match_coll(&res, 1, 0, 0, &v[i], 1, &v[k]);
            assert_int_equal(p3d_ref_agrees(&r, &v[k]), res.n_mismatch == 0);
            n_agree += res.n_mismatch == 0;
        }
    /* rooted ops compare the root, the others do not */
    assert_int_equal(n_agree, 2 * 16 + 2 * 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_is_silent),
        cmocka_unit_test(test_count_mismatch_names_both),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_agrees_iff_no_mismatch),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
