/*
 * p3d_vrank.h - the views' model of one rank: its host NCCL calls,
 * GPU NCCL ops, GPU compute spans and memory levels as intervals on the
 * job's common clock, cut to a time window.  The Chrome trace, the HTML
 * report and the comparison table all read ranks through this, one rank
 * at a time, so a big job never sits in memory whole.
 */
#ifndef P3D_VRANK_H
#define P3D_VRANK_H

#include <stdint.h>

#include "p3d_job.h"

enum p3d_vkind {
    P3D_V_HOST,    /* a host NCCL call (or comm init) on a thread */
    P3D_V_GROUP,   /* ncclGroupStart .. ncclGroupEnd on a thread */
    P3D_V_GPU_NCCL, /* an NCCL op on the GPU, on its stream */
    P3D_V_COMPUTE, /* a merged compute span of a stream */
    P3D_V_COPY,    /* a merged copy span of a stream */
    P3D_V_KIND_N
};

#define P3D_V_INIT 0xfe /* op value of a comm-init host event */

struct p3d_vev {
    uint64_t t0, t1;   /* ns since the job's start, aligned */
    uint64_t track;    /* thread id (host) or stream (GPU) */
    uint64_t comm, bytes, seq, op_id;
    int32_t peer, comm_rank;
    uint8_t kind, op;  /* enum p3d_vkind, enum p3d_op (or P3D_V_INIT) */
    int16_t label;     /* P3D_LBL_* of the comm's use, -1 none */
    uint32_t lane;     /* sub-track so that events nest (chrome) */
    uint32_t tid;      /* output track number (chrome) */
};

struct p3d_vmem {
    uint64_t t, cur;
    int kind;
};

struct p3d_vrank {
    int rank;
    struct p3d_vev *ev;
    size_t n, cap;
    struct p3d_vmem *mem;
    size_t n_mem, cap_mem;
    uint64_t peak[P3D_MEM_KIND_COUNT]; /* over the whole file */
    uint64_t t_end;                    /* last time seen, job ns */
    int have_gpu;                      /* GPU op or span records */
    int have_spans;                    /* GPU compute/copy spans */
};

/* A time window on the job clock, [t0, t1) ns; t1 = 0: no end. */
struct p3d_vwin {
    uint64_t t0, t1;
};

/*
 * Shift that turns the monotonic times of rank file r into job ns (time
 * since the job's earliest CLOCK_REALTIME start): the time analysis's
 * host clock offsets (estimated from collectives) when it ran, else the
 * CLOCK_REALTIME of the rank's host (ranks of one host share the first
 * rank's mapping) with no cross-host correction.
 */
int64_t p3d_vclock_shift(const struct p3d_job *job, const struct p3d_rank *r);

/* Read rank file r into v (events overlapping w, sorted by start, longest
 * first).  Returns 0 or -1. */
int p3d_vrank_load(const struct p3d_job *job, const struct p3d_rank *r,
                   const struct p3d_vwin *w, struct p3d_vrank *v);
void p3d_vrank_free(struct p3d_vrank *v);

/* Label of the communicator with hash h in job, -1 if unknown. */
int p3d_vlabel(const struct p3d_job *job, uint64_t h);

#endif /* P3D_VRANK_H */
