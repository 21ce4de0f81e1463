/*
 * test_an_huge.c - after p3d_malloc_tune, memory the heap grows by and
 * blocks mapped on their own are advised for transparent huge pages
 * (the kernel's "hg" flag on their mapping), and the allocation
 * functions still keep and zero what they promise.  The flag checks are
 * skipped where the kernel has no THP or it is off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_util.h"

#define MIB ((size_t)1 << 20)

/* THP available and not "never". */
static int thp_on(void)
{
    char line[256] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

    if (!f)
        return 0;
    if (!fgets(line, sizeof(line), f))
        line[0] = 0;
    fclose(f);
    return line[0] && !strstr(line, "[never]");
}

/* Whether the mapping holding address a has VmFlags "hg". */
static int advised(const void *a)
{
    char line[512];
    int in = 0, hg = -1;
    FILE *f = fopen("/proc/self/smaps", "r");
    unsigned long lo, hi;

    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping */
            in = (uintptr_t)a >= lo && (uintptr_t)a < hi;
            continue;
        }
        if (in && !strncmp(line, "VmFlags:", 8)) {
            hg = strstr(line, " hg") != NULL;
            break;
        }
    }
    fclose(f);
    assert_int_not_equal(hg, -1); /* the address is mapped */
    return hg;
}

/* The middle of a block: inside its whole huge pages, if any. */
static const void *mid(const void *p, size_t n)
{
    return (const char *)p + n / 2;
}

static void test_heap_growth_advised(void **state)
{
    enum { N = 24 };
    void *p[N];
    int n_adv = 0;

    (void)state;
    p3d_malloc_tune();
    if (!thp_on())
        skip();
    for (int i = 0; i < N; i++) { /* 4 MiB each: heap, not mapped */
        p[i] = p3d_xmalloc(4 * MIB);
        n_adv += advised(mid(p[i], 4 * MIB));
    }
    /* the heap grew by 96 MiB: all of it advised (a block may sit in
     * memory the heap had before the tuning, not more than one) */
    assert_true(n_adv >= N - 1);
    for (int i = 0; i < N; i++)
        free(p[i]);
}

static void test_grown_block_advised(void **state)
{
    uint32_t *v = NULL;
    size_t cap = 0;

    (void)state;
    p3d_malloc_tune();
    for (size_t i = 0; i < 3 * MIB; i++) { /* 12 MiB, grown by doubling */
        cap = p3d_grow((void **)&v, cap, i, sizeof(*v));
        v[i] = (uint32_t)i * 2654435761u;
    }
    for (size_t i = 0; i < 3 * MIB; i++)
        assert_int_equal(v[i], (uint32_t)i * 2654435761u);
    for (size_t i = 3 * MIB; i < cap; i++)
        assert_int_equal(v[i], 0); /* p3d_grow zeroes the new part */
    if (thp_on())
        assert_true(advised(mid(v, cap * sizeof(*v))));
    free(v);
}

static void test_mapped_block_advised(void **state)
{
    size_t n = 48 * MIB; /* over the mapping threshold (32 MiB) */
    unsigned char *p, *z;

    (void)state;
    p3d_malloc_tune();
    p = p3d_xmalloc(n);
    memset(p, 7, n);
    p = p3d_xrealloc(p, 2 * n, 1);
    assert_int_equal(p[0], 7);
    assert_int_equal(p[n - 1], 7);
    z = p3d_xcalloc(n, 1);
    assert_int_equal(z[n / 2], 0);
    if (thp_on()) {
        assert_true(advised(mid(p, 2 * n)));
        assert_true(advised(mid(z, n)));
    }
    free(p);
    free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_growth_advised),
        cmocka_unit_test(test_grown_block_advised),
        cmocka_unit_test(test_mapped_block_advised),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
