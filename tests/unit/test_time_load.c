/*
 * test_time_load.c - GPU times onto a rank's ops while it is loaded for
 * the time analysis: a GPU_OP record right after its op is put on it at
 * once, one before its op (or after another op) at the end; either way
 * the op gets the earliest start and latest end of its records, and when
 * an op_id was recorded twice the GPU times go to the last op read with
 * it, as they did when every record waited for the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_time.h"
#include "p3d_util.h"
#include "test_an_build.h"
#include "test_time_util.h"

#define COMM 0x55ull

static void load(struct loaded *l, struct tab_file *f, const char *name)
{
    assert_int_equal(tab_write(f, name), 0);
    load_rank(l, f->path, 0);
}

static void unload(struct loaded *l, struct tab_file *f)
{
    unload_rank(l);
    unlink(f->path);
}

/* op 1: two kernels, one right after it and one after op 2 (the end
 * join); op 2: its record came first; op 3: none (host times). */
static void test_early_and_late_records(void **state)
{
    static struct tab_file f;
    struct loaded l;

    (void)state;
    tab_init(&f, 0, 1);
    tab_op(&f, 1, COMM, 0, P3D_OP_ALLREDUCE, 100);
    tab_gpu(&f, 1, 105, 120);
    tab_gpu(&f, 2, 210, 230);
    tab_op(&f, 2, COMM, 1, P3D_OP_ALLREDUCE, 200);
    tab_gpu(&f, 1, 102, 125);
    tab_op(&f, 3, COMM, 2, P3D_OP_ALLREDUCE, 300);
    load(&l, &f, "time-load-early");
    assert_int_equal(l.tl.n_ops, 3);
    assert_int_equal(l.tl.src, P3D_TSRC_GPU);
    assert_int_equal(l.tl.n_placed, 2);
    assert_true(l.tl.ops[0].has_gpu);
    assert_int_equal(l.tl.ops[0].s, 102);
    assert_int_equal(l.tl.ops[0].e, 125);
    assert_true(l.tl.ops[1].has_gpu);
    assert_int_equal(l.tl.ops[1].s, 210);
    assert_int_equal(l.tl.ops[1].e, 230);
    assert_false(l.tl.ops[2].has_gpu);
    assert_int_equal(l.tl.ops[2].s, 300); /* host enter .. exit */
    assert_int_equal(l.tl.ops[2].e, 310);
    unload(&l, &f);
}

/* op_id 7 twice: its GPU record follows the first op, but belongs to the
 * second (the last read), which alone gets GPU times. */
static void test_op_id_twice(void **state)
{
    static struct tab_file f;
    struct loaded l;

    (void)state;
    tab_init(&f, 0, 1);
    tab_op(&f, 7, COMM, 0, P3D_OP_ALLREDUCE, 100);
    tab_gpu(&f, 7, 105, 120);
    tab_op(&f, 7, COMM, 1, P3D_OP_ALLREDUCE, 200);
    load(&l, &f, "time-load-twice");
    assert_int_equal(l.tl.n_ops, 2);
    assert_int_equal(l.tl.n_placed, 1);
    assert_false(l.tl.ops[0].has_gpu); /* load order within the op_id */
    assert_int_equal(l.tl.ops[0].s, 100);
    assert_int_equal(l.tl.ops[0].e, 110);
    assert_true(l.tl.ops[1].has_gpu);
    assert_int_equal(l.tl.ops[1].s, 105);
    assert_int_equal(l.tl.ops[1].e, 120);
    unload(&l, &f);
}

/* A kernel that ends before it starts ends at its start; the earlier
 * record's start decides, as in file order. */
static void test_clamp_in_file_order(void **state)
{
    static struct tab_file f;
    struct loaded l;

    (void)state;
    tab_init(&f, 0, 1);
    tab_op(&f, 1, COMM, 0, P3D_OP_ALLREDUCE, 100);
    tab_gpu(&f, 1, 150, 140); /* ends before it starts: e = s = 150 */
    tab_gpu(&f, 1, 110, 130);
    load(&l, &f, "time-load-clamp");
    assert_int_equal(l.tl.ops[0].s, 110);
    assert_int_equal(l.tl.ops[0].e, 150);
    unload(&l, &f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_early_and_late_records),
        cmocka_unit_test(test_op_id_twice),
        cmocka_unit_test(test_clamp_in_file_order),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
