/*
 * p3d_hang_odd.c - hang analysis: who is to blame when nobody is missing.
 *
 * When every waiting rank waits on communicators all of whose members
 * arrived (no hard wait anywhere: the "stuck" roots), two causes remain:
 *   - a mismatch: members issued the same seq with another op kind,
 *     count, datatype, reduction or root (a rank skipped or reordered a
 *     collective, or passed other arguments), and NCCL then matches ops
 *     that do not belong together and hangs.  The root is the odd rank:
 *     the one whose value differs from what the members of the other
 *     communicators of the same group kind issued at that seq (they run
 *     the same program), or, failing that, from the other members of its
 *     own communicator;
 *   - no mismatch: every member entered the same op and none completed.
 *     That is not a desync; no rank is named, and the report points at
 *     the network and NCCL (p3d_hang_out.c).
 */
#include "p3d_hang_int.h"
#include "p3d_layout.h"
#include "p3d_match.h"
#include "p3d_util.h"

/* Rank h's op with seq `seq` on comm, or NULL. */
static const struct p3d_rec_op *p3d_ho_at(const struct p3d_hrank *h,
                                          uint64_t comm, uint64_t seq)
{
    for (size_t i = 0; i < h->n_kept; i++)
        if (h->ops[i]->comm_hash == comm && h->ops[i]->seq == seq &&
            !P3D_OP_IS_P2P(h->ops[i]->op))
            return h->ops[i];
    return NULL;
}

static int64_t p3d_ho_field(const struct p3d_rec_op *o, int field)
{
    switch (field) {
    case P3D_MM_OP: return o->op;
    case P3D_MM_COUNT: return (int64_t)o->count;
    case P3D_MM_DTYPE: return o->dtype;
    case P3D_MM_ROOT: return o->peer;
    case P3D_MM_REDOP: return o->redop;
    default: return 0;
    }
}

/* The pipeline stage all members of d lie in, or -1 (none known, or it
 * spans stages). */
static int p3d_ho_stage(const struct p3d_job *job, const struct p3d_gcomm *d)
{
    int c[P3D_AX_N], s = -1;

    if (!job->layout.valid || job->layout.size[P3D_AX_PP] < 2)
        return -1;
    for (int j = 0; j < d->n_members; j++) {
        if (d->members[j] >= job->world_size)
            return -1;
        p3d_layout_coords(&job->layout, d->members[j], c);
        if (j > 0 && c[P3D_AX_PP] != s)
            return -1;
        s = c[P3D_AX_PP];
    }
    return s;
}

/*
 * How many members of the communicators labelled like `comm` (its own
 * included) issued value v in field `field` at seq `seq`.  Groups inside
 * one pipeline stage vote only with groups of the same stage: stages run
 * different programs (Megatron's first and last stages broadcast the
 * batch on TP, the last runs the loss), so a TP group of another stage
 * issues other ops at the same seq.  any_stage: every stage votes (when
 * the stage alone cannot decide: one group of the kind per stage).
 */
static int p3d_ho_votes(const struct p3d_hg *g, uint64_t comm, uint64_t seq,
                        int field, int64_t v, int any_stage)
{
    int gi = p3d_map_get(&g->job->comm_idx, comm), n = 0, stage;
    const struct p3d_gcomm *c;

    if (gi < 0)
        return 0;
    c = &g->job->comms[gi];
    stage = any_stage ? -1 : p3d_ho_stage(g->job, c);
    for (int k = 0; k < g->job->n_comms; k++) {
        const struct p3d_gcomm *d = &g->job->comms[k];
        if (d->label != c->label || d->n_members != c->n_members ||
            (stage >= 0 && p3d_ho_stage(g->job, d) != stage))
            continue;
        for (int j = 0; j < d->n_members; j++) {
            int b = d->members[j];
            const struct p3d_rec_op *o;
            if (!p3d_hg_has_file(g, b))
                continue;
            o = p3d_ho_at(&g->hj->hr[b], d->hash, seq);
            n += o != NULL && p3d_ho_field(o, field) == v;
        }
    }
    return n;
}

/* The odd rank of mismatch x (the one fewer members agree with), -1
 * when the votes tie: first among the groups of its own stage, then, if
 * they tie, among all. */
int p3d_hg_odd(const struct p3d_hg *g, const struct p3d_mismatch *x)
{
    for (int any = 0; any < 2; any++) {
        int a = p3d_ho_votes(g, x->comm, x->seq, x->field, x->va, any);
        int b = p3d_ho_votes(g, x->comm, x->seq, x->field, x->vb, any);

        if (a != b)
            return a < b ? x->rank_a : x->rank_b;
    }
    return -1;
}

/* Whether rank r waits on comm (a pending op there). */
static int p3d_ho_waits_on(const struct p3d_hg *g, int r, uint64_t comm)
{
    const struct p3d_hrank *h = &g->hj->hr[r];

    for (size_t i = 0; h->pend && i < h->n_kept; i++)
        if (h->pend[i] && h->ops[i]->comm_hash == comm)
            return 1;
    return 0;
}

int p3d_hg_odd_roots(struct p3d_hg *g, int *root, int n_root)
{
    const struct p3d_match_res *m = g->job->match;
    int n = 0;

    for (int i = 0; i < n_root; i++) /* only when every root is stuck */
        if (g->hj->hr[root[i]].state != P3D_HS_WAITING ||
            g->hj->hr[root[i]].hard || g->hj->hr[root[i]].cycle)
            return n_root;
    for (int i = 0; m != NULL && i < m->n_kept; i++) {
        const struct p3d_mismatch *x = &m->mm[i];
        int odd, seen = 0;
        if (x->field >= P3D_MM_UNMATCHED)
            continue;
        if (!p3d_ho_waits_on(g, x->rank_a, x->comm) &&
            !p3d_ho_waits_on(g, x->rank_b, x->comm))
            continue;
        if ((odd = p3d_hg_odd(g, x)) < 0)
            odd = x->rank_b; /* no majority: the matcher's second rank */
        for (int k = 0; k < n; k++)
            seen |= root[k] == odd;
        if (!seen && n < g->hj->world) {
            root[n++] = odd;
            g->hj->hr[odd].odd = 1;
        }
    }
    return n; /* 0: nobody missing, no mismatch: a stall */
}
