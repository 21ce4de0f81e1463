/*
 * p3d_match.h - cross-rank matching of collective instances by
 * (communicator, seq) and of Send/Recv by (communicator, src, dst,
 * per-pair seq), reporting members that disagree.  Every member of a
 * collective instance is compared with the instance's lowest global rank
 * once all members are in, so the result does not depend on the order or
 * interleaving in which the reader threads feed ops (a rank that records
 * one seq twice, which only a damaged file does, is the exception).
 */
#ifndef P3D_MATCH_H
#define P3D_MATCH_H

#include <stdint.h>

#include "p3d_job.h"

enum p3d_mm_field { P3D_MM_OP, P3D_MM_COUNT, P3D_MM_DTYPE, P3D_MM_ROOT,
                    P3D_MM_REDOP, P3D_MM_UNMATCHED, P3D_MM_ISSUED };

struct p3d_mismatch {
    uint64_t comm, seq;
    int field;         /* P3D_MM_* */
    int rank_a, rank_b; /* reference (lowest) rank, disagreeing rank */
    int64_t va, vb;
    int op;            /* the reference op */
    int p2p_src, p2p_dst; /* for Send/Recv, else -1 */
};

#define P3D_MM_KEEP 64 /* mismatches kept for the report */

struct p3d_match_res {
    uint64_t n_coll, n_p2p;       /* instances matched */
    uint64_t n_mismatch;          /* all found */
    uint64_t n_unmatched_p2p;     /* sends/recvs without a partner */
    uint64_t n_short;             /* members that issued fewer collectives */
    struct p3d_mismatch mm[P3D_MM_KEEP]; /* the first in report order */
    int n_kept;
};

struct p3d_matcher;

/* A matcher for one job; fed from several reader threads at once. */
struct p3d_matcher *p3d_matcher_new(void);
/*
 * Over several processes: m gets, of each communicator's collectives, the
 * blocks of `block` seqs one in every n (the time passes' split,
 * p3d_dist_seq_owner), and the scan has taken every member's seqs
 * (p3d_match_take) before sending them.  Before any op.
 */
void p3d_matcher_split(struct p3d_matcher *m, int n, uint64_t block);
/*
 * What the matcher makes of one member's collectives on one communicator,
 * op by op in the member's order: its seqs as runs of consecutive seqs
 * (a healthy trace has one run).  Kept by the matcher per (communicator,
 * member); over several processes by the scan where the rank is read,
 * which sees all of the member's ops, and the verdict travels with each
 * op (P3D_MATCH_UNNOTED), so no matcher decides from the part it sees.
 */
struct p3d_take {
    uint64_t n_taken; /* collectives taken (bounds the seqs believed) */
    uint64_t lo, hi;  /* the current run: seqs lo .. hi - 1 */
    uint64_t n_runs;  /* runs begun */
};
enum p3d_take_how {
    P3D_TAKE_NOT,    /* a seq far past those taken: damaged, not matched */
    P3D_TAKE_NOTED,  /* matched; the member is found at its seq later */
    P3D_TAKE_UNNOTED /* matched, but past the member's P3D_RUNS_MAX runs:
                        not remembered as a member of its instance, unless
                        it is in the member's last run */
};
/* A member keeps at most this many runs, and its last one; a member with
 * more gaps (a damaged trace) is not remembered at the seqs of the runs
 * between. */
#define P3D_RUNS_MAX 4096
/* The verdict on the member's next op o (t updated); a collective the
 * matcher does not count (Send/Recv, damaged kinds): P3D_TAKE_NOTED. */
enum p3d_take_how p3d_match_take(struct p3d_take *t,
                                 const struct p3d_rec_op *o);
/* Over several processes: member `rank`'s last run of seqs on comm
 * (t.lo .. t.hi - 1 of its p3d_take at the rank's end), when it had more
 * than P3D_RUNS_MAX runs: the scan sends it to every matcher at the
 * rank's end (one process keeps its own).  Thread-safe. */
void p3d_matcher_last_run(struct p3d_matcher *m, int rank, uint64_t comm,
                          uint64_t lo, uint64_t hi);
