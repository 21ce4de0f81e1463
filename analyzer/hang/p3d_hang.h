/*
 * p3d_hang.h - root cause of a hung job from its traces.
 *
 * Per rank: which ops were never completed (call never returned:
 * t_exit == 0; grouped ops whose ncclGroupEnd never returned; ops the GPU
 * never finished, where the rank has GPU times), communicator inits the
 * watchdog saw blocked, and how the rank ended (closed, SIGTERM, killed:
 * file not closed).  Per waiting op: which members of its communicator
 * have not arrived (collective: have not issued that seq; Send/Recv: the
 * peer has not issued the matching Recv/Send).  Following these waits
 * leads to the root rank(s): not inside NCCL at all (compute, killed,
 * exited, no trace), or blocked on a communicator whose peers all
 * arrived (mismatch, deadlock).  See README.md, "Analyse" (the hang section of the report).
 */
#ifndef P3D_HANG_H
#define P3D_HANG_H

#include <stdint.h>
#include <stdio.h>

#include "p3d_job.h"

#define P3D_HANG_WAITFOR 8   /* ranks listed per wait */
#define P3D_HANG_MEMBERS 64  /* members listed for an owed op */

/* How a rank stands at the end of its trace. */
enum p3d_hang_state {
    P3D_HS_OK,          /* nothing pending, exited cleanly */
    P3D_HS_WAITING,     /* inside NCCL with ops that never completed */
    P3D_HS_NOT_IN_NCCL, /* alive (SIGTERM seen) but not inside NCCL */
    P3D_HS_KILLED,      /* file not closed, nothing pending */
    P3D_HS_EXITED,      /* closed cleanly while others waited */
    P3D_HS_NO_TRACE,    /* no readable trace file */
    P3D_HS_STUCK,       /* waiting, but every peer arrived */
    P3D_HS_CYCLE,       /* in a circular wait, the most waited-on rank */
    P3D_HS_MISMATCH,    /* its op disagrees with its peers' (the odd one) */
    P3D_HS_DROPPED      /* its trace lost records (P3D_F_DROPPED) and shows
                           nothing pending: what it did after its last
                           record is not known (not "exited early") */
};

extern const char *const p3d_hang_state_name[];

/* One waiting rank: its oldest blocking op and whom it waits for. */
struct p3d_hang_wait {
    int rank;
    uint64_t comm;
    int label;           /* P3D_LBL_*, -1 unknown */
    int op;              /* enum p3d_op, P3D_HANG_OP_INIT for an init */
    uint64_t seq;
    int peer;            /* global rank of the P2P peer / root, else -1 */
    uint64_t t_enter;
    uint32_t stack_id;
    int n_for;           /* waiting_for[0..n_for_op) are the peers of the op
                            shown, the rest those of its other pending ops
                            (other streams or communicators) */
    int n_for_op;
    int waiting_for[P3D_HANG_WAITFOR];
    int depth;           /* distance to a root (0 = waits on it) */
    int inferred;        /* not in NCCL: blocked creating the comm */
    int proven;          /* its call returned; incomplete because a member
                            it needs never issued its part */
    int unknown;         /* the members it waits for issued their part, but
                            have no GPU completion times (p3d_hg_unknown) */
};


/* One root rank and what it owes. */
struct p3d_hang_root {
    int rank;
    int state;
    const struct p3d_rec_op *last;   /* its last op record, or NULL */
    uint64_t t_last;                 /* its last record (trace clock) */
    uint64_t since_ns;               /* job end - t_last */
    uint64_t owed_comm;              /* first op it never issued */
    int owed_label, owed_op, owed_how; /* how: 0 guess 1 twin 2 only */
    uint64_t owed_seq;
    uint64_t issued_on_comm;         /* ops it issued on owed_comm */
    int n_waiters;                   /* ranks waiting on it directly */
    int wd_silent;                   /* its trace lost records, but its
                                        watchdog says it was not waiting
                                        in NCCL (p3d_hg_watchdog_silent) */
    uint64_t wd_timeout_ns;          /* that watchdog's timeout */
    int n_owed_members;              /* members of owed_comm (known) */
    int owed_members[P3D_HANG_MEMBERS];
};

