/*
 * p3d_hang_int.h - what the hang modules share (p3d_hang.c scans and
 * classifies ranks, p3d_hang_graph.c follows waits to the roots,
 * p3d_hang_out.c prints).  While a rank's file is read its record
 * pointers point into the mapped file; once every rank is read and the
 * returned ops that cannot have completed are proven, each rank keeps
 * copies of the few records the graph and the views can ask for
 * (p3d_hang_keep.c) and its file is closed.
 */
#ifndef P3D_HANG_INT_H
#define P3D_HANG_INT_H

#include "p3d_bucket.h"
#include "p3d_hang.h"
#include "p3d_reader.h"

#define P3D_HANG_PROXY_KEEP 16        /* a watchdog report's notes */

#define P3D_HK_COLL 0
#define P3D_HK_SEND 1
#define P3D_HK_RECV 2

struct p3d_hkey {            /* (comm, kind, peer) -> seq, for counts */
    uint64_t comm;
    int32_t kind, peer;
    uint64_t seq;
};

struct p3d_hcount {          /* ops of one communicator */
    uint64_t comm, n;
};

struct p3d_hrank {
    int rank;
    struct p3d_rank *r;
    struct p3d_reader rd;
    int open;                        /* its file was read */
    int mine;                        /* this process reads its file */
    int mapped;                      /* rd is open (until kept) */
    const struct p3d_rec_op **ops;   /* [n_kept], sorted by op_id */
    size_t n_ops, cap_ops;           /* n_ops: every op of the file */
    size_t n_kept;                   /* n_ops while read; then the kept */
    uint64_t *at;                    /* kept op k is op at[k] of all;
                                        NULL: all are kept */
    uint8_t *done;                   /* GPU said complete (until kept) */
    uint8_t *pend;                   /* [n_kept] never completed */
    uint8_t *proven;                 /* pend because a member it needs
                                        never issued its part (NULL: none) */
    struct p3d_hcount *per_comm;     /* sorted by comm (once kept) */
    size_t n_per_comm;
    int *mm_uses;                    /* [job's kept mismatches]: how often
                                        it used its value of the field on
                                        that comm and op (once kept) */
    uint8_t *block;                  /* the kept records' copies */
    struct p3d_hkey *keys;           /* sorted */
    size_t n_keys;
    const struct p3d_rec_group **gends; /* outermost GroupEnds */
    size_t n_gends, cap_gends;
    const struct p3d_rec_gpu_op **gpu;
    size_t n_gpu, cap_gpu;
    const struct p3d_rec_hang *hang[8];
    struct p3d_rec_op *told;         /* [n_hang]: ops known from a report
                                        only (p3d_hang_told_ops) */
    const struct p3d_rec_comm_end *abort[4]; /* ncclCommAbort records */
    int n_abort;
    int n_hang;
    const struct p3d_rec_stack **stacks;
    size_t n_stacks, cap_stacks;
    const struct p3d_rec_module **mods;
    size_t n_mods, cap_mods;
    const struct p3d_rec_str *proxy[P3D_HANG_PROXY_KEEP]; /* the last
                                        "proxy: " notes (the shim's
                                        watchdog report: network transfers
                                        in flight), oldest first */
    int n_proxy;
    uint64_t t_last;
    uint64_t t_close;                /* end_mono_ns if closed */
    int term, have_gpu, closed, n_pend;
    int wd_known;                    /* the watchdog noted its timeout */
    uint64_t wd_timeout_ns;          /* (0: its reports were off) */
    uint64_t wd_untracked;           /* ops it had no slot for */
    uint64_t t_term;                 /* the last SIGTERM's time, 0 none */
    uint64_t longest_done_ns;        /* longest op to complete, from its
                                        call (ops of seq 0 left out) */
    int state;
    int hard;                        /* has waits on ranks not arrived */
    int init_unknown;                /* in an init, members unknown */
    int inferred;                    /* outside NCCL, blocked making a comm */
    int cycle;                       /* root of a circular wait */
    int odd;                         /* root: its op disagrees (mismatch) */
};

struct p3d_hjob {
    struct p3d_hrank *hr;            /* [world_size], rank < 0: no file */
    int world;
};

/* A "proxy: " note of h's file, kept (p3d_hang_proxy.c); others ignored. */
void p3d_hang_proxy_note(struct p3d_hrank *h, const struct p3d_rec_str *s);

/* A wait of rank `from` on rank `to` (hard: `to` has not arrived). */
struct p3d_hedge {
    int from, to, hard;
    int unknown;  /* `to` issued its part but has no GPU completion times:
                     whether it ran it is not known (p3d_hg_unknown) */
    int grouped;  /* kept edge of a cut hard wait: its group stands for it
                     among the waits on `to` (p3d_hg_hard_in) */
    const struct p3d_rec_op *o;       /* the waiting op, NULL for init */
    uint64_t comm, seq, t;            /* what waits: op or init */
    int op, label;
};

