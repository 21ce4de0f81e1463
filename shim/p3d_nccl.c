/*
 * p3d_nccl.c - wrappers of NCCL's collectives, point-to-point calls and
 * ncclGroupStart/End.  The ops are one table (P3D_NCCL_OPS) and one
 * wrapper body (P3D_NCCL_WRAP): a new op is one more row.
 *
 * Every wrapper: resolve the real function (never call NULL: return
 * ncclSystemError instead), decide whether to record (outermost call on
 * the thread, recording on), write one P3D_REC_OP BEFORE the real call
 * (t_exit = 0, so an op the call never returns from is in the trace even
 * after kill -9), call, fill t_exit and ret in place, and return the real
 * result unchanged.  The record stays mapped meanwhile: the thread holds
 * a writer pin (p3d_rec_pin) across the call.  Nested calls (NCCL's
 * ncclBcast calling ncclBroadcast through the PLT) go straight to the
 * real function.
 *
 * Each op also enters the in-flight table (p3d_inflight.h) with its
 * call-site stack (p3d_stack.h); it counts as issued when the call, or for
 * grouped ops the outermost ncclGroupEnd, returns.  ncclGroupEnd's record
 * is written before the call in the same way.
 */
#include <string.h>

#include "p3d_hooks.h"
#include "p3d_inflight.h"
#include "p3d_nccl.h"
#include "p3d_stack.h"
#include "p3d_watchdog.h"

#define P3D_GROUP_TRACK 256 /* grouped ops tracked until their GroupEnd */

/* State of one recorded op between its two halves. */
struct p3d_opcall {
    struct p3d_op_ctx ctx;
    struct p3d_rec_op *rec;  /* written before the call, or NULL */
    uint32_t stack_id;
    int32_t comm_rank;
    int if_slot;             /* its in-flight slot, -1 none */
    uint8_t flags;
    uint8_t captured;        /* graph-captured: runs at replays only */
};

/* Per-thread group state, mirroring NCCL's own group depth. */
static P3D_TLS uint32_t p3d_group_depth;
static P3D_TLS uint32_t p3d_group_id;
static P3D_TLS uint32_t p3d_group_ops;
static P3D_TLS uint32_t p3d_group_ntrack;
static P3D_TLS uint64_t p3d_group_track[P3D_GROUP_TRACK];
static P3D_TLS int16_t p3d_group_slot[P3D_GROUP_TRACK]; /* in-flight slots */
static P3D_TLS uint8_t p3d_group_capt[P3D_GROUP_TRACK]; /* graph-captured */
_Static_assert(P3D_INFLIGHT_SLOTS < 16384, "slots fit p3d_group_slot");
static uint32_t p3d_group_ids;

static const uint8_t p3d_dtype_size[] = {
    1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1, /* ncclInt8 .. ncclFloat8e5m2 */
};

static uint64_t p3d_nccl_bytes(uint64_t count, int dtype)
{
    if (dtype < 0 || (size_t)dtype >= sizeof(p3d_dtype_size))
        return 0;
    return count * p3d_dtype_size[dtype];
}

static uint8_t p3d_nccl_redop(int op)
{
    if (op >= 0 && op < ncclNumOps)
        return (uint8_t)op;
    return P3D_REDOP_CUSTOM;
}

uint64_t p3d_nccl_init_enter(uint64_t comm_hash, int nranks, int rank)
{
    p3d_watchdog_start();
    return p3d_inflight_init_begin(comm_hash, nranks, rank);
}

void p3d_nccl_init_leave(uint64_t token)
{
    p3d_inflight_done(token);
}

/* The sequence number of op `op` on `c` (UINT64_MAX: comm unknown). */
static uint64_t p3d_op_seq(struct p3d_comm *c, uint8_t op, int peer)
{
    if (c == NULL)
        return UINT64_MAX;
    if (P3D_OP_IS_P2P(op))
        return p3d_comm_next_p2p(c, peer, op == P3D_OP_RECV);
    return p3d_comm_next_coll(c);
}

