/*
 * test_an_json.c - escaping of strings from traces (JSON and --dump text)
 * and the shape of one communicator in the JSON report.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_json.h"
#include "p3d_layout.h"
#include "p3d_util.h"

static char *capture_json(const char *s, size_t n, int text)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    if (text)
        p3d_text_str(f, s, n);
    else
        p3d_json_str(f, s, n);
    fclose(f);
    return out;
}

static void test_json_escaping(void **state)
{
    char *o;

    (void)state;
    o = capture_json("a\"b\\c\nd\te\x01\x7f", 11, 0);
    assert_string_equal(o, "\"a\\\"b\\\\c\\nd\\te\\u0001\\u007f\"");
    free(o);
    o = capture_json("h\xc3\xa9", 3, 0); /* bytes as Latin-1 */
    assert_string_equal(o, "\"h\\u00c3\\u00a9\"");
    free(o);
    o = capture_json("x\0y", 3, 0);
    assert_string_equal(o, "\"x\\u0000y\"");
    free(o);
}

static void test_text_escaping(void **state)
{
    char *o;

    (void)state;
    o = capture_json("a\0b\"\\\n\x80", 7, 1);
    assert_string_equal(o, "\"a\\0b\\\"\\\\\\n\\x80\"");
    free(o);
}

static void test_json_comm(void **state)
{
    struct p3d_job job;
    struct p3d_gcomm g;
    int members[] = {1, 3};
    char *out = NULL;
    size_t len = 0;
    FILE *f;

    (void)state;
    memset(&job, 0, sizeof(job));
    memset(&g, 0, sizeof(g));
    strcpy(job.job_id, "j\"1");
    job.world_size = 4;
    g.hash = 0xab;
    g.size = g.n_members = 2;
    g.members = members;
    g.labels = 1u << P3D_LBL_DP | 1u << P3D_LBL_DP_CP;
    g.label = P3D_LBL_DP_CP;
    g.label_first = P3D_LBL_DP;
    g.st[P3D_OP_REDUCESCATTER].calls = 4;
    g.st[P3D_OP_REDUCESCATTER].bytes = 4096;
    job.comms = &g;
    job.n_comms = 1;
    f = open_memstream(&out, &len);
    p3d_json_write(f, &job);
    fclose(f);
    assert_non_null(strstr(out, "\"schema\": \"p3d-analyze/1\""));
    assert_non_null(strstr(out, "\"id\": \"j\\\"1\""));
    assert_non_null(strstr(out, "{\"id\": \"0x00000000000000ab\", "
                           "\"label\": \"DP\", \"used_as\": \"DP-CP\", "
                           "\"labels\": [\"DP\", \"DP-CP\"], \"size\": "
                           "2, \"members\": [1, 3], "));
    assert_non_null(strstr(out, "\"ops\": 4, \"bytes\": 4096"));
    assert_non_null(strstr(out, "\"by_op\": {\"ReduceScatter\": {\"calls\": "
                           "4, \"bytes\": 4096}}"));
    assert_non_null(strstr(out, "\"missing_ranks\": [0, 1, 2, 3]"));
    assert_non_null(strstr(out, "\"layout\": null"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_escaping),
        cmocka_unit_test(test_text_escaping),
        cmocka_unit_test(test_json_comm),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
