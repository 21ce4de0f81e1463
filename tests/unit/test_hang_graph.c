/*
 * test_hang_graph.c - the op a waiting rank is shown blocked in
 * (p3d_hang_graph.c).  PyTorch's all-to-all sends to and receives from
 * the rank itself too (torch/csrc/cuda/nccl.cpp
 * all2all_single_unequal_split); when such a batch is stuck, its own
 * share is pending with the rest, and the wait shown must be one of the
 * ops that involve another rank, not the share that waits for no one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_hang_int.h"
#include "p3d_match.h"
#include "p3d_time.h"

#define WORLD 2
#define HASH 0xE9ull
#define N_OPS 4

static struct p3d_job job;
static struct p3d_time_res tres;
static struct p3d_match_res mres;
static struct p3d_gcomm comm;
static int slot[WORLD] = {0, 1}, members[WORLD] = {0, 1};
static struct p3d_rank ranks[WORLD];
static struct p3d_hrank hr[WORLD];
static struct p3d_hjob hj = {hr, WORLD};
static struct p3d_rec_op ops[WORLD][N_OPS];
static const struct p3d_rec_op *opp[WORLD][N_OPS];
static uint8_t pend[WORLD][N_OPS];
static struct p3d_hkey keys[WORLD][N_OPS];

/* Both ranks of a 2-rank EP communicator are stuck in one all-to-all,
 * issued as torch does: for r in 0, 1: Send(r), Recv(r).  Each issued
 * its part, so neither waits for a member that did not arrive. */
static void stuck_all_to_all(void)
{
    memset(&job, 0, sizeof(job));
    memset(&comm, 0, sizeof(comm));
    job.world_size = WORLD;
    job.time = &tres;
    job.match = &mres;
    comm.hash = HASH;
    comm.size = comm.n_members = WORLD;
    comm.slot = slot;
    comm.members = members;
    comm.label = P3D_LBL_EP;
    job.comms = &comm;
    job.n_comms = 1;
    p3d_map_put(&job.comm_idx, HASH, 0);
    for (int a = 0; a < WORLD; a++) {
        memset(&hr[a], 0, sizeof(hr[a]));
        hr[a].rank = a;
        hr[a].r = &ranks[a];
        hr[a].open = 1;
        hr[a].state = P3D_HS_WAITING;
        for (int k = 0; k < N_OPS; k++) {
            struct p3d_rec_op *o = &ops[a][k];
            memset(o, 0, sizeof(*o));
            o->op = k % 2 ? P3D_OP_RECV : P3D_OP_SEND;
            o->comm_hash = HASH;
            o->comm_rank = a;
            o->peer = k / 2;
            o->op_id = (uint64_t)k + 1;
            o->t_enter = 1000 + (uint64_t)k;
            opp[a][k] = o;
            pend[a][k] = 1;
            /* sorted by (comm, kind, peer): sends, then receives */
            keys[a][(k % 2) * 2 + k / 2] = (struct p3d_hkey){
                HASH, k % 2 ? P3D_HK_RECV : P3D_HK_SEND, k / 2, 0};
        }
        hr[a].ops = opp[a];
        hr[a].n_ops = hr[a].n_kept = N_OPS;
        hr[a].pend = pend[a];
        hr[a].keys = keys[a];
        hr[a].n_keys = N_OPS;
    }
}

static void test_stuck_all_to_all_shows_the_other_rank(void **state)
{
    struct p3d_hang_res res;

    (void)state;
    stuck_all_to_all();
    memset(&res, 0, sizeof(res));
    p3d_hang_graph(&job, &hj, &res);
    assert_true(res.detected);
    assert_int_equal(res.n_waiting, WORLD);
    for (int i = 0; i < res.n_waiting; i++) {
        const struct p3d_hang_wait *w = &res.wait[i];
        assert_int_equal(w->op, P3D_OP_SEND);
        assert_int_equal(w->peer, 1 - w->rank); /* not itself */
        assert_int_equal(w->n_for, 1);
        assert_int_equal(w->waiting_for[0], 1 - w->rank);
    }
    p3d_hang_res_clear(&res);
    p3d_map_free(&job.comm_idx);
}

/* Rank 1 left the batch (its part issued, then it exited): rank 0's wait
 * has no edge, and the op shown is still its send to rank 1. */
static void test_stuck_alone_shows_the_other_rank(void **state)
{
    struct p3d_hang_res res;

    (void)state;
    stuck_all_to_all();
    hr[1].state = P3D_HS_EXITED;
    memset(&res, 0, sizeof(res));
    p3d_hang_graph(&job, &hj, &res);
    assert_true(res.detected);
    assert_int_equal(res.n_waiting, 1);
    assert_int_equal(res.wait[0].rank, 0);
    assert_int_equal(res.wait[0].op, P3D_OP_SEND);
    assert_int_equal(res.wait[0].peer, 1);
    assert_int_equal(res.wait[0].n_for, 0);
    p3d_hang_res_clear(&res);
    p3d_map_free(&job.comm_idx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stuck_all_to_all_shows_the_other_rank),
        cmocka_unit_test(test_stuck_alone_shows_the_other_rank),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
