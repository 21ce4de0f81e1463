/*
 * test_an_match_order.c - the matcher's result does not depend on the
 * order its members' ops arrive in: the same records are fed member after
 * member and round-robin in every permutation of the members, and from
 * concurrent threads, and every result must be the same, field by field,
 * as the one computed by hand (every member compared with the lowest
 * global rank of its instance).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_match.h"
#include "test_match_util.h"

#define CA 0xa1ull /* comm A: global ranks 0..3, comm rank = global */
#define CB 0xb2ull /* comm B: global ranks 5, 2, 7 at comm ranks 0, 1, 2 */
#define AR P3D_OP_ALLREDUCE
#define BC P3D_OP_BROADCAST
#define F32 7

struct rec { /* one op of one member */
    uint64_t comm, seq;
    int comm_rank, op;
    uint64_t count;
    int dtype, redop, root;
};

struct member {
    int rank;
    struct rec r[64];
    int n;
};

static struct member g_mem[6];
static int g_n_mem;

static void add(int rank, uint64_t comm, int comm_rank, uint64_t seq, int op,
                uint64_t count, int dtype, int redop, int root)
{
    struct member *m = NULL;

    for (int i = 0; i < g_n_mem; i++)
        if (g_mem[i].rank == rank)
            m = &g_mem[i];
    if (m == NULL) {
        m = &g_mem[g_n_mem++];
        m->rank = rank;
        m->n = 0;
    }
    m->r[m->n++] = (struct rec){comm, seq, comm_rank, op, count, dtype, redop,
                                root};
}

/* An all-reduce of 100 floats on comm A, seq s, unless said otherwise. */
static void add_a(int rank, uint64_t s, uint64_t count, int dtype, int redop)
{
    add(rank, CA, rank, s, AR, count, dtype, redop, -1);
}

/*
 * Comm A: seq 0 agrees; 1: the lowest rank is the odd one; 2: rank 2 is;
 * 3: a 2-2 split; 4: broadcast with a root, an op and a count differing;
 * 5: rank 3 skipped it (a gap in its seqs), rank 1 differs; 6: agrees;
 * 7: ranks 0 and 3 against 1 and 2.  Comm B: comm rank 0 is not the
 * lowest global rank.
 */
static void scenario(void)
{
    g_n_mem = 0;
    for (int r = 0; r < 4; r++) {
        add_a(r, 0, 100, F32, 0);
        add_a(r, 1, r == 0 ? 101 : 100, F32, 0);
        add_a(r, 2, r == 2 ? 101 : 100, F32, 0);
        add_a(r, 3, 100, r == 1 || r == 2 ? 9 : F32, 0);
        if (r == 2)
            add_a(r, 4, 8, F32, 0);
        else
            add(r, CA, r, 4, BC, r == 3 ? 9 : 8, F32, 0, r == 1 ? 1 : 0);
        if (r != 3)
            add_a(r, 5, 100, F32, r == 1 ? 2 : 0);
        add_a(r, 6, 100, F32, 0);
        add_a(r, 7, r == 0 || r == 3 ? 50 : 100, F32, 0);
    }
    add(5, CB, 0, 0, AR, 1, F32, 0, -1);
    add(2, CB, 1, 0, AR, 2, F32, 0, -1);
    add(7, CB, 2, 0, AR, 2, F32, 0, -1);
    add(5, CB, 0, 1, AR, 2, F32, 0, -1);
    add(2, CB, 1, 1, AR, 2, F32, 0, -1);
    add(7, CB, 2, 1, AR, 3, F32, 0, -1);
}

static void feed(struct p3d_matcher *m, const struct member *mb, int i)
{
    const struct rec *r = &mb->r[i];
    struct p3d_rec_op o;

    memset(&o, 0, sizeof(o));
    o.h.tag = P3D_REC_OP;
    o.h.len = sizeof(o);
    o.comm_hash = r->comm;
    o.seq = r->seq;
    o.op = (uint8_t)r->op;
    o.count = r->count;
    o.dtype = (uint8_t)r->dtype;
    o.redop = (uint8_t)r->redop;
    o.peer = r->root;
    o.comm_rank = r->comm_rank;
    p3d_matcher_op(m, mb->rank, r->comm_rank, &o);
}

/* Feed the members in order perm: one after another, or round-robin. */
static struct p3d_match_res run(const int *perm, int round_robin)
{
    struct p3d_matcher *m = p3d_matcher_new();
    struct p3d_job job;
    struct p3d_match_res res;

    if (round_robin) {
        for (int i = 0; i < 64; i++)
            for (int k = 0; k < g_n_mem; k++)
                if (i < g_mem[perm[k]].n)
                    feed(m, &g_mem[perm[k]], i);
    } else {
        for (int k = 0; k < g_n_mem; k++)
            for (int i = 0; i < g_mem[perm[k]].n; i++)
                feed(m, &g_mem[perm[k]], i);
    }
    memset(&job, 0, sizeof(job));
    p3d_matcher_finish(m, &job);
    res = *job.match;
    free(job.match);
    return res;
}

