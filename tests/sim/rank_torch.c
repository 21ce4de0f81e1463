/*
 * rank_torch.c - plain PyTorch data parallelism on the default (world)
 * process group (--framework ddp|fsdp), as the frameworks' code issues it
 * (pytorch/pytorch torch/nn/parallel/distributed.py, c10d reducer.cpp,
 * distributed/utils.py; torch/distributed/fsdp/_fully_shard/
 * _fsdp_collectives.py and _fully_shard.py):
 *   ddp   at construction an int64 all-gather of each rank's parameter
 *         count and an int64 broadcast of their shapes from rank 0
 *         (_verify_param_shape_across_processes), then the parameters'
 *         broadcast from rank 0 (_sync_module_states, <= 250 MiB each);
 *         iteration 0 all-reduces the whole gradient at once at the end of
 *         backward (the first bucket is unbounded), iteration 1 starts with
 *         two tiny int32 broadcasts (Reducer::sync_bucket_indices), and
 *         from then on the buckets all-reduce as backward makes their
 *         gradients: the first >= 1 MiB, the others >= 25 MiB, of whole
 *         parameters, so their sizes differ; fp32, SUM.
 *   fsdp  FSDP2 with a unit per layer: in forward an all-gather of the
 *         unit's bf16 parameters, in backward another and a reduce-scatter
 *         of its fp32 gradients with AVG (torchtitan's reduce_dtype); the
 *         root unit (embedding, output) is gathered once, its gradients
 *         reduce-scattered at the end.
 *   deepspeed  Megatron-DeepSpeed with ZeRO stage 2 (deepspeedai/DeepSpeed
 *         deepspeed/runtime/zero/stage_1_and_2.py): TP as Megatron's (per
 *         micro-batch int64 broadcasts of the batch on TP, per layer a bf16
 *         all-reduce of the activations); at the last micro-batch the
 *         gradient buckets all-reduced on DP in bf16 (average_tensor with
 *         use_multi_rank_bucket_allreduce, the default: allreduce_and_
 *         scatter of reduce_bucket_size buckets; whole parameters until
 *         the bucket is full, so the sizes differ); the grad norm, an fp32
 *         all-reduce on TP (model_parallel_group) and on DP
 *         (dp_process_group); the optimizer; the updated bf16 partitions
 *         all-gathered on DP (all_gather_dp_groups).
 * Sizes scale with --dp-bytes (a real MiB is dp_bytes / 16 here).
 */
#include "rank.h"

#define RANK_MIB(c) ((c)->dp_bytes / 16 > 64 ? (c)->dp_bytes / 16 : 64)

/* The largest message of either framework, bytes (buffers are sized so). */
size_t rank_torch_buf_bytes(const struct sim_cfg *c)
{
    return (size_t)RANK_MIB(c) * (size_t)(64 + 26 * (c->buckets + 1)) +
           65536;
}

static void rank_ddp_init(struct rank_ctx *x)
{
    size_t mib = RANK_MIB(x->cfg) / 4; /* fp32 elements */

    rank_one(x, SG_WORLD, SK_ALLGATHER, 1, ncclInt64, ncclSum, -1);
    rank_one(x, SG_WORLD, SK_BROADCAST, 2 * 3 * (size_t)x->cfg->layers,
             ncclInt64, ncclSum, 0);
    rank_one(x, SG_WORLD, SK_BROADCAST, 60 * mib, ncclFloat32, ncclSum, 0);
}

/* Bucket b of the rebuilt buckets, fp32 elements: whole parameters until
 * the cap is reached, so each is a little over it, by a varying amount. */
static size_t rank_ddp_bucket(const struct rank_ctx *x, int b)
{
    size_t mib = RANK_MIB(x->cfg) / 4;
    static const size_t over[] = {113, 3001, 7919, 12007, 577, 9973};

    return (b == 0 ? mib : 25 * mib) + over[b % 6];
}

static size_t rank_ddp_total(const struct rank_ctx *x)
{
    size_t n = 0;

    for (int b = 0; b <= x->cfg->buckets; b++)
        n += rank_ddp_bucket(x, b);
    return n;
}

static void rank_ddp_iteration(struct rank_ctx *x)
{
    const struct sim_cfg *c = x->cfg;
    int nb = c->buckets + 1;

    if (x->iter == 1) { /* the buckets rebuilt in gradient-ready order */
        rank_one(x, SG_WORLD, SK_BROADCAST, 3 * (size_t)c->layers + 1,
                 ncclInt32, ncclSum, 0);
        rank_one(x, SG_WORLD, SK_BROADCAST, (size_t)nb, ncclInt32, ncclSum,
                 0);
    }
    for (int mb = 0; mb < c->m; mb++) {
        for (int l = 0; l < c->layers; l++)
            rank_compute(x, SB_FWD, mb, c->fwd_ms[0] / c->layers);
        for (int l = c->layers - 1; l >= 0; l--) {
            rank_compute(x, SB_BWD, mb, c->bwd_ms[0] / c->layers);
            if (mb < c->m - 1) /* no_sync() until the last micro-batch */
                continue;
            if (x->iter == 0 && l == 0)
                rank_one(x, SG_WORLD, SK_ALLREDUCE, rank_ddp_total(x),
                         ncclFloat32, ncclSum, -1);
            else if (x->iter > 0 && l < nb) /* ready, last layer first */
                rank_one(x, SG_WORLD, SK_ALLREDUCE,
                         rank_ddp_bucket(x, nb - 1 - l), ncclFloat32,
                         ncclSum, -1);
        }
        if (x->iter > 0 && mb == c->m - 1)
            for (int b = nb - 1 - c->layers; b >= 0; b--) /* more buckets */
                rank_one(x, SG_WORLD, SK_ALLREDUCE, rank_ddp_bucket(x, b),
                         ncclFloat32, ncclSum, -1);
    }
    rank_compute(x, SB_OPT, 0, c->opt_ms);
}

