/*
 * p3d_dist.h - what the passes ask of a run over several processes
 * (p3d-analyze-mpi, analyzer/mpi/): who reads which rank file, who owns
 * which communicator, and four ways to move bytes.  The passes do the
 * same work as in one process, split by rank file and by communicator;
 * process 0 folds what the others send in process order, and the time
 * passes sum integers, so the answer cannot depend on the number of
 * processes.  NULL (no p3d_dist_active) in p3d-analyze: nothing here
 * runs.
 */
#ifndef P3D_DIST_H
#define P3D_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "p3d_bytes.h"

struct p3d_rank;

/*
 * Tags: the rounds of a shuffle have their own (p3d_dist_round_tag); a
 * process's results of a phase to process 0 (the matching's, each time
 * pass's sums) another (p3d_dist_match_tag), --local's file lists tag 0
 * and its fetch a rank file's index.  Messages of one tag cannot mix
 * between phases: process 0 takes each phase's before the broadcast that
 * ends it, or (pass 2's sums) before the fetch, whose tags differ.
 */
struct p3d_dist {
    int self, n; /* this process, processes (n > 1) */
    int tag_max; /* the largest tag the transport takes */
    /* to process 0, with a tag both ends know: takes b's bytes (b comes
     * back empty) and may return before they are sent (a few messages
     * are in flight at most, so memory stays bounded) */
    void (*send)(struct p3d_dist *d, int tag, struct p3d_bytes *b);
    /* on process 0: the message *tag from process *from, or, *from < 0,
     * the next message of any process (*from and *tag are set) */
    void (*recv)(struct p3d_dist *d, int *from, int *tag,
                 struct p3d_bytes *b);
    /* from process 0 to all (b is filled in on the others), once this
     * process's messages are sent */
    void (*bcast)(struct p3d_dist *d, struct p3d_bytes *b);
    /* every process at once: out[p] to process p (out[self] stays),
     * in[p] from process p (emptied first); done: this process has
     * nothing more to send.  Returns 1 once every process said done.
     * One round of a shuffle by communicator (the scan's,
     * analyse/p3d_dist_scan.c; the time passes', time/p3d_pass_dist.c). */
    int (*exchange)(struct p3d_dist *d, struct p3d_bytes *out,
                    struct p3d_bytes *in, int done);
    /* a process other than 0 has sent all it had: it leaves (does not
     * return) */
    void (*done)(struct p3d_dist *d);
    /* --local: each process read its own folder, and a rank file is read
     * by the process that found it (p3d_rank.owner), not by blocks */
    int local;
    /* process 0, once it holds its copies of other processes' files
     * (--local); NULL: nothing to do */
    void (*fetched)(struct p3d_dist *d);
    /* seqs per block of p3d_dist_seq_owner (P3D_MPI_SEQ_BLOCK) */
    uint64_t seq_block;
};

/* The run over several processes, NULL in one process. */
extern struct p3d_dist *p3d_dist_active;
/* p3d-analyze-mpi's transport, also at -n 1 (NULL in p3d-analyze). */
extern struct p3d_dist *p3d_dist_mpi;

struct p3d_job;
/* The process that reads rank file i of job: its folder's (--local), or
 * by blocks (p3d_dist_owner). */
int p3d_dist_owner_of(const struct p3d_dist *d, const struct p3d_job *job,
                      int i);

/* The process that matches the collectives and sends/recvs of the
 * communicator with this hash (the scan sends it their ops). */
int p3d_dist_comm_owner(const struct p3d_dist *d, uint64_t hash);
/*
 * The process that joins instance (or Send/Recv pair) seq of a
 * communicator whose p3d_dist_comm_owner is `base`, in the time passes:
 * blocks of d->seq_block seqs go round the processes from base, so that
 * a communicator that carries most of the job's ops (DDP's or FSDP's one
 * process group) is joined by all processes, not one.  A pair's send and
 * receive have the same seq, so they meet.
 */
int p3d_dist_seq_owner(const struct p3d_dist *d, int base, uint64_t seq);
/* The tag of a process's results of a phase to process 0, and of the
 * shuffles' rounds (both above every rank file's: rank files need tags
 * 0 .. n - 1 below p3d_dist_round_tag). */
int p3d_dist_match_tag(const struct p3d_dist *d);
int p3d_dist_round_tag(const struct p3d_dist *d);

/* A phase's results to process 0: a process other than 0 sends b (one
 * message, p3d_dist_match_tag); process 0 calls take for each other
 * process's, in process order.  b is emptied. */
void p3d_dist_to_zero(struct p3d_dist *d, struct p3d_bytes *b,
                      void (*take)(void *ctx, int from,
                                   const struct p3d_bytes *msg),
                      void *ctx);

/* The process that reads rank file i of n (blocks of consecutive files,
 * the way they are sorted by rank). */
int p3d_dist_owner(const struct p3d_dist *d, int n, int i);
/* Rank file i's block: [*lo, *hi) of process p. */
void p3d_dist_block(const struct p3d_dist *d, int n, int p, int *lo, int *hi);

/* A scanned rank (everything p3d_rank_scan found, not its sink) to bytes
 * and back; unpack replaces r's contents.  -1: the bytes are not a rank. */
void p3d_rank_pack(const struct p3d_rank *r, struct p3d_bytes *b);
int p3d_rank_unpack(struct p3d_rank *r, struct p3d_bytes_in *in);

#endif /* P3D_DIST_H */
