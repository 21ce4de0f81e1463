/*
 * p3d_usage.c - what a communicator is used for, from its traffic.
 *
 * Member sets alone cannot tell apart groups with equal members (PP and
 * EMB at PP=2, WORLD and the grad-norm world comm, TP and MP at PP=1, DP
 * and CP when one of them is 1, and a lone world communicator that any
 * dimension could be).  Its traffic can, by signatures taken from the
 * frameworks' code (NVIDIA/Megatron-LM d98e8a64, pytorch/pytorch,
 * pytorch/torchtitan b5bcd76c, TransformerEngine d0067d0d):
 *   - Send/Recv: PP (Megatron p2p_communication.py, torch pipelining),
 *     or, when every batch both sends and receives, a CP ring (TE
 *     cp_comm_type "p2p", torch context_parallel) (P3D_USE_RING).  A
 *     2-rank ring that also all-gathers is torch's context parallelism
 *     (_attention.py: K/V all-gathered, then dK/dV rotated), never an
 *     all-to-all: EP's communicator carries only all-to-alls (Megatron's
 *     alltoall dispatcher; its allgather dispatcher gathers on the
 *     tp x ep group, another communicator; torchtitan's
 *     AllToAllTokenDispatcher), so it is P3D_USE_RING, not RING2.
 *   - All-to-all: EP (Megatron token dispatcher), or CP (TE "a2a").  Under
 *     PyTorch an all-to-all with split sizes, as Megatron's alltoall token
 *     dispatcher issues (tensor_parallel.all_to_all, all_to_all_single
 *     with input/output splits), is one group of ncclSend/ncclRecv to
 *     every peer (torch/csrc/cuda/nccl.cpp all2all_single_unequal_split;
 *     equal splits too before NCCL 2.28, which has ncclAlltoAll): Send/
 *     Recv batches that send to 3 or more peers, or to the rank itself,
 *     are an all-to-all (p3d_usage_batch_a2a: torch's loop sends to every
 *     rank, its own included; a pipeline sends to its 1 or 2 neighbours,
 *     a ring to the next rank).  A 2-rank batch each way with no send to
 *     itself is a ring step (a CP ring), or an all-to-all whose own share
 *     was empty or whose trace lacks the comm rank: a CP ring or EP, and
 *     the members or priors decide (P3D_USE_RING2).
 *   - Broadcasts of int64 with frequent all-reduces: Megatron TP, whose
 *     ranks broadcast each micro-batch's tokens, labels and positions
 *     (get_batch_on_this_tp_rank / tensor_parallel.broadcast_data, int64)
 *     and all-reduce every layer's activations (tensor_parallel/layers.py).
 *     With sequence parallelism the all-reduces become all-gathers and
 *     reduce-scatters, the int64 broadcasts stay (P3D_USE_SP).
 *   - Gradients reduce-scattered in a wider dtype than the parameters are
 *     all-gathered in, or averaged (ncclAvg) or pre-multiplied (a user
 *     op): DP sharding.  FSDP2 all-gathers params in param_dtype and
 *     reduce-scatters grads in reduce_dtype (fp32 under torchtitan) with
 *     AVG or PREMUL_SUM (fsdp/_fully_shard/_fsdp_collectives.py,
 *     _get_gradient_divide_factors); Megatron's distributed optimizer
 *     reduce-scatters fp32 grads and all-gathers bf16 params
 *     (distributed/param_and_grad_buffer.py).  A CP all-gather of K/V
 *     reduce-scatters dK/dV in the same dtype with SUM (TE
 *     AttnFuncWithCPAndKVAllGather) or not at all (torch
 *     _attention.py).  (P3D_USE_GRAD)
 *   - Only all-reduces, of varied sizes: DDP's gradient buckets (reducer.
 *     cpp compute_bucket_assignment_by_size: whole parameters until >= 1
 *     MiB for the first, >= 25 MiB for the rest, so sizes differ), where a
 *     TP group all-reduces one activation size, layer after layer.
 *     (P3D_USE_DDP)
 *   - Per step or per layer: a communicator with far fewer calls than the
 *     busiest is per step (DP gradients, EMB); as busy as the busiest, per
 *     layer (TP, CP).  All-gathers and reduce-scatters in one dtype, per
 *     layer, with no int64 broadcasts, point at neither: they are TP with
 *     sequence parallelism as torchtitan issues it (apply_tp: all-gather
 *     in, reduce-scatter out, every rank loading its own batch) as much as
 *     a CP all-gather of K/V with a reduce-scatter of dK/dV (TE
 *     AttnFuncWithCPAndKVAllGather), so members or priors decide and the
 *     layout says so.  The busiest itself has nothing to compare with: its
 *     all-reduces (P3D_USE_ANY_AR) or reduce-scatters and all-gathers
 *     (P3D_USE_ANY_LAYER) fit several groups, and the layout says so
 *     (confidence "ambiguous") unless its members decide.
 *   - Only <= 8-byte all-reduces: MP or a world comm (Megatron's grad norm,
 *     found-inf, loss), or torchtitan's loss mesh, dp x cp (trainer.py:
 *     the valid-token count, loss-is-finite, the logged losses); one big
 *     all-reduce per step: EMB.
 *   - All-reduces that average (ncclAvg or a premul-sum op), most of them:
 *     gradients, never activations (TP sums).  FSDP2's HSDP all-reduces
 *     each reduce-scattered shard across the replicas with AVG or
 *     PREMUL_SUM (_fsdp_collectives.py foreach_reduce, the same divide
 *     factors as its reduce-scatter); torchtitan's HSDP is fully_shard on
 *     the (dp_replicate, dp_shard_cp) mesh (P3D_USE_GRAD_AR).  DP-SHARD,
 *     the other HSDP group, carries FSDP's gather and reduce-scatter: the
 *     DP sharding signature above.
 */
