/*
 * test_report.c - the text report's pieces (analyzer/views/p3d_report*.c,
 * p3d_seedrow.c): --detail's words, a stage's bubble as two sums that add
 * up, and the findings with their next steps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_findings.h"
#include "p3d_report.h"
#include "p3d_vfmt.h"
#include "p3d_time.h"
#include "p3d_util.h"

static void test_detail_parse(void **state)
{
    unsigned d;

    (void)state;
    p3d_quiet = 1;
    assert_int_equal(p3d_detail_parse("ranks", &d), 0);
    assert_int_equal(d, P3D_DETAIL_RANKS);
    assert_int_equal(p3d_detail_parse("comms,map,time", &d), 0);
    assert_int_equal(d, P3D_DETAIL_COMMS | P3D_DETAIL_MAP | P3D_DETAIL_TIME);
    assert_int_equal(p3d_detail_parse("all", &d), 0);
    assert_int_equal(d, P3D_DETAIL_ALL);
    assert_int_not_equal(p3d_detail_parse("rank", &d), 0);
    assert_int_not_equal(p3d_detail_parse("ranks,bogus", &d), 0);
    assert_int_not_equal(p3d_detail_parse("", &d), 0);
    assert_int_not_equal(p3d_detail_parse(",", &d), 0);
}

/* The figures of a stage line, parsed back. */
static void parse_stage(const char *s, double v[5], char *sign)
{
    int n = sscanf(s, "stage %*d: bubble %lf%% = warm-up/cool-down %lf%% + "
                   "steady %lf%%; = waiting for the sender %lf%% + transfer "
                   "%lf%% %c", &v[0], &v[1], &v[2], &v[3], &v[4], sign);

    assert_int_equal(n, 6);
}

static void test_stage_parts_add_up(void **state)
{
    /* the time analysis's figures (rest = bubble - late - transfer,
     * p3d_bubble.c); the view only prints them */
    struct p3d_tstage g = {.stage = 1, .n_ranks = 4, .bubble_frac = 0.131,
                           .late_frac = 0.107, .transfer_frac = 0.018,
                           .fill_frac = 0.100, .steady_frac = 0.031,
                           .rest_frac = 0.006, .busy_frac = 0.636};
    struct p3d_tstage h = {.stage = 0, .n_ranks = 4, .bubble_frac = 0.080,
                           .late_frac = 0.070, .transfer_frac = 0.030,
                           .fill_frac = 0.050, .steady_frac = 0.030,
                           .rest_frac = -0.020, .busy_frac = 0.600};
    char b[400], sign;
    double v[5];

    (void)state;
    p3d_fmt_stage(b, sizeof(b), &g);
    parse_stage(b, v, &sign);
    assert_true(v[0] > 13.0 && v[0] < 13.2);
    assert_true(v[1] + v[2] > v[0] - 0.15 && v[1] + v[2] < v[0] + 0.15);
    assert_int_equal(sign, '+');
    assert_non_null(strstr(b, "+ the rest (sends waiting for their "
                              "receiver, net of receive time compute hid) "
                              "0.6%"));
    /* receives longer than the bubble: compute hid some of them */
    p3d_fmt_stage(b, sizeof(b), &h);
    parse_stage(b, v, &sign);
    assert_int_equal(sign, '-');
    assert_non_null(strstr(b, "- receive time that compute hid 2.0%"));
}

static char *report_of(const struct p3d_job *job, unsigned detail)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);

    assert_non_null(f);
    p3d_report_findings(f, job, detail);
    fclose(f);
    return buf;
}

static void test_findings_text(void **state)
{
    struct p3d_findings *fs;
    struct p3d_job job;
    char *s;

    (void)state;
    memset(&job, 0, sizeof(job));
    p3d_findings_job(&job); /* nothing analysed: no findings */
    fs = (struct p3d_findings *)p3d_findings_of(&job);
    s = report_of(&job, 0);
    assert_non_null(strstr(s, "findings: none"));
    free(s);
    fs->n = 8;
    for (int i = 0; i < fs->n; i++) {
        snprintf(fs->f[i].what, sizeof(fs->f[i].what), "finding %d", i);
        fs->f[i].next = "do this";
        fs->f[i].unit = "ms";
        fs->f[i].sev = P3D_SEV_WARN;
    }
    s = report_of(&job, 0);
    assert_non_null(strstr(s, "  1. [warn] finding 0\n     next: do this\n"));
    assert_non_null(strstr(s, "  6. [warn] finding 5\n"));
    assert_null(strstr(s, "finding 6"));
    assert_non_null(strstr(s, "... 2 more (--detail shows them)"));
    free(s);
    s = report_of(&job, P3D_DETAIL_ALL);
    assert_non_null(strstr(s, "  8. [warn] finding 7\n"));
    free(s);
    p3d_job_free(&job); /* frees the findings it keeps */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detail_parse),
        cmocka_unit_test(test_stage_parts_add_up),
        cmocka_unit_test(test_findings_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
