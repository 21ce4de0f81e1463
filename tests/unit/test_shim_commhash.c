/*
 * test_shim_commhash.c - NCCL's commHash as recomputed by the shim must
 * reproduce the values NCCL 2.28 itself produced on an H200 (known
 * vectors of reference/nccl.md section 4.5).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "p3d_commhash.h"

#define WORLD 0x28b62a7910c299a6ull

static void test_shim_commhash_first_split(void **state)
{
    (void)state;
    assert_int_equal(p3d_commhash_split(WORLD, 1, 0), 0x40c18fe9332183a7ull);
    assert_int_equal(p3d_commhash_split(WORLD, 1, 1), 0x5ff0b617c3e00a2ull);
}

static void test_shim_commhash_second_split(void **state)
{
    (void)state;
    assert_int_equal(p3d_commhash_split(WORLD, 2, 0), 0x947b6813c01f87bfull);
    assert_int_equal(p3d_commhash_split(WORLD, 2, 1), 0xed254489827506ceull);
}

/* NCCL eats the three fields separately: one 16-byte eat differs. */
static void test_shim_commhash_split_is_three_eats(void **state)
{
    struct {
        uint64_t parent;
        int32_t count;
        int32_t color;
    } packed = {WORLD, 1, 0};

    (void)state;
    assert_int_not_equal(p3d_commhash_bytes(&packed, sizeof(packed)),
                         p3d_commhash_split(WORLD, 1, 0));
}

/* Root hash: all 128 bytes matter, and it is getHash with acc {1,1}. */
static void test_shim_commhash_root(void **state)
{
    unsigned char id[128] = {0};
    uint64_t a, b;

    (void)state;
    a = p3d_commhash_root(id);
    assert_int_equal(a, p3d_commhash_bytes(id, 128));
    id[127] = 1;
    b = p3d_commhash_root(id);
    assert_int_not_equal(a, b);
    assert_int_not_equal(p3d_commhash_bytes(id, 120),
                         p3d_commhash_bytes(id, 128));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shim_commhash_first_split),
        cmocka_unit_test(test_shim_commhash_second_split),
        cmocka_unit_test(test_shim_commhash_split_is_three_eats),
        cmocka_unit_test(test_shim_commhash_root),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
