/*
 * rank_sched.c - one training iteration of a Megatron rank.
 *
 * Replays what Megatron-LM issues (Megatron-LM core/pipeline_parallel/
 * schedules.py, p2p_communication.py, tensor_parallel/layers.py): per
 * micro-batch the TP batch broadcast on the first/last stage, per layer
 * the TP all-reduce (or all-gather/reduce-scatter with sequence
 * parallelism) and the CP KV ring, the 1F1B pipeline schedule with
 * batched send/recv on the PP group, the last stage's cross-entropy
 * all-reduces; per step the DP gradient reduce-scatter and parameter
 * all-gather per bucket (or all-reduce), the embedding-gradient
 * all-reduce, the grad-norm and MP 1-element all-reduces and the loss
 * all-reduce.  Time spent in PP send/recv is the stage's true bubble.
 * --framework titan keeps the schedules and swaps the traffic for
 * torchtitan's (rank_titan.c).
 */
#include "rank.h"

#define RANK_CE_COUNT 1024     /* tokens of a micro-batch */

static int rank_is_first(const struct rank_ctx *x, int chunk)
{
    return x->stage == 0 && chunk == 0;
}

static int rank_is_last(const struct rank_ctx *x, int chunk)
{
    return x->stage == x->pp - 1 && chunk == x->cfg->vpp - 1;
}

/* CP ring step: send KV to the next CP rank, receive from the previous. */
void rank_cp_step(struct rank_ctx *x)
{
    int cp = x->cfg->size[SA_CP], me = x->coord[SA_CP];
    size_t n = x->cfg->cp_bytes / 2;
    struct rank_op ops[2] = {
        { SG_CP, SK_SEND, n, ncclBfloat16, ncclSum, (me + 1) % cp },
        { SG_CP, SK_RECV, n, ncclBfloat16, ncclSum, (me + cp - 1) % cp },
    };

    rank_submit(x, ops, 2, 1);
}

static int rank_is_titan(const struct rank_ctx *x)
{
    return x->cfg->framework == SIM_FW_TITAN;
}

void rank_tp_in(struct rank_ctx *x)
{
    int tp = x->cfg->size[SA_TP];

    if (tp > 1 && (x->cfg->sp || rank_is_titan(x)))
        rank_one(x, SG_TP, SK_ALLGATHER, x->cfg->tp_bytes / 2 / (size_t)tp,
                 ncclBfloat16, ncclSum, -1);
}

void rank_tp_out(struct rank_ctx *x)
{
    int tp = x->cfg->size[SA_TP];

    if (tp == 1)
        return;
    if (x->cfg->sp || rank_is_titan(x))
        rank_one(x, SG_TP, SK_REDUCESCATTER,
                 x->cfg->tp_bytes / 2 / (size_t)tp, ncclBfloat16, ncclSum,
                 -1);
    else
        rank_one(x, SG_TP, SK_ALLREDUCE, x->cfg->tp_bytes / 2, ncclBfloat16,
                 ncclSum, -1);
}

/*
 * MoE (--ep > 1): token dispatch or combine, an all-to-all on EP as
 * PyTorch issues Megatron's (token_dispatcher.py MoEAlltoAllTokenDispatcher
 * -> tensor_parallel.all_to_all -> all_to_all_single with split sizes ->
 * torch/csrc/cuda/nccl.cpp all2all_single_unequal_split, pytorch/pytorch
 * 0033e774): one group of an ncclSend and an ncclRecv for every rank r of
 * the communicator, its own included (`for r in irange(numranks)`, each
 * skipped only when its count is 0; the tokens a rank routes to its own
 * experts are seldom none).
 */