/* A wait whose edges stopped at P3D_HANG_WAITFOR (p3d_hang_edges.c): rank
 * `rank` waits on every member of communicator gi that `kind` admits; a
 * hard one on every member of absent set xi, each wait like its first
 * kept edge (proto, at index e0). */
struct p3d_hg_cut {
    int rank, gi, kind, xi;
    struct p3d_hedge proto;
    size_t e0;
};

enum { P3D_HG_SOFT, P3D_HG_UNKNOWN, P3D_HG_HARD }; /* kinds of cut waits */

/* The cut waits as groups (p3d_hg_index): one per (communicator, kind)
 * and, hard, per absent set; group k's waits are cuts
 * [cut_at[k], cut_at[k + 1]) of the sorted g->cut. */
struct p3d_hg_groups {
    int n;
    int *cut_at;          /* [n + 1] */
    int *kind, *xi;       /* [n] */
    int *grp;             /* (member, group) pairs' groups, */
    struct p3d_bucket of; /* indexed by member */
    struct p3d_bucket by_src; /* cut indexes, by the waiting rank */
    int *grp_of_cut;      /* [n_cut] */
};

/* Members that have not issued a collective instance (p3d_hang_graph.c). */
struct p3d_hg_absent {
    uint64_t comm, seq;
    int *b, n;
    int prev; /* the entry before it with the same key, -1 none */
};

/* The wait graph being built (p3d_hang_edges.c keeps its edges). */
struct p3d_hg {
    struct p3d_job *job;
    struct p3d_hjob *hj;
    struct p3d_hedge *e;
    size_t n, cap;
    struct p3d_map seen; /* hash of (from, to, op) -> latest such edge */
    int *seen_prev;      /* [n]: the edge before it with that hash */
    size_t cap_prev;
    struct p3d_bucket out, in; /* each rank's edges (p3d_hg_index) */
    struct p3d_hg_cut *cut;
    size_t n_cut, cap_cut;
    struct p3d_map absent_idx; /* (comm, seq) -> entry of absent */
    struct p3d_hg_absent *absent;
    size_t n_absent, cap_absent;
    struct p3d_hg_groups gr; /* the cut waits (p3d_hg_index) */
    struct p3d_hg_memo *memo; /* init members worked out, NULL: none */
};

/* The members of a communicator being made, worked out once: every rank
 * blocked creating it is one of them, and has the same ones
 * (p3d_hg_init_members); xi: its absent set (the members that did not
 * join), -1 until made. */
struct p3d_hg_initm {
    uint64_t hash;
    int *mem, n, label, xi;
    uint8_t *in; /* [world]: a member */
};

/* A twin search's answer (p3d_hg_twin_next): what a rank of stage st
 * with n ops, the last (op, seq, label), would issue next. */
struct p3d_hg_twin {
    int st, op, label, prev; /* prev: the entry before with its hash */
    size_t n;
    uint64_t seq;
    const struct p3d_rec_op *next;
};

struct p3d_hg_memo {
    struct p3d_hg_initm *v;
    size_t n, cap;
    struct p3d_hg_twin *tw;
    size_t n_tw, cap_tw;
    struct p3d_map tw_idx;
};

/* Add the edge from -> to of op o (NULL: an init) unless it is there. */
void p3d_hg_edge(struct p3d_hg *g, int from, int to, int hard,
                 const struct p3d_rec_op *o);
/* Whether member b is waited on by a wait of this kind (P3D_HG_SOFT: b
 * waits too; P3D_HG_UNKNOWN: b has a file, no GPU times, and does not
 * wait); the waiting rank itself excepted by the caller. */
int p3d_hg_kind_target(const struct p3d_hg *g, int kind, int b);
/* Rank a's wait of this kind on communicator gi has more targets than
 * the P3D_HANG_WAITFOR edges it kept. */
void p3d_hg_cut(struct p3d_hg *g, int a, int gi, int kind);
/* A new absent set of (comm, seq) with room for cap members, not
 * indexed; returns its index in g->absent. */
int p3d_hg_absent_add(struct p3d_hg *g, uint64_t comm, uint64_t seq, int cap);
/* Rank a's hard wait on the members of absent set xi (of communicator gi,
 * -1 if not joined), each edge described as `like` (its op, or an init's
 * comm, seq, t, op and label): the first P3D_HANG_WAITFOR, then the cut
 * (p3d_hang_edges.c: why).  Returns the edges it asked for. */
int p3d_hg_wait_absent(struct p3d_hg *g, int a, int gi, int xi,
                       const struct p3d_hedge *like);
