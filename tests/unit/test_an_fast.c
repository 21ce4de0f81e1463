/*
 * test_an_fast.c - the analyzer's shortcuts give what the long way
 * gives: p3d_iv_minus_from (a search from a hint) equals p3d_iv_minus
 * whatever the hint and the order of the queries; a rank loaded with a
 * shift (p3d_tload_shift) equals the rank loaded and then shifted; the
 * inline record walk (p3d_reader_next_inl) hands out the records
 * p3d_reader_next does, chunk ends, unknown and damaged records included;
 * the period search (four signatures at a time) finds what the plain
 * element-by-element search finds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_reader.h"
#include "p3d_time.h"
#include "p3d_util.h"
#include "test_an_build.h"
#include "test_time_util.h"

#define COMM 0x55ull

static void test_iv_minus_from(void **state)
{
    struct p3d_ivs u = {0};
    size_t hint = 0;

    (void)state;
    srand(7);
    for (int i = 0; i < 300; i++) { /* a union with gaps */
        int64_t s = (int64_t)i * 100 + rand() % 40;
        p3d_ivs_add(&u, s, s + 10 + rand() % 50);
    }
    p3d_ivs_union(&u);
    assert_true(u.n > 50);
    for (int q = 0; q < 20000; q++) {
        int64_t s0 = rand() % 31000 - 500, e0 = s0 + rand() % 700 - 50;
        if (q % 3) /* mostly ascending, as the callers query */
            s0 = q + rand() % 5, e0 = s0 + rand() % 300;
        if (q % 97 == 0)
            hint = (size_t)rand() % (u.n + 3); /* any hint */
        assert_int_equal(p3d_iv_minus_from(s0, e0, &u, &hint),
                         p3d_iv_minus(s0, e0, &u));
        assert_true(hint <= u.n);
    }
    p3d_ivs_free(&u);
}

static void test_load_shifted(void **state)
{
    static struct tab_file f;
    struct loaded a, b;
    const int64_t d = -123456789;

    (void)state;
    tab_init(&f, 0, 1);
    tab_op(&f, 1, COMM, 0, P3D_OP_ALLREDUCE, 1000);
    tab_gpu(&f, 1, 1005, 1020);
    tab_op(&f, 2, COMM, 1, P3D_OP_ALLREDUCE, 2000); /* host times only */
    tab_op(&f, 3, COMM, 2, P3D_OP_ALLREDUCE, 3000);
    tab_gpu(&f, 3, 3002, 3040);
    assert_int_equal(tab_write(&f, "an-fast-shift"), 0);
    load_rank(&a, f.path, 0);
    p3d_time_shift_ops(&a.tl, d);
    load_rank(&b, f.path, d);
    assert_int_equal(a.tl.n_ops, 3);
    assert_int_equal(b.tl.n_ops, 3);
    for (size_t i = 0; i < 3; i++) {
        const struct p3d_top *x = &a.tl.ops[i], *y = &b.tl.ops[i];
        assert_int_equal(x->h0, y->h0);
        assert_int_equal(x->h1, y->h1);
        assert_int_equal(x->hs, y->hs);
        assert_int_equal(x->hg, y->hg);
        assert_int_equal(x->s, y->s);
        assert_int_equal(x->e, y->e);
        assert_int_equal(x->has_gpu, y->has_gpu);
    }
    assert_int_equal(b.tl.ops[0].s, 1005 + d);
    assert_int_equal(b.tl.ops[1].e, 2010 + d);
    /* the shift is for one load only */
    p3d_time_unload(&b.tl, b.ld);
    p3d_time_load_rank(&b.job, &b.tl, 0, b.ld, 0);
    assert_int_equal(b.tl.ops[0].s, 1005);
    unload_rank(&a);
    unload_rank(&b);
    unlink(f.path);
}

/* Walk the file both ways; the same records (by offset) and the same
 * end, truncation and messages. */
static void same_walk(const char *path)
{
    struct p3d_reader a, b;
    const struct p3d_rec_hdr *ha, *hb;
    int ra, rb, n = 0;

    assert_int_equal(p3d_reader_open(&a, path), 0);
    assert_int_equal(p3d_reader_open(&b, path), 0);
    do {
        ra = p3d_reader_next(&a, &ha);
        rb = p3d_reader_next_inl(&b, &hb);
        assert_int_equal(ra, rb);
        if (ra > 0) {
            assert_int_equal(p3d_reader_offset(&a, ha),
                             p3d_reader_offset(&b, hb));
            assert_int_equal(ha->tag, hb->tag);
            n++;
        }
    } while (ra > 0);
    assert_true(n > 3);
    assert_int_equal(a.truncated, b.truncated);
    assert_int_equal(a.corrupt, b.corrupt);
    assert_int_equal(a.n_records, b.n_records);
    assert_string_equal(a.msg, b.msg);
    p3d_reader_close(&a);
    p3d_reader_close(&b);
}