void rank_moe_a2a(struct rank_ctx *x)
{
    size_t per = x->cfg->tp_bytes / 2 / (size_t)x->cfg->ep;
    struct rank_op ops[16];
    int mem[SIM_MAX_RANKS], ep = sim_members(x->cfg, SG_EP, x->rank, mem);
    int n = 0;

    if (2 * ep > 16) {      /* more than one batch holds */
        rank_one(x, SG_EP, SK_ALLTOALL, per, ncclBfloat16, ncclSum, -1);
        return;
    }
    for (int p = 0; p < ep; p++) {
        ops[n++] = (struct rank_op){ SG_EP, SK_SEND, per, ncclBfloat16,
                                     ncclSum, p };
        ops[n++] = (struct rank_op){ SG_EP, SK_RECV, per, ncclBfloat16,
                                     ncclSum, p };
    }
    rank_submit(x, ops, n, 1);
}

/* Ranks of an expert-DP group: world / (etp * ep * pp). */
int rank_edp(const struct sim_cfg *c)
{
    return c->world / (sim_etp(c) * c->ep * c->size[SA_PP]);
}

/*
 * The experts' tensor parallelism when folded (--etp other than tp, > 1):
 * after the dispatch all-to-all the tokens are all-gathered on the expert
 * TP group, before the combine reduce-scattered (token_dispatcher.py
 * MoEAlltoAllTokenDispatcher token_dispatch and token_combine, tp_size > 1
 * on pg_collection.expt_tp; Megatron-LM d98e8a64).  Unfolded, the same
 * ops would run on TP's group; the simulator leaves them out there, as
 * it always has.
 */
static void rank_moe_etp(struct rank_ctx *x, int kind)
{
    int etp = sim_etp(x->cfg);
    size_t part = x->cfg->tp_bytes / 2 / (size_t)x->cfg->ep / (size_t)etp;

    if (!sim_etp_folded(x->cfg) || etp < 2)
        return;
    rank_one(x, SG_ETP, kind, part ? part : 1, ncclBfloat16, ncclSum, -1);
}

/*
 * One layer: attention (compute split by the CP ring steps), TP out, then
 * with MoE dispatch all-to-all, expert compute, combine all-to-all.
 */
static void rank_layer(struct rank_ctx *x, int kind, int mb, double ms)
{
    int cp = x->cfg->size[SA_CP], moe = x->cfg->ep > 1;
    double attn = moe ? ms / 2 : ms;

    if (rank_is_titan(x)) {
        rank_titan_layer(x, kind, mb, ms);
        return;
    }
    rank_tp_in(x);
    for (int s = 0; s < cp; s++) {
        if (s > 0)
            rank_cp_step(x);
        rank_compute(x, kind, mb, attn / cp);
    }
    rank_tp_out(x);
    if (!moe)
        return;
    rank_moe_a2a(x);
    rank_moe_etp(x, SK_ALLGATHER);
    rank_compute(x, kind, mb, ms / 2);
    rank_moe_etp(x, SK_REDUCESCATTER);
    rank_moe_a2a(x);
}

static void rank_batch_bcast(struct rank_ctx *x, int chunk)
{
    int n = (rank_is_first(x, chunk) ? 2 : 0) + (rank_is_last(x, chunk) ? 2
                                                                         : 0);

    if (rank_is_titan(x))
        return;   /* every torchtitan rank loads its own batch */
    for (int i = 0; i < n; i++)
        rank_one(x, SG_TP, SK_BROADCAST, RANK_CE_COUNT, ncclInt64, ncclSum,
                 0);
}

static void rank_forward(struct rank_ctx *x, int mb, int chunk)
{
    const struct sim_cfg *c = x->cfg;
    double ms = c->fwd_ms[x->stage] / c->layers / c->vpp;

    rank_batch_bcast(x, chunk);
    for (int l = 0; l < c->layers; l++)
        rank_layer(x, SB_FWD, mb, ms);
    if (rank_is_last(x, chunk) && (!rank_is_titan(x) || c->size[SA_TP] > 1)) {
        rank_one(x, SG_TP, SK_ALLREDUCE, RANK_CE_COUNT, ncclFloat32, ncclMax,
                 -1);
        rank_one(x, SG_TP, SK_ALLREDUCE, RANK_CE_COUNT, ncclFloat32, ncclSum,
                 -1);
        rank_one(x, SG_TP, SK_ALLREDUCE, RANK_CE_COUNT, ncclFloat32, ncclSum,
                 -1);
    }
}

