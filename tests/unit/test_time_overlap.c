/*
 * test_time_overlap.c - one rank's steady figures (p3d_time_rank_sums in
 * analyzer/time/p3d_overlap.c), the sums the job's shares and the HTML's
 * bars are made of: warm-up iterations and iterations outside the kernel
 * windows are left out, exposed time goes to the rank's labels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_time.h"

static void test_rank_sums(void **state)
{
    struct p3d_tbreak br[4];
    int64_t lbl[4 * 2];
    struct p3d_tl tl;
    struct p3d_time_res t;
    double s[P3D_SUM_N];

    (void)state;
    memset(br, 0, sizeof(br));
    memset(&tl, 0, sizeof(tl));
    memset(&t, 0, sizeof(t));
    for (int k = 0; k < 4; k++) {
        br[k] = (struct p3d_tbreak){.step = 100 * (k + 1), .compute = 60,
                                    .nccl = 30, .exposed = 25,
                                    .overlapped = 5, .idle = 10,
                                    .pp_wait = 4};
        lbl[2 * k] = 20;     /* TP */
        lbl[2 * k + 1] = 5;  /* PP */
    }
    br[2].nokern = 1; /* outside the kernel windows: not summed */
    tl.br = br;
    tl.br_lbl = lbl;
    tl.n_lbl = 2;
    tl.lbl[0] = P3D_LBL_TP;
    tl.lbl[1] = P3D_LBL_PP;
    t.tl = &tl;
    t.n = 1;
    t.n_iter = 4;
    t.warm = 1; /* iteration 0 is warm-up */
    assert_int_equal(p3d_time_rank_sums(&t, 0, s), 2); /* 1 and 3 */
    assert_true(s[P3D_SUM_STEP] == 200 + 400);
    assert_true(s[P3D_SUM_COMPUTE] == 120);
    assert_true(s[P3D_SUM_EXPOSED] == 50);
    assert_true(s[P3D_SUM_IDLE] == 20);
    assert_true(s[P3D_SUM_BUBBLE] == 8);
    assert_true(s[P3D_SUM_LBL + P3D_LBL_TP] == 40);
    assert_true(s[P3D_SUM_LBL + P3D_LBL_PP] == 10);
    assert_true(s[P3D_SUM_LBL + P3D_LBL_DP] == 0);
    assert_int_equal(p3d_time_rank_sums(&t, 1, s), 0); /* no such rank */
    assert_true(s[P3D_SUM_STEP] == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_sums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