static void test_reader_inline(void **state)
{
    static struct tab_file f;
    struct p3d_rec_hdr *u;
    struct p3d_rec_op *o;

    (void)state;
    tab_init(&f, 0, 1);
    for (int i = 0; i < 40; i++) {
        tab_op(&f, (uint64_t)i, COMM, (uint64_t)i, P3D_OP_ALLREDUCE, 100);
        tab_gpu(&f, (uint64_t)i, 105, 110);
    }
    u = (void *)(f.buf + f.off); /* an unknown optional record: skipped */
    u->tag = 0x8fff;
    u->len = 24;
    f.off += 24;
    o = tab_op(&f, 99, COMM, 99, P3D_OP_ALLREDUCE, 100);
    o->h.len = sizeof(*o) + 8; /* longer than its struct: still an op */
    f.off += 8;
    tab_op(&f, 100, COMM, 100, P3D_OP_ALLREDUCE, 100);
    assert_int_equal(tab_write(&f, "an-fast-walk"), 0);
    same_walk(f.path);
    o->h.len = 12; /* not a multiple of 8: the file is damaged here */
    assert_int_equal(tab_write(&f, "an-fast-walk"), 0);
    same_walk(f.path);
    o->h.len = 16; /* too short for an op */
    assert_int_equal(tab_write(&f, "an-fast-walk"), 0);
    same_walk(f.path);
    unlink(f.path);
}

/* The search as it was written first, one signature at a time. */
static size_t period_ref(const uint64_t *sig, size_t n, size_t *r0,
                         size_t *r1)
{
    size_t best = 0, best_cov = 0;

    *r0 = *r1 = 0;
    for (size_t p = 1; p <= n / 2 && best_cov < n; p++) {
        size_t i = 0, j;
        while (i + p < n) {
            if ((n - p - i) + p <= best_cov)
                break;
            if (sig[i] != sig[i + p]) {
                i++;
                continue;
            }
            for (j = i + 1; j + p < n && sig[j] == sig[j + p]; j++)
                ;
            if (j - i >= p && j - i + p > best_cov) {
                best = p;
                best_cov = j - i + p;
                *r1 = j + p;
                *r0 = *r1 - best_cov;
            }
            i = j;
        }
    }
    return best;
}

/* Periodic stretches (some with an inner loop), noise, set-up and
 * tear-down of every length
 * (around the unrolled loops' steps of four), few distinct signatures
 * (many accidental runs). */
static void test_period_same(void **state)
{
    uint64_t sig[700];
    int found = 0;

    (void)state;
    srand(11);
    for (int t = 0; t < 3000; t++) {
        size_t n = (size_t)(rand() % 700), per = (size_t)(1 + rand() % 40);
        size_t head = n ? (size_t)rand() % (n / 3 + 1) : 0, r0, r1, q0, q1;
        int alpha = 2 + rand() % 6, noise = rand() % 50;
        /* half of them a micro-batch loop of `nest` ops repeated, then
         * three step ops: the sub-period the search's guess may take */
        size_t nest = rand() % 2 ? (size_t)(1 + rand() % 8) : 0;
        for (size_t i = 0; i < n; i++) {
            sig[i] = i < head || i > n - head / 2
                         ? (uint64_t)(rand() % alpha)
                         : (uint64_t)(nest && (i - head) % per < per - 3
                                          ? (i - head) % per % nest
                                          : (i - head) % per) * 7 + 100;
            if (noise && rand() % (noise * 10 + 1) == 0)
                sig[i] = (uint64_t)(rand() % alpha);
        }
        size_t p = p3d_steps_period(sig, n, &r0, &r1);
        size_t ref = period_ref(sig, n, &q0, &q1);
        assert_int_equal(p, ref);
        assert_int_equal(r0, q0);
        assert_int_equal(r1, q1);
        found += p == per;
    }
    assert_true(found > 1000); /* the sequences were periodic */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iv_minus_from),
        cmocka_unit_test(test_load_shifted),
        cmocka_unit_test(test_reader_inline),
        cmocka_unit_test(test_period_same),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
