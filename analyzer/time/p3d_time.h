/*
 * p3d_time.h - the time analysis of a job: every rank's timeline (NCCL
 * ops with host and GPU times, compute/copy/NCCL busy spans) on one clock,
 * its iterations, where the time of a step goes, the pipeline bubble,
 * wait states and stragglers, and the seed table row.
 *
 * Modules: p3d_pass.c (two streaming passes over the rank files),
 * p3d_time_load.c (one rank's timeline), p3d_time_join.c (instances and
 * pairs joined as ranks stream in), p3d_time_ivl.c (interval
 * arithmetic), p3d_clock.c (host clock offsets), p3d_steps.c
 * (iterations), p3d_overlap.c (breakdown, verdict), p3d_bubble.c,
 * p3d_wait.c (wait states); its views are views/p3d_seedrow.c (text) and
 * views/p3d_time_json.c.
 * Only one rank's ops per loading thread are held at a time: what stays
 * per rank is its iterations and their breakdown.
 */
#ifndef P3D_TIME_H
#define P3D_TIME_H

#include <stdint.h>
#include <stdio.h>

#include "p3d_bytes.h"
#include "p3d_job.h"
#include "p3d_layout.h"

struct p3d_iv {
    int64_t s, e;
};

struct p3d_ivs { /* a list of intervals; "union" when sorted, disjoint */
    struct p3d_iv *v;
    size_t n, cap;
};

void p3d_ivs_add(struct p3d_ivs *l, int64_t s, int64_t e);
/* Sort and merge into a union (disjoint, ascending). */
void p3d_ivs_union(struct p3d_ivs *l);
/* |u ∩ [s, e)| of a union u. */
int64_t p3d_ivs_cover(const struct p3d_ivs *u, int64_t s, int64_t e);
/* |a \ b| ∩ [s, e) for unions a and b. */
int64_t p3d_ivs_minus(const struct p3d_ivs *a, const struct p3d_ivs *b,
                      int64_t s, int64_t e);
/* |[s0, e0) \ b| for a union b. */
int64_t p3d_iv_minus(int64_t s0, int64_t e0, const struct p3d_ivs *b);
/* The same, searching b from *hint (0 at first; the same answer for any
 * hint, fastest when s0 grows from call to call). */
int64_t p3d_iv_minus_from(int64_t s0, int64_t e0, const struct p3d_ivs *b,
                          size_t *hint);
void p3d_ivs_free(struct p3d_ivs *l);

/* Whether key i of p3d_gallop's keys is above t (at or above with ge). */
static inline int p3d_gallop_hit(const int64_t *key0, size_t stride,
                                 size_t i, int64_t t, int ge)
{
    int64_t k = *(const int64_t *)((const char *)key0 + i * stride);

    return ge ? k >= t : k > t;
}

/*
 * First i in [lo, n) whose key, the int64_t stride bytes after the
 * previous one from key0, is above t (at or above with ge); the keys do
 * not decrease and none below lo qualifies.  Gallops from lo, then
 * bisects: a search that starts near its answer costs the log of the
 * distance.  For the searches that resume from a previous answer.
 */
static inline size_t p3d_gallop(const int64_t *key0, size_t stride,
                                size_t n, size_t lo, int64_t t, int ge)
{
    size_t hi = lo, step = 1;

    while (hi < n && !p3d_gallop_hit(key0, stride, hi, t, ge)) {
        lo = hi + 1;
        hi += step;
        step *= 2;
    }
    if (hi > n)
        hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p3d_gallop_hit(key0, stride, mid, t, ge))
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Where GPU times come from. */
enum { P3D_TSRC_HOST, P3D_TSRC_SPAN, P3D_TSRC_GPU };

struct p3d_top { /* one NCCL op on the timeline */
    int64_t h0, h1; /* host enter/exit */
    int64_t s, e;   /* best interval: GPU if known, else host */
    int64_t hs, hg; /* host call of the blocking call: the outermost
                     * ncclGroupStart enter / ncclGroupEnd return for
                     * grouped ops, else h0 / h1 */
    uint64_t seq, bytes;
    int gcomm; /* job->comms index, -1 unknown */
    int peer;  /* global rank of the Send/Recv peer, else -1 */
    uint8_t op, has_gpu;
};

struct p3d_topx { /* what loading needs of an op and the rest does not */
    uint64_t op_id, stream;
    uint32_t group_id, i; /* i: index of the op in load order */
};

