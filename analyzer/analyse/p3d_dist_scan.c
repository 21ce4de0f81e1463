/*
 * p3d_dist_scan.c - the scan pass over several processes
 * (p3d_dist_scan.h).  Each process scans its block of rank files.  The
 * matching is split by communicator and seq: a collective goes to the
 * owner of its block of seqs (p3d_dist_seq_owner, as the time passes'
 * joins), a Send/Recv to its communicator's owner (p3d_dist_comm_owner:
 * its pair's unmatched ops are counted per pair), and each matcher sees
 * every member of the instances it gets (its answer does not depend on
 * the order it is fed in, match/p3d_match.c).  The matcher's check of a
 * member's seqs (p3d_match_take: which it believes, and which it
 * remembers in its runs) needs all of the member's collectives on the
 * communicator, so it is made here, where the rank is read, and travels
 * with each op.  Process 0 gets every rank file's scan results (a few KB each).
 * So no process receives every op of the job: each receives about 1/n of
 * them, even when one communicator carries most of them.
 *
 * The bytes move in rounds of an all-to-all exchange (d->exchange), which
 * every process enters together; the thread that calls MPI runs them
 * while the scan's threads read.  A round starts once P3D_ROUND_MIN bytes
 * wait to go, a rank file has been read (on any process: so rounds keep
 * pace with the slowest), or the scan is over; scan threads hand ops over
 * in pieces of up to P3D_PIECE_MAX and wait while P3D_ROUND_MAX bytes
 * wait, so a process holds about a round's bytes and a piece per thread
 * and process, not its block's ops nor a whole rank's.
 * The rounds end when every process has scanned and sent everything.
 * Process 0 then sends every rank's results to all, so every process
 * builds the same job model.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_dist_scan.h"
#include "p3d_map.h"
#include "p3d_match.h"
#include "p3d_util.h"

#define P3D_ROUND_MIN (1u << 20)
#define P3D_ROUND_MAX (4u << 20)
/* P3D_MPI_ROUND_BYTES=N: rounds of N bytes, scan threads waiting past 4N
 * (tests: many rounds, and the waits, on a small job). */
#define P3D_ROUND_ENV "P3D_MPI_ROUND_BYTES"
/* A scan thread hands a rank's ops for one process over in pieces of at
 * most this (as they come, not at the rank's end), so what waits is
 * bounded by the rounds, not by the size of a rank. */
#define P3D_PIECE_MAX (256u << 10)

/* What a round carries: pieces of a kind, a number and bytes. */
enum { P3D_PIECE_RANK = 1, /* a rank file's scan results: its index */
       P3D_PIECE_OPS = 2, /* ops of one global rank: (int32 comm rank,
                             struct p3d_rec_op) each */
       P3D_PIECE_LAST = 3 /* one global rank's last runs of seqs, on the
                             comms where it had more than P3D_RUNS_MAX:
                             (u64 comm, lo, hi) each */ };

struct p3d_shuffle {
    struct p3d_dist *d;
    struct p3d_job *job;
    const struct p3d_op_sink *local; /* this process's matcher, or NULL */
    struct p3d_matcher *m;           /* the same matcher */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct p3d_bytes *out; /* [d->n]: to go in the next round */
    size_t out_bytes;
    int *scanned, head, tail; /* rank files scanned, results not packed */
    int scanning;
    size_t round_min, round_max, piece_max;
};

/* A scan thread's state: its matcher batch, and the current rank's ops
 * for each other process. */
struct p3d_route_st {
    void *local_st;
    struct p3d_bytes *to; /* [d->n] */
    struct p3d_map taken; /* comm hash -> index in take: this rank's */
    struct p3d_route_take {
        uint64_t comm;
        struct p3d_take t; /* its collectives on comm, as taken */
    } *take;
    size_t n_comms, cap_comms;
};

/* What the matcher makes of collective o of the rank being read (what it
 * would have found itself, seeing all of the member's ops). */
static enum p3d_take_how p3d_route_take(struct p3d_route_st *st,
                                        const struct p3d_rec_op *o)
{
    int added;
    size_t k = p3d_map_index(&st->taken, o->comm_hash, (void **)&st->take,
                             &st->n_comms, &st->cap_comms, sizeof(*st->take),
                             &added);

    if (added) {
        memset(&st->take[k], 0, sizeof(st->take[k]));
        st->take[k].comm = o->comm_hash;
    }
    return p3d_match_take(&st->take[k].t, o);
}

