/*
 * test_time_join.c - the streaming join of the time analysis: instances
 * and Send/Recv pairs are joined across ranks merged one at a time, in
 * or out of seq order, folded exactly once when every member is merged
 * (not before), and what never completes is folded at the end.
 * Records past the last are appended without a lookup, in seq order.
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

#define N 1000

struct seen {
    int inst, pair, bad, pbad, dup;
    uint64_t bytes;
    uint64_t order[2 * N + 2]; /* seqs in the order folded */
};

static void add(struct p3d_tl *tl, int op, uint64_t seq, int peer,
                int64_t s, uint64_t bytes)
{
    struct p3d_top *o;

    tl->cap_ops = p3d_grow((void **)&tl->ops, tl->cap_ops, tl->n_ops,
                           sizeof(*tl->ops));
    o = &tl->ops[tl->n_ops++];
    memset(o, 0, sizeof(*o));
    o->s = s;
    o->e = s + 10;
    o->seq = seq;
    o->op = (uint8_t)op;
    o->gcomm = 0;
    o->peer = peer;
    o->bytes = bytes;
    o->has_gpu = 1;
}

/* Instance k: slot r started at seq * 100 + r (rank 1 is 1 ns later). */
static void on_inst(void *ctx, const struct p3d_join *j,
                    const struct p3d_jgrp *g, size_t k)
{
    struct seen *sn = ctx;
    const struct p3d_jrec *r = &g->rec[k];

    (void)j;
    size_t x0 = p3d_jx(g, k, 0), x1 = p3d_jx(g, k, 1);

    sn->order[sn->inst++] = r->seq;
    sn->dup += r->dup;
    if (r->dup)
        return;
    if (r->n != 2 || g->m != 2 || !(g->f[x0] & 1) ||
        !(g->f[x1] & 1) || g->s[x0] != (int64_t)r->seq * 100 ||
        g->s[x1] != (int64_t)r->seq * 100 + 1 ||
        r->ckey != (uint64_t)r->seq || r->hkey >> 32 != 1)
        sn->bad++;
}

static void on_pair(void *ctx, const struct p3d_join *j,
                    const struct p3d_jgrp *g, size_t k)
{
    struct seen *sn = ctx;
    size_t x0 = p3d_jx(g, k, 0), x1 = p3d_jx(g, k, 1);

    (void)j;
    sn->order[sn->pair++] = g->rec[k].seq;
    sn->bytes += g->rec[k].bytes;
    if (g->src != 0 || g->dst != 1 || g->f[x0] != 3 ||
        g->f[x1] != 3 || g->s[x0] != 5 * (int64_t)g->rec[k].seq ||
        g->s[x1] != 5 * (int64_t)g->rec[k].seq + 2)
        sn->pbad++;
}

struct fixture {
    struct p3d_job job;
    struct p3d_gcomm comm;
    int members[2];
    struct p3d_time_res t;
    struct p3d_tl tl[2];
    struct seen sn;
    struct p3d_join j;
};

static void setup(struct fixture *f)
{
    memset(f, 0, sizeof(*f));
    f->members[0] = 0;
    f->members[1] = 1;
    f->comm.members = f->members;
    f->comm.n_members = 2;
    f->comm.size = 2;
    f->job.comms = &f->comm;
    f->job.n_comms = 1;
    f->t.tl = f->tl;
    f->t.n = 2;
    f->tl[0].rank = 0;
    f->tl[1].rank = 1;
    f->tl[1].host = 1; /* two hosts: not skipped as local */
    p3d_join_init(&f->j, &f->job, &f->t);
    p3d_join_use(&f->j, on_inst, on_pair, &f->sn);
}

static void teardown(struct fixture *f)
{
    p3d_join_finish(&f->j);
    free(f->tl[0].ops);
    free(f->tl[1].ops);
}

static void test_instances_fold_when_complete(void **state)
{
    struct fixture f;

    (void)state;
    setup(&f);
    for (int k = 0; k < N; k++) {
        add(&f.tl[0], P3D_OP_ALLREDUCE, (uint64_t)k, -1, k * 100, 8);
        /* rank 1 in reverse seq order: no cursor hit, map lookups */
        add(&f.tl[1], P3D_OP_ALLREDUCE, (uint64_t)(N - 1 - k), -1,
            (N - 1 - k) * 100 + 1, 8);
    }
    p3d_join_rank(&f.j, 0);
    assert_int_equal(f.sn.inst, 0); /* rank 1 not merged yet */
    assert_int_equal(f.j.n_g, 1);
    assert_int_equal(f.j.g[0].n_rec, N);
    p3d_join_rank(&f.j, 1);
    assert_int_equal(f.sn.inst, N); /* folded once both are merged */
    assert_int_equal(f.sn.bad, 0);
    assert_int_equal(f.sn.dup, 0); /* each rank in its own slot */
    assert_false(f.j.g[0].live); /* and freed */
    assert_null(f.j.g[0].rec);
    teardown(&f);
    assert_int_equal(f.sn.inst, N); /* not folded twice */
}

/* A second consumer: notes which consumer saw each instance, in turn. */
static int fold_turns[4 * N], n_turns;

static void on_inst_second(void *ctx, const struct p3d_join *j,
                           const struct p3d_jgrp *g, size_t k)
{
    (void)j, (void)g, (void)k;
    fold_turns[n_turns++] = *(int *)ctx;
}

/* Every registered consumer gets every instance, in registration order,
 * with its own state; none has to call another. */