struct p3d_tbreak { /* one rank, one iteration (ns) */
    int64_t step, compute, copy, nccl, exposed, overlapped, idle;
    int64_t pp_wait, late_sender, late_receiver, transfer;
    int64_t pp_fill, pp_steady; /* warm-up/cool-down vs steady */
    int nokern; /* outside the rank's kernel windows: no compute times */
};

/*
 * A rank's waits at collectives, one kind of group: waiting it caused
 * the others as the last to arrive, waiting it suffered, and how often
 * it was last.  Layer groups (TP, CP, EP) and the step's other
 * collectives (DP, MP, WORLD ...) are kept apart (p3d_wait.c).
 */
struct p3d_twait {
    int64_t caused, suffered, late;
};
enum { P3D_TW_LAYER, P3D_TW_STEP };

struct p3d_tl { /* one rank */
    int rank, host, stage;
    struct p3d_top *ops; /* while the rank is loaded (a pass) */
    size_t n_ops, cap_ops;
    size_t n_placed; /* ops with GPU times */
    struct p3d_ivs compute, copy, nccl; /* unions, while loaded */
    struct p3d_ivs nsp_raw;             /* NCCL spans, for attribution */
    struct p3d_ivs kwin;   /* kernel windows (union), if the trace has them */
    int64_t kwin_on;       /* open window's start while loading, -1 none */
    int windowed;          /* the trace has P3D_REC_GPU_WINDOW records */
    uint64_t *nsp_stream;
    size_t nsp_cap;
    int src;        /* P3D_TSRC_* */
    uint64_t peak_mem;
    int64_t rt_anchor; /* start_realtime - start_mono */
    int n_iter;     /* iterations found (the last n_iter periods) */
    size_t *it_op;  /* [n_iter + 1]: first op of each, n_ops at the end */
    int64_t *it_t;  /* [n_iter + 1]: boundaries (aligned ns) */
    int first_it;   /* this rank's iteration matching job iteration 0 */
    size_t period;
    struct p3d_tbreak *br; /* [job n_iter]; per own iteration in pass 1 */
    int br_lazy; /* over several processes, not process 0: br exists on
                    process 0, made here at the first pipeline pair */
    /* Exposed NCCL time by label, as br: [iteration][n_lbl], a column per
     * label with time in some iteration (lbl[c]: its P3D_LBL_*); most
     * ranks have a few of the labels, and this is the largest array the
     * time analysis keeps of every rank. */
    int64_t *br_lbl;
    uint8_t lbl[P3D_LBL_COUNT];
    int n_lbl;
    int *it_fwd, *it_wrap; /* [n_iter]: pipeline sends forward, receives
                            * from the last stage (p3d_bubble_sched) */
    int it_mono;           /* it_t ascends (windows found by bisection) */
    struct p3d_twait nxn[2]; /* P3D_TW_*: waits at N x N collectives */
    int64_t caused_p2p; /* Late Sender / Late Receiver on pipeline P2P */
};

/* Bounds contradicting by more than this say nothing of the offset. */
#define P3D_CONTRA_HUGE_NS 3600000000000LL

struct p3d_thost {
    char name[P3D_HOST_LEN + 1];
    int64_t shift;        /* added to this host's monotonic times */
    int64_t offset_ns;    /* its clock minus the reference host's */
    int64_t uncert_ns;    /* half the bracket the bounds leave, >= 0 */
    int64_t contra_ns;    /* > 0: the bounds contradict by this much (the
                             records break causality across hosts: drifting
                             clocks, or calls that returned before their
                             peers entered); the offset is their middle */
    int64_t anchor_err_ns; /* what the realtime anchors had wrong */
    int offset_unknown;   /* the bounds contradict by more than
                             P3D_CONTRA_HUGE_NS: the offset is the
                             anchors' guess, uncert_ns and contra_ns
                             mean nothing */
    int n_inst;           /* cross-host bounds used */
};

struct p3d_tstage {
    int stage, n_ranks;
    double bubble_frac, late_frac, transfer_frac, fill_frac, steady_frac;
    /* bubble - late - transfer: what the pairs do not explain; > 0 sends
     * waiting for their receiver (net), < 0 receive time compute hid */
    double rest_frac;
    double busy_frac;
};