#include "p3d_infer.h"
#include "p3d_layout.h"
#include "p3d_names.h"

#define B(x) (1u << (x))
/* The data-parallel groups gradients go to: sharded (reduce-scattered,
 * FSDP's shard group among them) or all-reduced (HSDP's replica group
 * among them). */
#define DP_GROUPS (B(P3D_LBL_DP) | B(P3D_LBL_DP_CP) | B(P3D_LBL_EXPERT_DP))
#define DP_SHARDED (DP_GROUPS | B(P3D_LBL_DP_SHARD))
#define DP_REDUCED (DP_GROUPS | B(P3D_LBL_DP_REP))

/* Members of g, at least 1 (a divisor and a scale). */
static uint64_t p3d_members(const struct p3d_gcomm *g)
{
    return (uint64_t)(g->n_members ? g->n_members : 1);
}

/*
 * Collectives per member, the measure of how often a group is used.  An
 * all-to-all through Send/Recv counts once: PyTorch issues it as a Send
 * and a Recv to every rank of the group (torch/csrc/cuda/nccl.cpp
 * all2all_single_unequal_split), so its calls say the group's size, not
 * how often it is used; counted as calls, an EP group of 4 would look 8
 * times as busy as a group with one collective per layer.
 */
uint64_t p3d_calls_per_member(const struct p3d_gcomm *g)
{
    const struct p3d_usage *u = &g->use;
    int a2a = u->p2p_a2a && u->p2p_a2a * 2 >= u->p2p_batches;
    uint64_t total = a2a ? u->p2p_batches : 0;

    for (int k = 0; k < P3D_OP_COUNT; k++)
        if (!a2a || !P3D_OP_IS_P2P(k))
            total += g->st[k].calls;
    return total / p3d_members(g);
}

/* The share of a communicator's > 8-byte all-reduces that have its most
 * common size (1 when they are all alike, as a TP group's). */
static double p3d_ar_modal(const struct p3d_usage *u)
{
    uint64_t top = 0, n = u->ar_sizes_other;

    for (int k = 0; k < P3D_USE_SIZES; k++) {
        n += u->ar_n[k];
        top = u->ar_n[k] > top ? u->ar_n[k] : top;
    }
    return n ? (double)top / (double)n : 1.0;
}

/* Bytes per element of the widest ncclDataType_t of a mask of them. */
static int p3d_dt_width(uint16_t mask)
{
    int w = 0;

    for (int d = 0; d < 16; d++)
        if ((mask & (1u << d)) && p3d_dtype_bytes(d) > w)
            w = p3d_dtype_bytes(d);
    return w;
}

/* Gradients reduce-scattered wider than params are gathered, or with
 * AVG / a user-defined (premul-sum) op: DP sharding (header comment). */
static int p3d_grad_sharding(const struct p3d_gcomm *g)
{
    const struct p3d_usage *u = &g->use;
    int rs = p3d_dt_width(u->dtypes[P3D_OP_REDUCESCATTER]);
    int ag = p3d_dt_width(u->dtypes[P3D_OP_ALLGATHER]);

    if (!g->st[P3D_OP_REDUCESCATTER].calls)
        return 0;
    if (u->rs_redops & ((1u << 4) | (1u << 5))) /* ncclAvg, premul sum */
        return 1;
    return ag && rs > ag;
}

