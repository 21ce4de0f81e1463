/*
 * p3d_inflight.h - the fixed-size, lock-free table of NCCL ops that are
 * not known to be complete, read by the watchdog (p3d_watchdog.c).
 *
 * An op moves enqueued (wrapper entered, added here) -> issued (the real
 * call, or for grouped ops the outermost ncclGroupEnd, returned) ->
 * completed (the GPU timing code wrote its end: P3D_REC_GPU_OP).  Where
 * no GPU times exist (P3D_GPU_TIMING=off, or no completion ever arrived)
 * an issued op's completion is unknown: only ops whose call has not
 * returned count as pending then.
 *
 * Thread safety: add/issued/complete are lock-free and allocation-free
 * (any thread); the table has P3D_INFLIGHT_SLOTS slots indexed by op_id,
 * a slot still pending when its index comes round again is kept (the
 * newer op is not tracked, counted in p3d_inflight_overflow).
 */
#ifndef P3D_INFLIGHT_H
#define P3D_INFLIGHT_H

#include <stdint.h>

#include "p3d_hooks.h"

#define P3D_INFLIGHT_SLOTS 4096

/* A snapshot of one pending op. */
struct p3d_inflight_op {
    uint64_t op_id;
    uint64_t t_enqueue;
    uint64_t comm_hash;
    uint64_t seq;
    uint64_t stream;
    int32_t peer;
    uint32_t stack_id;
    uint32_t tid;
    uint8_t op;          /* enum p3d_op, or P3D_INFLIGHT_INIT */
    uint8_t issued;      /* the host call returned */
    uint8_t grouped;     /* waits for its ncclGroupEnd */
};

/*
 * Pseudo-op of a communicator init/split the thread is inside (NCCL
 * blocks there until every member joined).  Also the op value of a
 * P3D_REC_HANG written for one (comm_hash = the comm being made, or the
 * parent of a split; seq = its nranks, UINT64_MAX unknown; peer = this
 * rank's rank in it, -1 unknown).
 */
#define P3D_INFLIGHT_INIT P3D_HANG_OP_INIT
#define P3D_INFLIGHT_INIT_ID ((uint64_t)1 << 58)

/* The op of `ctx` was entered at `t` (before the real call). */
void p3d_inflight_add(const struct p3d_op_ctx *ctx, uint64_t t,
                      uint32_t stack_id);
/* The same from the wrappers: returns the op's slot for
 * p3d_inflight_issued_at (-1: not tracked); `tid` = p3d_tid(). */
int p3d_inflight_enter(const struct p3d_op_ctx *ctx, uint64_t t,
                       uint32_t stack_id, uint32_t tid);
/*
 * Its host call (or its group's ncclGroupEnd) returned.  Only the thread
 * that added the op may call these (it owns the slot until then).
 */
void p3d_inflight_issued(uint64_t op_id);
void p3d_inflight_issued_at(int slot, uint64_t op_id);
/* The GPU finished it (from p3d_gpu_op_write). */
void p3d_inflight_complete(uint64_t op_id);
/*
 * Track a communicator init the caller is about to enter; returns a
 * token for p3d_inflight_done (after the call returns).
 */
uint64_t p3d_inflight_init_begin(uint64_t comm_hash, int nranks, int rank);
void p3d_inflight_done(uint64_t op_id);
/* 1 once GPU completions are known to arrive (P3D_GPU_TIMING != off). */
int p3d_inflight_gpu_live(void);

/*
 * Fill `out` with the pending ops (at most `max`, oldest first by
 * t_enqueue among those copied); returns how many are pending in all.
 */
int p3d_inflight_pending(struct p3d_inflight_op *out, int max);
/* Pending ops of one communicator (for P3D_REC_COMM_END). */
uint32_t p3d_inflight_pending_on(uint64_t comm_hash);
uint64_t p3d_inflight_overflow(void);
/* Empty the table (tests, fork child). */
void p3d_inflight_reset(void);

#endif /* P3D_INFLIGHT_H */
