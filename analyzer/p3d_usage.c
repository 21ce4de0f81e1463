/*
 * p3d_usage.c - what a communicator is used for, from its traffic.
 *
 * Member sets alone cannot tell apart groups Megatron builds with equal
 * members (PP and EMB at PP=2, WORLD and the grad-norm world comm, TP and
 * MP at PP=1, DP and CP when one of them is 1).  The usage fingerprints of
 * megatron.md section 8 can: Send/Recv is PP, big per-step reduce-scatter
 * and all-gather is DP, per-layer all-gathers are CP (or TP with sequence
 * parallelism), broadcasts with frequent all-reduces are TP, 1-element
 * all-reduces are MP or a world comm, one big all-reduce per step is EMB.
 */
#include "p3d_layout.h"

#define B(x) (1u << (x))

uint64_t p3d_calls_per_member(const struct p3d_gcomm *g)
{
    uint64_t total = 0;

    for (int k = 0; k < P3D_OP_COUNT; k++)
        total += g->st[k].calls;
    return total / (uint64_t)(g->n_members ? g->n_members : 1);
}

enum p3d_use p3d_usage_class(const struct p3d_gcomm *g, uint64_t max_cpm)
{
    const struct p3d_opstat *s = g->st;
    uint64_t total = 0, p2p, ar, bc, rsag, a2a;
    int frequent = p3d_calls_per_member(g) * 8 >= max_cpm;

    for (int k = 0; k < P3D_OP_COUNT; k++)
        total += s[k].calls;
    if (!total)
        return P3D_USE_NONE;
    p2p = s[P3D_OP_SEND].calls + s[P3D_OP_RECV].calls;
    ar = s[P3D_OP_ALLREDUCE].calls;
    bc = s[P3D_OP_BROADCAST].calls;
    rsag = s[P3D_OP_REDUCESCATTER].calls + s[P3D_OP_ALLGATHER].calls;
    a2a = s[P3D_OP_ALLTOALL].calls;
    if (p2p * 2 >= total)
        return P3D_USE_P2P;
    if (a2a * 2 >= total)
        return P3D_USE_A2A;
    if (rsag * 2 >= total) /* per layer (CP, TP+SP) or per step (DP) */
        return rsag / (uint64_t)(g->n_members ? g->n_members : 1) * 4 >=
               max_cpm ? P3D_USE_LAYER : P3D_USE_RSAG;
    if (g->use.tiny_ar == total)
        return P3D_USE_TINY;
    if (bc && frequent && (bc + ar) * 10 >= total * 9)
        return P3D_USE_BCAST;
    if (ar == total && frequent)
        return P3D_USE_AR;
    if (ar == total && (g->use.big_ar * 2 >= ar || !frequent))
        return P3D_USE_BIGAR; /* few, not tiny: EMB, or DP without dist-opt */
    return P3D_USE_MIXED;
}

unsigned p3d_use_labels(enum p3d_use u)
{
    switch (u) {
    case P3D_USE_P2P:
        return B(P3D_LBL_PP) | B(P3D_LBL_P2P) | B(P3D_LBL_CP);
    case P3D_USE_A2A:
        return B(P3D_LBL_EP) | B(P3D_LBL_CP);
    case P3D_USE_RSAG:
        return B(P3D_LBL_DP) | B(P3D_LBL_DP_CP) | B(P3D_LBL_EXPERT_DP);
    case P3D_USE_LAYER:
        return B(P3D_LBL_CP) | B(P3D_LBL_TP);
    case P3D_USE_BCAST:
    case P3D_USE_AR:
        return B(P3D_LBL_TP);
    case P3D_USE_TINY:
        return B(P3D_LBL_MP) | B(P3D_LBL_WORLD);
    case P3D_USE_BIGAR:
        return B(P3D_LBL_EMB) | B(P3D_LBL_DP) | B(P3D_LBL_DP_CP);
    default:
        return 0;
    }
}

unsigned p3d_use_primary(enum p3d_use u)
{
    switch (u) {
    case P3D_USE_P2P:
        return B(P3D_LBL_PP) | B(P3D_LBL_P2P);
    case P3D_USE_A2A:
        return B(P3D_LBL_EP);
    case P3D_USE_RSAG:
        return B(P3D_LBL_DP) | B(P3D_LBL_DP_CP) | B(P3D_LBL_EXPERT_DP);
    case P3D_USE_LAYER:
        return B(P3D_LBL_CP);
    case P3D_USE_BCAST:
    case P3D_USE_AR:
        return B(P3D_LBL_TP);
    case P3D_USE_TINY:
        return B(P3D_LBL_MP) | B(P3D_LBL_WORLD);
    case P3D_USE_BIGAR:
        return B(P3D_LBL_EMB);
    default:
        return 0;
    }
}