/* What stragglers are ranked by (p3d_wait_rank_list). */
enum { P3D_STRAG_LAYER, P3D_STRAG_P2P, P3D_STRAG_STEP };

struct p3d_tstrag {
    int rank;
    double caused_ms, suffered_ms, p2p_ms;
    int64_t late_count;
};

struct p3d_time_res {
    struct p3d_tl *tl; /* per job->ranks index */
    int n;
    struct p3d_thost *hosts;
    int n_hosts, clock_violations;
    int n_clock_unknown; /* hosts whose offset is not known (their
                            waits against other hosts mean little) */
    int clock_checked; /* hosts aligned from collectives: count violations */
    int n_iter, warm;    /* job iterations; leading warm-up ones */
    int64_t *step;       /* [n_iter] mean step over ranks */
    double step_ms, step_min_ms, step_max_ms, warm_ms;
    double tokens_per_s, samples_per_s;
    int gbs, seq_len, m, v, pp, m_src; /* m_src: 0 none, 1 schedule, 2 cmd */
    int m_cmd;                         /* gbs / (mbs * dp), 0 unknown */
    double theory, measured;
    struct p3d_tstage *stages;
    int n_stages, worst_stage;
    /* steady-state means over ranks, fractions of the step */
    double f_compute, f_nccl, f_exposed, f_overlapped, f_idle, f_copy;
    double f_lbl[P3D_LBL_COUNT];
    /* [job->n_comms][P3D_OP_COUNT][3]: calls, bytes and ns of the ops that
     * got their GPU times from NCCL kernel spans (ranks without GPU_OP
     * records), summed in pass one for the communicator table */
    uint64_t *span_gpu;
    int n_span_comms;
    int dominates, top_lbl;
    int no_verdict; /* no compute times: dominance cannot be judged */
    double busbw[P3D_LBL_COUNT], best_busbw;
    int best_lbl;
    struct p3d_tstrag *strag; /* sorted by caused */
    int n_strag, strag_by;    /* P3D_STRAG_*: which waits rank them */
    uint64_t n_inst, n_p2p;
    double late_sender_ms, late_receiver_ms;
    double nxn_ms[P3D_LBL_COUNT]; /* wait at NxN per label, steady */
    int late_rank[P3D_LBL_COUNT]; /* most often last to arrive, -1 */
    uint64_t n_wait_inst;
    uint64_t peak_mem;
    int have_compute;
    int windowed;             /* some rank recorded kernels in windows */
    int n_kern_it, n_steady_it; /* steady rank-iterations: covered, all */
    int *stage_of, n_stage_of; /* stage of each global rank */
    char why[512];
};

/* Run the whole time analysis; sets job->time (NULL when no ops). */
void p3d_time_job(struct p3d_job *job);
void p3d_time_free(struct p3d_job *job);

/* Modules. */
struct p3d_tload;
/* Per-thread loading buffers, reused from rank to rank. */
struct p3d_tload *p3d_tload_new(void);
void p3d_tload_free(struct p3d_tload *ld);
/* Load rank i's timeline into ld's buffers (tl->ops etc. borrow them
 * until p3d_time_unload); spans: also compute/copy unions. */
void p3d_time_load_rank(struct p3d_job *job, struct p3d_tl *tl, int i,
                        struct p3d_tload *ld, int spans);
void p3d_time_unload(struct p3d_tl *tl, struct p3d_tload *ld);
/* ld's (emptied) buffers to tl, as loading starts. */
void p3d_time_lend(struct p3d_tl *tl, struct p3d_tload *ld);
/* Pass 1's per-rank results of a loaded timeline (not its ops) to bytes,
 * and back into a timeline of another process (*has_compute: it had
 * compute spans); -1: the bytes are damaged. */
void p3d_tl_pack_results(const struct p3d_tl *tl, struct p3d_bytes *b);
int p3d_tl_unpack_results(struct p3d_tl *tl, struct p3d_bytes_in *in,
                          int *has_compute);
/* The next p3d_time_load_rank with ld adds d to every time it loads (as
 * p3d_time_shift_ops after it, without another walk over the ops). */