static void *p3d_route_open(void *ctx)
{
    struct p3d_shuffle *s = ctx;
    struct p3d_route_st *st = p3d_xcalloc(1, sizeof(*st));

    st->local_st = s->local ? s->local->open(s->local->ctx) : NULL;
    st->to = p3d_xcalloc((size_t)s->d->n, sizeof(*st->to));
    return st;
}

/* st's ops of `rank` for process p into the next round (s->mu held;
 * waits while a round's worth is waiting). */
static void p3d_route_hand(struct p3d_shuffle *s, struct p3d_route_st *st,
                           int rank, int p)
{
    while (s->out_bytes >= s->round_max)
        pthread_cond_wait(&s->cv, &s->mu);
    p3d_bytes_put_piece(&s->out[p], P3D_PIECE_OPS, rank, st->to[p].p, st->to[p].n);
    s->out_bytes += st->to[p].n;
    st->to[p].n = 0;
    pthread_cond_broadcast(&s->cv);
}

static void p3d_route_op(void *ctx, void *stp, int rank, int comm_rank,
                         const struct p3d_rec_op *o)
{
    struct p3d_shuffle *s = ctx;
    struct p3d_route_st *st = stp;
    int to = p3d_dist_comm_owner(s->d, o->comm_hash);
    int32_t cr = comm_rank;
    struct p3d_rec_op c;

    if (o->op < P3D_OP_COUNT && !P3D_OP_IS_P2P(o->op)) {
        enum p3d_take_how how = p3d_route_take(st, o);
        if (how == P3D_TAKE_NOT)
            return;
        c = *o;
        c.flags = (uint8_t)(how == P3D_TAKE_UNNOTED
                                ? c.flags | P3D_MATCH_UNNOTED
                                : c.flags & ~P3D_MATCH_UNNOTED);
        o = &c;
        to = p3d_dist_seq_owner(s->d, to, o->seq);
    }

    if (to == s->d->self) {
        s->local->op(s->local->ctx, st->local_st, rank, comm_rank, o);
        return;
    }
    p3d_bytes_put(&st->to[to], &cr, sizeof(cr));
    p3d_bytes_put(&st->to[to], o, sizeof(*o));
    if (st->to[to].n < s->piece_max)
        return;
    pthread_mutex_lock(&s->mu); /* pieces of one rank stay in order */
    p3d_route_hand(s, st, rank, to);
    pthread_mutex_unlock(&s->mu);
}

/* The rank's last runs where it had more than P3D_RUNS_MAX (a damaged
 * trace: rare) into b, and to this process's matcher: every matcher gets
 * them (which of its blocks they cover is its to see). */
static void p3d_route_last_runs(struct p3d_shuffle *s,
                                struct p3d_route_st *st, int rank,
                                struct p3d_bytes *b)
{
    for (size_t k = 0; k < st->n_comms; k++) {
        const struct p3d_take *t = &st->take[k].t;
        uint64_t v[3] = {st->take[k].comm, t->lo, t->hi};
        if (t->n_runs <= P3D_RUNS_MAX)
            continue;
        p3d_matcher_last_run(s->m, rank, v[0], v[1], v[2]);
        p3d_bytes_put(b, v, sizeof(v));
    }
}

/* The rest of the rank's ops for the others into the next round. */
static void p3d_route_rank_end(void *ctx, void *stp, int rank)
{
    struct p3d_shuffle *s = ctx;
    struct p3d_route_st *st = stp;
    struct p3d_bytes last = {0};

    s->local->rank_end(s->local->ctx, st->local_st, rank);
    p3d_route_last_runs(s, st, rank, &last);
    pthread_mutex_lock(&s->mu);
    for (int p = 0; p < s->d->n; p++) {
        if (st->to[p].n)
            p3d_route_hand(s, st, rank, p);
        if (last.n && p != s->d->self) {
            p3d_bytes_put_piece(&s->out[p], P3D_PIECE_LAST, rank, last.p,
                                last.n);
            s->out_bytes += last.n;
        }
    }
    pthread_mutex_unlock(&s->mu);
    p3d_bytes_free(&last);
    p3d_map_free(&st->taken); /* the next rank counts its own */
    st->n_comms = 0;
}