struct p3d_hang_mm {                 /* a mismatch on the chain */
    uint64_t comm, seq;
    int field, rank_a, rank_b, op;
    int64_t va, vb;
};

/* Member status at a communicator's frontier. */
enum { P3D_HF_DONE, P3D_HF_WAITING, P3D_HF_NOT_ARRIVED };

struct p3d_hang_frontier {           /* one communicator on the chain */
    uint64_t comm;
    int label;
    int64_t max_enqueued;            /* highest collective seq issued */
    int64_t min_incomplete;          /* lowest never completed, -1 */
    int n;                           /* members listed (the first ones) */
    int rank[P3D_HANG_MEMBERS];
    uint8_t st[P3D_HANG_MEMBERS];    /* P3D_HF_* */
    int n_members;                   /* all of them: a world communicator */
    int count[3];                    /* has thousands; count[P3D_HF_*], */
    int *by_state;                   /* [n_members] ranks, by state (done,
                                        waiting, not arrived) then rank */
};

#define P3D_HANG_FRONTIERS 32

struct p3d_hang_res {
    int detected;
    int n_waiting;
    struct p3d_hang_wait *wait;      /* sorted by depth, then rank */
    int n_roots;
    struct p3d_hang_root *roots;
    int n_mm;
    struct p3d_hang_mm mm[16];
    int n_fr;
    struct p3d_hang_frontier fr[P3D_HANG_FRONTIERS];
    int *state;                      /* [world_size] p3d_hang_state */
    uint64_t t_end;                  /* latest record of the job */
    void *priv;                      /* per-rank scan data (stacks) */
    int stall;                       /* every member arrived, none
                                        completed, nothing disagrees */
    struct {                         /* detected == 0 because the job was
                                        stopped while it ran
                                        (p3d_hang_stop.c); n_in_nccl 0:
                                        not so */
        int n_in_nccl;               /* ranks inside NCCL at the stop */
        uint64_t longest_wait_ns;    /* the longest of their waits */
        uint64_t step_bound_ns;      /* the longest steady step */
    } stopped;
};

/* Analyse job (after p3d_comm_join and labels); sets job->hang. */
void p3d_hang_analyze(struct p3d_job *job);
/* Whether p3d_hang_analyze will read the rank files again: some rank did
 * not end cleanly, or the matcher found a mismatch (the common healthy
 * job is decided from the scan alone). */
int p3d_hang_reads_files(const struct p3d_job *job);
void p3d_hang_free(struct p3d_job *job);
/*
 * One phrase for table rows and findings ("HUNG: root rank 6 (killed)"),
 * or "" when the analysis found no hang.
 */
void p3d_hang_brief(const struct p3d_job *job, char *buf, size_t n);
/* The root ranks as ranges ("2048-4095"; ",..." when buf is too short). */
void p3d_hang_fmt_roots(char *buf, size_t n, const struct p3d_hang_res *res);

/*
 * NCCL's network transfers in flight on `rank` at the shim's last
 * watchdog report (from NCCL's proxy events; p3d_hang_proxy.c), one line
 * each, the peer as a global rank: at most max, their number.  None
 * without that evidence (no report, proxy events off, transfers inside
 * a node).
 */
#define P3D_HANG_PROXY_LEN 240
int p3d_hang_proxy_lines(const struct p3d_job *job, int rank,
                         char (*out)[P3D_HANG_PROXY_LEN], int max);

/* The results in words (hang/p3d_hang_words.c), for every view alike. */
const char *p3d_hang_op_name(int op);   /* "AllReduce", "CommInit" */
const char *p3d_hang_lbl_name(int l);   /* "TP", "?" */
const char *p3d_hang_state_text(int s); /* a root's state in a sentence */
const char *p3d_nccl_result_name(int e); /* "ncclSystemError" */
extern const char *const p3d_hang_fr_name[]; /* a frontier member's state */
struct p3d_hang_wait;
/* Whether wait w's start lies before the job's last record, and how long
 * it had waited then (0 when not). */
int p3d_hang_wait_placed(const struct p3d_job *job,
                         const struct p3d_hang_wait *w);
double p3d_hang_waited_s(const struct p3d_job *job,
                         const struct p3d_hang_wait *w);

#endif /* P3D_HANG_H */
