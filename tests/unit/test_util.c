/*
 * test_util.c - the analyzer's util layer: the binary search every sorted
 * lookup uses (P3D_COUNT_LE: symbols, interval unions), the comparator
 * chain (P3D_CMP), growing buffers that come back zeroed, freeing a list
 * of buffers, and the rank-list formatter of every view.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_bucket.h"
#include "p3d_bytes.h"
#include "p3d_map.h"
#include "p3d_strbuf.h"
#include "p3d_util.h"

struct pt {
    int64_t key;
    int tag;
};

static void test_count_le(void **state)
{
    struct pt a[] = {{-5, 0}, {1, 1}, {3, 2}, {3, 3}, {3, 4}, {9, 5}};
    size_t n = sizeof(a) / sizeof(a[0]);

    (void)state;
    assert_int_equal(P3D_COUNT_LE(a, 0, key, 100), 0);   /* empty */
    assert_int_equal(P3D_COUNT_LE(a, n, key, -6), 0);    /* all above */
    assert_int_equal(P3D_COUNT_LE(a, n, key, -5), 1);    /* equal counts */
    assert_int_equal(P3D_COUNT_LE(a, n, key, 2), 2);
    assert_int_equal(P3D_COUNT_LE(a, n, key, 3), 5);     /* past the run */
    assert_int_equal(P3D_COUNT_LE(a, n, key, 8), 5);
    assert_int_equal(P3D_COUNT_LE(a, n, key, 9), 6);
    assert_int_equal(P3D_COUNT_LE(a, n, key, INT64_MAX), 6);
    /* every cut of every prefix agrees with a linear count */
    for (size_t m = 0; m <= n; m++)
        for (int64_t v = -7; v <= 10; v++) {
            size_t lin = 0;
            while (lin < m && a[lin].key <= v)
                lin++;
            assert_int_equal(P3D_COUNT_LE(a, m, key, v), lin);
        }
}

static int cmp_pt(const struct pt *x, const struct pt *y)
{
    return P3D_CMP(x->key, y->key) ?: P3D_CMP(x->tag, y->tag);
}

static void test_cmp_chain(void **state)
{
    struct pt lo = {INT64_MIN, 0}, hi = {INT64_MAX, 0}, a = {3, 1},
              b = {3, 2};
    uint64_t big = UINT64_MAX, small = 1;

    (void)state;
    /* no subtraction inside: extremes do not overflow into a wrong sign */
    assert_int_equal(cmp_pt(&lo, &hi), -1);
    assert_int_equal(cmp_pt(&hi, &lo), 1);
    assert_int_equal(cmp_pt(&a, &b), -1); /* the second key decides */
    assert_int_equal(cmp_pt(&b, &a), 1);
    assert_int_equal(cmp_pt(&a, &a), 0);
    assert_int_equal(P3D_CMP(big, small), 1);
}

static void test_grow_zeroes(void **state)
{
    int *v = NULL;
    size_t cap = 0;

    (void)state;
    cap = p3d_grow((void **)&v, cap, 0, sizeof(*v));
    assert_true(cap >= 1);
    for (size_t i = 0; i < cap; i++)
        v[i] = 7;
    size_t old = cap;
    cap = p3d_grow((void **)&v, cap, old, sizeof(*v));
    assert_true(cap > old);
    for (size_t i = old; i < cap; i++)
        assert_int_equal(v[i], 0);
    assert_int_equal(v[old - 1], 7);
    assert_int_equal(p3d_grow((void **)&v, cap, cap - 1, sizeof(*v)), cap);
    free(v);
}

static void test_free_all(void **state)
{
    char *a = p3d_xmalloc(8), *b = NULL, *c = p3d_xstrdup("x");

    (void)state;
    P3D_FREE_ALL(a, b, c); /* NULLs among them; leaks show under ASan */
}

static void test_fmt_ranks(void **state)
{
    int r[] = {0, 1, 2, 3, 8, 10, 11};
    char buf[64];

    (void)state;
    p3d_fmt_ranks(buf, sizeof(buf), r, 7);
    assert_string_equal(buf, "0-3,8,10,11"); /* a pair stays two */
    p3d_fmt_ranks(buf, sizeof(buf), r, 0);
    assert_string_equal(buf, "");
    {
        int many[64];
        char small[32];
        for (int i = 0; i < 64; i++)
            many[i] = 2 * i; /* no runs: every rank a number */
        p3d_fmt_ranks(small, sizeof(small), many, 64);
        assert_true(strlen(small) < sizeof(small));
        assert_non_null(strstr(small, ",..."));
    }
}

static void test_strbuf_grows_without_cutting(void **state)
{
    struct p3d_sb sb = P3D_SB_INIT;
    char big[300];

    (void)state;
    assert_string_equal(p3d_sb_str(&sb), ""); /* nothing added yet */
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    for (int i = 0; i < 100; i++) /* far past the first allocation */
        p3d_sb_addf(&sb, "%s%d", i ? "," : "", i);
    p3d_sb_add(&sb, ";");
    p3d_sb_addf(&sb, "%s", big); /* one piece longer than the room left */
    assert_int_equal(sb.len, strlen(sb.buf));
    assert_int_equal(strncmp(sb.buf, "0,1,2,", 6), 0);
    assert_non_null(strstr(sb.buf, ",98,99;x"));
    assert_int_equal(strlen(strchr(sb.buf, ';') + 1), sizeof(big) - 1);
    p3d_sb_reset(&sb);
    assert_int_equal(sb.len, 0);
    assert_string_equal(p3d_sb_str(&sb), "");
    p3d_sb_addf(&sb, "%s", "");
    assert_string_equal(p3d_sb_str(&sb), "");
    p3d_sb_free(&sb);
    assert_null(sb.buf);
}