static void rank_backward(struct rank_ctx *x, int mb)
{
    const struct sim_cfg *c = x->cfg;
    double ms = c->bwd_ms[x->stage] / c->layers / c->vpp;

    for (int l = 0; l < c->layers; l++)
        rank_layer(x, SB_BWD, mb, ms);
}

/*
 * A batched P2P exchange on the PP group, ops in Megatron's order
 * send_prev, recv_prev, send_next, recv_next; peers wrap around the ring
 * (the last stage's next is the first stage); empty batches issue nothing.
 */
static void rank_p2p_raw(struct rank_ctx *x, int send_prev, int recv_prev,
                         int send_next, int recv_next)
{
    struct rank_op ops[4];
    size_t cnt = x->cfg->pp_bytes / 2;
    int n = 0, prev = (x->stage + x->pp - 1) % x->pp;
    int next = (x->stage + 1) % x->pp;

    if (send_prev)
        ops[n++] = (struct rank_op){ SG_PP, SK_SEND, cnt, ncclBfloat16,
                                     ncclSum, prev };
    if (recv_prev)
        ops[n++] = (struct rank_op){ SG_PP, SK_RECV, cnt, ncclBfloat16,
                                     ncclSum, prev };
    if (send_next)
        ops[n++] = (struct rank_op){ SG_PP, SK_SEND, cnt, ncclBfloat16,
                                     ncclSum, next };
    if (recv_next)
        ops[n++] = (struct rank_op){ SG_PP, SK_RECV, cnt, ncclBfloat16,
                                     ncclSum, next };
    if (n == 0)
        return;
    x->in_pp = 1;   /* rank_observer: its NCCL kernel is pipeline time */
    rank_submit(x, ops, n, 1);
    rank_sync(x);   /* batch_p2p_sync: torch.cuda.synchronize() */
    x->in_pp = 0;
}

/* Non-interleaved: the first stage has no prev, the last no next. */
static void rank_p2p(struct rank_ctx *x, int send_prev, int recv_prev,
                     int send_next, int recv_next)
{
    int first = x->stage == 0, last = x->stage == x->pp - 1;

    rank_p2p_raw(x, send_prev && !first, recv_prev && !first,
                 send_next && !last, recv_next && !last);
}

/* forward_backward_pipelining_without_interleaving. */
static void rank_1f1b(struct rank_ctx *x)
{
    int m = x->cfg->m, w = x->pp - x->stage - 1;
    int steady;

    w = w < m ? w : m;
    steady = m - w;
    for (int i = 0; i < w; i++) {
        rank_p2p(x, 0, 1, 0, 0);               /* recv_forward */
        rank_forward(x, i, 0);
        rank_p2p(x, 0, 0, 1, 0);               /* send_forward */
    }
    if (steady > 0)
        rank_p2p(x, 0, 1, 0, 0);
    for (int i = 0; i < steady; i++) {
        rank_forward(x, w + i, 0);
        rank_p2p(x, 0, 0, 1, 1);               /* send_fwd_recv_bwd */
        rank_backward(x, i);
        if (i == steady - 1)
            rank_p2p(x, 1, 0, 0, 0);           /* send_backward */
        else
            rank_p2p(x, 1, 1, 0, 0);           /* send_bwd_recv_fwd */
    }
    for (int i = 0; i < w; i++) {
        rank_p2p(x, 0, 0, 0, 1);               /* recv_backward */
        rank_backward(x, steady + i);
        rank_p2p(x, 1, 0, 0, 0);               /* send_backward */
    }
}

/* forward_backward_no_pipelining. */
static void rank_no_pipe(struct rank_ctx *x)
{
    for (int i = 0; i < x->cfg->m; i++) {
        rank_forward(x, i, 0);
        rank_backward(x, i);
    }
}

