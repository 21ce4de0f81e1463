/*
 * rank.h - internal API of the simulator's rank library.
 *
 * rank_comm.c owns communicators (created lazily, Megatron style;
 * rank_eager.c: all at start, as torch with device_id), op
 * submission with fault injection and truth counting; rank_sched.c runs
 * the schedules; rank_main.c is the entry point the driver calls.
 */
#ifndef P3D_SIM_RANK_H
#define P3D_SIM_RANK_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "sim.h"

#define RANK_MAX_EXTRA 64         /* eager communicators no op uses */

struct rank_ctx {
    const struct sim_cfg *cfg;
    int rank;
    const char *scratch;
    int coord[SA_COUNT];
    int stage, pp;
    struct sim_truth *t;
    ncclComm_t comm[SG_COUNT];
    cudaStream_t stream;             /* compute */
    cudaStream_t nstream[SG_COUNT];  /* async: one NCCL stream per group */
    cudaEvent_t ev_pre, ev_post[SG_COUNT];
    char *sbuf, *rbuf;
    size_t buf_bytes;
    int iter;
    int in_pp;                       /* inside a pipeline send/recv batch */
    int cur_mb;                      /* micro-batch of the kernel launched */
    int want_first;                  /* the iteration's first NCCL call is
                                        still to come */
    ncclComm_t extra[RANK_MAX_EXTRA];
    int n_extra;
};

struct rank_op {
    int grp;
    int kind;                    /* enum sim_kind */
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t op;
    int peer;                    /* root or p2p peer (comm rank) */
};

uint64_t rank_now(void);
ncclComm_t rank_comm(struct rank_ctx *x, int g);
ncclComm_t rank_comm_keep(struct rank_ctx *x, int g, ncclComm_t c, int me);
int rank_eager_init(struct rank_ctx *x);      /* --eager-groups */
void rank_eager_destroy(struct rank_ctx *x);
int rank_submit(struct rank_ctx *x, struct rank_op *ops, int n, int grouped);
int rank_one(struct rank_ctx *x, int grp, int kind, size_t count,
             ncclDataType_t dt, ncclRedOp_t op, int peer);
void rank_compute(struct rank_ctx *x, int kind, int mb, double ms);
int rank_iteration(struct rank_ctx *x);
void rank_tp_in(struct rank_ctx *x);
void rank_tp_out(struct rank_ctx *x);
void rank_cp_step(struct rank_ctx *x);
void rank_moe_a2a(struct rank_ctx *x);
int rank_edp(const struct sim_cfg *c); /* expert DP ranks */
void rank_titan_layer(struct rank_ctx *x, int kind, int mb, double ms);
void rank_titan_step_start(struct rank_ctx *x);
void rank_titan_step_end(struct rank_ctx *x);
int rank_torch_iteration(struct rank_ctx *x); /* --framework ddp|fsdp */
size_t rank_torch_buf_bytes(const struct sim_cfg *c);
void rank_destroy_comms(struct rank_ctx *x);
void rank_observe(struct rank_ctx *x);
void rank_sync(struct rank_ctx *x);

#endif /* P3D_SIM_RANK_H */
