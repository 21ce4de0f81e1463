/*
 * p3d_job.h - the analyzer's model of one job: its rank files, each
 * rank's view of its communicators with per-op-kind traffic, and the
 * communicators joined across ranks.  Filled by p3d_rank.c (one pass per
 * file, in threads) and p3d_comm.c (the join); read by layout, labels,
 * matching and the reports.
 */
#ifndef P3D_JOB_H
#define P3D_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "p3d_format.h"
#include "p3d_map.h"
#include "p3d_ops.h"

#define P3D_HIST_N 48 /* bucket b: [2^(b-1), 2^b) bytes; b = 0: 0 bytes */

struct p3d_opstat {
    uint64_t calls, bytes;
    uint64_t gpu_calls, gpu_bytes, gpu_ns; /* ops with a GPU time */
};

/* Usage facts that tell communicators with equal members apart. */
#define P3D_USE_SIZES 8 /* distinct all-reduce sizes counted */
struct p3d_usage {
    uint64_t tiny_ar;     /* all-reduces of <= 8 bytes */
    uint64_t ar_avg;      /* all-reduces with ncclAvg or a user (premul)
                             op: gradient averaging */
    uint64_t tiny_ag;     /* all-gathers of <= 8 bytes a rank (counts,
                             flags: DDP's construction, store barriers) */
    uint64_t tiny_f32_ar; /* 1-element fp32 all-reduces */
    uint64_t big_ar;      /* all-reduces of >= 1 MiB */
    uint16_t dtypes[P3D_OP_COUNT]; /* ncclDataType_t bits seen per op */
    uint8_t rs_redops;    /* reduce-scatter ops: bit = ncclRedOp_t (0-4),
                             bit 5 = user-defined (premul sum) */
    uint64_t ar_size[P3D_USE_SIZES], ar_n[P3D_USE_SIZES]; /* > 8 bytes */
    uint64_t ar_sizes_other; /* all-reduces of further sizes */
    uint64_t bc_int64;    /* broadcasts of int64 (Megatron's batch) */
    uint64_t p2p_batches; /* Send/Recv batches (a group, or a lone op) */
    uint64_t p2p_both;    /* of them, with a send and a receive */
    uint64_t p2p_a2a;     /* of them, an all-to-all through Send/Recv:
                             sending to 3+ distinct peers, or to its own
                             rank (p3d_usage_batch_a2a) */
    uint32_t p2p_gid;     /* scan: the batch in progress, its directions */
    uint8_t p2p_dirs;
    uint8_t p2p_npeer;    /* scan: distinct send peers of the batch so far */
    uint8_t p2p_self;     /* scan: the batch sends to the rank itself */
    int32_t p2p_peer[3];
};

/* Count op o in u (the scan, once per op; p3d_traffic.c). */
void p3d_usage_add(struct p3d_usage *u, const struct p3d_rec_op *o);
/* Whether the Send/Recv batch in progress in u is an all-to-all. */
int p3d_usage_batch_a2a(const struct p3d_usage *u);
/* Count n more all-reduces of `bytes` in u's size table. */
void p3d_usage_ar_size(struct p3d_usage *u, uint64_t bytes, uint64_t n);

struct p3d_rcomm { /* one communicator as one rank saw it */
    uint64_t hash, parent;
    int32_t nranks, rank, device;
    int how, flags, created; /* created: a comm record was seen */
    uint32_t order;          /* creation index on this rank */
    uint64_t t_create;
    struct p3d_opstat st[P3D_OP_COUNT];
    uint64_t hist[P3D_HIST_N];
    struct p3d_usage use;
    int gcomm; /* index in job->comms */
};

struct p3d_rank {
    char *path;
    char *copy;  /* p3d-analyze-mpi --local, process 0: where it keeps a
                    copy of a file another process read (the hang
                    analysis and the views read it again); NULL: path */
    int owner;   /* p3d-analyze-mpi --local: the process whose folder
                    holds the file (p3d_dist_owner_of) */
    struct p3d_file_hdr hdr;
    int rank; /* global rank; -1 unknown */
    int failed, closed, truncated, corrupt;
    uint64_t n_records, n_ops, n_gpu_ops, n_nocolor;
    uint64_t n_hang_recs, n_aborts; /* watchdog reports, ncclCommAbort ends */
    int saw_term;  /* a "SIGTERM received" note */
    int plugin_timed; /* its NCCL ops were timed by NCCL's profiler plugin */
    char *cmdline; /* argv, NUL-separated */
    size_t cmdline_len;
    struct p3d_rcomm *comms;
    int n_comms;
    size_t cap;
    struct p3d_map idx; /* comm hash -> comms index */
    const struct p3d_op_sink *sink; /* fed while scanning, NULL: none */
    char err[768];      /* problem found while reading, "" if none */
    char warn[512];
};

