/*
 * test_model_discover.c - model/p3d_discover.c's two steps for
 * p3d-analyze-mpi --local: what two processes found, one through bytes,
 * becomes one job whose files keep the process that found them; a file
 * both found (a shared folder) counts once, as the lower process's, and
 * without a "two trace files" warning; a missing folder is counted, not
 * an error; cut bytes are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "p3d_bytes.h"
#include "p3d_discover.h"
#include "p3d_util.h"
#include "test_file_util.h"

static char root[256];
static int n_warnings, n_errors;

static void count_msg(void *ctx, const char *kind, const char *text)
{
    (void)ctx;
    (void)text;
    n_warnings += kind[0] == 'w';
    n_errors += kind[0] == 'e';
}

/* DIR/rank-0000R.p3d: a header of job "j", one process per rank. */
static void put_rank(const char *dir, int rank)
{
    char path[512], file[P3D_FILE_HDR_BYTES];
    struct p3d_file_hdr *h = (struct p3d_file_hdr *)file;
    FILE *f;

    memset(file, 0, sizeof(file));
    tfu_hdr_init(file, 4096, P3D_FILE_HDR_BYTES);
    h->rank = rank;
    h->world_size = 6;
    h->pid = 1000 + (uint64_t)rank;
    h->start_realtime_ns = 1700000000000000000ull;
    strcpy(h->job_id, "j");
    snprintf(path, sizeof(path), "%s/rank-%05d.p3d", dir, rank);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file, 1, sizeof(file), f), sizeof(file));
    fclose(f);
}

static int setup(void **state)
{
    char a[300], b[300], bad[320];
    FILE *f;

    (void)state;
    snprintf(root, sizeof(root), "%s/p3d-disc.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(root));
    snprintf(a, sizeof(a), "%s/a", root);
    snprintf(b, sizeof(b), "%s/b", root);
    mkdir(a, 0700);
    mkdir(b, 0700);
    put_rank(a, 0);
    put_rank(a, 1);
    put_rank(b, 2);
    put_rank(b, 3);
    snprintf(bad, sizeof(bad), "%s/rank-00005.p3d", a); /* no header */
    f = fopen(bad, "wb");
    fputs("short", f);
    fclose(f);
    p3d_msg_to = count_msg;
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];

    (void)state;
    p3d_msg_to = NULL;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd);
}

/* Process 1's walk of `paths`, through bytes, into process 0's found. */
static void add_other(struct p3d_found *f0, char **paths, int n)
{
    int ret;
    struct p3d_found *f1 = p3d_found_walk(paths, n, 1, &ret);
    struct p3d_bytes b = {0};
    struct p3d_bytes_in in;

    assert_int_equal(ret, 0);
    p3d_found_pack(f1, &b);
    p3d_found_free(f1);
    in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
    assert_int_equal(p3d_found_add(f0, &in, 1), 0);
    assert_int_equal(in.off, b.n);
    p3d_bytes_free(&b);
}

static void test_union_with_owners(void **state)
{
    char a[300], b[300], gone[300];
    char *p0[] = {a}, *p1[] = {b, a, gone}; /* 1 also sees 0's folder */
    struct p3d_jobset set;
    struct p3d_found *f0;
    int ret;

    (void)state;
    snprintf(a, sizeof(a), "%s/a", root);
    snprintf(b, sizeof(b), "%s/b", root);
    snprintf(gone, sizeof(gone), "%s/gone", root);
    n_warnings = n_errors = 0;
    f0 = p3d_found_walk(p0, 1, 1, &ret);
    assert_int_equal(ret, 0);
    assert_int_equal(p3d_found_files(f0), 3); /* two ranks, one bad */
    add_other(f0, p1, 3);
    p3d_found_jobs(f0, &set);
    assert_int_equal(set.n, 1);
    assert_int_equal(set.jobs[0].n_ranks, 5); /* 0-3, and 5 unreadable */
    for (int i = 0; i < 4; i++) {
        assert_int_equal(set.jobs[0].ranks[i].rank, i);
        assert_int_equal(set.jobs[0].ranks[i].owner, i < 2 ? 0 : 1);
    }
    assert_int_equal(set.jobs[0].ranks[4].rank, 5);
    assert_int_equal(set.jobs[0].ranks[4].owner, 0);
    assert_int_equal(n_warnings, 0); /* no "two trace files" */
    assert_int_equal(n_errors, 0);
    for (int k = 0; k < set.n; k++)
        p3d_job_free(&set.jobs[k]);
    free(set.jobs);
}

static void test_missing_folder_counted(void **state)
{
    char gone[300];
    char *p[] = {gone};
    int ret, before = p3d_n_errors;
    struct p3d_found *f;

    (void)state;
    snprintf(gone, sizeof(gone), "%s/gone", root);
    f = p3d_found_walk(p, 1, 1, &ret);
    assert_int_equal(ret, 0);
    assert_int_equal(p3d_found_missing(f), 1);
    assert_int_equal(p3d_found_files(f), 0);
    assert_int_equal(p3d_n_errors, before);
    p3d_found_free(f);
    f = p3d_found_walk(p, 1, 0, &ret); /* p3d-analyze: an error */
    assert_int_equal(ret, -1);
    assert_int_equal(p3d_n_errors, before + 1);
    p3d_found_free(f);
}

static void test_cut_bytes_refused(void **state)
{
    char b[300];
    char *p[] = {b};
    int ret;
    struct p3d_found *f = NULL, *g;
    struct p3d_bytes bytes = {0};

    (void)state;
    snprintf(b, sizeof(b), "%s/b", root);
    f = p3d_found_walk(p, 1, 1, &ret);
    p3d_found_pack(f, &bytes);
    p3d_found_free(f);
    for (size_t cut = 0; cut < bytes.n; cut += 7) {
        struct p3d_bytes_in in = {bytes.p, cut, 0, 0};
        g = p3d_found_walk(NULL, 0, 1, &ret);
        assert_int_equal(p3d_found_add(g, &in, 1), -1);
        p3d_found_free(g);
    }
    p3d_bytes_free(&bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_union_with_owners),
        cmocka_unit_test(test_missing_folder_counted),
        cmocka_unit_test(test_cut_bytes_refused),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