/* Sums travel as their non-zero entries and add up into another array;
 * an index past the receiver's array, or cut bytes, are refused. */
static void test_bytes_sums(void **state)
{
    uint64_t a[6] = {0, 5, 0, 0, 9, 1}, into[6] = {1, 1, 1, 1, 1, 1};
    uint64_t small[3] = {0};
    struct p3d_bytes b = {0};
    struct p3d_bytes_in in;

    (void)state;
    p3d_bytes_put_sums(&b, a, 6);
    assert_int_equal(b.n, 8 + 3 * 16); /* the count, three entries */
    in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
    p3d_bytes_add_sums(&in, into, 6);
    assert_false(in.bad);
    assert_int_equal(into[1], 6);
    assert_int_equal(into[4], 10);
    assert_int_equal(into[5], 2);
    assert_int_equal(into[0] + into[2] + into[3], 3);
    in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
    p3d_bytes_add_sums(&in, small, 3); /* index 4 is past it */
    assert_true(in.bad);
    in = (struct p3d_bytes_in){b.p, b.n - 4, 0, 0};
    p3d_bytes_add_sums(&in, into, 6);
    assert_true(in.bad);
    p3d_bytes_free(&b);
}

/* Pieces come back in order, each padded to 8 bytes; a cut run is not
 * read as pieces. */
static void test_bytes_pieces(void **state)
{
    struct p3d_bytes b = {0};
    struct p3d_piece pc;
    size_t off = 0;

    (void)state;
    p3d_bytes_put_piece(&b, 1, 7, "abc", 3);
    p3d_bytes_put_piece(&b, 2, -1, NULL, 0);
    assert_int_equal(b.n % 8, 0);
    assert_int_equal(p3d_bytes_next_piece(&b, &off, &pc), 1);
    assert_int_equal(pc.kind, 1);
    assert_int_equal(pc.num, 7);
    assert_int_equal(pc.n, 3);
    assert_memory_equal(pc.p, "abc", 3);
    assert_int_equal(off % 8, 0);
    assert_int_equal(p3d_bytes_next_piece(&b, &off, &pc), 1);
    assert_int_equal(pc.kind, 2);
    assert_int_equal(pc.num, -1);
    assert_int_equal(pc.n, 0);
    assert_int_equal(p3d_bytes_next_piece(&b, &off, &pc), 0);
    off = 0;
    b.n -= 1; /* the last piece's head cut short */
    assert_int_equal(p3d_bytes_next_piece(&b, &off, &pc), 1);
    assert_int_equal(p3d_bytes_next_piece(&b, &off, &pc), -1);
    b.n = 20; /* inside the first piece's padding */
    off = 0;
    assert_int_equal(p3d_bytes_next_piece(&b, &off, &pc), -1);
    p3d_bytes_free(&b);
}

/* Items grouped by key in item order; keys out of range left out; an
 * index not made, or a key out of range, has none. */
static void test_bucket(void **state)
{
    int key[] = {2, 0, 2, -1, 1, 7, 0, 2}, n;
    struct p3d_bucket b = {0};
    const int *it;

    (void)state;
    assert_null(p3d_bucket_of(&b, 0, &n));
    assert_int_equal(n, 0);
    p3d_bucket_make(&b, key, sizeof(key) / sizeof(key[0]), 3);
    it = p3d_bucket_of(&b, 0, &n);
    assert_int_equal(n, 2);
    assert_int_equal(it[0], 1);
    assert_int_equal(it[1], 6);
    it = p3d_bucket_of(&b, 1, &n);
    assert_int_equal(n, 1);
    assert_int_equal(it[0], 4);
    it = p3d_bucket_of(&b, 2, &n);
    assert_int_equal(n, 3);
    assert_int_equal(it[0], 0);
    assert_int_equal(it[1], 2);
    assert_int_equal(it[2], 7);
    assert_null(p3d_bucket_of(&b, 3, &n));
    assert_int_equal(n, 0);
    assert_null(p3d_bucket_of(&b, -1, &n));
    p3d_bucket_free(&b);
    p3d_bucket_make(&b, NULL, 0, 0); /* nothing to group */
    assert_null(p3d_bucket_of(&b, 0, &n));
    p3d_bucket_free(&b);
}

/* p3d_map_push returns what the key had, so equal keys chain. */
static void test_map_push_chains(void **state)
{
    struct p3d_map m = {0};

    (void)state;
    assert_int_equal(p3d_map_push(&m, 42, 0), -1);
    assert_int_equal(p3d_map_push(&m, 7, 1), -1);
    assert_int_equal(p3d_map_push(&m, 42, 2), 0);
    assert_int_equal(p3d_map_push(&m, 42, 3), 2);
    assert_int_equal(p3d_map_get(&m, 42), 3);
    assert_int_equal(p3d_map_get(&m, 7), 1);
    for (int i = 0; i < 100; i++) /* through resizes */
        assert_int_equal(p3d_map_push(&m, 1000 + (uint64_t)i, i), -1);
    assert_int_equal(p3d_map_push(&m, 42, 4), 3);
    p3d_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_le),
        cmocka_unit_test(test_bucket),
        cmocka_unit_test(test_map_push_chains),
        cmocka_unit_test(test_bytes_sums),
        cmocka_unit_test(test_bytes_pieces),
        cmocka_unit_test(test_cmp_chain),
        cmocka_unit_test(test_grow_zeroes),
        cmocka_unit_test(test_free_all),
        cmocka_unit_test(test_fmt_ranks),
        cmocka_unit_test(test_strbuf_grows_without_cutting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