static void p3d_route_close(void *ctx, void *stp)
{
    struct p3d_shuffle *s = ctx;
    struct p3d_route_st *st = stp;

    s->local->close(s->local->ctx, st->local_st);
    for (int p = 0; p < s->d->n; p++)
        p3d_bytes_free(&st->to[p]);
    free(st->to);
    p3d_map_free(&st->taken);
    free(st->take);
    free(st);
}

/* A scan thread has read rank file i (its ops are in the round already:
 * the sink's rank end comes first).  Every process has a round go then,
 * so rounds keep pace with the slowest process's scan, not wait for a
 * round's bytes of ops (of which a process may have none: --no-match). */
static void p3d_dist_scanned(void *ctx, int i)
{
    struct p3d_shuffle *s = ctx;

    pthread_mutex_lock(&s->mu);
    s->scanned[s->tail++] = i;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

struct p3d_scanner {
    struct p3d_shuffle *s;
    int threads, *mine, n_mine;
};

static void *p3d_dist_scanner(void *arg)
{
    struct p3d_scanner *sc = arg;
    struct p3d_shuffle *s = sc->s;

    p3d_job_scan_some(s->job, sc->threads, sc->mine, sc->n_mine);
    pthread_mutex_lock(&s->mu);
    s->scanning = 0;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/*
 * The next round's bytes (s->mu held): waits until a round is due, packs
 * the scanned ranks' results for process 0, and hands out[] over to
 * send (emptied for the scan threads).  Returns 1 if this process has
 * nothing more after this round.
 */
static int p3d_round_take(struct p3d_shuffle *s, struct p3d_bytes *send)
{
    while (s->out_bytes < s->round_min && s->head == s->tail &&
           s->scanning)
        pthread_cond_wait(&s->cv, &s->mu);
    while (s->head < s->tail) {
        int i = s->scanned[s->head++];
        struct p3d_bytes b = {0};
        if (s->d->self == 0)
            continue; /* process 0's own results are where they go */
        p3d_rank_pack(&s->job->ranks[i], &b);
        p3d_bytes_put_piece(&s->out[0], P3D_PIECE_RANK, i, b.p, b.n);
        s->out_bytes += b.n;
        p3d_bytes_free(&b);
    }
    for (int p = 0; p < s->d->n; p++) {
        struct p3d_bytes t = send[p];
        send[p] = s->out[p];
        s->out[p] = t;
        s->out[p].n = 0;
    }
    s->out_bytes = 0;
    pthread_cond_broadcast(&s->cv);
    return !s->scanning && s->head == s->tail;
}

/* The ops of a rank read elsewhere, fed to this process's matcher. */
static void p3d_dist_feed(const struct p3d_op_sink *k, int rank,
                          const char *p, size_t n)
{
    const size_t one = sizeof(int32_t) + sizeof(struct p3d_rec_op);
    void *st;

    if (!k || n < one)
        return;
    st = k->open(k->ctx);
    for (size_t off = 0; off + one <= n; off += one) {
        int32_t cr;
        struct p3d_rec_op o;
        memcpy(&cr, p + off, sizeof(cr));
        memcpy(&o, p + off + sizeof(cr), sizeof(o));
        k->op(k->ctx, st, rank, cr, &o);
    }
    k->rank_end(k->ctx, st, rank);
    k->close(k->ctx, st);
}

/* A rank's last runs, read elsewhere (P3D_PIECE_LAST). */
static void p3d_dist_last_runs(struct p3d_matcher *m, int rank,
                               const char *p, size_t n)
{
    for (size_t off = 0; m && off + 3 * sizeof(uint64_t) <= n;
         off += 3 * sizeof(uint64_t)) {
        uint64_t v[3];
        memcpy(v, p + off, sizeof(v));
        p3d_matcher_last_run(m, rank, v[0], v[1], v[2]);
    }
}

/* A rank file's results from process `from` (on process 0). */
static void p3d_dist_take_rank(struct p3d_shuffle *s, int from, int i,
                               const char *p, size_t n)
{
    struct p3d_job *job = s->job;
    struct p3d_bytes_in in = {p, n, 0, 0};

    if (s->d->self != 0 || i < 0 || i >= job->n_ranks ||
        p3d_dist_owner_of(s->d, job, i) != from)
        p3d_die("process %d sent an unexpected rank file (%d) during the "
                "scan", from, i);
    if (p3d_rank_unpack(&job->ranks[i], &in) < 0)
        p3d_die("the scan of rank file %d from process %d arrived damaged",
                i, from);
    __atomic_add_fetch(&job->n_read, 1, __ATOMIC_RELAXED);
}

/* What a round brought from process `from`. */
static void p3d_round_take_in(struct p3d_shuffle *s, int from,
                              const struct p3d_bytes *b)
{
    size_t off = 0;
    struct p3d_piece pc;
    int got;

    while ((got = p3d_bytes_next_piece(b, &off, &pc)) > 0) {
        if (pc.kind == P3D_PIECE_RANK)
            p3d_dist_take_rank(s, from, pc.num, pc.p, pc.n);
        else if (pc.kind == P3D_PIECE_OPS)
            p3d_dist_feed(s->local, pc.num, pc.p, pc.n);
        else if (pc.kind == P3D_PIECE_LAST)
            p3d_dist_last_runs(s->m, pc.num, pc.p, pc.n);
        else
            break;
    }
    if (got != 0)
        p3d_die("a damaged round of the scan from process %d", from);
}

/*
 * What one round brought is taken in by a feeder thread while the next
 * round is exchanged: matching ~(n-1)/n of a process's ops on the thread
 * that calls MPI, between rounds, held every process's next round (and
 * its scan threads, waiting for it) for as long.  One round is fed at a
 * time, in order.
 */
struct p3d_feeder {
    struct p3d_shuffle *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct p3d_bytes *in; /* [n]: the round being taken in, NULL: none */
    int stop;
};

static void *p3d_feeder_main(void *arg)
{
    struct p3d_feeder *f = arg;
    struct p3d_shuffle *s = f->s;

    pthread_mutex_lock(&f->mu);
    for (;;) {
        struct p3d_bytes *in;
        while (!f->in && !f->stop)
            pthread_cond_wait(&f->cv, &f->mu);
        if (!f->in)
            break;
        in = f->in;
        pthread_mutex_unlock(&f->mu);
        for (int p = 0; p < s->d->n; p++)
            if (p != s->d->self)
                p3d_round_take_in(s, p, &in[p]);
        pthread_mutex_lock(&f->mu);
        f->in = NULL;
        pthread_cond_broadcast(&f->cv);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* Wait until the feeder has taken in its round; then hand it `in`
 * (NULL: only wait). */
static void p3d_feeder_give(struct p3d_feeder *f, struct p3d_bytes *in)
{
    pthread_mutex_lock(&f->mu);
    while (f->in)
        pthread_cond_wait(&f->cv, &f->mu);
    f->in = in;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

static void p3d_round_bufs_trim(struct p3d_shuffle *s, struct p3d_bytes *b)
{
    for (int p = 0; p < s->d->n; p++)
        if (b[p].cap > 2 * s->round_max) /* a peak round's room */
            p3d_bytes_free(&b[p]);
}

/* The rounds, on the thread that calls MPI, until every process is done:
 * two sets of receive buffers, one exchanged into while the feeder takes
 * in the other. */
static void p3d_dist_rounds(struct p3d_shuffle *s)
{
    int n = s->d->n, all_done = 0, rounds = 0, k = 0;
    struct p3d_bytes *send = p3d_xcalloc((size_t)n, sizeof(*send));
    struct p3d_bytes *recv[2];
    struct p3d_feeder f = {.s = s, .mu = PTHREAD_MUTEX_INITIALIZER,
                           .cv = PTHREAD_COND_INITIALIZER};
    pthread_t feeder;

    recv[0] = p3d_xcalloc((size_t)n, sizeof(**recv));
    recv[1] = p3d_xcalloc((size_t)n, sizeof(**recv));
    if (pthread_create(&feeder, NULL, p3d_feeder_main, &f))
        p3d_die("cannot start the scan's feeder thread");
    while (!all_done) {
        int done;
        rounds++;
        pthread_mutex_lock(&s->mu);
        done = p3d_round_take(s, send);
        pthread_mutex_unlock(&s->mu);
        all_done = s->d->exchange(s->d, send, recv[k], done);
        p3d_round_bufs_trim(s, send);
        p3d_feeder_give(&f, recv[k]); /* the other set is free after */
        k = 1 - k;
        p3d_round_bufs_trim(s, recv[k]);
    }
    p3d_feeder_give(&f, NULL); /* the last round taken in */
    pthread_mutex_lock(&f.mu);
    f.stop = 1;
    pthread_cond_broadcast(&f.cv);
    pthread_mutex_unlock(&f.mu);
    pthread_join(feeder, NULL);
    pthread_mutex_destroy(&f.mu);
    pthread_cond_destroy(&f.cv);
    for (int p = 0; p < n; p++) {
        p3d_bytes_free(&send[p]);
        p3d_bytes_free(&recv[0][p]);
        p3d_bytes_free(&recv[1][p]);
    }
    P3D_FREE_ALL(send, recv[0], recv[1]);
    if (getenv(P3D_ROUND_ENV) && s->d->self == 0) /* for the tests */
        fprintf(stderr, "p3d-analyze-mpi: the scan took %d rounds\n",
                rounds);
}

/* Every rank's results from process 0 to the others. */
static void p3d_dist_scan_share(struct p3d_dist *d, struct p3d_job *job)
{
    struct p3d_bytes b = {0};
    struct p3d_bytes_in in;

    if (d->self == 0)
        for (int i = 0; i < job->n_ranks; i++)
            p3d_rank_pack(&job->ranks[i], &b);
    d->bcast(d, &b);
    if (d->self != 0) {
        in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
        for (int i = 0; i < job->n_ranks; i++)
            if (p3d_rank_unpack(&job->ranks[i], &in) < 0)
                p3d_die("the job model from process 0 arrived damaged "
                        "(rank file %d)", i);
    }
    p3d_bytes_free(&b);
}

static void p3d_round_sizes(struct p3d_shuffle *s)
{
    const char *e = getenv(P3D_ROUND_ENV);
    unsigned long n = e && *e ? strtoul(e, NULL, 10) : 0;

    s->round_min = n ? n : P3D_ROUND_MIN;
    s->round_max = n ? 4 * n : P3D_ROUND_MAX;
    s->piece_max = s->round_min < P3D_PIECE_MAX ? s->round_min
                                                : P3D_PIECE_MAX;
}

void p3d_dist_scan(struct p3d_dist *d, struct p3d_job *job, int threads,
                   const struct p3d_op_sink *sink, struct p3d_matcher *m)
{
    struct p3d_shuffle s = {.d = d, .job = job, .local = sink, .m = m,
                            .mu = PTHREAD_MUTEX_INITIALIZER,
                            .cv = PTHREAD_COND_INITIALIZER, .scanning = 1};
    struct p3d_op_sink route = {&s, p3d_route_open, p3d_route_op,
                                p3d_route_rank_end, p3d_route_close};
    struct p3d_scanner sc = {&s, threads, NULL, 0};
    pthread_t scanner;

    p3d_round_sizes(&s);
    if (job->n_ranks >= p3d_dist_round_tag(d)) /* tags 0 .. n - 1 */
        p3d_die("%d rank files, but this MPI's message tags go up to %d "
                "only (a message's tag is its rank file)", job->n_ranks,
                d->tag_max);
    sc.mine = p3d_xcalloc((size_t)job->n_ranks + 1, sizeof(*sc.mine));
    s.scanned = p3d_xcalloc((size_t)job->n_ranks + 1, sizeof(*s.scanned));
    s.out = p3d_xcalloc((size_t)d->n, sizeof(*s.out));
    for (int i = 0; i < job->n_ranks; i++)
        if (p3d_dist_owner_of(d, job, i) == d->self) {
            sc.mine[sc.n_mine++] = i;
            job->ranks[i].sink = sink ? &route : NULL;
        }
    job->on_scanned = p3d_dist_scanned;
    job->on_scanned_ctx = &s;
    if (pthread_create(&scanner, NULL, p3d_dist_scanner, &sc))
        p3d_die("cannot start the scan thread");
    p3d_dist_rounds(&s);
    pthread_join(scanner, NULL);
    job->on_scanned = NULL;
    for (int i = 0; i < job->n_ranks; i++)
        job->ranks[i].sink = NULL;
    for (int p = 0; p < d->n; p++)
        p3d_bytes_free(&s.out[p]);
    P3D_FREE_ALL(s.out, s.scanned, sc.mine);
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv);
    p3d_dist_scan_share(d, job);
}
