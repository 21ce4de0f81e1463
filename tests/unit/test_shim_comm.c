/*
 * test_shim_comm.c - the communicator table: lookup, sequence counters
 * (per comm for collectives, per (comm, peer) for sends and receives
 * separately), split counters, unknown comms, removal and reuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "p3d_comm.h"

static int reset(void **state)
{
    (void)state;
    p3d_comm_clear();
    return 0;
}

static void test_shim_comm_add_find(void **state)
{
    int a = 0, b = 0;
    struct p3d_comm *c;

    (void)state;
    assert_null(p3d_comm_find(&a));
    c = p3d_comm_add(&a, 0x1234, 0, 4, 2, 1);
    assert_non_null(c);
    assert_ptr_equal(p3d_comm_find(&a), c);
    assert_null(p3d_comm_find(&b));
    assert_int_equal(c->hash, 0x1234);
    assert_int_equal(c->nranks, 4);
    assert_int_equal(c->rank, 2);
    assert_int_equal(c->device, 1);
    assert_int_equal(c->unknown, 0);
    p3d_comm_remove(&a);
    assert_null(p3d_comm_find(&a));
}

static void test_shim_comm_sequences(void **state)
{
    int a = 0;
    struct p3d_comm *c = p3d_comm_add(&a, 1, 0, 3, 0, 0);

    (void)state;
    assert_int_equal(p3d_comm_next_coll(c), 0);
    assert_int_equal(p3d_comm_next_coll(c), 1);
    assert_int_equal(p3d_comm_next_p2p(c, 1, 0), 0);
    assert_int_equal(p3d_comm_next_p2p(c, 1, 0), 1);
    assert_int_equal(p3d_comm_next_p2p(c, 1, 1), 0); /* recv separate */
    assert_int_equal(p3d_comm_next_p2p(c, 2, 0), 0); /* per peer */
    assert_int_equal(p3d_comm_next_p2p(c, 3, 0), UINT64_MAX);
    assert_int_equal(p3d_comm_next_p2p(c, -1, 1), UINT64_MAX);
    assert_int_equal(p3d_comm_next_coll(c), 2); /* p2p do not count */
}

static void test_shim_comm_late_info(void **state)
{
    int a = 0;
    struct p3d_comm *c = p3d_comm_add(&a, 9, 7, -1, -1, -1);

    (void)state;
    assert_int_equal(c->info_known, 0);
    assert_int_equal(p3d_comm_next_p2p(c, 0, 0), UINT64_MAX);
    p3d_comm_set_info(c, 2, 1, 0);
    assert_int_equal(c->info_known, 1);
    assert_int_equal(c->parent_hash, 7);
    assert_int_equal(p3d_comm_next_p2p(c, 0, 0), 0);
    assert_int_equal(p3d_comm_next_p2p(c, 0, 0), 1);
}

static void test_shim_comm_unknown_and_split(void **state)
{
    int a = 0;
    struct p3d_comm *c = p3d_comm_get(&a);

    (void)state;
    assert_non_null(c);
    assert_int_equal(c->unknown, 1);
    assert_int_equal(c->hash, (uint64_t)(uintptr_t)&a);
    assert_ptr_equal(p3d_comm_get(&a), c);
    assert_int_equal(p3d_comm_next_split(c), 1);
    assert_int_equal(p3d_comm_next_split(c), 2);
    assert_null(p3d_comm_get(NULL));
}

static void test_shim_comm_reuse_after_remove(void **state)
{
    static char slots[3 * P3D_COMM_TABLE];
    struct p3d_comm *c;
    int i;

    (void)state;
    /* fill, remove, refill: removed entries are reused, lookups hold */
    for (i = 0; i < P3D_COMM_TABLE; i++)
        assert_non_null(p3d_comm_add(&slots[i], (uint64_t)i, 0, 2, 0, 0));
    assert_null(p3d_comm_add(&slots[P3D_COMM_TABLE], 1, 0, 2, 0, 0));
    for (i = 0; i < P3D_COMM_TABLE; i += 2)
        p3d_comm_remove(&slots[i]);
    for (i = 0; i < P3D_COMM_TABLE / 2; i++)
        assert_non_null(p3d_comm_add(&slots[P3D_COMM_TABLE + i], 5, 0, 2,
                                     0, 0));
    for (i = 1; i < P3D_COMM_TABLE; i += 2) {
        c = p3d_comm_find(&slots[i]);
        assert_non_null(c);
        assert_int_equal(c->hash, (uint64_t)i);
    }
    c = p3d_comm_add(&slots[1], 77, 0, 2, 0, 0); /* pointer reused */
    assert_int_equal(p3d_comm_find(&slots[1])->hash, 77);
    assert_int_equal(p3d_comm_next_coll(c), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_shim_comm_add_find, reset),
        cmocka_unit_test_setup(test_shim_comm_sequences, reset),
        cmocka_unit_test_setup(test_shim_comm_late_info, reset),
        cmocka_unit_test_setup(test_shim_comm_unknown_and_split, reset),
        cmocka_unit_test_setup(test_shim_comm_reuse_after_remove, reset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