/* Over several processes the scan marks, in the flags of the copy it
 * sends, a collective that p3d_match_take found P3D_TAKE_UNNOTED (and
 * clears the bit on every other: the trace's P3D_OPF_* use bits 0-4, and
 * the matcher compares no flags). */
#define P3D_MATCH_UNNOTED 0x80u
/* One op record of global rank `rank`, whose rank in the op's comm is
 * comm_rank.  Thread-safe. */
void p3d_matcher_op(struct p3d_matcher *m, int rank, int comm_rank,
                    const struct p3d_rec_op *o);
/*
 * A reader thread's batch of op records of one rank: the matcher takes
 * them a shard at a time, one lock per shard and batch instead of one
 * per op (two threads scanning neighbouring ranks share communicators,
 * so per-op locks made the scan slower on two cores than on one).
 * Ops of one communicator keep their order; the order across
 * communicators does not matter (see above).
 */
struct p3d_mbatch {
    struct p3d_rec_op *o;
    int32_t *crank; /* comm rank of each op */
    uint32_t *idx;  /* the sort by shard */
    uint8_t *sh;    /* shard of each op */
    size_t n, cap;
    size_t due;     /* offered at this many ops (0: P3D_MBATCH_OPS) */
};
#define P3D_MBATCH_OPS 4096 /* a caller offers at this many */
/* Ops an offer may leave in a batch; past this it waits for locks. */
#define P3D_MBATCH_MAX (8 * P3D_MBATCH_OPS)
/* Add an op (copied) of the batch's rank; skips ops never matched. */
void p3d_mbatch_add(struct p3d_mbatch *b, int comm_rank,
                    const struct p3d_rec_op *o);
/* 1 when the batch is due to be offered (p3d_matcher_offer). */
static inline int p3d_mbatch_due(const struct p3d_mbatch *b)
{
    return b->n >= (b->due ? b->due : P3D_MBATCH_OPS);
}
/*
 * Match the batch's ops of the shards whose lock is free; the others
 * stay in the batch, in order, for the next offer (the thread reads on
 * instead of waiting while another thread holds the shard).  Once the
 * batch holds P3D_MBATCH_MAX ops it waits, as p3d_matcher_flush.
 * Thread-safe.
 */
void p3d_matcher_offer(struct p3d_matcher *m, int rank, struct p3d_mbatch *b);
/* Match the batch's ops (global rank `rank`) and empty it.  Thread-safe. */
void p3d_matcher_flush(struct p3d_matcher *m, int rank,
                       struct p3d_mbatch *b);
void p3d_mbatch_free(struct p3d_mbatch *b);
/* The matcher as the scan's op sink (p3d_job.h): each reader thread
 * batches its ops and offers them, and flushes at each rank's end. */
struct p3d_op_sink p3d_matcher_sink(struct p3d_matcher *m);
/* After the communicators are joined: unmatched sends/recvs, members
 * behind, global ranks for P2P pairs; fills job->match, frees m. */
void p3d_matcher_finish(struct p3d_matcher *m, struct p3d_job *job);
/* The same in parts, for matchers that each saw some communicators (the
 * processes of p3d-analyze-mpi): finish_part gives one matcher's results
 * (frees m), fold adds one result to another, close adds what the job
 * model alone shows (members that issued fewer collectives) and sets
 * job->match to res. */
void p3d_matcher_finish_part(struct p3d_matcher *m,
                             const struct p3d_job *job,
                             struct p3d_match_res *res);
void p3d_match_fold(struct p3d_match_res *res,
                    const struct p3d_match_res *part);
void p3d_match_close(struct p3d_match_res *res, struct p3d_job *job);

/* Compare one op against the reference; record differences in res.
 * (Exposed for unit tests.) */
void p3d_match_coll(struct p3d_match_res *res, uint64_t comm, uint64_t seq,
                    int rank_a, const struct p3d_rec_op *a, int rank_b,
                    const struct p3d_rec_op *b);

extern const char *const p3d_mm_field_name[];

/* Whether mismatch field f (P3D_MM_*) holds an enumeration with names. */
int p3d_mm_named(int field);
/* Value v of mismatch field f as text: a name for the op kind, datatype
 * and reduction op, else the number. */
const char *p3d_mm_value(int field, int64_t v, char *buf, size_t n);

#endif /* P3D_MATCH_H */
