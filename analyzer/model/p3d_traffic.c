/*
 * p3d_traffic.c - the traffic counts of one communicator on one rank, as
 * the scan reads its ops (struct p3d_usage in p3d_job.h): sizes of its
 * all-reduces, Send/Recv batches and their peers, datatypes and reduction
 * ops per op kind.  The layout analysis reads them to tell what the
 * communicator is used for (analyzer/layout/p3d_usage.c).
 */
#include <stdint.h>

#include "p3d_format.h"
#include "p3d_job.h"
#include "p3d_ops.h"

/* One more all-reduce of `bytes` in the size table (fixed, merged per
 * communicator: a few distinct sizes are exact, more are counted apart). */
void p3d_usage_ar_size(struct p3d_usage *u, uint64_t bytes, uint64_t n)
{
    for (int k = 0; k < P3D_USE_SIZES; k++) {
        if (u->ar_n[k] && u->ar_size[k] != bytes)
            continue;
        u->ar_size[k] = bytes;
        u->ar_n[k] += n;
        return;
    }
    u->ar_sizes_other += n;
}

/*
 * A pipeline sends to its one or two neighbours and a ring to the next
 * rank, never to itself.  PyTorch's all-to-all through Send/Recv sends to
 * every rank of the communicator, its own included, whenever that share is
 * not empty (torch/csrc/cuda/nccl.cpp, pytorch/pytorch 0033e774:
 * all2all_single_unequal_split and all2all loop `for r in
 * irange(numranks)`; gather and scatter copy the own share instead).  So
 * a batch to 3+ peers, or one that sends to its own rank, is an
 * all-to-all: the send to itself is what tells a 2-rank all-to-all (EP=2,
 * TE's CP "a2a" at CP=2) from a 2-rank ring step.
 */
int p3d_usage_batch_a2a(const struct p3d_usage *u)
{
    return u->p2p_npeer >= 3 || u->p2p_self;
}

/* The Send/Recv batch in progress in u is complete: count it. */
static void p3d_usage_p2p_end(struct p3d_usage *u)
{
    if (!u->p2p_dirs)
        return;
    u->p2p_batches++;
    u->p2p_both += u->p2p_dirs == 3;
    u->p2p_a2a += (uint64_t)p3d_usage_batch_a2a(u);
    u->p2p_dirs = 0;
    u->p2p_npeer = 0;
    u->p2p_self = 0;
}

/* The batch in progress sends to comm rank `peer`. */
static void p3d_usage_p2p_peer(struct p3d_usage *u, int peer)
{
    for (int k = 0; k < u->p2p_npeer && k < 3; k++)
        if (u->p2p_peer[k] == peer)
            return;
    if (u->p2p_npeer < 3)
        u->p2p_peer[u->p2p_npeer] = peer;
    if (u->p2p_npeer < 255)
        u->p2p_npeer++;
}

/* Count op o of the communicator in u. */
void p3d_usage_add(struct p3d_usage *u, const struct p3d_rec_op *o)
{
    if (o->op == P3D_OP_SEND || o->op == P3D_OP_RECV) {
        uint8_t dir = o->op == P3D_OP_SEND ? 1 : 2;

        if (!o->group_id || o->group_id != u->p2p_gid) {
            p3d_usage_p2p_end(u);
            u->p2p_gid = o->group_id;
        }
        u->p2p_dirs |= dir;
        if (o->op == P3D_OP_SEND)
            p3d_usage_p2p_peer(u, o->peer);
        if (o->op == P3D_OP_SEND && p3d_op_to_self(o))
            u->p2p_self = 1;
        if (!o->group_id)
            p3d_usage_p2p_end(u); /* a lone op is its own batch */
    }
    if (o->op < P3D_OP_COUNT && o->dtype < 16)
        u->dtypes[o->op] |= (uint16_t)(1u << o->dtype);
    if (o->op == P3D_OP_BROADCAST && o->dtype == 4 /* ncclInt64 */)
        u->bc_int64++;
    if (o->op == P3D_OP_REDUCESCATTER && o->redop != P3D_REDOP_NONE)
        u->rs_redops |= (uint8_t)(1u << (o->redop < 5 ? o->redop : 5));
    if (o->op == P3D_OP_ALLGATHER && o->bytes <= 8)
        u->tiny_ag++;
    if (o->op != P3D_OP_ALLREDUCE)
        return;
    if (o->redop == 4 /* ncclAvg */ || o->redop == P3D_REDOP_CUSTOM)
        u->ar_avg++;
    if (o->bytes <= 8)
        u->tiny_ar++;
    else
        p3d_usage_ar_size(u, o->bytes, 1);
    if (o->count == 1 && o->dtype == 7 /* ncclFloat32 */)
        u->tiny_f32_ar++;
    if (o->bytes >= (1u << 20))
        u->big_ar++;
}
