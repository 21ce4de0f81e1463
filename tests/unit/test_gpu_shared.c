/*
 * test_gpu_shared.c - the job-folder markers that tell a process its GPU
 * is shared with another process of the job (p3d_gpu_shared_claim).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "p3d_gpu.h"

static char dir[64];
static int dfd = -1; /* dir, as the writer holds the job folder */

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/p3d-shared-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return dfd >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[96];

    (void)state;
    close(dfd);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd);
}

/* The first process is alone; the second says it; the third is quiet. */
static void test_second_user_says_it_once(void **state)
{
    (void)state;
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node1", "0000:18:00.0"), 0);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node1", "0000:18:00.0"), 1);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node1", "0000:18:00.0"), 0);
}

/* Another GPU, or the same bus id on another host, is not shared. */
static void test_other_gpu_or_host_apart(void **state)
{
    (void)state;
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node1", "0000:18:00.0"), 0);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node1", "0000:2a:00.0"), 0);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node2", "0000:18:00.0"), 0);
}

/* A marker left by an earlier run in the same folder does not count. */
static void test_stale_marker_replaced(void **state)
{
    char path[160];
    struct timeval old[2] = {{0, 0}, {0, 0}};
    FILE *f;

    (void)state;
    snprintf(path, sizeof(path), "%s/.gpu-node1-0000:18:00.0", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    old[0].tv_sec = old[1].tv_sec = time(NULL) - 2 * P3D_GPU_MARKER_STALE_S;
    assert_int_equal(utimes(path, old), 0);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node1", "0000:18:00.0"), 0);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node1", "0000:18:00.0"), 1);
}

/* Markers of an exited process (a rerun into the same folder) do not
 * count, however fresh; a live process's count however old. */
static void test_marker_of_exited_process_replaced(void **state)
{
    char path[160];
    struct timeval old[2] = {{0, 0}, {0, 0}};
    pid_t child = fork();
    FILE *f;

    (void)state;
    assert_true(child >= 0);
    if (child == 0) {
        p3d_gpu_shared_claim(dfd, "node1", "0000:18:00.0");
        p3d_gpu_shared_claim(dfd, "node1", "0000:18:00.0"); /* .warned */
        _exit(0);
    }
    assert_int_equal(waitpid(child, NULL, 0), child);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node1", "0000:18:00.0"), 0);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node1", "0000:18:00.0"), 1);
    snprintf(path, sizeof(path), "%s/.gpu-node1-0000:2a:00.0", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%ld\n", (long)getppid());
    fclose(f);
    old[0].tv_sec = old[1].tv_sec = time(NULL) - 2 * P3D_GPU_MARKER_STALE_S;
    assert_int_equal(utimes(path, old), 0);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "node1", "0000:2a:00.0"), 1);
}

static void test_no_folder_no_claim(void **state)
{
    (void)state;
    assert_int_equal(p3d_gpu_shared_claim(-1, "h", "b"), 0);
    assert_int_equal(p3d_gpu_shared_claim(-1, "h", "b"), 0);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "a/b", "0000:18:00.0"), 0);
    assert_int_equal(p3d_gpu_shared_claim(dfd, "a/b", "0000:18:00.0"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_second_user_says_it_once, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_other_gpu_or_host_apart, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stale_marker_replaced, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_marker_of_exited_process_replaced,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_folder_no_claim, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