void p3d_tload_shift(struct p3d_tload *ld, int64_t d);
/* x[i]: the load-time fields of tl->ops[i]. */
void p3d_time_attribute(struct p3d_tl *tl, const struct p3d_topx *x);
/* Hosts of the ranks (t->hosts, tl->host, anchor shifts). */
int p3d_clock_hosts(struct p3d_job *job, struct p3d_time_res *t);
/* Align the ops held in memory (tl->ops): bounds, solve, shift. */
void p3d_clock_align(struct p3d_job *job, struct p3d_time_res *t);
/* Iterations of one loaded rank (own numbering). */
void p3d_steps_rank_find(const struct p3d_job *job, struct p3d_tl *tl);
/* Job iterations from the ranks' (aligned) iteration times. */
void p3d_steps_match(struct p3d_job *job, struct p3d_time_res *t);
void p3d_steps_find(struct p3d_job *job, struct p3d_time_res *t);
/* Breakdown and bubble waits of one loaded rank, per own iteration. */
void p3d_overlap_rank_all(const struct p3d_job *job, struct p3d_tl *tl);
void p3d_bubble_rank_all(const struct p3d_job *job, struct p3d_tl *tl,
                         int pp);
/* Period of sig[0..n) and its longest periodic stretch [*r0, *r1);
 * 0 if none spans two periods. */
size_t p3d_steps_period(const uint64_t *sig, size_t n, size_t *r0,
                        size_t *r1);
/* Add d to every time of the ops held in memory. */
void p3d_time_shift_ops(struct p3d_tl *tl, int64_t d);
/* The same for one op's times (inline: once per op of every rank), and
 * for the rank's unions alone. */
static inline void p3d_time_shift_op(struct p3d_top *t, int64_t d)
{
    t->h0 += d;
    t->h1 += d;
    t->hg += d;
    t->hs += d;
    t->s += d;
    t->e += d;
}
void p3d_time_shift_ivs(struct p3d_tl *tl, int64_t d);
/* The two passes over the rank files (p3d_pass.c). */
void p3d_pass_one(struct p3d_job *job, struct p3d_time_res *t);
void p3d_pass_two(struct p3d_job *job, struct p3d_time_res *t);
/* Over several processes (model/p3d_dist.h, p3d_pass_dist.c): process
 * 0's op count and clock shifts to all after pass 1; its job iterations
 * (what pass 2's consumers read of them) to all before pass 2.  Nothing
 * in one process.  p3d_pass_helper: this is a process other than 0, which
 * computes no job-level figure after pass 2 (it stays for the hang
 * analysis, and leaves in the pipeline's fetch pass). */
void p3d_pass_agree(struct p3d_time_res *t, size_t *n_ops);
void p3d_pass_share(struct p3d_time_res *t);
int p3d_pass_helper(void);
/* Job-level parts, after both passes (p3d_pass.c). */
void p3d_overlap_all(struct p3d_job *job, struct p3d_time_res *t);
void p3d_bubble_sched(const struct p3d_job *job, struct p3d_time_res *t);
void p3d_bubble_all(struct p3d_job *job, struct p3d_time_res *t);
int64_t p3d_wait_steady_start(const struct p3d_time_res *t);
void p3d_wait_all(struct p3d_job *job, struct p3d_time_res *t);

/* Bubble split of one receive (Scalasca Late Sender). */
struct p3d_split {
    int64_t late, transfer;
};
struct p3d_split p3d_bubble_split(int64_t send_s, int64_t recv_s,
                                  int64_t recv_e);

/* Interval of iteration k of a rank (job numbering), 0 if absent. */
int p3d_time_window(const struct p3d_tl *tl, int k, int64_t *s, int64_t *e);

/* Where a kernel window still open at the end of its trace ends (before
 * the clock shift of at most a few hours, p3d_tl_finish). */
#define P3D_KWIN_OPEN_END ((int64_t)1 << 62)
/* Whether the rank recorded every kernel launched in [from, e): its trace
 * has no kernel windows, or one of them covers it. */
static inline int p3d_time_kern_cover(const struct p3d_tl *tl, int64_t from,
                                      int64_t e)
{
    return !tl->windowed || p3d_ivs_cover(&tl->kwin, from, e) == e - from;
}
/* Stage of a global rank under the job layout (0 if unknown). */
int p3d_time_stage(const struct p3d_job *job, int rank);

#endif /* P3D_TIME_H */

#ifndef P3D_TIME_JOIN
#define P3D_TIME_JOIN
/*
 * Collective instances (communicator, seq) and Send/Recv pairs
 * (communicator, src, dst, seq) joined across ranks while the ranks
 * stream in (p3d_time_join.c).  A group is a communicator (one slot per
 * member) or a Send/Recv channel (slot 0 the send, 1 the receive); its
 * records hold each slot's op start/end.  When every rank of a group has
 * been merged, its records are folded (handed to fold) and freed, so
 * only groups still waiting for a member are held.
 */
