/*
 * test_hang_keys.c - the hang analysis asks how many ops a rank issued on
 * a (communicator, kind, peer); it keeps one key per triple (the highest
 * seq) instead of one per op, so these counts must come out the same as
 * counting every op: highest seq + 1, 0 for triples the rank never used.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_hang_int.h"

#define N_OPS 600

static struct p3d_rec_op recs[N_OPS];
static const struct p3d_rec_op *ptrs[N_OPS];

/* Ops of two comms, interleaved: collectives, sends to 2 peers, recvs. */
static void fill(struct p3d_hrank *h)
{
    uint64_t seq[2][3][4] = {{{0}}};

    memset(h, 0, sizeof(*h));
    for (int i = 0; i < N_OPS; i++) {
        struct p3d_rec_op *o = &recs[i];
        int c = i % 2, k = (i / 2) % 3, p = k == 0 ? 0 : 1 + (i / 6) % 2;

        memset(o, 0, sizeof(*o));
        o->comm_hash = 0x1000 + (uint64_t)c;
        o->op = k == 0 ? P3D_OP_ALLREDUCE : k == 1 ? P3D_OP_SEND : P3D_OP_RECV;
        o->peer = k == 0 ? -1 : p;
        o->seq = seq[c][k][p]++;
        o->op_id = (uint64_t)i;
        ptrs[i] = o;
    }
    recs[N_OPS - 1].seq = UINT64_MAX;      /* no seq: not counted */
    h->ops = ptrs;
    h->n_ops = N_OPS;
}

/* Reference: count the ops of the triple with a seq, one by one. */
static uint64_t count_slow(uint64_t comm, int kind, int peer)
{
    uint64_t best = 0;

    for (int i = 0; i < N_OPS; i++) {
        const struct p3d_rec_op *o = &recs[i];
        int k = o->op == P3D_OP_SEND ? P3D_HK_SEND
                : o->op == P3D_OP_RECV ? P3D_HK_RECV : P3D_HK_COLL;
        if (o->comm_hash == comm && k == kind &&
            (kind == P3D_HK_COLL || o->peer == peer) &&
            o->seq != UINT64_MAX && o->seq + 1 > best)
            best = o->seq + 1;
    }
    return best;
}

static void test_counts_match_every_op(void **state)
{
    struct p3d_hrank h;

    (void)state;
    fill(&h);
    p3d_hang_keys(&h);
    assert_true(h.n_keys < 16);            /* one per triple, not per op */
    for (uint64_t c = 0x1000; c <= 0x1002; c++)
        for (int k = P3D_HK_COLL; k <= P3D_HK_RECV; k++)
            for (int p = -1; p <= 3; p++) {
                int peer = k == P3D_HK_COLL ? -1 : p;
                if (k == P3D_HK_COLL && p != -1)
                    continue;
                assert_int_equal(p3d_hang_count(&h, c, k, peer),
                                 count_slow(c, k, peer));
            }
    assert_int_equal(p3d_hang_count(&h, 0x1000, P3D_HK_COLL, -1), 100);
    assert_int_equal(p3d_hang_count(&h, 0x1002, P3D_HK_COLL, -1), 0);
    free(h.keys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_match_every_op),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
