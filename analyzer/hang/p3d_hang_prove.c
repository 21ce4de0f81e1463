/*
 * p3d_hang_prove.c - hang analysis: ops that provably never completed,
 * from host records alone.
 *
 * Without GPU completion times (P3D_GPU_TIMING=off, or a rank whose
 * event or CUPTI records never came) an op whose call returned looks
 * complete.  It cannot be if its result needs a member that never issued
 * the counterpart (NCCL semantics: a receive completes only once the
 * sender's data arrived; an all-reduce, all-gather, reduce-scatter or
 * all-to-all produces each rank's output from every member's input; a
 * broadcast's non-root ranks need the root, a reduce's root needs all).
 * A send or a broadcast root may finish without its peers (NCCL can
 * buffer a small message), so those prove nothing.  Work a stream
 * enqueued after such an op cannot complete before it either.  Only
 * ranks alive to the end count (SIGTERM noted, or a watchdog report): a
 * killed rank is the hang's cause or a bystander, not a waiter.  A member
 * whose trace lost records (P3D_F_DROPPED: the writer drops every record
 * once P3D_MAX_MB is reached, and single records when its buffers are
 * full, shim/p3d_writer.c) proves nothing by what its trace lacks.
 */
#include "p3d_hang_int.h"
#include "p3d_util.h"

/* Whether o's completion needs member j (comm rank) to have issued its
 * counterpart. */
static int p3d_hp_needs(const struct p3d_rec_op *o, int j)
{
    int root = o->peer, me = o->comm_rank;

    switch (o->op) {
    case P3D_OP_SEND:
        return 0;
    case P3D_OP_RECV:
        return j == o->peer;
    case P3D_OP_BROADCAST:
    case P3D_OP_SCATTER:
        return me != root && j == root;
    case P3D_OP_REDUCE:
    case P3D_OP_GATHER:
        return me == root;
    default:
        return 1;
    }
}

/* Whether some member of o's comm that o needs has a trace and never
 * issued o's counterpart. */
static int p3d_hp_unmatched(const struct p3d_hg *g, int a,
                            const struct p3d_rec_op *o)
{
    int gi = p3d_map_get(&g->job->comm_idx, o->comm_hash);
    const struct p3d_gcomm *c;

    if (gi < 0 || o->seq == UINT64_MAX || o->comm_rank < 0)
        return 0;
    c = &g->job->comms[gi];
    for (int j = 0; j < c->size; j++) {
        int b = c->slot[j];
        if (b < 0 || b == a || !p3d_hp_needs(o, j) ||
            !p3d_hg_has_file(g, b) || p3d_hg_lost_records(g, b))
            continue;
        if (!p3d_hg_arrived(g, b, o))
            return 1;
    }
    return 0;
}

/* Mark op i of h pending, and every later op on its stream. */
static void p3d_hp_mark(struct p3d_hrank *h, size_t i)
{
    uint64_t s = h->ops[i]->stream;

    for (size_t k = i; k < h->n_kept; k++)
        if (k == i || h->ops[k]->stream == s)
            if (!h->pend[k] && !h->done[k]) {
                h->pend[k] = 1;
                h->proven[k] = 1;
                h->n_pend++;
            }
}

static void p3d_hp_rank(struct p3d_hg *g, int a)
{
    struct p3d_hrank *h = &g->hj->hr[a];

    if (!h->open || !h->pend || !(h->term || h->n_hang > 0) ||
        (h->closed && !h->term))
        return;
    h->proven = p3d_xcalloc(h->n_kept + 1, 1);
    for (size_t i = 0; i < h->n_kept; i++) /* each stream's first such op */
        if (!h->pend[i] && !h->done[i] && p3d_hp_unmatched(g, a, h->ops[i]))
            p3d_hp_mark(h, i);
    if (h->n_pend > 0 && (h->state == P3D_HS_NOT_IN_NCCL ||
                          h->state == P3D_HS_DROPPED))
        h->state = P3D_HS_WAITING;
}

void p3d_hg_prove(struct p3d_hg *g)
{
    for (int a = 0; a < g->hj->world; a++)
        p3d_hp_rank(g, a);
}
