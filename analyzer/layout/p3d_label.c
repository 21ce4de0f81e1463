/*
 * p3d_label.c - labels per communicator.
 *
 * Every label whose group the member set equals is listed (most specific
 * first, P3D_LABELS order); the one the communicator is used as comes from
 * its usage (p3d_usage.c).  Communicators with the same members are told
 * apart by usage and creation order: of two world-sized comms the first
 * is WORLD and one with only 1-element fp32 all-reduces is the grad-norm
 * (intra-distributed-optimizer-instance) group; a second Send/Recv comm on
 * the members of a PP comm is a P2P comm.
 *
 * Two fields, on purpose (README.md, "JSON"; truth.json's label/role):
 * label_first (JSON "label") is a property of the member set, the most
 * specific label that matches it, so communicators with the same members
 * have the same "label"; label (JSON "used_as", the text report's column)
 * is the group the communicator serves as.  They differ exactly where two
 * Megatron groups share a member set: at PP = 2 the embedding group (first
 * and last stage) is the whole PP group, so its "label" is "PP", "labels"
 * ["PP","EMB"] and "used_as" "EMB"; at CP = 1 the DP-CP group is the DP
 * group ("label" "DP", "used_as" "DP-CP", the README's own example).  Read
 * "used_as" for what a communicator is; "label" to group by member set.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_infer.h"
#include "p3d_label.h"
#include "p3d_util.h"

#define B(x) (1u << (x))

static const int p3d_pref[][4] = {
    [P3D_USE_NONE] = {-1},
    [P3D_USE_MIXED] = {-1},
    [P3D_USE_P2P] = {P3D_LBL_PP, P3D_LBL_CP, P3D_LBL_P2P, -1},
    [P3D_USE_A2A] = {P3D_LBL_EP, P3D_LBL_CP, -1},
    [P3D_USE_RSAG] = {P3D_LBL_DP_CP, P3D_LBL_DP, P3D_LBL_EXPERT_DP,
                      P3D_LBL_DP_SHARD},
    [P3D_USE_LAYER] = {P3D_LBL_CP, P3D_LBL_TP, P3D_LBL_EXPERT_TP, -1},
    [P3D_USE_BCAST] = {P3D_LBL_TP, P3D_LBL_TP_CP, -1},
    [P3D_USE_AR] = {P3D_LBL_TP, P3D_LBL_TP_CP, -1},
    [P3D_USE_TINY] = {P3D_LBL_MP, P3D_LBL_WORLD, -1},
    [P3D_USE_BIGAR] = {P3D_LBL_EMB, P3D_LBL_DP_CP, P3D_LBL_DP, -1},
    [P3D_USE_GRAD] = {P3D_LBL_DP_CP, P3D_LBL_DP, P3D_LBL_EXPERT_DP,
                      P3D_LBL_DP_SHARD},
    [P3D_USE_DDP] = {P3D_LBL_DP_CP, P3D_LBL_DP, -1},
    [P3D_USE_SP] = {P3D_LBL_TP, P3D_LBL_TP_CP, P3D_LBL_EXPERT_TP, -1},
    [P3D_USE_ANY_AR] = {P3D_LBL_TP, P3D_LBL_DP_CP, P3D_LBL_DP, -1},
    [P3D_USE_ANY_LAYER] = {P3D_LBL_DP_CP, P3D_LBL_DP, P3D_LBL_CP,
                           P3D_LBL_TP},
    [P3D_USE_RING] = {P3D_LBL_CP, P3D_LBL_PP, P3D_LBL_P2P, -1},
    [P3D_USE_RING2] = {P3D_LBL_CP, P3D_LBL_EP, P3D_LBL_PP, P3D_LBL_P2P},
    [P3D_USE_GRAD_AR] = {P3D_LBL_DP_REP, P3D_LBL_DP_CP, P3D_LBL_DP,
                         P3D_LBL_EXPERT_DP},
};

/* A data-parallel gradient signature on a member set that is a DP group:
 * plain DDP or FSDP on the world (default) communicator. */
static int p3d_use_grads(enum p3d_use use, unsigned bits)
{
    int grad = use == P3D_USE_GRAD || use == P3D_USE_DDP ||
               use == P3D_USE_GRAD_AR ||
               use == P3D_USE_RSAG || use == P3D_USE_ANY_AR ||
               use == P3D_USE_ANY_LAYER;

    return grad && (bits & (B(P3D_LBL_DP) | B(P3D_LBL_DP_CP)));
}

/* Traffic with the signature of a group kind the member set is, other
 * than WORLD or MP: Megatron's TP batch broadcasts, a pipeline's
 * send/recv, ... on a world-wide TP or PP group that is the first a rank
 * uses when nothing runs on the default group first (Megatron-DeepSpeed
 * at TP = world; torchtitan at PP = world, whose DeviceMesh reuses the
 * default group for a dim spanning the world). */