/*
 * Megatron's TP data broadcasts: int64 (ncclInt64 = 4), a few each micro-
 * batch, so several per member.  DDP broadcasts int64 shapes once at
 * construction (and a BatchNorm's int64 counter each forward, but its
 * all-reduces then have bucket sizes, p3d_ar_modal).
 */
static int p3d_int64_bcast(const struct p3d_gcomm *g)
{
    return g->use.bc_int64 >= 3 * p3d_members(g);
}

static enum p3d_use p3d_usage_rsag(const struct p3d_gcomm *g,
                                   uint64_t rsag, uint64_t bc,
                                   uint64_t max_cpm, int busiest)
{
    if (p3d_grad_sharding(g))
        return P3D_USE_GRAD;
    if (bc && p3d_int64_bcast(g))
        return P3D_USE_SP;
    if (busiest)
        return P3D_USE_ANY_LAYER;
    return rsag / p3d_members(g) * 4 >= max_cpm
               ? P3D_USE_LAYER : P3D_USE_RSAG; /* per layer, or per step */
}

/*
 * A ring: every Send/Recv batch of every member both sends and receives
 * (TE's and torch's ring attention, one send-next/recv-prev per step),
 * where a pipeline's warm-up and cool-down batches go one way only
 * (Megatron p2p_communication.py send_forward, recv_backward, ...; only
 * 1F1B's steady state pairs them).  One open batch per member at the
 * end of a trace is allowed, and enough batches must be seen.
 */
static int p3d_ring(const struct p3d_gcomm *g)
{
    uint64_t n = p3d_members(g);
    const struct p3d_usage *u = &g->use;

    return u->p2p_batches >= 2 * n && u->p2p_batches - u->p2p_both <= n;
}

enum p3d_use p3d_usage_class(const struct p3d_gcomm *g, uint64_t max_cpm)
{
    const struct p3d_opstat *s = g->st;
    uint64_t total = 0, p2p, ar, bc, rsag, a2a;
    uint64_t cpm = p3d_calls_per_member(g);
    int frequent = cpm * 8 >= max_cpm, busiest = cpm >= max_cpm;

    for (int k = 0; k < P3D_OP_COUNT; k++)
        total += s[k].calls;
    if (!total)
        return P3D_USE_NONE;
    p2p = s[P3D_OP_SEND].calls + s[P3D_OP_RECV].calls;
    ar = s[P3D_OP_ALLREDUCE].calls;
    bc = s[P3D_OP_BROADCAST].calls;
    rsag = s[P3D_OP_REDUCESCATTER].calls + s[P3D_OP_ALLGATHER].calls;
    a2a = s[P3D_OP_ALLTOALL].calls;
    if (p2p * 2 >= total && g->use.p2p_a2a &&
        g->use.p2p_a2a * 2 >= g->use.p2p_batches)
        return P3D_USE_A2A;   /* an all-to-all through Send/Recv */
    if (p2p * 2 >= total) /* a 2-rank ring with all-gathers is CP */
        return !p3d_ring(g) ? P3D_USE_P2P
               : g->n_members == 2 && !s[P3D_OP_ALLGATHER].calls
                   ? P3D_USE_RING2 : P3D_USE_RING;
    if (a2a * 2 >= total)
        return P3D_USE_A2A;
    if (rsag * 2 >= total) /* per layer (CP, TP+SP, FSDP) or per step (DP) */
        return p3d_usage_rsag(g, rsag, bc, max_cpm, busiest);
    if (g->use.tiny_ar == total)
        return P3D_USE_TINY;
    if (ar * 10 >= total * 9 && g->use.ar_avg * 2 > ar)
        return P3D_USE_GRAD_AR;
    if (bc && frequent && (bc + ar) * 10 >= total * 9 &&
        ((p3d_int64_bcast(g) && p3d_ar_modal(&g->use) >= 0.5) || !busiest))
        return P3D_USE_BCAST;
    /* DDP: its construction's 1-element int64 all-gather (the parameter
     * count, _verify_param_shape_across_processes) and its broadcasts
     * (shapes, parameters, rebuilt bucket indices) count with its
     * all-reduces: in a trace of a few steps they are half the calls */
    if ((bc + ar + g->use.tiny_ag) * 10 >= total * 9 && busiest)
        return p3d_ar_modal(&g->use) < 0.5 ? P3D_USE_DDP : P3D_USE_ANY_AR;
    if (ar == total && frequent)
        return P3D_USE_AR;
    if (ar == total && (g->use.big_ar * 2 >= ar || !frequent))
        return P3D_USE_BIGAR; /* few, not tiny: EMB, or DP without dist-opt */
    return P3D_USE_MIXED;
}