/* DP grads (per bucket, coalesced) then the embedding grads. */
static void rank_finalize_grads(struct rank_ctx *x)
{
    const struct sim_cfg *c = x->cfg;
    int dpcp = c->size[SA_DP] * c->size[SA_CP], nb = c->buckets;
    size_t bucket = c->dp_bytes / 4 / (size_t)nb;   /* fp32 main grads */
    struct rank_op ops[16];

    nb = nb > 16 ? 16 : nb;
    for (int b = 0; b < nb; b++)
        ops[b] = c->dist_opt
            ? (struct rank_op){ SG_DP_CP, SK_REDUCESCATTER,
                                bucket / (size_t)dpcp ? bucket / (size_t)dpcp
                                                      : 1,
                                ncclFloat32, ncclSum, -1 }
            : (struct rank_op){ SG_DP_CP, SK_ALLREDUCE, bucket, ncclFloat32,
                                ncclSum, -1 };
    rank_submit(x, ops, nb, 1);
    if (c->ep > 1)                            /* expert grads on EP-DP */
        rank_one(x, SG_EPDP, c->dist_opt ? SK_REDUCESCATTER : SK_ALLREDUCE,
                 c->dist_opt ? bucket / (size_t)rank_edp(c) : bucket,
                 ncclFloat32, ncclSum, -1);
    if (x->pp > 1 && (x->stage == 0 || x->stage == x->pp - 1))
        rank_one(x, SG_EMB, SK_ALLREDUCE, c->emb_bytes / 4, ncclFloat32,
                 ncclSum, -1);
}

static void rank_optimizer(struct rank_ctx *x)
{
    const struct sim_cfg *c = x->cfg;
    int dpcp = c->size[SA_DP] * c->size[SA_CP], nb = c->buckets;
    size_t bucket = c->dp_bytes / 4 / (size_t)nb;
    struct rank_op ops[16];

    nb = nb > 16 ? 16 : nb;
    rank_one(x, c->dist_opt ? SG_DISTOPT : SG_MP, SK_ALLREDUCE, 1,
             ncclFloat32, ncclSum, -1);                  /* grad norm^2 */
    rank_sync(x);                                        /* .item() */
    rank_one(x, SG_MP, SK_ALLREDUCE, 1, ncclFloat32, ncclMax, -1);
    rank_compute(x, SB_OPT, 0, c->opt_ms);
    rank_one(x, SG_MP, SK_ALLREDUCE, 1, ncclInt32, ncclMin, -1);
    if (!c->dist_opt)
        return;
    for (int b = 0; b < nb; b++)                         /* bf16 params */
        ops[b] = (struct rank_op){ SG_DP_CP, SK_ALLGATHER,
                                   bucket / (size_t)dpcp ? bucket / (size_t)dpcp
                                                         : 1,
                                   ncclBfloat16, ncclSum, -1 };
    rank_submit(x, ops, nb, 1);
    if (c->ep > 1)
        rank_one(x, SG_EPDP, SK_ALLGATHER, bucket / (size_t)rank_edp(c),
                 ncclBfloat16, ncclSum, -1);
}

/* Interleaved schedule helpers (Megatron, microbatch group size = pp). */
static int rank_vchunk(const struct rank_ctx *x, int k, int forward)
{
    int v = x->cfg->vpp, pv = x->pp * v;
    int c = ((k % pv + pv) % pv) / x->pp;   /* Python's modulo */

    return forward ? c : v - 1 - c;
}

static int rank_vmb(const struct rank_ctx *x, int k)
{
    int pv = x->pp * x->cfg->vpp;

    return (k / pv) * x->pp + (k % pv) % x->pp;
}