/* FSDP2 unit: bf16 params gathered, per rank its shard's count. */
static void rank_fsdp_gather(struct rank_ctx *x, size_t unit)
{
    rank_one(x, SG_WORLD, SK_ALLGATHER, unit / (size_t)x->cfg->world,
             ncclBfloat16, ncclSum, -1);
}

static void rank_fsdp_reduce(struct rank_ctx *x, size_t unit)
{
    rank_one(x, SG_WORLD, SK_REDUCESCATTER, unit / (size_t)x->cfg->world,
             ncclFloat32, ncclAvg, -1);
}

static void rank_fsdp_iteration(struct rank_ctx *x)
{
    const struct sim_cfg *c = x->cfg;
    size_t unit = 4 * RANK_MIB(c), root = 3 * RANK_MIB(c);

    rank_fsdp_gather(x, root);   /* root: kept gathered after forward */
    for (int mb = 0; mb < c->m; mb++) {
        for (int l = 0; l < c->layers; l++) {
            rank_fsdp_gather(x, unit);
            rank_compute(x, SB_FWD, mb, c->fwd_ms[0] / c->layers);
        }
        for (int l = c->layers - 1; l >= 0; l--) {
            rank_fsdp_gather(x, unit);
            rank_compute(x, SB_BWD, mb, c->bwd_ms[0] / c->layers);
            if (mb == c->m - 1) /* set_requires_gradient_sync */
                rank_fsdp_reduce(x, unit);
        }
    }
    rank_fsdp_reduce(x, root);
    rank_compute(x, SB_OPT, 0, c->opt_ms);
}

/* DeepSpeed's gradient bucket b, bf16 elements (a little under the
 * bucket size: the next whole parameter did not fit). */
static size_t rank_ds_bucket(const struct rank_ctx *x, int b)
{
    static const size_t under[] = {4099, 511, 12289, 77, 6007, 2003};

    return 4 * RANK_MIB(x->cfg) - under[b % 6];
}

static void rank_ds_iteration(struct rank_ctx *x)
{
    const struct sim_cfg *c = x->cfg;
    int tp = c->size[SA_TP], dp = c->size[SA_DP];
    size_t part = 0;

    for (int mb = 0; mb < c->m; mb++) {
        for (int i = 0; i < 2; i++)   /* broadcast_data: sizes, tokens */
            rank_one(x, SG_TP, SK_BROADCAST, i ? 1024 : 8, ncclInt64,
                     ncclSum, 0);
        for (int l = 0; l < c->layers; l++) {
            rank_compute(x, SB_FWD, mb, c->fwd_ms[0] / c->layers);
            rank_tp_out(x);
        }
        for (int l = c->layers - 1; l >= 0; l--) {
            rank_compute(x, SB_BWD, mb, c->bwd_ms[0] / c->layers);
            rank_tp_out(x);
        }
    }
    for (int b = 0; dp > 1 && b <= c->buckets; b++) {
        rank_one(x, SG_DP_CP, SK_ALLREDUCE, rank_ds_bucket(x, b),
                 ncclBfloat16, ncclSum, -1);
        part += rank_ds_bucket(x, b);
    }
    if (tp > 1)
        rank_one(x, SG_TP, SK_ALLREDUCE, 1, ncclFloat32, ncclSum, -1);
    if (dp > 1)
        rank_one(x, SG_DP_CP, SK_ALLREDUCE, 1, ncclFloat32, ncclSum, -1);
    rank_compute(x, SB_OPT, 0, c->opt_ms);
    if (dp > 1)
        rank_one(x, SG_DP_CP, SK_ALLGATHER, part / (size_t)dp, ncclBfloat16,
                 ncclSum, -1);
}

int rank_torch_iteration(struct rank_ctx *x)
{
    struct sim_step *s = &x->t->steps[x->iter];

    s->start = rank_now();
    x->want_first = 1;
    if (x->iter == 0 && x->cfg->framework == SIM_FW_DDP)
        rank_ddp_init(x); /* DistributedDataParallel(model) */
    if (x->cfg->framework == SIM_FW_DDP)
        rank_ddp_iteration(x);
    else if (x->cfg->framework == SIM_FW_DEEPSPEED)
        rank_ds_iteration(x);
    else
        rank_fsdp_iteration(x);
    rank_sync(x);
    s->end = rank_now();
    x->t->n_steps = x->iter + 1;
    return 0;
}
