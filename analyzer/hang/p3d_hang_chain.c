/*
 * p3d_hang_chain.c - hang analysis: what is reported about the
 * communicators on the chain of waits: mismatched ops (with the odd
 * member named) and each communicator's frontier with its members'
 * status (done, waiting, not arrived).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_hang_int.h"
#include "p3d_label.h"
#include "p3d_match.h"
#include "p3d_util.h"

/* How often rank r used its value of mismatch i (p3d_hang_mm_uses). */
static int p3d_hg_uses(const struct p3d_hg *g, int r, int i)
{
    return p3d_hg_has_file(g, r) ? p3d_hang_mm_uses(&g->hj->hr[r], i) : 0;
}

/* 1 if comm is on the chain (a wait's or a root's communicator). */
static int p3d_hg_on_chain(const struct p3d_hang_res *res, uint64_t comm)
{
    for (int i = 0; i < res->n_waiting; i++)
        if (res->wait[i].comm == comm)
            return 1;
    for (int i = 0; i < res->n_roots; i++)
        if (res->roots[i].owed_comm == comm)
            return 1;
    return 0;
}

/*
 * Mismatches on the chain (all of them when no hang was found).  Of two
 * disagreeing members the odd one is the one whose value fewer members of
 * the same kind of group issued at that seq (p3d_hg_odd); on a tie, for a
 * count, the one that used its value only this once on that communicator
 * (matching keeps the lowest rank as reference, which is not necessarily
 * the odd one); else the matcher's second rank.
 */
void p3d_hg_mismatches(const struct p3d_hg *g,
                              struct p3d_hang_res *res)
{
    const struct p3d_match_res *m = g->job->match;
    int odd;

    for (int i = 0; m != NULL && i < m->n_kept && res->n_mm < 16; i++) {
        const struct p3d_mismatch *x = &m->mm[i];
        struct p3d_hang_mm *y = &res->mm[res->n_mm];
        if (x->field >= P3D_MM_UNMATCHED ||
            (res->detected && !p3d_hg_on_chain(res, x->comm)))
            continue;
        y->comm = x->comm, y->seq = x->seq, y->field = x->field;
        y->op = x->op, y->rank_a = x->rank_a, y->rank_b = x->rank_b;
        y->va = x->va, y->vb = x->vb;
        y->rank_a = x->rank_b, y->rank_b = x->rank_a;  /* b is the odd */
        y->va = x->vb, y->vb = x->va;                  /* one by default */
        odd = p3d_hg_odd(g, x);
        if (odd == x->rank_a ||
            (odd < 0 && x->field == P3D_MM_COUNT &&
             p3d_hg_uses(g, x->rank_a, i) == 1 &&
             p3d_hg_uses(g, x->rank_b, i) > 1)) {
            y->rank_a = x->rank_a, y->rank_b = x->rank_b;  /* a is odd */
            y->va = x->va, y->vb = x->vb;
        }
        res->n_mm++;
    }
}

/* Lowest pending seq of rank h on comm (collectives; P2P: any pending
 * op counts as seq 0 of its pair), or -1. */
static int64_t p3d_hg_min_pending(const struct p3d_hrank *h, uint64_t comm,
                                  int *any)
{
    int64_t m = -1;

    *any = 0;
    for (size_t i = 0; i < h->n_kept; i++) {
        const struct p3d_rec_op *o = h->ops[i];
        if (!h->pend[i] || o->comm_hash != comm)
            continue;
        *any = 1;
        if (!P3D_OP_IS_P2P(o->op) && (m < 0 || (int64_t)o->seq < m))
            m = (int64_t)o->seq;
    }
    return m;
}

/* Member b's state at the frontier of communicator c. */
static int p3d_hg_member_state(const struct p3d_hg *g, uint64_t comm, int b)
{
    int any;

    if (!p3d_hg_has_file(g, b) || p3d_hg_hard_on(g, b, comm))
        return P3D_HF_NOT_ARRIVED;
    p3d_hg_min_pending(&g->hj->hr[b], comm, &any);
    return any ? P3D_HF_WAITING : P3D_HF_DONE;
}

/* Every member's state: the first P3D_HANG_MEMBERS listed, all counted
 * and kept by state. */
static void p3d_hg_frontier_states(const struct p3d_hg *g,
                                   const struct p3d_gcomm *c,
                                   struct p3d_hang_frontier *fr)
{
    uint8_t *st = p3d_xcalloc((size_t)c->n_members + 1, 1);
    int at[3];

    fr->n = 0;
    fr->n_members = c->n_members;
    memset(fr->count, 0, sizeof(fr->count));
    for (int j = 0; j < c->n_members; j++) {
        st[j] = (uint8_t)p3d_hg_member_state(g, fr->comm, c->members[j]);
        fr->count[st[j]]++;
        if (fr->n < P3D_HANG_MEMBERS) {
            fr->rank[fr->n] = c->members[j];
            fr->st[fr->n++] = st[j];
        }
    }
    free(fr->by_state);
    fr->by_state = p3d_xcalloc((size_t)c->n_members + 1, sizeof(int));
    at[0] = 0;
    at[1] = fr->count[0];
    at[2] = at[1] + fr->count[1];
    for (int j = 0; j < c->n_members; j++)
        fr->by_state[at[st[j]]++] = c->members[j];
    free(st);
}

/* Frontier of one joined communicator and each member's status there. */
static void p3d_hg_frontier(const struct p3d_hg *g, uint64_t comm,
                            struct p3d_hang_frontier *fr)
{
    const struct p3d_gcomm *c =
        &g->job->comms[p3d_map_get(&g->job->comm_idx, comm)];
    int any;

    fr->comm = comm;
    fr->label = c->label;
    fr->max_enqueued = fr->min_incomplete = -1;
    for (int j = 0; j < c->n_members; j++) {
        int b = c->members[j];
        int64_t mp;
        if (!p3d_hg_has_file(g, b))
            continue;
        mp = p3d_hg_min_pending(&g->hj->hr[b], comm, &any);
        if (mp >= 0 && (fr->min_incomplete < 0 || mp < fr->min_incomplete))
            fr->min_incomplete = mp;
        if ((int64_t)p3d_hang_count(&g->hj->hr[b], comm, P3D_HK_COLL, -1) - 1 >
            fr->max_enqueued)
            fr->max_enqueued = (int64_t)p3d_hang_count(
                                   &g->hj->hr[b], comm, P3D_HK_COLL, -1) - 1;
    }
    p3d_hg_frontier_states(g, c, fr);
}

/* Frontiers of the communicators the waits are on. */
void p3d_hg_frontiers(const struct p3d_hg *g, struct p3d_hang_res *res)
{
    for (int i = 0; i < res->n_waiting && res->n_fr < P3D_HANG_FRONTIERS;
         i++) {
        uint64_t comm = res->wait[i].comm;
        int k = 0;
        if (p3d_map_get(&g->job->comm_idx, comm) < 0)
            continue;
        while (k < res->n_fr && res->fr[k].comm != comm)
            k++;
        if (k == res->n_fr)
            p3d_hg_frontier(g, comm, &res->fr[res->n_fr++]);
    }
}