/* Rank a's hard wait has more members absent (absent set xi) than the
 * P3D_HANG_WAITFOR edges it kept, from index e0 on (complete: the first
 * is the wait's pattern). */
void p3d_hg_cut_hard(struct p3d_hg *g, int a, int gi, int xi, size_t e0);
/* Index the edges by rank and the cut waits by group, once all are in;
 * then the lists below hold each rank's edges out and in (indexes into
 * g->e, in the order added). */
void p3d_hg_index(struct p3d_hg *g);
const int *p3d_hg_out_edges(const struct p3d_hg *g, int a, int *n);
const int *p3d_hg_in_edges(const struct p3d_hg *g, int b, int *n);
/*
 * Every hard wait on rank b: the kept edges no group stands for, and
 * each wait of a cut hard group b is in, as an edge made for the call.
 * key orders them as the uncut graph's edges were: a kept edge's index,
 * a group's wait the index its kept edges start at.
 */
typedef void (*p3d_hg_in_fn)(void *ctx, const struct p3d_hedge *e,
                             size_t key);
void p3d_hg_hard_in(const struct p3d_hg *g, int b, p3d_hg_in_fn fn,
                    void *ctx);
/* Whether a hard wait on communicator `comm` waits for rank b (as
 * p3d_hg_hard_in would give one, without going over a group's waits). */
int p3d_hg_hard_on(const struct p3d_hg *g, int b, uint64_t comm);
/* Walking from rank a (p3d_hg_reach): the members of its cut hard waits'
 * groups not expanded yet (grp_done) are reached and queued. */
void p3d_hg_reach_cut(const struct p3d_hg *g, int a, char *grp_done,
                      char *reach, int *q, int *tail);
/* in[b] += the hard waits on b that cut groups stand for, from ranks
 * marked in `from`. */
void p3d_hg_cut_indegree(const struct p3d_hg *g, const char *from, int *in);
/* Distance of each rank to a root along the waits, -1 for none. */
void p3d_hg_depth(struct p3d_hg *g, const int *root, int n_root, int *depth);
void p3d_hg_free(struct p3d_hg *g);
int p3d_hg_has_file(const struct p3d_hg *g, int b);
/* Whether rank b's trace lost records (the header's P3D_F_DROPPED): what
 * it lacks is no evidence that b did not issue it. */
int p3d_hg_lost_records(const struct p3d_hg *g, int b);
/* Has member b (global) issued the counterpart of o? */
int p3d_hg_arrived(const struct p3d_hg *g, int b, const struct p3d_rec_op *o);
/* p3d_hang_odd.c: stuck roots replaced by the mismatches' odd ranks;
 * returns their number (0: nobody missing, nothing disagrees: a stall). */
int p3d_hg_odd_roots(struct p3d_hg *g, int *root, int n_root);
struct p3d_mismatch;
/* The rank of mismatch x whose value fewer members of the same kind of
 * group issued at that seq; -1 on a tie. */
int p3d_hg_odd(const struct p3d_hg *g, const struct p3d_mismatch *x);
/* p3d_hang_prove.c: returned ops a member they need never matched. */
void p3d_hg_prove(struct p3d_hg *g);
/* p3d_hang_init.c */
/* Members of the communicator `hash` rank a was creating, *n of them (0:
 * not known): from g->memo, or worked out into buf ([world]) and kept. */
const int *p3d_hg_init_members(const struct p3d_hg *g, int a, uint64_t hash,
                               int *buf, int *n, int *label);
int p3d_hg_init_edges(struct p3d_hg *g, int a, uint64_t hash, uint64_t t0);
void p3d_hg_infer(struct p3d_hg *g, int a);
/* p3d_hang_root.c */
int p3d_hg_stage(const struct p3d_job *job, int rank);
const struct p3d_rec_op *p3d_hg_twin_next(const struct p3d_hg *g, int r);
void p3d_hg_fill_root(const struct p3d_hg *g, int r,
                      struct p3d_hang_root *rt, uint64_t t_end);
/* p3d_hang_chain.c */
void p3d_hg_mismatches(const struct p3d_hg *g, struct p3d_hang_res *res);
void p3d_hg_frontiers(const struct p3d_hg *g, struct p3d_hang_res *res);
/* p3d_hang_stop.c: 1 (and res->stopped filled) when the traces show a job
 * stopped by SIGTERM while it ran, not a hang: every wait at the end was
 * shorter than its longest steady step, and nothing else marks a hang. */
int p3d_hang_stopped_running(const struct p3d_job *job,
                             const struct p3d_hjob *hj,
                             struct p3d_hang_res *res);

/* The watchdog reported op_id pending and no later report shows it done
 * (p3d_hang.c). */