/* First half: identify the op, number it, call the "before" hook. */
static inline __attribute__((always_inline)) int
p3d_op_begin(struct p3d_opcall *oc, uint8_t op, ncclComm_t comm,
             cudaStream_t stream, int peer, size_t count)
{
    struct p3d_comm *c;
    int grouped;

    if (!p3d_nccl_enter())
        return 0;
    p3d_watchdog_start();
    c = p3d_comm_get(comm);
    if (c != NULL && !__atomic_load_n(&c->info_known, __ATOMIC_ACQUIRE))
        p3d_nccl_learn(c, comm, 1);
    grouped = p3d_group_depth > 0;
    oc->comm_rank = c != NULL ? c->rank : -1;
    oc->flags = (c == NULL || c->unknown ? P3D_OPF_COMM_UNKNOWN : 0) |
                (grouped ? P3D_OPF_IN_GROUP : 0);
    oc->ctx.op_id = p3d_next_op_id();
    oc->ctx.comm_hash = c != NULL ? c->hash : (uint64_t)(uintptr_t)comm;
    oc->ctx.seq = p3d_op_seq(c, op, peer);
    oc->ctx.stream = (void *)stream;
    oc->ctx.group_id = grouped ? p3d_group_id : 0;
    oc->ctx.op = op;
    oc->ctx.in_group = (uint8_t)grouped;
    oc->ctx.peer = peer;
    oc->ctx.count = count;
    oc->ctx.comm_nranks = c != NULL ? c->nranks : -1;
    oc->ctx.comm_rank = oc->comm_rank;
    p3d_group_ops += (uint32_t)grouped;
    oc->stack_id = p3d_stack_capture(0);
    if (!__atomic_load_n(&p3d_hook_ops_idle, __ATOMIC_RELAXED))
        p3d_hook_op_before(&oc->ctx);
    return 1;
}

/*
 * Just before the real call: the op record with t_exit = 0, pinned so it
 * can be completed in place, and the in-flight entry.  `count`, `dtype`,
 * `redop` (-1: none) and `in_place` are the op's arguments.
 */
static inline __attribute__((always_inline)) void
p3d_op_enqueue(struct p3d_opcall *oc, size_t count,
                           ncclDataType_t dtype, int redop, int in_place)
{
    struct p3d_rec_op *r = p3d_rec_reserve(P3D_REC_OP, sizeof(*r));
    uint64_t t_enter = p3d_now();
    uint32_t tid = p3d_tid();

    oc->if_slot = p3d_inflight_enter(&oc->ctx, t_enter, oc->stack_id, tid);
    oc->rec = r;
    if (r == NULL)
        return;
    r->op = oc->ctx.op;
    r->dtype = (uint8_t)dtype;
    r->redop = redop < 0 ? P3D_REDOP_NONE : p3d_nccl_redop(redop);
    r->flags = oc->flags | (in_place ? P3D_OPF_IN_PLACE : 0);
    r->op_id = oc->ctx.op_id;
    r->comm_hash = oc->ctx.comm_hash;
    r->seq = oc->ctx.seq;
    r->count = count;
    r->bytes = p3d_nccl_bytes(count, (uint8_t)dtype);
    r->stream = (uint64_t)(uintptr_t)oc->ctx.stream;
    r->t_enter = t_enter;
    r->t_exit = 0;
    r->peer = oc->ctx.peer;
    r->tid = tid;
    r->group_id = oc->ctx.group_id;
    r->stack_id = oc->stack_id;
    r->comm_rank = oc->comm_rank;
    p3d_rec_commit(r);
    p3d_rec_pin();
    if (!__atomic_load_n(&p3d_hook_ops_idle, __ATOMIC_RELAXED))
        p3d_hook_op_entered(&oc->ctx, t_enter);
}

/*
 * The call returned (or, in a group, its outermost GroupEnd did): issued,
 * or done for a graph-captured one, whose completion never comes (its
 * kernels run at replays), so the watchdog does not wait for it.
 */
static void p3d_op_settle(int slot, uint64_t op_id, int captured)
{
    if (captured)
        p3d_inflight_done(op_id);
    else
        p3d_inflight_issued_at(slot, op_id);
}

