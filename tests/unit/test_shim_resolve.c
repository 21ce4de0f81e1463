/*
 * test_shim_resolve.c - the resolver: finds libc symbols, finds a symbol
 * that only a library opened with RTLD_LOCAL defines (the PyTorch case,
 * via the scan), returns NULL for a missing one, and caches both.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_shim.h"

static void test_shim_resolve_global(void **state)
{
    (void)state;
    assert_ptr_equal(p3d_resolve("strlen", NULL), dlsym(RTLD_DEFAULT,
                                                        "strlen"));
}

static void test_shim_resolve_missing_and_alt(void **state)
{
    static void *slot;

    (void)state;
    assert_null(p3d_resolve("p3d_no_such_symbol_anywhere", NULL));
    /* the alt name is tried when the first is absent */
    assert_non_null(p3d_resolve("p3d_no_such_symbol_anywhere", "strlen"));
    assert_null(p3d_resolve_cached(&slot, "p3d_no_such_symbol_x", NULL));
    assert_non_null(slot); /* failure cached: no second scan */
    assert_null(p3d_resolve_cached(&slot, "p3d_no_such_symbol_x", NULL));
}

/* libm is opened RTLD_LOCAL: RTLD_NEXT/RTLD_DEFAULT miss it, the scan not */
static void test_shim_resolve_local_scope(void **state)
{
    void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    void *p;

    (void)state;
    if (h == NULL)
        skip();
    if (dlsym(RTLD_DEFAULT, "cbrtf") != NULL) {
        dlclose(h);
        skip(); /* libm is already global in this test program */
    }
    p = p3d_resolve("cbrtf", NULL);
    assert_ptr_equal(p, dlsym(h, "cbrtf"));
    dlclose(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shim_resolve_global),
        cmocka_unit_test(test_shim_resolve_missing_and_alt),
        cmocka_unit_test(test_shim_resolve_local_scope),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
