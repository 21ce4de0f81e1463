/*
 * sim_layout.c - Megatron's RankGenerator for the simulator.
 *
 * A global rank is a mixed-radix number over the axes of `order`, the
 * first axis varying fastest (Megatron-LM
 * parallel_state.py, RankGenerator); a group varies its
 * own axes and fixes the others, members ascending.  Shared by the driver
 * (ground truth) and the rank library (which comm to create).
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const char *sim_axis_names[SA_COUNT] = { "tp", "cp", "ep", "dp",
                                                "pp" };

const char *sim_axis_name(int axis)
{
    return sim_axis_names[axis];
}

/* "tp-cp-ep-dp-pp"; missing axes are appended (they have size 1). */
int sim_parse_order(const char *s, int order[SA_COUNT])
{
    char buf[64], *save = NULL, *tok;
    int seen[SA_COUNT] = { 0 }, n = 0;

    if (strcmp(s, "titan") == 0)   /* DeviceMesh pp,dp,cp,tp: tp fastest */
        s = "tp-cp-ep-dp-pp";
    if (strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    for (tok = strtok_r(buf, "-", &save); tok;
         tok = strtok_r(NULL, "-", &save)) {
        int a;

        for (a = 0; a < SA_COUNT; a++)
            if (strcmp(tok, sim_axis_names[a]) == 0)
                break;
        if (a == SA_COUNT || seen[a])
            return -1;
        seen[a] = 1;
        order[n++] = a;
    }
    for (int a = 0; a < SA_COUNT; a++)
        if (!seen[a])
            order[n++] = a;
    return 0;
}

void sim_coords(const struct sim_cfg *c, int rank, int coord[SA_COUNT])
{
    for (int i = 0; i < SA_COUNT; i++) {
        int a = c->order[i];

        coord[a] = rank % c->size[a];
        rank /= c->size[a];
    }
}

int sim_rank_of(const struct sim_cfg *c, const int coord[SA_COUNT])
{
    int r = 0, stride = 1;

    for (int i = 0; i < SA_COUNT; i++) {
        int a = c->order[i];

        r += coord[a] * stride;
        stride *= c->size[a];
    }
    return r;
}

int sim_stage(const struct sim_cfg *c, int rank)
{
    int coord[SA_COUNT];

    sim_coords(c, rank, coord);
    return coord[SA_PP];
}

static int sim_cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Ranks sharing every coordinate of rank outside mask, ascending. */
static int sim_vary(const struct sim_cfg *c, int rank, unsigned mask,
                    int *out)
{
    int base[SA_COUNT], idx[SA_COUNT] = { 0 }, n = 0;

    sim_coords(c, rank, base);
    for (;;) {
        int co[SA_COUNT], a;

        for (a = 0; a < SA_COUNT; a++)
            co[a] = (mask & (1u << a)) ? idx[a] : base[a];
        out[n++] = sim_rank_of(c, co);
        for (a = 0; a < SA_COUNT; a++) {
            if (!(mask & (1u << a)))
                continue;
            if (++idx[a] < c->size[a])
                break;
            idx[a] = 0;
        }
        if (a == SA_COUNT)
            break;
    }
    qsort(out, (size_t)n, sizeof(*out), sim_cmp_int);
    return n;
}

/*
 * Megatron's expert generator: RankGenerator(tp=ETP, ep=EP, dp=EDP, pp=PP,
 * cp=1) with the same order, EDP = world / (ETP * EP * PP), ETP =
 * --expert-tensor-parallel-size, TP by default
 * (megatron/core/parallel_state.py initialize_model_parallel, d98e8a64).
 */
void sim_expert_cfg(const struct sim_cfg *c, struct sim_cfg *e)
{
    *e = *c;
    e->size[SA_TP] = sim_etp(c);
    e->size[SA_CP] = 1;
    e->size[SA_EP] = c->ep;
    e->size[SA_DP] = c->world / (e->size[SA_TP] * c->ep * c->size[SA_PP]);
}

int sim_etp(const struct sim_cfg *c)
{
    return c->etp > 0 ? c->etp : c->size[SA_TP];
}

int sim_etp_folded(const struct sim_cfg *c)
{
    return c->ep > 1 && sim_etp(c) != c->size[SA_TP];
}

/*
 * torchtitan's HSDP: the DP axis is (dp_replicate, dp_shard), dp_shard
 * varying faster (DeviceMesh dims pp, dp_replicate, dp_shard, cp, tp; the
 * last fastest), so a DP coordinate d is replica d / S, shard d % S.  The
 * shard group is dp_shard x cp of one replica; the replica group one
 * shard and cp position of every replica.
 */
static int sim_hsdp(const struct sim_cfg *c, int grp, int rank, int *out)
{
    int s = c->size[SA_DP] / (c->dp_rep > 0 ? c->dp_rep : 1), n = 0;
    int b[SA_COUNT], o[SA_COUNT];

    sim_coords(c, rank, b);
    for (int r = 0; r < c->world; r++) {
        int same = 1;

        sim_coords(c, r, o);
        for (int a = 0; a < SA_COUNT; a++)
            if (a != SA_DP && (a != SA_CP || grp == SG_DPREP))
                same &= o[a] == b[a];
        if (grp == SG_DPSHARD)
            same &= o[SA_DP] / s == b[SA_DP] / s;
        else
            same &= o[SA_DP] % s == b[SA_DP] % s;
        if (same)
            out[n++] = r;
    }
    return n;
}

/*
 * torchtitan's expert FSDP group with HSDP: its sparse mesh is (pp,
 * dp_replicate, efsdp, ep), ep fastest (parallel_dims.py build_mesh,
 * pytorch/torchtitan b5bcd76c), so Megatron's expert DP coordinate e is
 * replica e / efsdp, efsdp index e % efsdp; efsdp is one replica's part.
 */
static int sim_titan_efsdp(const struct sim_cfg *c, int rank, int *out)
{
    struct sim_cfg e;
    int b[SA_COUNT], o[SA_COUNT], n = 0, f;

    sim_expert_cfg(c, &e);
    f = e.size[SA_DP] / c->dp_rep;
    sim_coords(&e, rank, b);
    for (int r = 0; r < c->world; r++) {
        sim_coords(&e, r, o);
        if (o[SA_EP] == b[SA_EP] && o[SA_PP] == b[SA_PP] &&
            o[SA_DP] / f == b[SA_DP] / f)
            out[n++] = r;
    }
    return n;
}

/* Members of rank's instance of grp, ascending; returns the count. */
int sim_members(const struct sim_cfg *c, int grp, int rank, int *out)
{
    const unsigned all = (1u << SA_COUNT) - 1;
    struct sim_cfg e;
    int n;

    switch (grp) {
    case SG_EPDP:
        if (c->framework == SIM_FW_TITAN && c->dp_rep > 1)
            return sim_titan_efsdp(c, rank, out);
        /* fall through */
    case SG_EP:
        sim_expert_cfg(c, &e);
        return sim_vary(&e, rank, 1u << (grp == SG_EP ? SA_EP : SA_DP), out);
    case SG_ETP:
        sim_expert_cfg(c, &e);
        return sim_vary(&e, rank, 1u << SA_TP, out);
    case SG_DPSHARD:
    case SG_DPREP:
        return sim_hsdp(c, grp, rank, out);
    case SG_TP: return sim_vary(c, rank, 1u << SA_TP, out);
    case SG_CP: return sim_vary(c, rank, 1u << SA_CP, out);
    case SG_PP: return sim_vary(c, rank, 1u << SA_PP, out);
    case SG_DP_CP:
        return sim_vary(c, rank, (1u << SA_DP) | (1u << SA_CP), out);
    case SG_MP:
        return sim_vary(c, rank, (1u << SA_TP) | (1u << SA_PP), out);
    case SG_EMB:
        n = sim_vary(c, rank, 1u << SA_PP, out);
        out[1] = out[n - 1];
        return n > 1 ? 2 : 1;
    default:
        return sim_vary(c, rank, all, out);
    }
}

static const char *sim_grp_names[SG_COUNT][2] = {
    { "world", "WORLD" },
    { "dp", "DATA_PARALLEL_GROUP_WITH_CP" },
    { "cp", "CONTEXT_PARALLEL_GROUP" },
    { "mp", "MODEL_PARALLEL_GROUP" },
    { "tp", "TENSOR_MODEL_PARALLEL_GROUP" },
    { "pp", "PIPELINE_MODEL_PARALLEL_GROUP" },
    { "emb", "EMBEDDING_GROUP" },
    { "distopt", "INTRA_DISTRIBUTED_OPTIMIZER_INSTANCE_GROUP" },
    { "ep", "EXPERT_MODEL_PARALLEL_GROUP" },
    { "epdp", "EXPERT_DATA_PARALLEL_GROUP" },
    { "dpshard", "mesh_dp_shard_cp" },
    { "dprep", "mesh_dp_replicate" },
    { "etp", "EXPERT_TENSOR_PARALLEL_GROUP" },
};

const char *sim_grp_short(int grp)
{
    return sim_grp_names[grp][0];
}

const char *sim_grp_megatron(int grp)
{
    return sim_grp_names[grp][1];
}

int sim_grp_parse(const char *s)
{
    if (strcmp(s, "dp_cp") == 0 || strcmp(s, "dp-cp") == 0)
        return SG_DP_CP;
    for (int g = 0; g < SG_COUNT; g++)
        if (strcmp(s, sim_grp_names[g][0]) == 0)
            return g;
    return -1;
}

const char *sim_kind_name(int kind)
{
    static const char *names[SK_COUNT] = {
        "AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce",
        "AlltoAll", "Gather", "Scatter", "Send", "Recv"
    };

    return names[kind];
}

int sim_host_of(const struct sim_cfg *c, int rank)
{
    int h = c->hosts > 0 ? c->hosts : 1;

    return rank / (c->world / h);
}

long long sim_host_offset(const struct sim_cfg *c, int host)
{
    long long off = 0;

    for (int i = 0; i < c->n_skew; i++)
        if (sim_host_of(c, c->skew[i].rank) == host)
            off = c->skew[i].ns;
    return off;
}
