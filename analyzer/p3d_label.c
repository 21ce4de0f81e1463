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
 */
#include <string.h>

#include "p3d_label.h"

#define B(x) (1u << (x))

static const int p3d_pref[][4] = {
    [P3D_USE_NONE] = {-1},
    [P3D_USE_MIXED] = {-1},
    [P3D_USE_P2P] = {P3D_LBL_PP, P3D_LBL_P2P, P3D_LBL_CP, -1},
    [P3D_USE_A2A] = {P3D_LBL_EP, P3D_LBL_CP, -1},
    [P3D_USE_RSAG] = {P3D_LBL_DP, P3D_LBL_DP_CP, P3D_LBL_EXPERT_DP, -1},
    [P3D_USE_LAYER] = {P3D_LBL_CP, P3D_LBL_TP, -1},
    [P3D_USE_BCAST] = {P3D_LBL_TP, P3D_LBL_TP_CP, -1},
    [P3D_USE_AR] = {P3D_LBL_TP, P3D_LBL_TP_CP, -1},
    [P3D_USE_TINY] = {P3D_LBL_MP, P3D_LBL_WORLD, -1},
    [P3D_USE_BIGAR] = {P3D_LBL_EMB, P3D_LBL_DP, P3D_LBL_DP_CP, -1},
};

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
    if (use == P3D_USE_TINY && (bits & B(P3D_LBL_WORLD)) &&
        !(tiny_int && (bits & B(P3D_LBL_MP))))
        return P3D_LBL_WORLD;
    if (use == P3D_USE_P2P && dup_label == P3D_LBL_PP &&
        (bits & B(P3D_LBL_P2P)))
        return P3D_LBL_P2P;
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

/* Label of the earliest communicator with g's members, or -1. */
static int p3d_dup_label(const struct p3d_job *job, int i)
{
    for (int k = 0; k < i; k++)
        if (p3d_same_members(&job->comms[k], &job->comms[i]))
            return job->comms[k].label;
    return -1;
}

static const char *p3d_role(const struct p3d_gcomm *g, int dup_label,
                            enum p3d_use use)
{
    if (g->label == P3D_LBL_WORLD && dup_label == P3D_LBL_WORLD &&
        use == P3D_USE_TINY)
        return "grad-norm (intra-distributed-optimizer-instance group)";
    return NULL;
}

void p3d_label_all(struct p3d_job *job)
{
    uint64_t max_cpm = 1;

    for (int i = 0; i < job->n_comms; i++) {
        uint64_t c = p3d_calls_per_member(&job->comms[i]);
        if (c > max_cpm)
            max_cpm = c;
    }
    for (int i = 0; i < job->n_comms; i++) {
        struct p3d_gcomm *g = &job->comms[i];
        enum p3d_use use = p3d_usage_class(g, max_cpm);
        int dup = p3d_dup_label(job, i);

        g->labels = g->n_missing ? 0 :
            p3d_layout_match(&job->layout, g->members, g->n_members);
        g->label = p3d_label_pick(g->labels, use, g, dup);
        if (!g->labels)
            g->labels = B(P3D_LBL_OTHER);
        g->role = p3d_role(g, dup, use);
    }
}
