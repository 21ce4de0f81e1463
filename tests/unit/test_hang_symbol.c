/*
 * test_hang_symbol.c - offline symbolization of recorded pcs: a pc
 * inside a function of a readable ELF file maps to that function's name
 * and offset; a pc of a module whose file is gone is shown as
 * module+offset with a clear note; a pc outside every module says so.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "p3d_symbol.h"

/* A module record for the object holding `addr`, path overridable. */
static struct p3d_rec_module *module_of(void *addr, const char *path)
{
    Dl_info di;
    struct p3d_rec_module *m;
    const char *p;

    assert_true(dladdr(addr, &di) != 0);
    p = path ? path : di.dli_fname;
    m = calloc(1, sizeof(*m) + strlen(p) + 1);
    m->base = (uint64_t)(uintptr_t)di.dli_fbase;
    m->size = 64u << 20;
    strcpy(m->path, p);
    return m;
}

__attribute__((noinline, used)) int hang_symbol_target(int x)
{
    return x * 3 + 1;
}

static void test_hang_symbol_readable(void **state)
{
    char exe[4096], buf[512];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    struct p3d_rec_module *m;
    const struct p3d_rec_module *mods[1];
    uint64_t pc = (uint64_t)(uintptr_t)hang_symbol_target + 5;

    (void)state;
    assert_true(k > 0);
    exe[k] = '\0';
    m = module_of((void *)hang_symbol_target, exe);
    mods[0] = m;
    p3d_symbol_pc(buf, sizeof(buf), pc, mods, 1);
    assert_non_null(strstr(buf, "hang_symbol_target+0x5 ("));
    free(m);
}

static void test_hang_symbol_unreadable(void **state)
{
    char buf[512];
    struct p3d_rec_module *m =
        module_of((void *)hang_symbol_target, "/nonexistent/libgone.so");
    const struct p3d_rec_module *mods[1] = {m};
    uint64_t pc = m->base + 0x1234;

    (void)state;
    p3d_symbol_pc(buf, sizeof(buf), pc, mods, 1);
    assert_string_equal(buf, "libgone.so+0x1234 [not symbolized: "
                             "/nonexistent/libgone.so not readable here]");
    p3d_symbol_pc(buf, sizeof(buf), 0x10, mods, 1);
    assert_string_equal(buf, "0x10 [no module]");
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hang_symbol_readable),
        cmocka_unit_test(test_hang_symbol_unreadable),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);

    p3d_symbol_free();
    return r;
}