static int p3d_use_own_kind(enum p3d_use use, unsigned bits)
{
    return (p3d_use_primary(use) & bits &
            ~(B(P3D_LBL_WORLD) | B(P3D_LBL_MP))) != 0;
}

static int p3d_first(unsigned bits)
{
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        if (bits & B(l))
            return l;
    return P3D_LBL_OTHER;
}

int p3d_label_pick(unsigned bits, enum p3d_use use, const struct p3d_gcomm *g,
                   int dup_label)
{
    int tiny_int = g->use.tiny_ar > g->use.tiny_f32_ar;

    if (!bits)
        return P3D_LBL_OTHER;
    if ((bits & B(P3D_LBL_WORLD)) && g->order == 0 && dup_label < 0 &&
        !p3d_use_grads(use, bits) && !p3d_use_own_kind(use, bits))
        return P3D_LBL_WORLD; /* the first communicator of every rank,
                                 unless it carries, say, DDP's gradients
                                 or a world-wide TP group's batch */
    if (use == P3D_USE_TINY && (bits & B(P3D_LBL_WORLD)) &&
        !(tiny_int && (bits & B(P3D_LBL_MP))))
        return P3D_LBL_WORLD;
    if (use == P3D_USE_P2P && dup_label == P3D_LBL_PP &&
        (bits & B(P3D_LBL_P2P)))
        return P3D_LBL_P2P;
    /* torchtitan's HSDP with EP, the dense and the experts' FSDP on the
     * same ranks: the dense one comes first (build_mesh unflattens the
     * dense mesh before the sparse one; a block gathers its own
     * parameters before its experts' in forward) */
    if ((bits & B(P3D_LBL_DP_SHARD)) && (bits & B(P3D_LBL_EXPERT_DP)) &&
        (use == P3D_USE_GRAD || use == P3D_USE_RSAG))
        return dup_label == P3D_LBL_DP_SHARD ? P3D_LBL_EXPERT_DP
                                             : P3D_LBL_DP_SHARD;
    if (use < sizeof(p3d_pref) / sizeof(p3d_pref[0]))
        for (int i = 0; i < 4 && p3d_pref[use][i] >= 0; i++)
            if (bits & B(p3d_pref[use][i]))
                return p3d_pref[use][i];
    if (use == P3D_USE_RSAG && (bits & B(P3D_LBL_TP)))
        return P3D_LBL_TP;
    return p3d_first(bits);
}

static int p3d_same_members(const struct p3d_gcomm *a,
                            const struct p3d_gcomm *b)
{
    return a->n_members == b->n_members &&
           !memcmp(a->members, b->members,
                   (size_t)a->n_members * sizeof(int));
}

/*
 * Communicators with the same members, found through a hash of the
 * member set instead of comparing every pair (quadratic: half a second
 * at 16k ranks).  Labelling goes in comm order and may complete a comm's
 * members (p3d_complete), so there are two indexes: `done` has the comms
 * already labelled, with their final members (what "a communicator
 * before i" compares with), `init` every comm with the members it had at
 * the start (what a later one still has).  Each chain runs from the
 * latest comm of a hash to the earliest.
 */
struct p3d_twins {
    struct p3d_map done, init; /* member-set hash -> latest comm */
    int *done_prev, *init_prev;
};