static void test_consumers_each_get_all(void **state)
{
    struct fixture f;
    int one = 1, two = 2;

    (void)state;
    n_turns = 0;
    setup(&f);
    p3d_join_use(&f.j, on_inst_second, NULL, &one);
    p3d_join_use(&f.j, on_inst_second, NULL, &two);
    for (int k = 0; k < N; k++) {
        add(&f.tl[0], P3D_OP_ALLREDUCE, (uint64_t)k, -1, k * 100, 8);
        add(&f.tl[1], P3D_OP_ALLREDUCE, (uint64_t)k, -1, k * 100 + 1, 8);
    }
    p3d_join_rank(&f.j, 0);
    p3d_join_rank(&f.j, 1);
    assert_int_equal(f.sn.inst, N); /* the first consumer, unchanged */
    assert_int_equal(f.sn.bad, 0);
    assert_int_equal(n_turns, 2 * N);
    for (int k = 0; k < N; k++) {
        assert_int_equal(fold_turns[2 * k], 1);
        assert_int_equal(fold_turns[2 * k + 1], 2);
    }
    teardown(&f);
}

static void test_pairs_and_leftovers(void **state)
{
    struct fixture f;

    (void)state;
    setup(&f);
    for (int k = 0; k < N; k++) {
        add(&f.tl[0], P3D_OP_SEND, (uint64_t)k, 1, 5 * k, 100);
        add(&f.tl[1], P3D_OP_RECV, (uint64_t)k, 0, 5 * k + 2, 7);
    }
    add(&f.tl[0], P3D_OP_ALLREDUCE, 0, -1, 0, 8); /* rank 1 never joins */
    p3d_join_rank(&f.j, 1);
    assert_int_equal(f.sn.pair, 0);
    p3d_join_rank(&f.j, 0);
    assert_int_equal(f.sn.pair, N);
    assert_int_equal(f.sn.bytes, 7 * N); /* the receive's bytes */
    assert_int_equal(f.sn.pbad, 0);
    assert_int_equal(f.sn.inst, 1); /* rank 1 merged: instance complete */
    teardown(&f);
    assert_int_equal(f.sn.inst, 1);
}

static void test_duplicate_and_unfinished(void **state)
{
    struct fixture f;

    (void)state;
    setup(&f);
    add(&f.tl[0], P3D_OP_ALLREDUCE, 3, -1, 300, 8);
    add(&f.tl[0], P3D_OP_ALLREDUCE, 3, -1, 350, 8); /* same seq again */
    add(&f.tl[0], P3D_OP_ALLREDUCE, 4, -1, 400, 8);
    p3d_join_rank(&f.j, 0);
    assert_int_equal(f.sn.inst, 0);
    assert_int_equal(f.j.g[0].rec[0].n, 2);
    assert_int_equal(f.j.g[0].s[0], 350); /* latest start kept */
    teardown(&f); /* rank 1 never merged: folded at the end */
    assert_int_equal(f.sn.inst, 2);
    assert_int_equal(f.sn.dup, 1);
}

static void test_local_groups_skipped(void **state)
{
    struct fixture f;

    (void)state;
    setup(&f);
    f.tl[1].host = 0; /* one host: the clock needs nothing of it */
    f.j.skip_local = 1;
    add(&f.tl[0], P3D_OP_ALLREDUCE, 0, -1, 0, 8);
    add(&f.tl[1], P3D_OP_ALLREDUCE, 0, -1, 1, 8);
    p3d_join_rank(&f.j, 0);
    p3d_join_rank(&f.j, 1);
    assert_int_equal(f.j.g[0].n_rec, 0);
    teardown(&f);
    assert_int_equal(f.sn.inst, 0);
}

/* Rank 0 appends 0..N-1 (no lookups) then repeats seq 5; rank 1 also
 * has N: one record each, folded in seq order, the repeat a duplicate. */
static void test_append_then_earlier_seq(void **state)
{
    struct fixture f;

    (void)state;
    setup(&f);
    for (int k = 0; k < N; k++)
        add(&f.tl[0], P3D_OP_ALLREDUCE, (uint64_t)k, -1, k * 100, 8);
    add(&f.tl[0], P3D_OP_ALLREDUCE, 5, -1, 500, 8);
    for (int k = 0; k <= N; k++)
        add(&f.tl[1], P3D_OP_ALLREDUCE, (uint64_t)k, -1, k * 100 + 1, 8);
    p3d_join_rank(&f.j, 0);
    assert_int_equal(f.j.g[0].n_rec, N);
    assert_true(f.j.g[0].sorted);
    assert_int_equal(f.j.g[0].rec[5].n, 2); /* the repeat found seq 5 */
    p3d_join_rank(&f.j, 1);
    assert_int_equal(f.sn.inst, N + 1);
    for (int k = 0; k <= N; k++)
        assert_int_equal(f.sn.order[k], k);
    assert_int_equal(f.sn.dup, 1);
    assert_int_equal(f.sn.bad, 1); /* seq N: rank 1 alone; the rest as
                                    * joined */
    teardown(&f);
    assert_int_equal(f.sn.inst, N + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_instances_fold_when_complete),
        cmocka_unit_test(test_consumers_each_get_all),
        cmocka_unit_test(test_pairs_and_leftovers),
        cmocka_unit_test(test_duplicate_and_unfinished),
        cmocka_unit_test(test_local_groups_skipped),
        cmocka_unit_test(test_append_then_earlier_seq),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
