/*
 * sim.h - shared definitions of the job simulator (p3d-sim).
 *
 * The driver (sim_*.c, program build/p3d-sim) and the rank's work
 * (rank_*.c, build/fakes/libp3dsim_rank.so, loaded RTLD_LOCAL like torch)
 * agree here on the configuration, the Megatron groups and the binary
 * per-rank ground-truth file the driver turns into truth.json.
 */
#ifndef P3D_SIM_H
#define P3D_SIM_H

#include <limits.h>
#include <stdint.h>

#define SIM_MAX_STAGES 64
#define SIM_MAX_ITERS 64
#define SIM_MAX_BUSY 16384
#define SIM_MAX_SKEW 16
#define SIM_MAX_RANKS 1024

/* Parallel axes, in RankGenerator's vocabulary. */
enum sim_axis { SA_TP, SA_CP, SA_EP, SA_DP, SA_PP, SA_COUNT };

/* Megatron groups whose communicators the simulated job creates. */
enum sim_grp {
    SG_WORLD,    /* default PG: startup barrier */
    SG_DP_CP,    /* DATA_PARALLEL_GROUP_WITH_CP: grads, params, loss */
    SG_CP,       /* CONTEXT_PARALLEL_GROUP: KV ring */
    SG_MP,       /* MODEL_PARALLEL_GROUP: 1-element all-reduces */
    SG_TP,       /* TENSOR_MODEL_PARALLEL_GROUP */
    SG_PP,       /* PIPELINE_MODEL_PARALLEL_GROUP: send/recv */
    SG_EMB,      /* EMBEDDING_GROUP: first + last stage */
    SG_DISTOPT,  /* INTRA_DISTRIBUTED_OPTIMIZER_INSTANCE_GROUP (all) */
    SG_EP,       /* EXPERT_MODEL_PARALLEL_GROUP: MoE token all-to-all */
    SG_EPDP,     /* EXPERT_DATA_PARALLEL_GROUP: expert grads, params */
    SG_DPSHARD,  /* titan HSDP: dp_shard x cp, FSDP's AG/RS (--dp-replicate) */
    SG_DPREP,    /* titan HSDP: dp_replicate, the shards' all-reduce */
    SG_ETP,      /* EXPERT_TENSOR_PARALLEL_GROUP when folded (--etp other
                    than tp): the tokens' all-gather and reduce-scatter */
    SG_COUNT
};

/* Op kinds, in p3d_format.h's enum p3d_op order. */
enum sim_kind {
    SK_ALLREDUCE, SK_REDUCESCATTER, SK_ALLGATHER, SK_BROADCAST, SK_REDUCE,
    SK_ALLTOALL, SK_GATHER, SK_SCATTER, SK_SEND, SK_RECV, SK_COUNT
};

/* Compute kinds of busy intervals. */
enum sim_busy_kind { SB_FWD, SB_BWD, SB_OPT, SB_HANG };

/* Whose collectives (--framework): Megatron-LM's groups and schedules,
 * plain PyTorch DDP / FSDP2 on the world group (rank_torch.c), or
 * torchtitan's DeviceMesh parallelisms with Megatron's schedules
 * (rank_sched.c, rank_titan.c). */
enum sim_framework { SIM_FW_MEGATRON, SIM_FW_DDP, SIM_FW_FSDP, SIM_FW_TITAN,
                     SIM_FW_DEEPSPEED };

/* --mismatch R:G:N[:what]: count+1 (the default), another reduction op,
 * another datatype of the same width, another collective of the same
 * buffer sizes (AllReduce <-> Broadcast, ReduceScatter <-> AllGather). */
enum sim_mism { SIM_MM_COUNT, SIM_MM_REDOP, SIM_MM_DTYPE, SIM_MM_KIND };

struct sim_skew {
    int rank;
    long long ns;
};

