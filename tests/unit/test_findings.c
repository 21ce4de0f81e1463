/*
 * test_findings.c - the findings (analyzer/findings/): which figures
 * become findings, their severity and order, and the next step each
 * group gets; a hung job gets no advice from its steps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_findings.h"
#include "p3d_hang.h"
#include "p3d_time.h"

struct fx {
    struct p3d_job job;
    struct p3d_time_res t;
    struct p3d_tstrag strag[2];
    struct p3d_tstage stages[2];
    struct p3d_hang_res hang;
};

/* A steady job: 3 iterations, compute 60%, nothing else set. */
static void fx_init(struct fx *x)
{
    memset(x, 0, sizeof(*x));
    x->t.n_iter = 3;
    x->t.have_compute = 1;
    x->t.f_compute = 0.6;
    x->t.strag = x->strag;
    x->t.stages = x->stages;
    x->t.pp = 1;
    x->job.time = &x->t;
}

static const struct p3d_finding *find(const struct p3d_job *job, int label)
{
    for (int i = 0; i < p3d_findings_of(job)->n; i++)
        if (p3d_findings_of(job)->f[i].label == label)
            return &p3d_findings_of(job)->f[i];
    return NULL;
}

static void test_groups_by_share(void **state)
{
    struct fx x;
    const struct p3d_finding *tp, *dp;

    (void)state;
    fx_init(&x);
    x.t.f_lbl[P3D_LBL_TP] = 0.25;      /* bad: >= 20% */
    x.t.f_lbl[P3D_LBL_DP] = 0.08;      /* warn: >= 5% */
    x.t.f_lbl[P3D_LBL_WORLD] = 0.049;  /* under 5%: none */
    p3d_findings_job(&x.job);
    assert_int_equal(p3d_findings_of(&x.job)->n, 2);
    tp = find(&x.job, P3D_LBL_TP);
    dp = find(&x.job, P3D_LBL_DP);
    assert_non_null(tp);
    assert_non_null(dp);
    assert_null(find(&x.job, P3D_LBL_WORLD));
    assert_int_equal(tp->sev, P3D_SEV_BAD);
    assert_int_equal(dp->sev, P3D_SEV_WARN);
    assert_ptr_equal(&p3d_findings_of(&x.job)->f[0], tp); /* most severe first */
    assert_true(tp->value > 24.9 && tp->value < 25.1);
    assert_string_equal(tp->unit, "% of step");
    assert_non_null(strstr(tp->next, "NVLink"));
    assert_non_null(strstr(dp->next, "overlap"));
    assert_non_null(strstr(dp->next, "bucket"));
    p3d_findings_free(&x.job);
    assert_null(p3d_findings_of(&x.job));
}

/* A folded expert TP group's time gets its own next step, not TP's. */
static void test_expert_tp_next(void **state)
{
    struct fx x;
    const struct p3d_finding *etp;

    (void)state;
    fx_init(&x);
    x.t.f_lbl[P3D_LBL_EXPERT_TP] = 0.12;
    p3d_findings_job(&x.job);
    etp = find(&x.job, P3D_LBL_EXPERT_TP);
    assert_non_null(etp);
    assert_non_null(strstr(etp->next, "--expert-tensor-parallel-size"));
    p3d_findings_free(&x.job);
}

static void test_no_compute_only_warns(void **state)
{
    struct fx x;
    const struct p3d_finding *tp;

    (void)state;
    fx_init(&x);
    x.t.have_compute = 0; /* NCCL time counts as exposed: an upper bound */
    x.t.f_lbl[P3D_LBL_TP] = 0.5;
    p3d_findings_job(&x.job);
    tp = find(&x.job, P3D_LBL_TP);
    assert_non_null(tp);
    assert_int_equal(tp->sev, P3D_SEV_WARN);
    assert_non_null(strstr(tp->what, "at most"));
    p3d_findings_free(&x.job);
}

static void test_pp_bubble_or_transfer(void **state)
{
    struct fx x;

    (void)state;
    fx_init(&x);
    x.t.f_lbl[P3D_LBL_PP] = 0.10;
    x.t.measured = 0.09; /* most of PP's time is the bubble */
    p3d_findings_job(&x.job);
    assert_non_null(strstr(find(&x.job, P3D_LBL_PP)->next,
                           "micro-batches"));
    p3d_findings_free(&x.job);
    x.t.measured = 0.01; /* mostly transfers */
    p3d_findings_job(&x.job);
    assert_non_null(strstr(find(&x.job, P3D_LBL_PP)->next, "link"));
    p3d_findings_free(&x.job);
}

static void test_bubble_straggler_idle(void **state)
{
    struct fx x;
    int kinds = 0;

    (void)state;
    fx_init(&x);
    x.t.pp = 2;
    x.t.theory = 0.10;
    x.t.measured = 0.16; /* 6 points above: bad */
    x.t.n_strag = 2;
    x.strag[0] = (struct p3d_tstrag){.rank = 5, .caused_ms = 30};
    x.strag[1] = (struct p3d_tstrag){.rank = 2, .caused_ms = 10};
    x.t.f_idle = 0.12;
    p3d_findings_job(&x.job);
    for (int i = 0; i < p3d_findings_of(&x.job)->n; i++) {
        const struct p3d_finding *f = &p3d_findings_of(&x.job)->f[i];
        if (strstr(f->what, "pipeline bubble")) {
            kinds |= 1;
            assert_int_equal(f->sev, P3D_SEV_BAD);
        }
        if (strstr(f->what, "rank 5 is a straggler"))
            kinds |= 2;
        if (strstr(f->what, "idle 12.0%"))
            kinds |= 4;
    }
    assert_int_equal(kinds, 7);
    p3d_findings_free(&x.job);
    /* a close second: no straggler named */
    x.strag[1].caused_ms = 25;
    p3d_findings_job(&x.job);
    for (int i = 0; i < p3d_findings_of(&x.job)->n; i++)
        assert_null(strstr(p3d_findings_of(&x.job)->f[i].what, "straggler"));
    p3d_findings_free(&x.job);
}

static void test_hang_first_no_step_advice(void **state)
{
    struct fx x;

    (void)state;
    fx_init(&x);
    x.t.f_lbl[P3D_LBL_TP] = 0.5;
    x.hang.detected = 1;
    x.hang.stall = 1;
    x.hang.n_waiting = 4;
    x.job.hang = &x.hang;
    p3d_findings_job(&x.job);
    assert_int_equal(p3d_findings_of(&x.job)->n, 1);
    assert_int_equal(p3d_findings_of(&x.job)->f[0].sev, P3D_SEV_BAD);
    assert_non_null(strstr(p3d_findings_of(&x.job)->f[0].what, "HUNG"));
    assert_non_null(strstr(p3d_findings_of(&x.job)->f[0].next, "NCCL_RAS_ENABLE"));
    p3d_findings_free(&x.job);
}

static void test_no_time(void **state)
{
    struct fx x;

    (void)state;
    fx_init(&x);
    x.job.time = NULL;
    p3d_findings_job(&x.job);
    assert_int_equal(p3d_findings_of(&x.job)->n, 0);
    p3d_findings_free(&x.job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_by_share),
        cmocka_unit_test(test_expert_tp_next),
        cmocka_unit_test(test_no_compute_only_warns),
        cmocka_unit_test(test_pp_bubble_or_transfer),
        cmocka_unit_test(test_bubble_straggler_idle),
        cmocka_unit_test(test_hang_first_no_step_advice),
        cmocka_unit_test(test_no_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
