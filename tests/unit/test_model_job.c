/*
 * test_model_job.c - the results a pass keeps in the job
 * (model/p3d_job.c: p3d_job_keep, p3d_job_result, p3d_job_drop): each
 * under its own key, replaced and freed once, all freed with the job.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_job.h"

static int n_freed;

static void count_free(void *res)
{
    n_freed++;
    free(res);
}

static const char key_a = 0, key_b = 0;

static void test_keep_and_find(void **state)
{
    struct p3d_job job;
    int *a = malloc(sizeof(int)), *b = malloc(sizeof(int));

    (void)state;
    memset(&job, 0, sizeof(job));
    n_freed = 0;
    assert_null(p3d_job_result(&job, &key_a));
    p3d_job_keep(&job, &key_a, a, count_free);
    p3d_job_keep(&job, &key_b, b, count_free);
    assert_ptr_equal(p3d_job_result(&job, &key_a), a);
    assert_ptr_equal(p3d_job_result(&job, &key_b), b);
    p3d_job_drop(&job, &key_a);
    assert_int_equal(n_freed, 1);
    assert_null(p3d_job_result(&job, &key_a));
    assert_ptr_equal(p3d_job_result(&job, &key_b), b); /* still there */
    p3d_job_drop(&job, &key_a);                        /* none: no-op */
    assert_int_equal(n_freed, 1);
    p3d_job_free(&job);
    assert_int_equal(n_freed, 2);
    assert_null(p3d_job_result(&job, &key_b));
}

static void test_keep_replaces(void **state)
{
    struct p3d_job job;
    int *first = malloc(sizeof(int)), *second = malloc(sizeof(int));

    (void)state;
    memset(&job, 0, sizeof(job));
    n_freed = 0;
    p3d_job_keep(&job, &key_a, first, count_free);
    p3d_job_keep(&job, &key_a, second, count_free); /* the pass ran again */
    assert_int_equal(n_freed, 1);
    assert_ptr_equal(p3d_job_result(&job, &key_a), second);
    assert_int_equal((int)job.n_results, 1);
    p3d_job_free(&job);
    assert_int_equal(n_freed, 2);
}

static void test_many_results(void **state)
{
    static const char keys[40];
    struct p3d_job job;

    (void)state;
    memset(&job, 0, sizeof(job));
    n_freed = 0;
    for (int i = 0; i < 40; i++) {
        int *v = malloc(sizeof(int));
        *v = i;
        p3d_job_keep(&job, &keys[i], v, count_free);
    }
    for (int i = 0; i < 40; i++)
        assert_int_equal(*(int *)p3d_job_result(&job, &keys[i]), i);
    p3d_job_keep(&job, &keys[7], NULL, NULL); /* kept without a free */
    assert_int_equal(n_freed, 1);
    assert_null(p3d_job_result(&job, &keys[7]));
    p3d_job_free(&job);
    assert_int_equal(n_freed, 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_and_find),
        cmocka_unit_test(test_keep_replaces),
        cmocka_unit_test(test_many_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