struct sim_cfg {
    int size[SA_COUNT];          /* dense generator: tp cp ep(=1) dp pp */
    int ep;                      /* expert parallel (MoE when > 1) */
    int etp;                     /* expert tensor parallel (0: = tp) */
    int order[SA_COUNT];         /* axes, fastest varying first */
    char order_str[64];
    int world;
    int m;                       /* micro-batches per iteration */
    int vpp;                     /* virtual chunks per stage (>= 1) */
    int iters;
    int layers;                  /* layers per stage (per chunk) */
    double fwd_ms[SIM_MAX_STAGES];
    double bwd_ms[SIM_MAX_STAGES];
    double opt_ms;
    uint64_t tp_bytes, pp_bytes, cp_bytes, dp_bytes, emb_bytes;
    int buckets;
    int sp;                      /* sequence parallel */
    int dist_opt;                /* distributed optimizer */
    int comm_names;              /* pass commName like newer torch */
    int async;                   /* P3D_FAKE_ASYNC=1: GPU-like streams */
    int framework;               /* enum sim_framework */
    int dp_rep;                  /* titan: dp_replicate (HSDP), divides dp;
                                    dp_shard = dp / dp_rep */
    char eager_groups[PATH_MAX]; /* --eager-groups: every group, created at
                                    start by ncclCommSplit of WORLD */
    int hosts;                   /* simulated hosts (0: one) */
    /* faults; rank -1 = none */
    int straggler_rank;
    double straggler_pct;
    int hang_rank, hang_grp;
    long hang_n;
    int kill_rank;
    long kill_n;
    struct sim_mm {              /* --mismatch, given once or twice */
        int rank, grp;
        long n;
        int what;                /* enum sim_mism */
    } mm[2];
    int n_mm;
    int n_skew;
    struct sim_skew skew[SIM_MAX_SKEW];
    /* driver */
    char out[PATH_MAX];
    char job_id[64];
    char shim[PATH_MAX];
    double timeout_s;
    double grace_s;
    int stop_when_hung;          /* end the job once its hang has formed:
                                    1 as on its timeout, 2 by SIGKILL */
    int quiet;
};

struct sim_busy {
    uint64_t start, end;
    uint32_t iter;
    uint16_t kind;     /* enum sim_busy_kind */
    uint16_t mb;       /* micro-batch */
};

struct sim_step {
    uint64_t start, end;         /* CLOCK_MONOTONIC of the real host */
    uint64_t first_op;           /* entry of its first NCCL call into the
                                    fake (0: none yet) */
    uint64_t busy_ns;            /* compute kernels */
    uint64_t pp_wait_ns;         /* inside PP send/recv: the bubble */
};

#define SIM_TRUTH_MAGIC 0x53494d54u

/* The per-rank ground truth, a MAP_SHARED file kept current as we go. */
struct sim_truth {
    uint32_t magic;
    int32_t rank;
    int32_t pid;
    int32_t n_created;
    int32_t created[SG_COUNT];       /* creation index + 1, 0 = never */
    int32_t comm_rank[SG_COUNT];
    uint64_t ops[SG_COUNT][SK_COUNT];
    uint64_t bytes[SG_COUNT][SK_COUNT];
    uint64_t issued[SG_COUNT];       /* ops issued on the group */
    uint64_t issued_total;
    uint64_t inflight[SG_COUNT][SK_COUNT]; /* ops of the batch in NCCL now */
    int32_t stopped;                 /* 0, 1 hang, 2 kill */
    int32_t stop_grp;                /* -1 = any */
    uint64_t stop_t;
    uint64_t mismatch_op;            /* issued_total index + 1, 0 none */
    int32_t finished;                /* clean end of the job */
    int32_t n_steps;
    struct sim_step steps[SIM_MAX_ITERS];
    uint64_t n_busy;
    struct sim_busy busy[SIM_MAX_BUSY];
};

/* sim_layout.c */
int sim_parse_order(const char *s, int order[SA_COUNT]);
void sim_coords(const struct sim_cfg *c, int rank, int coord[SA_COUNT]);
int sim_rank_of(const struct sim_cfg *c, const int coord[SA_COUNT]);
int sim_members(const struct sim_cfg *c, int grp, int rank, int *out);
int sim_stage(const struct sim_cfg *c, int rank);
void sim_expert_cfg(const struct sim_cfg *c, struct sim_cfg *e);
/* The expert tensor-parallel size (--etp, else tp), and whether it is
 * folded: MoE with an expert TP group other than TP's. */
int sim_etp(const struct sim_cfg *c);
int sim_etp_folded(const struct sim_cfg *c);
const char *sim_grp_short(int grp);
const char *sim_grp_megatron(int grp);
int sim_grp_parse(const char *s);
const char *sim_kind_name(int kind);
const char *sim_axis_name(int axis);
int sim_host_of(const struct sim_cfg *c, int rank);
long long sim_host_offset(const struct sim_cfg *c, int host);

/* sim_args.c */
int sim_parse_args(struct sim_cfg *c, int argc, char **argv);

/* Entry point of libp3dsim_rank.so. */
typedef int (*sim_rank_main_fn)(const struct sim_cfg *c, int rank,
                                const char *scratch);
#define SIM_RANK_MAIN "p3dsim_rank_main"

#endif /* P3D_SIM_H */
