/*
 * rank_titan.c - what a torchtitan rank issues (--framework titan), where
 * it differs from Megatron, on the groups of its DeviceMesh
 * (init_device_mesh over pp, dp_shard, cp, tp; tp fastest, the same
 * member sets as Megatron's default order; tests/data/layout/titan-
 * groups.jsonl.gz has them from torch's DeviceMesh).  Sources:
 * pytorch/torchtitan torchtitan/models/llama3/parallelize.py,
 * distributed/parallel_dims.py, trainer.py, distributed/utils.py;
 * torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py;
 * torch/distributed/tensor/experimental/_attention.py; pipelining
 * schedules.py and stage.py.
 *   TP   sequence parallel on every block: all-gather in, reduce-scatter
 *        out, bf16 (apply_tp's layer plan); no batch broadcasts (every
 *        rank loads its own batch).
 *   CP   per layer, forward: one all-gather of K and V on cp
 *        (_AllGatherRotater, the default rotate method); backward: the
 *        same all-gather and cp-1 rotations of dK/dV, each a send to the
 *        next and a receive from the previous cp rank (permute_tensor).
 *   FSDP fully_shard on dp_shard x cp ("dp_shard_cp"): per block a bf16
 *        all-gather of its parameters before forward and, without PP
 *        (reshard_after_forward), again before backward; a fp32
 *        reduce-scatter of its gradients with AVG in backward (every
 *        micro-batch without PP; with PP only the last, stage.py
 *        backward_maybe_with_nosync).
 *   step the token count (int64 sum) on the loss mesh (dp_shard x cp),
 *        the grad norm (fp32, a DTensor all-reduce over each sharded
 *        mesh: FSDP's, TP's; with PP also on pp), the optimizer, the
 *        loss-is-finite check (int32 min) on the loss mesh and on pp.
 *   HSDP (--dp-replicate R): fully_shard on the 2-D mesh (dp_replicate,
 *        dp_shard_cp): gathers and reduce-scatters on dp_shard x cp, then
 *        the reduced shard all-reduced (fp32, AVG) across the R replicas
 *        (_fsdp_collectives.py foreach_reduce: all_reduce on the
 *        replicate group after the reduce-scatter).
 *   MoE (--ep > 1; every layer, as the simulator's Megatron): the sparse
 *        mesh (pp, dp_replicate, efsdp, ep), ep fastest, EP borrowing
 *        from dp_shard x cp x tp (parallel_dims.py build_mesh).  Per
 *        layer forward, the token counts exchanged by an equal-split
 *        all_to_all_single (ncclAlltoAll: PyTorch uses it from NCCL
 *        2.28, pytorch/pytorch#164265), then the dispatch and the combine,
 *        unequal splits, each a group of a send and a receive per EP rank
 *        (rank_moe_a2a); backward the two again (autograd of
 *        all_to_all_single) (models/common/token_dispatcher.py
 *        AllToAllTokenDispatcher).  The experts are fully_shard'ed on the
 *        efsdp mesh (with HSDP on (dp_replicate, efsdp)) apart from their
 *        block (qwen3/parallelize.py, apply_fsdp_to_decoder): their own
 *        all-gather and reduce-scatter, like the block's.  At the step's
 *        end the expert gradients' norm is a DTensor all-reduce on efsdp
 *        and ep (distributed/utils.py _clip_grad_norm_with_ep).
 * Mesh dims of size 1 do not exist, so nothing is issued on them.
 */
#include "rank.h"

/* FSDP's communicator: the flattened dp_shard x cp mesh, its own process
 * group even where its ranks are those of cp alone (DeviceMesh._flatten
 * creates one; torchtitan's build_mesh notes that identical rank sets
 * then appear as several communicators). */
static int rank_titan_fsdp_grp(const struct rank_ctx *x)
{
    return x->cfg->dp_rep > 1 ? SG_DPSHARD : SG_DP_CP;
}

static int rank_titan_fsdp(const struct rank_ctx *x)
{
    return x->cfg->size[SA_DP] * x->cfg->size[SA_CP] > 1;
}

static size_t rank_titan_shard(const struct rank_ctx *x, size_t bytes,
                               size_t width)
{
    int rep = x->cfg->dp_rep > 1 ? x->cfg->dp_rep : 1;
    size_t n = bytes / width /
               (size_t)(x->cfg->size[SA_DP] / rep * x->cfg->size[SA_CP]);

    return n ? n : 1;
}

/* Before a block's compute: its parameters, if FSDP gathers them now. */
static void rank_titan_gather(struct rank_ctx *x, int kind, int mb)
{
    int pp = x->pp > 1;

    if (!rank_titan_fsdp(x) || (pp && (kind != SB_FWD || mb != 0)))
        return;
    rank_one(x, rank_titan_fsdp_grp(x), SK_ALLGATHER,
             rank_titan_shard(x, x->cfg->dp_bytes / 4, 2), ncclBfloat16,
             ncclSum, -1);
}

static void rank_titan_reduce(struct rank_ctx *x, int mb)
{
    if (!rank_titan_fsdp(x) || (x->pp > 1 && mb != x->cfg->m - 1))
        return;
    rank_one(x, rank_titan_fsdp_grp(x), SK_REDUCESCATTER,
             rank_titan_shard(x, x->cfg->dp_bytes / 4, 4), ncclFloat32,
             ncclAvg, -1);
    if (x->cfg->dp_rep > 1)
        rank_one(x, SG_DPREP, SK_ALLREDUCE,
                 rank_titan_shard(x, x->cfg->dp_bytes / 4, 4), ncclFloat32,
                 ncclAvg, -1);
}