struct p3d_jrec {
    uint64_t seq;
    uint64_t ckey;  /* creation order: lowest (timeline << 32 | op) */
    uint64_t hkey;  /* highest (timeline << 32 | op) seen */
    uint64_t bytes; /* instance: of the op with hkey; pair: the receive's */
    int n;          /* ops joined */
    uint8_t op, dup; /* op of hkey; dup: a slot had two ops */
};

struct p3d_jgrp {
    int gcomm, src, dst; /* src, dst: global ranks of a channel, else -1 */
    int m;               /* slots */
    int *tl;             /* [m] timeline of each slot, -1 none */
    size_t *cur;         /* [m] record expected next from each slot */
    struct p3d_jrec *rec;
    size_t n_rec, cap_rec;
    int64_t *s, *e;      /* [m * cap_rec], slot after slot: p3d_jx */
    uint8_t *f;          /* likewise: 1 present, 2 GPU time */
    struct p3d_map idx;  /* seq -> record, once seqs come out of order */
    int sorted, local, live, mark;
    int slot, slot_gen;  /* slot of the rank being merged, if gen */
    size_t hint;         /* records expected (first allocation) */
};

#define P3D_JCHAN_CACHE 16
struct p3d_jchan { /* a channel looked up lately */
    int gcomm, src, dst, k;
};

/*
 * Index of slot sl of record k in s, e and f.  Slot-major: a rank fills
 * one slot of record after record, so its writes are consecutive (with
 * m slots per record side by side every op took a cache miss in each
 * array).
 */
static inline size_t p3d_jx(const struct p3d_jgrp *g, size_t k, int sl)
{
    return (size_t)sl * g->cap_rec + k;
}

struct p3d_join;
typedef void (*p3d_jfold)(void *ctx, const struct p3d_join *j,
                          const struct p3d_jgrp *g, size_t k);
/*
 * A consumer of the joined instances: called once per record of a folded
 * group, `inst` for a collective instance, `pair` for a Send/Recv pair
 * (either may be NULL), with its own state.  Consumers register with
 * p3d_join_use and are called in the order they registered; none calls
 * another.
 */
struct p3d_juse {
    p3d_jfold inst, pair;
    void *ctx;
};
#define P3D_JOIN_USES 4
struct p3d_join {
    const struct p3d_job *job;
    struct p3d_time_res *t;
    struct p3d_juse use[P3D_JOIN_USES];
    int n_use;
    int skip_local;       /* groups on one host are not joined */
    struct p3d_jgrp *g;
    size_t n_g, cap_g;
    int *coll;            /* [n_coll] group of a communicator, -1 */
    int n_coll;
    int *rank_tl;         /* [world] timeline of a global rank, -1 */
    int world;
    struct p3d_map chan;  /* (gcomm, src, dst) -> group */
    struct p3d_jchan cc[P3D_JCHAN_CACHE]; /* the same, recent ones */
    uint8_t *done;        /* [t->n] merged */
    int *touched;
    size_t n_touched, cap_touched;
    int gen;
    int share;            /* it gets 1/share of each communicator's
                             instances, in blocks of share_block seqs */
    uint64_t share_block;
};
void p3d_join_init(struct p3d_join *j, const struct p3d_job *job,
                   struct p3d_time_res *t);
/* Over several processes (p3d_pass_dist.c), before any op: this join gets
 * blocks of `block` seqs of each communicator's instances, one in every
 * n, so a group allocates room for its share, not for all of them. */
void p3d_join_share(struct p3d_join *j, int n, uint64_t block);
/* Register a consumer (at most P3D_JOIN_USES). */
void p3d_join_use(struct p3d_join *j, p3d_jfold inst, p3d_jfold pair,
                  void *ctx);
/* Join timeline ti's ops (tl->ops), mark it merged, fold complete groups. */
void p3d_join_rank(struct p3d_join *j, int ti);
/*
 * What the join reads of an op, with its index in its timeline (the
 * instances' keys are made of it): the form an op travels in to its
 * communicator's owner over several processes (p3d_pass_dist.c).
 */
