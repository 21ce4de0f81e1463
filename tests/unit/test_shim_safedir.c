/*
 * test_shim_safedir.c - the trace-folder rule (p3d_safedir.c): which
 * links and folders inside a folder others can write are refused, and
 * that p3d_safedir_open_path walks and creates a path.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "p3d_safedir.h"

#define ME 1000u
#define OTHER 65534u

static struct stat st_of(unsigned uid, mode_t mode)
{
    struct stat st;

    memset(&st, 0, sizeof(st));
    st.st_uid = uid;
    st.st_mode = mode;
    return st;
}

/* A link in a shared folder: ours or the folder owner's only. */
static void test_safedir_links(void **state)
{
    struct stat shared = st_of(0, S_IFDIR | 01777);
    struct stat mine = st_of(ME, S_IFDIR | 0755);
    struct stat l_me = st_of(ME, S_IFLNK | 0777);
    struct stat l_other = st_of(OTHER, S_IFLNK | 0777);
    struct stat l_root = st_of(0, S_IFLNK | 0777);

    (void)state;
    assert_true(p3d_safedir_link_ok(&shared, &l_me, ME));
    assert_false(p3d_safedir_link_ok(&shared, &l_other, ME));
    assert_true(p3d_safedir_link_ok(&shared, &l_root, ME));
    assert_true(p3d_safedir_link_ok(&mine, &l_other, ME));
}

/* Folders of P3D_TRACE_DIR (lenient) and the job folder (strict). */
static void test_safedir_dirs(void **state)
{
    struct stat shared = st_of(0, S_IFDIR | 01777);
    struct stat mine = st_of(ME, S_IFDIR | 0755);
    struct stat d_other = st_of(OTHER, S_IFDIR | 0777);
    struct stat d_other_sticky = st_of(OTHER, S_IFDIR | 01777);
    struct stat d_me = st_of(ME, S_IFDIR | 0755);
    struct stat d_me_gw = st_of(ME, S_IFDIR | 0775);
    struct stat file = st_of(ME, S_IFREG | 0644);

    (void)state;
    assert_false(p3d_safedir_dir_ok(&shared, &d_other, ME, 0, 022));
    assert_true(p3d_safedir_dir_ok(&shared, &d_other_sticky, ME, 0, 022));
    assert_false(p3d_safedir_dir_ok(&shared, &d_other_sticky, ME, 1, 022));
    assert_true(p3d_safedir_dir_ok(&shared, &d_me, ME, 1, 022));
    assert_false(p3d_safedir_dir_ok(&shared, &d_me_gw, ME, 1, 022));
    assert_true(p3d_safedir_dir_ok(&shared, &d_me_gw, ME, 1, 002));
    assert_true(p3d_safedir_dir_ok(&mine, &d_other, ME, 1, 022));
    assert_false(p3d_safedir_dir_ok(&mine, &file, ME, 0, 022));
}

/* A relative path with "." and "//" is created and opened; a file on
 * the way is a plain error, not a refusal. */
static void test_safedir_open_path(void **state)
{
    char top[] = "/tmp/p3d-safedir-XXXXXX", path[96], cmd[64];
    const char *why = "unset";
    size_t bad = 0;
    struct stat st;
    int fd, own;

    (void)state;
    assert_non_null(mkdtemp(top));
    snprintf(path, sizeof(path), "%s/a/./b//c", top);
    fd = p3d_safedir_open_path(path, &why, &bad);
    assert_true(fd >= 0);
    assert_null(why);
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    close(fd);
    fd = open(top, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    own = p3d_safedir_open_own(fd, "own", &why);
    assert_true(own >= 0);
    assert_null(why);
    close(own);
    close(fd);
    snprintf(path, sizeof(path), "%s/f", top);
    close(open(path, O_CREAT | O_WRONLY, 0600));
    snprintf(path, sizeof(path), "%s/f/x", top);
    assert_int_equal(p3d_safedir_open_path(path, &why, &bad), -1);
    assert_int_equal(errno, ENOTDIR);
    assert_null(why);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safedir_links),
        cmocka_unit_test(test_safedir_dirs),
        cmocka_unit_test(test_safedir_open_path),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