static void rank_vwarmup(struct rank_ctx *x, int warm, int total,
                         int all_warm)
{
    int first = x->stage == 0, last = x->stage == x->pp - 1;

    if (!first)
        rank_p2p_raw(x, 0, 1, 0, 0);                 /* recv_forward */
    for (int k = 0; k < warm; k++) {
        int c = rank_vchunk(x, k, 1);
        int out = !(last && c == x->cfg->vpp - 1);
        int rp = !(first && rank_vchunk(x, k + 1, 1) == 0) && k != total - 1;

        rank_forward(x, rank_vmb(x, k), c);
        if (k == warm - 1 && !all_warm)
            rank_p2p_raw(x, 0, rp, out, !last);      /* fwd_bwd exchange */
        else
            rank_p2p_raw(x, 0, rp, out, 0);          /* send_fwd_recv_fwd */
    }
}

static void rank_vsteady(struct rank_ctx *x, int warm, int rem)
{
    int first = x->stage == 0, last = x->stage == x->pp - 1;
    int v = x->cfg->vpp;

    for (int k = 0; k < rem; k++) {
        int fk = k + warm, fc = rank_vchunk(x, fk, 1);
        int bc = rank_vchunk(x, k, 0), rp = 1, rn = 1;

        rank_forward(x, rank_vmb(x, fk), fc);
        rank_backward(x, rank_vmb(x, k));
        if (first && rank_vchunk(x, fk - (x->pp - 1), 1) == v - 1)
            rp = 0;
        if (last && rank_vchunk(x, k - (x->pp - 1), 0) == 0)
            rn = 0;
        if (k == rem - 1)
            rp = 0;
        rank_p2p_raw(x, !(first && bc == 0), rp, !(last && fc == v - 1),
                     rn);
    }
}

static void rank_vcooldown(struct rank_ctx *x, int warm, int total,
                           int all_warm)
{
    int first = x->stage == 0, last = x->stage == x->pp - 1;
    int v = x->cfg->vpp;

    if (all_warm && !last)
        rank_p2p_raw(x, 0, 0, 0, 1);                 /* recv_backward */
    for (int k = total - warm; k < total; k++) {
        int bc = rank_vchunk(x, k, 0);
        int rn = !(last && rank_vchunk(x, k + 1, 0) == v - 1) &&
                 k != total - 1;

        rank_backward(x, rank_vmb(x, k));
        rank_p2p_raw(x, !(first && bc == 0), 0, 0, rn);
    }
}

/* forward_backward_pipelining_with_interleaving, batched P2P. */
static void rank_interleaved(struct rank_ctx *x)
{
    int total = x->cfg->m * x->cfg->vpp, all_warm = x->cfg->m == x->pp;
    int warm = (x->pp - x->stage - 1) * 2 + (x->cfg->vpp - 1) * x->pp;

    warm = all_warm || warm > total ? total : warm;
    rank_vwarmup(x, warm, total, all_warm);
    rank_vsteady(x, warm, total - warm);
    rank_vcooldown(x, warm, total, all_warm);
}

int rank_iteration(struct rank_ctx *x)
{
    struct sim_step *s = &x->t->steps[x->iter];

    s->start = rank_now();
    x->want_first = 1;   /* rank_call_observer: s->first_op */
    if (rank_is_titan(x))
        rank_titan_step_start(x);
    if (x->pp == 1)
        rank_no_pipe(x);
    else if (x->cfg->vpp > 1)
        rank_interleaved(x);
    else
        rank_1f1b(x);
    if (rank_is_titan(x)) {
        rank_titan_step_end(x);
        goto done;
    }
    rank_finalize_grads(x);
    rank_optimizer(x);
    if (x->stage == x->pp - 1)                           /* loss */
        rank_one(x, SG_DP_CP, SK_ALLREDUCE, 2, ncclFloat32, ncclSum, -1);
    rank_one(x, SG_MP, SK_ALLREDUCE, 1, ncclFloat32, ncclMax, -1);  /* lr */
    rank_sync(x);                                        /* loss .item() */
done:
    s->end = rank_now();
    x->t->n_steps = x->iter + 1;
    return 0;
}