/* An op inside a group is issued when the outermost GroupEnd returns. */
static void p3d_op_issued(const struct p3d_opcall *oc)
{
    uint32_t n = p3d_group_ntrack;

    if (!oc->ctx.in_group || n >= P3D_GROUP_TRACK) {
        p3d_op_settle(oc->if_slot, oc->ctx.op_id, oc->captured);
        return;
    }
    p3d_group_track[n] = oc->ctx.op_id;
    p3d_group_slot[n] = (int16_t)oc->if_slot;
    p3d_group_capt[n] = oc->captured;
    p3d_group_ntrack = n + 1;
}

/* Second half: complete the record in place, hooks, leave. */
static inline __attribute__((always_inline)) void
p3d_op_end(struct p3d_opcall *oc, ncclResult_t ret)
{
    uint64_t t_exit = p3d_now();
    struct p3d_rec_op *r = oc->rec;
    uint8_t more = 0;

    /* a call NCCL refused never touched its stream (the handle may be
     * bad): the capture check asks only after one it took */
    if ((ret == ncclSuccess || ret == ncclInProgress) &&
        !__atomic_load_n(&p3d_hook_ops_idle, __ATOMIC_RELAXED))
        more = p3d_hook_op_flags(&oc->ctx);
    oc->captured = (more & P3D_OPF_CAPTURING) != 0;
    if (r != NULL) {
        r->ret = ret;
        r->flags |= more;
        __atomic_store_n(&r->t_exit, t_exit ? t_exit : 1, __ATOMIC_RELEASE);
        p3d_rec_unpin();
    }
    p3d_op_issued(oc);
    if (!__atomic_load_n(&p3d_hook_ops_idle, __ATOMIC_RELAXED))
        p3d_hook_op_after(&oc->ctx, ret);
    p3d_nccl_leave();
}

/*
 * `a` == `b` + rank * count elements (AllGather/ReduceScatter style);
 * 0 when this rank's position in the comm is not known yet.
 */
static int p3d_at_rank(const void *a, const void *b,
                       const struct p3d_opcall *oc, size_t count,
                       ncclDataType_t dtype)
{
    if (oc->comm_rank < 0)
        return 0;
    return (const char *)a ==
           (const char *)b + p3d_nccl_bytes(count, dtype) * oc->comm_rank;
}

/*
 * The wrapped ops, one row each: name, op kind, nccl.h's parameter list,
 * the same names as an argument list, then what the record takes from
 * them: count, datatype, reduction (-1: none), peer or root (-1: none),
 * the in-place test (it may use `oc`, the op being recorded) and extra
 * flags.  A new op is one more row.
 */