struct p3d_gcomm { /* a communicator joined across ranks */
    uint64_t hash;
    int size;       /* nranks claimed */
    int *slot;      /* [size]: global rank per comm rank, -1 unknown */
    int *members;   /* known global ranks, ascending */
    int n_members;
    int n_missing;  /* slots no file claims */
    int inferred_members; /* missing slots filled in from the layout */
    uint32_t order; /* lowest creation index on any member */
    int bad_size;   /* members disagree on nranks */
    int size_unknown; /* no comm record: members = ranks that used it */
    struct p3d_opstat st[P3D_OP_COUNT];
    int gpu_placed;  /* st's GPU times are the time analysis's placement of
                        NCCL kernel spans (no GPU_OP records) */
    uint64_t hist[P3D_HIST_N];
    struct p3d_usage use;
    unsigned labels; /* P3D_LBL_* bits that match */
    int label_first; /* the most specific of them ("label" in JSON) */
    int label;       /* the one it is used as ("used_as" in JSON) */
    const char *role;
};

/* Dense axes, indexes into p3d_layout.size. */
enum { P3D_AX_TP, P3D_AX_CP, P3D_AX_DP, P3D_AX_PP, P3D_AX_N };

struct p3d_layout {
    int size[P3D_AX_N]; /* tp, cp, dp, pp */
    int ep, etp;        /* etp: --expert-tensor-parallel-size, 0 = tp */
    int dp_shard;       /* torchtitan HSDP: DP is dp/dp_shard replicas of
                           dp_shard shards (shard fastest); 1: replicas
                           alone, FSDP on cp ranks; 0 = plain DP */
    int ord[P3D_AX_N];  /* axes from fastest (stride 1) to slowest */
    char order[32];     /* Megatron spelling, e.g. "tp-cp-ep-dp-pp" */
    const char *source; /* "inferred", "cmdline", "user" */
    int valid;
    int vpp, mbs, gbs, seq; /* from the command line, 0 unknown */
    int explained, total;   /* communicators the layout explains */
    int usage_ok;           /* communicators whose usage fits */
    int contradicted;       /* the stated layout explains less */
    char best[128];         /* best inferred layout, as text */
    int best_explained;
    int confidence;         /* P3D_CONF_* (p3d_infer.c says when) */
    char conf_why[320];     /* the reason, one clause */
    int n_alts;             /* other layouts that fit, best first */
    struct p3d_layout_alt {
        char text[128];     /* "tp=1 cp=1 ep=1 dp=8 pp=1 order=..." */
        char why[160];      /* why it lost, or that it fits as well */
    } alts[3];
};

/* How sure the layout is (JSON layout.confidence). */
enum { P3D_CONF_CERTAIN, P3D_CONF_LIKELY, P3D_CONF_AMBIGUOUS,
       P3D_CONF_NONE };
extern const char *const p3d_conf_name[]; /* "certain", ... ("none") */

struct p3d_mismatch;
struct p3d_time_res;
struct p3d_hang_res;
/*
 * What a pass found, kept by the job under a key of the pass's own (the
 * address of a constant in the pass's file), so that a new analysis adds
 * no field here: its header gives the views an accessor over
 * p3d_job_result.  The job frees it with the pass's free function.
 */
struct p3d_job_result {
    const void *key;
    void *res;
    void (*free)(void *res);
};
/*
 * An analysis that takes every op record while the scan streams the rank
 * files (the matcher): it registers here, and the scan calls it; the scan
 * knows nothing of what it does.  Each reader thread has its own state of
 * it, made by open at the thread's first op and freed by close; rank_end
 * says that rank's file is read.  Called from several threads at once.
 */
struct p3d_op_sink {
    void *ctx;
    void *(*open)(void *ctx);
    void (*op)(void *ctx, void *st, int rank, int comm_rank,
               const struct p3d_rec_op *o);
    void (*rank_end)(void *ctx, void *st, int rank);
    void (*close)(void *ctx, void *st);
};