/* comm, seq, field, rank_a, rank_b, va, vb, op; in report order */
static const struct p3d_mismatch g_want[] = {
    {CA, 4, P3D_MM_OP, 0, 2, BC, AR, BC, -1, -1},
    {CA, 1, P3D_MM_COUNT, 0, 1, 101, 100, AR, -1, -1},
    {CA, 1, P3D_MM_COUNT, 0, 2, 101, 100, AR, -1, -1},
    {CA, 1, P3D_MM_COUNT, 0, 3, 101, 100, AR, -1, -1},
    {CA, 2, P3D_MM_COUNT, 0, 2, 100, 101, AR, -1, -1},
    {CA, 4, P3D_MM_COUNT, 0, 3, 8, 9, BC, -1, -1},
    {CA, 7, P3D_MM_COUNT, 0, 1, 50, 100, AR, -1, -1},
    {CA, 7, P3D_MM_COUNT, 0, 2, 50, 100, AR, -1, -1},
    {CB, 0, P3D_MM_COUNT, 2, 5, 2, 1, AR, -1, -1},
    {CB, 1, P3D_MM_COUNT, 2, 7, 2, 3, AR, -1, -1},
    {CA, 3, P3D_MM_DTYPE, 0, 1, F32, 9, AR, -1, -1},
    {CA, 3, P3D_MM_DTYPE, 0, 2, F32, 9, AR, -1, -1},
    {CA, 4, P3D_MM_ROOT, 0, 1, 0, 1, BC, -1, -1},
    {CA, 5, P3D_MM_REDOP, 0, 1, 0, 2, AR, -1, -1},
};
#define N_WANT ((int)(sizeof(g_want) / sizeof(g_want[0])))

static struct p3d_match_res want_res(void)
{
    struct p3d_match_res w;

    memset(&w, 0, sizeof(w));
    w.n_coll = 10;
    w.n_mismatch = N_WANT;
    w.n_kept = N_WANT;
    memcpy(w.mm, g_want, sizeof(g_want));
    return w;
}

/* Next permutation of p[0..n) in lexicographic order; 0 after the last. */
static int next_perm(int *p, int n)
{
    int i = n - 2, j = n - 1, t;

    while (i >= 0 && p[i] >= p[i + 1])
        i--;
    if (i < 0)
        return 0;
    while (p[j] <= p[i])
        j--;
    t = p[i], p[i] = p[j], p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--)
        t = p[a], p[a] = p[b], p[b] = t;
    return 1;
}

/* Every order gives what the first gives; that is the hand-made one. */
static void test_every_order_same(void **state)
{
    struct p3d_match_res first, got, want;
    int perm[6], n_perm = 0;

    (void)state;
    scenario();
    assert_int_equal(g_n_mem, 6);
    for (int i = 0; i < g_n_mem; i++)
        perm[i] = i;
    first = run(perm, 0);
    do {
        got = run(perm, 0);
        assert_same_match_res(&first, &got);
        got = run(perm, 1);
        assert_same_match_res(&first, &got);
        n_perm++;
    } while (next_perm(perm, g_n_mem));
    assert_int_equal(n_perm, 720);
    want = want_res();
    assert_same_match_res(&want, &first);
}

struct feeder {
    struct p3d_matcher *m;
    const struct member *mb;
};

static void *feeder_main(void *arg)
{
    const struct feeder *f = arg;

    for (int i = 0; i < f->mb->n; i++)
        feed(f->m, f->mb, i);
    return NULL;
}

/* As the reader threads do: one thread per member, all at once. */
static void test_threads_same(void **state)
{
    struct p3d_match_res want;

    (void)state;
    scenario();
    want = want_res();
    for (int rep = 0; rep < 50; rep++) {
        struct p3d_matcher *m = p3d_matcher_new();
        struct feeder f[6];
        pthread_t t[6];
        struct p3d_job job;
        for (int i = 0; i < g_n_mem; i++) {
            f[i] = (struct feeder){m, &g_mem[i]};
            assert_int_equal(pthread_create(&t[i], NULL, feeder_main, &f[i]),
                             0);
        }
        for (int i = 0; i < g_n_mem; i++)
            pthread_join(t[i], NULL);
        memset(&job, 0, sizeof(job));
        p3d_matcher_finish(m, &job);
        assert_same_match_res(&want, job.match);
        free(job.match);
    }
}

/*
 * More mismatches than are kept: 60 instances of 3 members, rank 2 odd in
 * each, rank 1 in the even ones: 90 found; the 64 kept are the first in
 * report order (seqs 0..41 give 63), whatever the order.
 */
static void test_kept_are_first(void **state)
{
    int perm[3] = {0, 1, 2};

    (void)state;
    g_n_mem = 0;
    for (int r = 0; r < 3; r++)
        for (uint64_t s = 0; s < 60; s++)
            add_a(r, s, r == 2 ? 101 : r == 1 && s % 2 == 0 ? 102 : 100,
                  F32, 0);
    do {
        for (int rr = 0; rr < 2; rr++) {
            struct p3d_match_res got = run(perm, rr);
            assert_int_equal(got.n_mismatch, 90);
            assert_int_equal(got.n_kept, P3D_MM_KEEP);
            assert_int_equal(got.mm[0].seq, 0);
            assert_int_equal(got.mm[0].rank_b, 1);
            assert_int_equal(got.mm[62].seq, 41);
            assert_int_equal(got.mm[62].rank_b, 2);
            assert_int_equal(got.mm[63].seq, 42);
            assert_int_equal(got.mm[63].rank_b, 1);
            for (int i = 0; i < P3D_MM_KEEP; i++)
                assert_int_equal(got.mm[i].rank_a, 0);
        }
    } while (next_perm(perm, 3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_order_same),
        cmocka_unit_test(test_threads_same),
        cmocka_unit_test(test_kept_are_first),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