#define P3D_NCCL_OPS(X)                                                       \
    X(ncclAllReduce, P3D_OP_ALLREDUCE,                                        \
      (const void *sendbuff, void *recvbuff, size_t count,                    \
       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,              \
       cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, count, datatype, op, comm, stream),                \
      count, datatype, op, -1, sendbuff == recvbuff, 0)                       \
    X(ncclReduceScatter, P3D_OP_REDUCESCATTER,                                \
      (const void *sendbuff, void *recvbuff, size_t recvcount,                \
       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,              \
       cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, recvcount, datatype, op, comm, stream),            \
      recvcount, datatype, op, -1,                                            \
      p3d_at_rank(recvbuff, sendbuff, &oc, recvcount, datatype), 0)           \
    X(ncclAllGather, P3D_OP_ALLGATHER,                                        \
      (const void *sendbuff, void *recvbuff, size_t sendcount,                \
       ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream),        \
      (sendbuff, recvbuff, sendcount, datatype, comm, stream),                \
      sendcount, datatype, -1, -1,                                            \
      p3d_at_rank(sendbuff, recvbuff, &oc, sendcount, datatype), 0)           \
    X(ncclBroadcast, P3D_OP_BROADCAST,                                        \
      (const void *sendbuff, void *recvbuff, size_t count,                    \
       ncclDataType_t datatype, int root, ncclComm_t comm,                    \
       cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, count, datatype, root, comm, stream),              \
      count, datatype, -1, root, sendbuff == recvbuff, 0)                     \
    /* legacy in-place broadcast: recorded as Broadcast, flagged */           \
    X(ncclBcast, P3D_OP_BROADCAST,                                            \
      (void *buff, size_t count, ncclDataType_t datatype, int root,           \
       ncclComm_t comm, cudaStream_t stream),                                 \
      (buff, count, datatype, root, comm, stream),                            \
      count, datatype, -1, root, 1, P3D_OPF_BCAST_API)                        \
    X(ncclReduce, P3D_OP_REDUCE,                                              \
      (const void *sendbuff, void *recvbuff, size_t count,                    \
       ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,    \
       cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, count, datatype, op, root, comm, stream),          \
      count, datatype, op, root, sendbuff == recvbuff, 0)                     \
    X(ncclAlltoAll, P3D_OP_ALLTOALL,                                          \
      (const void *sendbuff, void *recvbuff, size_t count,                    \
       ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream),        \
      (sendbuff, recvbuff, count, datatype, comm, stream),                    \
      count, datatype, -1, -1, sendbuff == recvbuff, 0)                       \
    X(ncclGather, P3D_OP_GATHER,                                              \
      (const void *sendbuff, void *recvbuff, size_t count,                    \
       ncclDataType_t datatype, int root, ncclComm_t comm,                    \
       cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, count, datatype, root, comm, stream),              \
      count, datatype, -1, root,                                              \
      p3d_at_rank(sendbuff, recvbuff, &oc, count, datatype), 0)               \
    X(ncclScatter, P3D_OP_SCATTER,                                            \
      (const void *sendbuff, void *recvbuff, size_t count,                    \
       ncclDataType_t datatype, int root, ncclComm_t comm,                    \
       cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, count, datatype, root, comm, stream),              \
      count, datatype, -1, root,                                              \
      p3d_at_rank(recvbuff, sendbuff, &oc, count, datatype), 0)               \
    X(ncclSend, P3D_OP_SEND,                                                  \
      (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, \
       ncclComm_t comm, cudaStream_t stream),                                 \
      (sendbuff, count, datatype, peer, comm, stream),                        \
      count, datatype, -1, peer, 0, 0)                                        \
    X(ncclRecv, P3D_OP_RECV,                                                  \
      (void *recvbuff, size_t count, ncclDataType_t datatype, int peer,       \
       ncclComm_t comm, cudaStream_t stream),                                 \
      (recvbuff, count, datatype, peer, comm, stream),                        \
      count, datatype, -1, peer, 0, 0)

/*
 * One wrapper.  1. P3D_REAL resolves the real function (RTLD_NEXT, then
 * the scan of loaded objects, the pnccl name as a fallback).  2. A
 * missing symbol was already warned about: return ncclSystemError.  3.
 * p3d_op_begin returns 0 for nested calls and when recording is off: pass
 * straight through.  4. Record, call, complete the record, return `ret`
 * unchanged.  Every wrapper has nccl.h's own prototype (a mismatch does
 * not compile).
 */
#define P3D_NCCL_WRAP(fn, kind, params, args, cnt, dtype, redop, peer,       \
                      in_place, xflags)                                       \
    P3D_EXPORT ncclResult_t fn params                                         \
    {                                                                         \
        P3D_REAL(fn);                                                         \
        struct p3d_opcall oc;                                                 \
        ncclResult_t ret;                                                     \
                                                                              \
        if (real == NULL)                                                     \
            return ncclSystemError;                                           \
        if (!p3d_op_begin(&oc, kind, comm, stream, peer, cnt))                \
            return real args;                                                 \
        oc.flags |= (xflags);                                                 \
        p3d_op_enqueue(&oc, cnt, dtype, redop, in_place);                     \
        ret = real args;                                                      \
        p3d_op_end(&oc, ret);                                                 \
        return ret;                                                           \
    }

P3D_NCCL_OPS(P3D_NCCL_WRAP)