struct p3d_jop {
    int64_t s, e;
    uint64_t seq, bytes;
    int32_t gcomm, peer;
    uint32_t oi;
    uint8_t op, has_gpu, pad[2]; /* no byte of it unset: it travels */
};
void p3d_jop_of(struct p3d_jop *k, const struct p3d_top *o, uint32_t oi);
/* 1 if the join would take no part of op o of timeline ti: a group on
 * one host when they are skipped (pass 1), so it need not be sent (the
 * group is looked up as p3d_join_rank does, made empty if need be). */
int p3d_join_skips(struct p3d_join *j, int ti, const struct p3d_top *o);
/* The same as p3d_join_rank, over the n ops of timeline ti in k (those of
 * the communicators this process owns: possibly none, which still marks
 * ti merged). */
void p3d_join_rank_ops(struct p3d_join *j, int ti, const struct p3d_jop *k,
                       size_t n);
/* Fold what is left and free everything. */
void p3d_join_finish(struct p3d_join *j);
/* Clock bounds from the joins of pass 1 (returns its state, NULL: not
 * needed), then solved by p3d_clock_end (state NULL: anchors only). */
void *p3d_clock_begin(struct p3d_job *job, struct p3d_time_res *t,
                      struct p3d_join *j);
void p3d_clock_end(struct p3d_time_res *t, void *ctx);
int p3d_clock_violates(const struct p3d_time_res *t,
                       const struct p3d_jgrp *g, size_t k);
/* Pass 2's count of receives completing before their send (cross-host
 * pairs, once clocks are aligned). */
void p3d_clock_check_use(struct p3d_join *j);
/* Wait states and bandwidths from the joins of pass 2. */
void *p3d_wait_begin(struct p3d_time_res *t, struct p3d_join *j);
void p3d_wait_end(struct p3d_time_res *t, void *ctx);
/* Pipeline transfers of pass 2 into the bubble split. */
void p3d_bubble_use(struct p3d_join *j);
/*
 * Over several processes, each folds the instances of the communicators
 * it owns; at the end of a pass the others send process 0 what their
 * consumers gathered, which it adds to its own (p3d_pass_dist.c): the
 * clock bounds (pass 1), the wait states with their sums in t, the
 * pipeline pairs' parts of the bubble in t (pass 2).  Merges return -1
 * if the bytes are bad.
 */
void p3d_clock_pack(const void *ctx, struct p3d_bytes *b);
int p3d_clock_merge(void *ctx, struct p3d_bytes_in *in);
void p3d_wait_pack(const struct p3d_time_res *t, const void *ctx,
                   struct p3d_bytes *b);
int p3d_wait_merge(struct p3d_time_res *t, void *ctx,
                   struct p3d_bytes_in *in);
void p3d_bubble_pack(const struct p3d_time_res *t, struct p3d_bytes *b);
int p3d_bubble_merge(struct p3d_time_res *t, struct p3d_bytes_in *in);
void p3d_bubble_pair(const struct p3d_job *job, struct p3d_time_res *t,
                     const struct p3d_jgrp *g, size_t k);
/*
 * The straggler worth naming: the rank that caused clearly the most
 * waiting (at least 1.5x the next), or -1 (p3d_wait.c).
 */
int p3d_time_straggler(const struct p3d_time_res *t);

/*
 * One rank's (t->tl[i]) steady iterations whose kernels were recorded,
 * summed in ns: the figures the job's shares (f_*) are made of, for views
 * that draw them per rank.  Returns how many iterations were summed.
 */
enum { P3D_SUM_STEP, P3D_SUM_COMPUTE, P3D_SUM_NCCL, P3D_SUM_EXPOSED,
       P3D_SUM_OVERLAPPED, P3D_SUM_IDLE, P3D_SUM_COPY, P3D_SUM_BUBBLE,
       P3D_SUM_LBL, P3D_SUM_N = P3D_SUM_LBL + P3D_LBL_COUNT };
int p3d_time_rank_sums(const struct p3d_time_res *t, int i,
                       double sum[P3D_SUM_N]);

/* Pass one: add rank tl's ops placed on NCCL kernel spans to
 * t->span_gpu (thread-safe); then, once: give communicators without GPU
 * times from GPU_OP records these (p3d_time_attr.c). */
void p3d_time_span_sums(struct p3d_time_res *t, const struct p3d_tl *tl);
void p3d_time_span_fill(struct p3d_job *job, const struct p3d_time_res *t);

#endif