static uint64_t p3d_set_hash(const struct p3d_gcomm *g)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)g->n_members;

    for (int i = 0; i < g->n_members; i++)
        h = (h ^ (uint64_t)(uint32_t)g->members[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static void p3d_twins_init(struct p3d_twins *t, const struct p3d_job *job)
{
    memset(t, 0, sizeof(*t));
    t->done_prev = p3d_xcalloc((size_t)job->n_comms + 1, sizeof(int));
    t->init_prev = p3d_xcalloc((size_t)job->n_comms + 1, sizeof(int));
    for (int i = 0; i < job->n_comms; i++)
        t->init_prev[i] = p3d_map_push(&t->init,
                                       p3d_set_hash(&job->comms[i]), i);
}

static void p3d_twins_free(struct p3d_twins *t)
{
    p3d_map_free(&t->done);
    p3d_map_free(&t->init);
    free(t->done_prev);
    free(t->init_prev);
}

/* Whether a communicator before i with i's members (of hash h) is
 * labelled lbl. */
static int p3d_dup_has(const struct p3d_job *job,
                       const struct p3d_twins *t, int i, uint64_t h, int lbl)
{
    for (int k = p3d_map_get(&t->done, h); k >= 0; k = t->done_prev[k])
        if (job->comms[k].label == lbl &&
            p3d_same_members(&job->comms[k], &job->comms[i]))
            return 1;
    return 0;
}

/* A 2-rank ring is a CP ring or a 2-rank all-to-all (EP) whose sends to
 * itself were empty or not known (p3d_usage_batch_a2a): of two such
 * communicators on the same ranks, the second is the other group. */
static int p3d_ring2_other(const struct p3d_job *job,
                           const struct p3d_twins *t, int i, uint64_t h,
                           int label)
{
    unsigned b = job->comms[i].labels;

    if ((label == P3D_LBL_CP || label == P3D_LBL_EP) &&
        (b & B(P3D_LBL_CP)) && (b & B(P3D_LBL_EP)) &&
        p3d_dup_has(job, t, i, h, label))
        return label == P3D_LBL_CP ? P3D_LBL_EP : P3D_LBL_CP;
    return label;
}

/*
 * A folded expert TP group (p3d_layout_set_moe) may have the ranks of a
 * CP or TP group.  Of two communicators on those ranks, the one with the
 * experts' traffic (per-layer all-gathers and reduce-scatters, which the
 * expert TP group's kind admits) is the expert TP group when the other's
 * traffic is not of that kind (a CP ring, TP's all-reduces): two
 * communicators are two groups.
 */
/* Whether communicator k (not g) has g's members and traffic not of
 * the expert TP group's kind. */
static int p3d_not_expert_tp_twin(const struct p3d_job *job, int k,
                                  const struct p3d_gcomm *g, uint64_t max_cpm)
{
    const struct p3d_gcomm *o = &job->comms[k];

    return o != g && p3d_same_members(o, g) &&
           !(p3d_use_labels(p3d_usage_class(o, max_cpm)) &
             B(P3D_LBL_EXPERT_TP));
}

static int p3d_expert_tp_twin(const struct p3d_job *job,
                              const struct p3d_twins *t, int i, uint64_t h,
                              enum p3d_use use, uint64_t max_cpm)
{
    const struct p3d_gcomm *g = &job->comms[i];

    if (!(g->labels & B(P3D_LBL_EXPERT_TP)) ||
        !(p3d_use_labels(use) & B(P3D_LBL_EXPERT_TP)))
        return 0;
    for (int k = p3d_map_get(&t->done, h); k >= 0; k = t->done_prev[k])
        if (p3d_not_expert_tp_twin(job, k, g, max_cpm))
            return 1; /* before i: as labelled */
    for (int k = p3d_map_get(&t->init, h); k > i; k = t->init_prev[k])
        if (p3d_not_expert_tp_twin(job, k, g, max_cpm))
            return 1; /* after i: as they are still */
    return 0;
}

/* Label of the earliest communicator before i with its members, or -1. */
static int p3d_dup_label(const struct p3d_job *job,
                         const struct p3d_twins *t, int i)
{
    int first = -1;

    for (int k = p3d_map_get(&t->done, p3d_set_hash(&job->comms[i]));
         k >= 0; k = t->done_prev[k])
        if (p3d_same_members(&job->comms[k], &job->comms[i]))
            first = k;
    return first >= 0 ? job->comms[first].label : -1;
}

static const char *p3d_role(const struct p3d_gcomm *g, int dup_label,
                            enum p3d_use use)
{
    if (g->label == P3D_LBL_WORLD && dup_label == P3D_LBL_WORLD &&
        use == P3D_USE_TINY)
        return "grad-norm (intra-distributed-optimizer-instance group)";
    return NULL;
}

static int p3d_contains_all(const int *full, int n, const int *part, int k)
{
    for (int i = 0, j = 0; i < k; i++) {
        while (j < n && full[j] < part[i])
            j++;
        if (j == n || full[j] != part[i])
            return 0;
    }
    return 1;
}

static unsigned p3d_label_mask(int label)
{
    switch (label) {
    case P3D_LBL_TP: return B(P3D_AX_TP);
    case P3D_LBL_CP: return B(P3D_AX_CP);
    case P3D_LBL_DP: return B(P3D_AX_DP);
    case P3D_LBL_PP: case P3D_LBL_EMB: case P3D_LBL_P2P: return B(P3D_AX_PP);
    case P3D_LBL_DP_CP: return B(P3D_AX_DP) | B(P3D_AX_CP);
    case P3D_LBL_TP_CP: return B(P3D_AX_TP) | B(P3D_AX_CP);
    case P3D_LBL_MP: return B(P3D_AX_TP) | B(P3D_AX_PP);
    case P3D_LBL_TP_DP_CP:
        return B(P3D_AX_TP) | B(P3D_AX_DP) | B(P3D_AX_CP);
    case P3D_LBL_TP_DP: return B(P3D_AX_TP) | B(P3D_AX_DP);
    case P3D_LBL_WORLD: return 15;
    default: return 0;
    }
}

/* EMB: keep the first and last stage of a PP group. */
static int p3d_emb_of(const struct p3d_layout *l, int *grp, int n)
{
    int c[P3D_AX_N], k = 0;

    for (int i = 0; i < n; i++) {
        p3d_layout_coords(l, grp[i], c);
        if (c[P3D_AX_PP] == 0 || c[P3D_AX_PP] == l->size[P3D_AX_PP] - 1)
            grp[k++] = grp[i];
    }
    return k;
}

/* Try the group `label` would give; 1 if it fits g's known members. */
static int p3d_try_fill(const struct p3d_layout *l, struct p3d_gcomm *g,
                        int label, int *grp)
{
    int w = l->size[0] * l->size[1] * l->size[2] * l->size[3];
    unsigned mask = p3d_label_mask(label);
    int n;

    if (!mask)
        return 0;
    n = p3d_layout_group(l, w, g->members[0], mask, grp);
    if (label == P3D_LBL_EMB)
        n = p3d_emb_of(l, grp, n);
    if (n != g->size || !p3d_contains_all(grp, n, g->members, g->n_members))
        return 0;
    for (int i = 0; i < g->size; i++)
        if (g->slot[i] < 0)
            g->slot[i] = grp[i];
    g->members = p3d_xrealloc(g->members, (size_t)n, sizeof(int));
    memcpy(g->members, grp, sizeof(int) * (size_t)n);
    g->n_members = n;
    g->inferred_members = g->n_missing;
    g->n_missing = 0;
    return 1;
}

/*
 * A communicator some of whose members have no trace file: take the
 * layout group of its size that holds every known member, trying the
 * groups its usage points to first, and fill the unknown slots in order
 * (PyTorch ranks a comm's members ascending).
 */
static void p3d_complete(const struct p3d_layout *l, struct p3d_gcomm *g,
                         enum p3d_use use)
{
    int w = l->size[0] * l->size[1] * l->size[2] * l->size[3];
    int *grp = p3d_xmalloc(sizeof(int) * (size_t)(w + 1)), done = 0;

    if (!g->n_members || g->size > w) {
        free(grp);
        return;
    }
    if (use < sizeof(p3d_pref) / sizeof(p3d_pref[0]))
        for (int i = 0; i < 4 && p3d_pref[use][i] >= 0 && !done; i++)
            done = p3d_try_fill(l, g, p3d_pref[use][i], grp);
    for (int lb = 0; lb < P3D_LBL_COUNT && !done; lb++)
        done = p3d_try_fill(l, g, lb, grp);
    free(grp);
}

void p3d_label_all(struct p3d_job *job)
{
    uint64_t max_cpm = 1;
    struct p3d_twins t;

    for (int i = 0; i < job->n_comms; i++) {
        uint64_t c = p3d_calls_per_member(&job->comms[i]);
        if (c > max_cpm)
            max_cpm = c;
    }
    p3d_twins_init(&t, job);
    for (int i = 0; i < job->n_comms; i++) {
        struct p3d_gcomm *g = &job->comms[i];
        enum p3d_use use = p3d_usage_class(g, max_cpm);
        int dup = p3d_dup_label(job, &t, i); /* members as they came */
        uint64_t h;

        if (g->n_missing && job->layout.valid)
            p3d_complete(&job->layout, g, use);
        h = p3d_set_hash(g); /* its members from here on */
        g->labels = g->n_missing ? 0 :
            p3d_layout_match(&job->layout, g->members, g->n_members);
        if (use != P3D_USE_P2P) /* a pair is a P2P comm only if used so */
            g->labels &= ~B(P3D_LBL_P2P);
        if (job->layout.ep == 1) /* expert groups only exist with EP */
            g->labels &= ~(B(P3D_LBL_EP) | B(P3D_LBL_EXPERT_DP) |
                           B(P3D_LBL_EXPERT_TP));
        g->label = p3d_label_pick(g->labels, use, g, dup);
        if (use == P3D_USE_RING2)
            g->label = p3d_ring2_other(job, &t, i, h, g->label);
        if (p3d_expert_tp_twin(job, &t, i, h, use, max_cpm))
            g->label = P3D_LBL_EXPERT_TP;
        if (g->label != P3D_LBL_P2P) /* a P2P comm is one made for it */
            g->labels &= ~B(P3D_LBL_P2P);
        if (!g->labels)
            g->labels = B(P3D_LBL_OTHER);
        g->label_first = p3d_first(g->labels);
        g->role = p3d_role(g, dup, use);
        t.done_prev[i] = p3d_map_push(&t.done, h, i);
    }
    p3d_twins_free(&t);
}
