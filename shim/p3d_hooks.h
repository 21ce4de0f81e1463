/*
 * p3d_hooks.h - where the NCCL wrappers hand control to optional features
 * (GPU timing, in-flight tracking for the watchdog).
 *
 * The wrappers in p3d_nccl.c call these around the real NCCL call, for the
 * outermost call on a thread only.  p3d_hooks_weak.c defines do-nothing
 * weak versions, so the shim links and works when a feature is absent; the
 * feature's own file defines the strong versions.
 *
 * Thread safety: called on the application's thread that makes the NCCL
 * call; implementations must be lock-free or take only short locks, must
 * not allocate per call and must not call into NCCL.
 */
#ifndef P3D_HOOKS_H
#define P3D_HOOKS_H

#include <stddef.h>
#include <stdint.h>

/* What a hook learns about an op (valid only during the call). */
struct p3d_op_ctx {
    uint64_t op_id;
    uint64_t comm_hash;
    uint64_t seq;
    void *stream;         /* cudaStream_t */
    uint32_t group_id;    /* 0 outside ncclGroupStart/End */
    uint8_t op;           /* enum p3d_op */
    uint8_t in_group;
    int32_t peer;
    uint64_t count;       /* elements, as passed */
    int32_t comm_nranks;  /* -1 until known */
    int32_t comm_rank;    /* -1 until known */
};

/*
 * 1 once the op and group-end hooks are known to do nothing (GPU timing
 * off): the wrappers then skip them.  Set by the feature that decided
 * it; 0 (call them) until then.
 */
extern int p3d_hook_ops_idle;

/* Before the real collective/P2P call. */
void p3d_hook_op_before(const struct p3d_op_ctx *op);
/* Later, its op record written at host time t_enter: the last thing
 * before the real call (no kernel of the op starts earlier). */
void p3d_hook_op_entered(const struct p3d_op_ctx *op, uint64_t t_enter);
/* Once the real call returned, before its record is completed: flags
 * to add to the record (P3D_OPF_CAPTURING: the op was graph-captured, so
 * it ran nothing yet; its kernels run at the graph's replays). */
uint8_t p3d_hook_op_flags(const struct p3d_op_ctx *op);
/* After it returned `ret` (ncclResult_t). */
void p3d_hook_op_after(const struct p3d_op_ctx *op, int ret);
/* Around the outermost ncclGroupEnd, where grouped kernels launch. */
void p3d_hook_group_end_before(uint32_t group_id);
void p3d_hook_group_end_after(uint32_t group_id, int ret);
/* A communicator is being finalized/destroyed/aborted. */
void p3d_hook_comm_end(uint64_t comm_hash, int how);
/* Process exit, before the trace file is closed (no CUDA/NCCL calls). */
void p3d_hook_fini(void);
/* The watchdog reports a hang (its own thread): lines to add to the
 * report into buf (each "p3dtrace:   ...\n"), their length; the feature
 * may also write its own records. */
size_t p3d_hook_hang_detail(char *buf, size_t cap);

#endif /* P3D_HOOKS_H */