/*
 * Per usage class: the labels consistent with it (labels), and those it
 * points to first, a tie-breaker (primary; none for the ANY classes,
 * whose traffic fits several groups equally: the layout's priors then
 * choose, and say so).  RING2 is not a pipeline (one-way warm-up
 * batches).
 */
#define PP_LIKE (B(P3D_LBL_PP) | B(P3D_LBL_P2P) | B(P3D_LBL_CP))
static const struct {
    unsigned labels, primary;
} p3d_use_tab[] = {
    [P3D_USE_P2P] = {PP_LIKE, B(P3D_LBL_PP) | B(P3D_LBL_P2P)},
    [P3D_USE_RING] = {PP_LIKE, B(P3D_LBL_CP)},
    [P3D_USE_RING2] = {PP_LIKE | B(P3D_LBL_EP),
                       B(P3D_LBL_CP) | B(P3D_LBL_EP)},
    [P3D_USE_A2A] = {B(P3D_LBL_EP) | B(P3D_LBL_CP), B(P3D_LBL_EP)},
    [P3D_USE_RSAG] = {DP_SHARDED, DP_SHARDED},
    [P3D_USE_GRAD] = {DP_SHARDED, DP_SHARDED},
    [P3D_USE_DDP] = {DP_REDUCED, DP_REDUCED},
    [P3D_USE_GRAD_AR] = {DP_REDUCED, DP_REDUCED},
    [P3D_USE_LAYER] = {B(P3D_LBL_CP) | B(P3D_LBL_TP) | B(P3D_LBL_EXPERT_TP),
                       0},
    [P3D_USE_ANY_LAYER] = {B(P3D_LBL_CP) | B(P3D_LBL_TP) |
                           B(P3D_LBL_EXPERT_TP) | DP_SHARDED, 0},
    [P3D_USE_BCAST] = {B(P3D_LBL_TP), B(P3D_LBL_TP)},
    [P3D_USE_AR] = {B(P3D_LBL_TP), B(P3D_LBL_TP)},
    [P3D_USE_SP] = {B(P3D_LBL_TP), B(P3D_LBL_TP)},
    [P3D_USE_ANY_AR] = {B(P3D_LBL_TP) | B(P3D_LBL_DP) | B(P3D_LBL_DP_CP),
                        0},
    [P3D_USE_TINY] = {B(P3D_LBL_MP) | B(P3D_LBL_WORLD) | B(P3D_LBL_DP_CP) |
                          B(P3D_LBL_DP),
                      B(P3D_LBL_MP) | B(P3D_LBL_WORLD)},
    [P3D_USE_BIGAR] = {B(P3D_LBL_EMB) | B(P3D_LBL_DP) | B(P3D_LBL_DP_CP),
                       B(P3D_LBL_EMB)},
};
#define P3D_USE_TAB_N ((int)(sizeof(p3d_use_tab) / sizeof(p3d_use_tab[0])))

unsigned p3d_use_labels(enum p3d_use u)
{
    return (int)u >= 0 && (int)u < P3D_USE_TAB_N ? p3d_use_tab[u].labels : 0;
}

/*
 * Traffic with a signature of weight gradients (the header comment).
 * Where CP > 1 they are reduced over DP x CP: CP ranks hold the same
 * weights and see different parts of each sequence, so their gradients
 * must be summed.  Megatron's DDP and distributed optimizer use
 * get_data_parallel_group(with_context_parallel=True) (distributed/
 * distributed_data_parallel.py, pipeline_parallel/schedules.py
 * pg_collection.dp_cp; the plain DP group only for logging, data
 * scheduling and checkpoints, d98e8a64); torchtitan's FSDP shards over
 * dp_shard x cp (parallel_dims.py: "fsdp includes dp_shard and cp";
 * distributed/fsdp.py resolve_fsdp_mesh, shard axes dp_shard and cp,
 * b5bcd76c).  A layout with CP > 1 under which no gradient communicator
 * spans CP leaves its CP axis unexplained (p3d_infer.c p3d_unseen).
 */
int p3d_use_is_grad(enum p3d_use u)
{
    return u == P3D_USE_GRAD || u == P3D_USE_DDP || u == P3D_USE_GRAD_AR;
}

unsigned p3d_use_primary(enum p3d_use u)
{
    return (int)u >= 0 && (int)u < P3D_USE_TAB_N ? p3d_use_tab[u].primary
                                                  : 0;
}