/* Ranks of the experts' FSDP group (efsdp): the expert DP ranks, with
 * HSDP one replica's part of them (sim_members' SG_EPDP). */
static int rank_titan_efsdp_n(const struct sim_cfg *c)
{
    return rank_edp(c) / (c->dp_rep > 1 ? c->dp_rep : 1);
}

/* The experts' FSDP group (efsdp) has 2+ ranks. */
static int rank_titan_efsdp(const struct rank_ctx *x)
{
    return x->cfg->ep > 1 && rank_titan_efsdp_n(x->cfg) > 1;
}

static size_t rank_titan_eshard(const struct rank_ctx *x, size_t width)
{
    size_t n = x->cfg->dp_bytes / 4 / width /
               (size_t)rank_titan_efsdp_n(x->cfg);

    return n ? n : 1;
}

/* The experts' FSDP: their parameters before forward (and backward
 * without PP), their gradients after backward, as the block's. */
static void rank_titan_expert_fsdp(struct rank_ctx *x, int kind, int mb,
                                   int after)
{
    int pp = x->pp > 1;

    if (!rank_titan_efsdp(x))
        return;
    if (!after && !(pp && (kind != SB_FWD || mb != 0)))
        rank_one(x, SG_EPDP, SK_ALLGATHER, rank_titan_eshard(x, 2),
                 ncclBfloat16, ncclSum, -1);
    if (after && kind == SB_BWD && !(pp && mb != x->cfg->m - 1)) {
        rank_one(x, SG_EPDP, SK_REDUCESCATTER, rank_titan_eshard(x, 4),
                 ncclFloat32, ncclAvg, -1);
        if (x->cfg->dp_rep > 1)
            rank_one(x, SG_DPREP, SK_ALLREDUCE, rank_titan_eshard(x, 4),
                     ncclFloat32, ncclAvg, -1);
    }
}

/* A MoE layer's part after attention. */
static void rank_titan_moe(struct rank_ctx *x, int kind, int mb, double ms)
{
    rank_titan_expert_fsdp(x, kind, mb, 0);
    if (kind == SB_FWD)
        rank_one(x, SG_EP, SK_ALLTOALL, (size_t)x->cfg->ep, ncclInt64,
                 ncclSum, -1);                  /* token counts */
    rank_moe_a2a(x);                             /* dispatch */
    rank_compute(x, kind, mb, ms);
    rank_moe_a2a(x);                             /* combine */
    rank_titan_expert_fsdp(x, kind, mb, 1);
}

static void rank_titan_kv_gather(struct rank_ctx *x)
{
    rank_one(x, SG_CP, SK_ALLGATHER, x->cfg->cp_bytes / 2, ncclBfloat16,
             ncclSum, -1);
}

void rank_titan_layer(struct rank_ctx *x, int kind, int mb, double ms)
{
    int cp = x->cfg->size[SA_CP], moe = x->cfg->ep > 1;

    if (moe)
        ms /= 2;
    rank_titan_gather(x, kind, mb);
    rank_tp_in(x);
    if (cp > 1)
        rank_titan_kv_gather(x);
    for (int s = 0; s < cp; s++) {
        if (s > 0 && kind == SB_BWD)
            rank_cp_step(x);              /* dK/dV rotation */
        rank_compute(x, kind, mb, ms / cp);
    }
    rank_tp_out(x);
    if (moe)
        rank_titan_moe(x, kind, mb, ms);
    if (kind == SB_BWD)
        rank_titan_reduce(x, mb);
}

/* A 1-element all-reduce on each of the step's meshes that exist: dp
 * (SG_DP_CP, the loss mesh dp_replicate x dp_shard x cp, or FSDP's shard
 * mesh), tp, pp. */
static void rank_titan_small(struct rank_ctx *x, ncclDataType_t dt,
                             ncclRedOp_t op, int dp, int on_tp, int on_pp)
{
    if (dp >= 0 && rank_titan_fsdp(x))
        rank_one(x, dp, SK_ALLREDUCE, 1, dt, op, -1);
    if (on_tp && x->cfg->size[SA_TP] > 1)
        rank_one(x, SG_TP, SK_ALLREDUCE, 1, dt, op, -1);
    if (on_pp && x->pp > 1)
        rank_one(x, SG_PP, SK_ALLREDUCE, 1, dt, op, -1);
}

void rank_titan_step_start(struct rank_ctx *x)
{
    rank_titan_small(x, ncclInt64, ncclSum, SG_DP_CP, 0, 0); /* tokens */
}

void rank_titan_step_end(struct rank_ctx *x)
{
    rank_titan_small(x, ncclFloat32, ncclSum, rank_titan_fsdp_grp(x), 1,
                     1);                                /* grad norm */
    if (rank_titan_efsdp(x))                            /* experts' */
        rank_one(x, SG_EPDP, SK_ALLREDUCE, 1, ncclFloat32, ncclSum, -1);
    if (x->cfg->ep > 1)
        rank_one(x, SG_EP, SK_ALLREDUCE, 1, ncclFloat32, ncclSum, -1);
    rank_sync(x);                                       /* .item() */
    rank_compute(x, SB_OPT, 0, x->cfg->opt_ms);
    rank_titan_small(x, ncclInt32, ncclMin, SG_DP_CP, 0, 1); /* finite */
    rank_sync(x);
}
