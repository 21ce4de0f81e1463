/*
 * test_model_dist.c - model/p3d_dist.c: every rank file has exactly one
 * reader, whose block holds it, for any number of files and processes;
 * a scanned rank survives the trip to bytes and back (its comm index
 * included), and cut bytes are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_dist.h"
#include "p3d_job.h"
#include "p3d_util.h"

static void test_blocks_partition(void **state)
{
    (void)state;
    for (int np = 2; np <= 9; np++)
        for (int n = 0; n <= 70; n++) {
            struct p3d_dist d = {0, np, 32767, NULL, NULL, NULL, NULL};
            int next = 0;
            for (int p = 0; p < np; p++) {
                int lo, hi;
                p3d_dist_block(&d, n, p, &lo, &hi);
                assert_int_equal(lo, next); /* in order, no gap */
                assert_true(hi >= lo);
                for (int i = lo; i < hi; i++)
                    assert_int_equal(p3d_dist_owner(&d, n, i), p);
                next = hi;
            }
            assert_int_equal(next, n);
        }
}

static void fill_rank(struct p3d_rank *r)
{
    static const char cmd[] = "python\0train.py\0--tp\0002";

    memset(r, 0, sizeof(*r));
    r->path = p3d_xstrdup("/x/rank-00007.p3d");
    r->rank = 7;
    r->closed = 1;
    r->n_ops = 123;
    r->cmdline = p3d_xmalloc(sizeof(cmd));
    memcpy(r->cmdline, cmd, sizeof(cmd));
    r->cmdline_len = sizeof(cmd);
    r->n_comms = 3;
    r->comms = p3d_xcalloc(3, sizeof(*r->comms));
    for (int c = 0; c < 3; c++) {
        r->comms[c].hash = 0x1000 + (uint64_t)c;
        r->comms[c].nranks = 2 << c;
        r->comms[c].st[P3D_OP_ALLREDUCE].calls = 10 + (uint64_t)c;
        p3d_map_put(&r->idx, r->comms[c].hash, c);
    }
    strcpy(r->warn, "a warning");
}

static void test_rank_round_trip(void **state)
{
    struct p3d_rank a, b;
    struct p3d_bytes bytes = {0};
    struct p3d_bytes_in in;

    (void)state;
    fill_rank(&a);
    memset(&b, 0, sizeof(b));
    p3d_rank_pack(&a, &bytes);
    in = (struct p3d_bytes_in){bytes.p, bytes.n, 0, 0};
    assert_int_equal(p3d_rank_unpack(&b, &in), 0);
    assert_int_equal(in.off, bytes.n);
    assert_string_equal(b.path, a.path);
    assert_int_equal(b.rank, 7);
    assert_int_equal(b.n_ops, 123);
    assert_int_equal(b.cmdline_len, a.cmdline_len);
    assert_memory_equal(b.cmdline, a.cmdline, a.cmdline_len);
    assert_int_equal(b.n_comms, 3);
    for (int c = 0; c < 3; c++) {
        assert_int_equal(p3d_map_get(&b.idx, 0x1000 + (uint64_t)c), c);
        assert_int_equal(b.comms[c].st[P3D_OP_ALLREDUCE].calls, 10 + c);
    }
    assert_null(b.sink);
    assert_string_equal(b.warn, "a warning");
    p3d_rank_free(&b);
    /* cut anywhere: refused, nothing leaked or read past the end */
    for (size_t cut = 0; cut < bytes.n; cut += 97) {
        memset(&b, 0, sizeof(b));
        in = (struct p3d_bytes_in){bytes.p, cut, 0, 0};
        assert_int_equal(p3d_rank_unpack(&b, &in), -1);
        p3d_rank_free(&b);
    }
    p3d_bytes_free(&bytes);
    p3d_rank_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_partition),
        cmocka_unit_test(test_rank_round_trip),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