int p3d_hang_report_pending(const struct p3d_hrank *h, uint64_t op_id);
/* Build h->keys from h->ops (p3d_hang.c; one key per (comm, kind, peer)). */
void p3d_hang_keys(struct p3d_hrank *h);
/* Number of ops `h` issued on (comm, kind, peer); peer -1 for coll. */
uint64_t p3d_hang_count(const struct p3d_hrank *h, uint64_t comm, int kind,
                        int peer);
/* Ops `h` issued on `comm`, all kinds (p3d_hang_keep.c). */
uint64_t p3d_hang_count_comm(const struct p3d_hrank *h, uint64_t comm);
/* Op k (sorted by op_id) of all h issued, NULL if it was not kept. */
const struct p3d_rec_op *p3d_hang_op_at(const struct p3d_hrank *h,
                                        uint64_t k);
/* Mismatch i of the job's matcher as rank h saw it: how often it used
 * its value (va as rank_a, vb as rank_b) in ops of that kind on that
 * communicator; 0 if h is neither. */
int p3d_hang_mm_uses(const struct p3d_hrank *h, int i);
/*
 * Each read rank keeps copies of what the graph and the views can ask
 * for, its pointers into the file are dropped and the file is closed:
 * its pending ops; the ops at the seq of a mismatch the matcher kept;
 * the ops at the positions a twin lookup can read (p3d_hg_twin_next:
 * op n - 1 and n for every count n of a rank of its pipeline stage below
 * its own); its last op; its stacks, modules, watchdog reports, aborts
 * and proxy notes; its op count per communicator.
 */
void p3d_hang_keep_all(struct p3d_job *job, struct p3d_hjob *hj);
/* Bytes a record takes in a kept rank's block (its length, to 8). */
static inline size_t p3d_hang_rec_room(const void *rec)
{
    return ((size_t)((const struct p3d_rec_hdr *)rec)->len + 7) & ~(size_t)7;
}

/* X(ref) for every record pointer h holds once kept, in the order of
 * its block (p3d_hang_keep.c copies them there; p3d_hang_dist.c sends the
 * block and points them into it again). */
#define P3D_KEEP_ARRAY(v, n, X)                                               \
    for (size_t i_ = 0; i_ < (size_t)(n); i_++)                               \
        X((const void **)&(v)[i_])
#define P3D_KEEP_EACH(h, X)                                                   \
    do {                                                                      \
        P3D_KEEP_ARRAY((h)->ops, (h)->n_kept, X);                             \
        P3D_KEEP_ARRAY((h)->stacks, (h)->n_stacks, X);                        \
        P3D_KEEP_ARRAY((h)->mods, (h)->n_mods, X);                            \
        P3D_KEEP_ARRAY((h)->hang, (h)->n_hang, X);                            \
        P3D_KEEP_ARRAY((h)->abort, (h)->n_abort, X);                          \
        P3D_KEEP_ARRAY((h)->proxy, (h)->n_proxy, X);                          \
    } while (0)

/* p3d_hang_dist.c: the steps over several processes.  Whether the files
 * are read (process 0's answer; it also sends its matcher's result). */
struct p3d_dist;
int p3d_hang_dist_reads(struct p3d_job *job, struct p3d_dist *d);
/* Every rank's file read, op count and keys to every process (what
 * proving and keeping read of the other ranks). */
void p3d_hang_dist_counts(struct p3d_hjob *hj, struct p3d_dist *d);
/* Each process's kept ranks to process 0. */
void p3d_hang_dist_gather(struct p3d_hjob *hj, const struct p3d_job *job,
                          struct p3d_dist *d);

/* fn(ctx, h) for every rank of hj, in up to 4 threads (p3d_hang.c). */
void p3d_hang_each(struct p3d_hjob *hj,
                   void (*fn)(void *ctx, struct p3d_hrank *h), void *ctx);

/* Free what rank h holds (p3d_hang_free). */
void p3d_hang_rank_free(struct p3d_hrank *h);
/* Label of a communicator hash (P3D_LBL_*), -1 if unknown. */
int p3d_hang_label(const struct p3d_job *job, uint64_t comm);
/* Free what res points to (p3d_hang_free frees res too). */
void p3d_hang_res_clear(struct p3d_hang_res *res);
/* Follow waits, find roots; fills res (p3d_hang_graph.c). */
void p3d_hang_graph(struct p3d_job *job, struct p3d_hjob *hj,
                    struct p3d_hang_res *res);
/* Stack record of `id` on rank h, or NULL. */
const struct p3d_rec_stack *p3d_hang_stack(const struct p3d_hrank *h,
                                           uint32_t id);

/* Rank r's scan data, NULL outside the world (p3d_hang_words.c). */
const struct p3d_hrank *p3d_hang_rank_of(const struct p3d_job *job, int r);

#endif /* P3D_HANG_INT_H */