struct p3d_job {
    char job_id[P3D_JOB_ID_LEN + 1];
    struct p3d_rank *ranks; /* sorted by rank */
    int n_ranks;
    int world_size;
    uint64_t start_ns;
    struct p3d_gcomm *comms; /* sorted by creation order */
    int n_comms;
    struct p3d_map comm_idx;
    struct p3d_layout layout;
    struct p3d_layout hint; /* from the command line */
    int hint_fits;          /* the traces agree with the hint */
    int have_gpu;
    struct p3d_match_res *match;
    struct p3d_time_res *time; /* p3d_time.h; NULL until analysed */
    struct p3d_hang_res *hang;  /* p3d_hang.c (issue 7) */
    struct p3d_job_result *results; /* the later passes' (findings/, ...) */
    size_t n_results, cap_results;
    int threads;                /* reader threads (p3d_job_scan) */
    int n_read;                 /* rank files the scan has read (atomic:
                                   for progress while it runs) */
    /* called by the scan thread that read rank file i, once it is read
     * (p3d-analyze-mpi sends it on); NULL: none */
    void (*on_scanned)(void *ctx, int i);
    void *on_scanned_ctx;
};

/* Histogram bucket of a message size. */
static inline int p3d_hist_bucket(uint64_t bytes)
{
    int b = bytes ? 64 - __builtin_clzll(bytes) : 0;

    return b < P3D_HIST_N ? b : P3D_HIST_N - 1;
}

/* Read every rank file of the job (threads); fills job->ranks[*]. */
void p3d_job_scan(struct p3d_job *job, int threads);
/* The same for the m rank files at positions pick[0..m) only
 * (p3d-analyze-mpi: a process's share); job->threads is set as by
 * p3d_job_scan. */
void p3d_job_scan_some(struct p3d_job *job, int threads, const int *pick,
                       int m);
/* Scan one rank file.  Returns 0, -1 if unusable (r->err set). */
int p3d_rank_scan(struct p3d_rank *r);
struct p3d_reader;
/* The same over an open reader (rewound first; not closed). */
int p3d_rank_scan_reader(struct p3d_rank *r, struct p3d_reader *rd);
void p3d_rank_free(struct p3d_rank *r);
/* The file to read r from again (after the scan): its copy where there is
 * one (p3d-analyze-mpi --local), else its path. */
const char *p3d_rank_file(const struct p3d_rank *r);
/* Whether r's trace lost records while recording (P3D_F_DROPPED): its
 * file lacks ops the rank issued, so what it lacks proves nothing. */
int p3d_lost_records(const struct p3d_rank *r);
/* Join rank communicators by hash into job->comms. */
void p3d_comm_join(struct p3d_job *job);
/* Keep res under key, freed with free_fn (NULL: not freed) by
 * p3d_job_free; a result kept under key before is freed first. */
void p3d_job_keep(struct p3d_job *job, const void *key, void *res,
                  void (*free_fn)(void *res));
/* The result kept under key, NULL if none. */
void *p3d_job_result(const struct p3d_job *job, const void *key);
/* Free and forget the result kept under key, if any. */
void p3d_job_drop(struct p3d_job *job, const void *key);
/* Find the rank struct of a global rank, NULL if no file. */
struct p3d_rank *p3d_job_rank(const struct p3d_job *job, int rank);
void p3d_job_free(struct p3d_job *job);
/* Ranks whose trace could be read (p3d_job.c). */
int p3d_job_ranks_found(const struct p3d_job *job);
/* Ranks of the job: its world size, else the ranks found. */
int p3d_job_world(const struct p3d_job *job);
/* 1 when rank file i names a host no earlier file names (0 for a file
 * with no readable header: its host is unknown).  For host lists. */
int p3d_job_host_first(const struct p3d_job *job, int i);
/* The job's start as "YYYY-MM-DD HH:MM:SS UTC", "?" if unknown. */
void p3d_job_started(const struct p3d_job *job, char *buf, size_t n);


/* Ranks of the world that have no trace file, as text; 0 if none. */
int p3d_missing_ranks(const struct p3d_job *job, char *buf, size_t n);

#endif /* P3D_JOB_H */