static void p3d_group_record(int is_end, uint64_t t0, uint32_t gid,
                             ncclResult_t ret, uint32_t n_ops)
{
    struct p3d_rec_group *g = p3d_rec_reserve(P3D_REC_GROUP, sizeof(*g));

    if (g == NULL)
        return;
    g->is_end = (uint8_t)is_end;
    g->depth = (uint8_t)(p3d_group_depth > 255 ? 255 : p3d_group_depth);
    g->t_enter = t0;
    g->t_exit = p3d_now();
    g->group_id = gid;
    g->ret = ret;
    g->tid = p3d_tid();
    g->n_ops = n_ops;
    p3d_rec_commit(g);
}

P3D_EXPORT ncclResult_t ncclGroupStart(void)
{
    P3D_REAL(ncclGroupStart);
    ncclResult_t ret;
    uint64_t t0;

    if (real == NULL)
        return ncclSystemError;
    if (!p3d_nccl_enter())
        return real();
    if (p3d_group_depth == 0) {
        p3d_group_id = __atomic_add_fetch(&p3d_group_ids, 1,
                                          __ATOMIC_RELAXED);
        p3d_group_ops = 0;
    }
    t0 = p3d_now();
    ret = real();
    if (ret == ncclSuccess)
        p3d_group_depth++;
    p3d_group_record(0, t0, p3d_group_id, ret, 0);
    p3d_nccl_leave();
    return ret;
}

/* ncclGroupEnd's record, written before the call (t_exit = 0), pinned. */
static struct p3d_rec_group *p3d_group_end_open(uint32_t gid, uint32_t n_ops)
{
    struct p3d_rec_group *g = p3d_rec_reserve(P3D_REC_GROUP, sizeof(*g));

    if (g == NULL)
        return NULL;
    g->is_end = 1;
    g->depth = (uint8_t)(p3d_group_depth > 256 ? 255
                         : p3d_group_depth > 0 ? p3d_group_depth - 1 : 0);
    g->t_enter = p3d_now();
    g->t_exit = 0;
    g->group_id = gid;
    g->tid = p3d_tid();
    g->n_ops = n_ops;
    p3d_rec_commit(g);
    p3d_rec_pin();
    return g;
}

static void p3d_group_end_close(struct p3d_rec_group *g, ncclResult_t ret)
{
    uint64_t t = p3d_now();

    if (g == NULL)
        return;
    g->depth = (uint8_t)(p3d_group_depth > 255 ? 255 : p3d_group_depth);
    g->ret = ret;
    __atomic_store_n(&g->t_exit, t ? t : 1, __ATOMIC_RELEASE);
    p3d_rec_unpin();
}

/* The outermost GroupEnd returned: its ops are issued. */
static void p3d_group_issued(void)
{
    for (uint32_t i = 0; i < p3d_group_ntrack; i++)
        p3d_op_settle(p3d_group_slot[i], p3d_group_track[i],
                      p3d_group_capt[i]);
    p3d_group_ntrack = 0;
}

P3D_EXPORT ncclResult_t ncclGroupEnd(void)
{
    P3D_REAL(ncclGroupEnd);
    uint32_t gid = p3d_group_id;
    struct p3d_rec_group *g;
    int outer;
    ncclResult_t ret;

    if (real == NULL)
        return ncclSystemError;
    if (!p3d_nccl_enter())
        return real();
    outer = p3d_group_depth <= 1;
    if (outer && !__atomic_load_n(&p3d_hook_ops_idle, __ATOMIC_RELAXED))
        p3d_hook_group_end_before(gid);
    g = p3d_group_end_open(gid, outer ? p3d_group_ops : 0);
    ret = real();
    if (p3d_group_depth > 0)
        p3d_group_depth--;
    p3d_group_end_close(g, ret);
    if (outer) {
        p3d_group_issued();
        if (!__atomic_load_n(&p3d_hook_ops_idle, __ATOMIC_RELAXED))
            p3d_hook_group_end_after(gid, ret);
        p3d_group_id = 0;
    }
    p3d_nccl_leave();
    return ret;
}
