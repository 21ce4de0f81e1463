/*
 * p3d_dist_scan.c - the scan pass over several processes
 * (p3d_dist_scan.h).  A process other than 0 scans its block with a sink
 * that records each rank's ops (comm rank and record, as the scan hands
 * them over), then sends process 0 one message per rank file: the scan
 * results and those ops.  Process 0 scans its own block with the real
 * sink, then takes the others' messages in rank-file order, replacing
 * their ranks' (unscanned) entries and feeding the ops to the sink: the
 * matcher's answer does not depend on the order it is fed in
 * (match/p3d_match.c), and the scan results are the file's.  Process 0
 * then sends every rank's results to all, so every process builds the
 * same job model.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_dist_scan.h"
#include "p3d_util.h"


struct p3d_recorded { /* the ops of one rank, as the scan gave them */
    int rank;
    struct p3d_bytes ops; /* (int32 comm rank, struct p3d_rec_op) ... */
};

struct p3d_recorder {
    pthread_mutex_t mu;
    struct p3d_recorded *r;
    size_t n, cap;
};

struct p3d_rec_st { /* one scan thread's ops of the rank it reads */
    struct p3d_bytes ops;
};

static void *p3d_rec_open(void *ctx)
{
    (void)ctx;
    return p3d_xcalloc(1, sizeof(struct p3d_rec_st));
}

static void p3d_rec_op(void *ctx, void *st, int rank, int comm_rank,
                       const struct p3d_rec_op *o)
{
    struct p3d_rec_st *s = st;
    int32_t cr = comm_rank;

    (void)ctx;
    (void)rank;
    p3d_bytes_put(&s->ops, &cr, sizeof(cr));
    p3d_bytes_put(&s->ops, o, sizeof(*o));
}

static void p3d_rec_rank_end(void *ctx, void *st, int rank)
{
    struct p3d_recorder *c = ctx;
    struct p3d_rec_st *s = st;

    pthread_mutex_lock(&c->mu);
    c->cap = p3d_grow((void **)&c->r, c->cap, c->n, sizeof(*c->r));
    c->r[c->n].rank = rank;
    c->r[c->n].ops = s->ops;
    c->n++;
    pthread_mutex_unlock(&c->mu);
    memset(&s->ops, 0, sizeof(s->ops));
}

static void p3d_rec_close(void *ctx, void *st)
{
    struct p3d_rec_st *s = st;

    (void)ctx;
    p3d_bytes_free(&s->ops);
    free(s);
}

/* The recorded ops of `rank`, moved out (empty if none): the list holds
 * the ranks read and not yet sent, a few. */
static struct p3d_bytes p3d_rec_take(struct p3d_recorder *c, int rank)
{
    struct p3d_bytes b = {0};

    pthread_mutex_lock(&c->mu);
    for (size_t k = 0; k < c->n; k++)
        if (c->r[k].rank == rank) {
            b = c->r[k].ops;
            c->r[k] = c->r[--c->n];
            break;
        }
    pthread_mutex_unlock(&c->mu);
    return b;
}

/*
 * Rank files read and not yet sent, in the order they were read: the
 * scan threads add, the process's main thread (the one that calls MPI)
 * takes.  A scan thread waits while P3D_DIST_AHEAD are waiting, so a
 * process holds a few ranks' ops, not its block's.
 */
#define P3D_DIST_AHEAD 4

struct p3d_dist_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int *i;
    int head, tail, scanning;
    struct p3d_job *job;
    int *mine, n_mine; /* this process's rank files */
    int threads;
};

static void p3d_dist_scanned(void *ctx, int i)
{
    struct p3d_dist_queue *q = ctx;

    pthread_mutex_lock(&q->mu);
    while (q->tail - q->head >= P3D_DIST_AHEAD)
        pthread_cond_wait(&q->cv, &q->mu);
    q->i[q->tail++] = i;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static void *p3d_dist_scanner(void *arg)
{
    struct p3d_dist_queue *q = arg;

    p3d_job_scan_some(q->job, q->threads, q->mine, q->n_mine);
    pthread_mutex_lock(&q->mu);
    q->scanning = 0;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* The next rank file read, or -1 once the scan is over. */
static int p3d_dist_next(struct p3d_dist_queue *q)
{
    int i = -1;

    pthread_mutex_lock(&q->mu);
    while (q->head == q->tail && q->scanning)
        pthread_cond_wait(&q->cv, &q->mu);
    if (q->head < q->tail)
        i = q->i[q->head++];
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return i;
}

/* A process other than 0: each rank file as soon as it is read. */
static void p3d_dist_scan_send(struct p3d_dist *d, struct p3d_job *job,
                               struct p3d_dist_queue *q,
                               struct p3d_recorder *c)
{
    int i;

    while ((i = p3d_dist_next(q)) >= 0) {
        struct p3d_bytes b = {0}, ops = p3d_rec_take(c, job->ranks[i].rank);
        p3d_rank_pack(&job->ranks[i], &b);
        p3d_bytes_put_arr(&b, ops.p, ops.n);
        p3d_bytes_free(&ops);
        d->send(d, i, &b); /* tag: the rank file */
    }
}

/* The ops of a rank read elsewhere, fed to process 0's sink. */
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

/* Process 0: the others' rank files, in whatever order they come. */
static void p3d_dist_scan_take(struct p3d_dist *d, struct p3d_job *job,
                               int n_others, const struct p3d_op_sink *sink)
{
    struct p3d_bytes b = {0}; /* one buffer for every message */

    for (int k = 0; k < n_others; k++) {
        int from = -1, tag = 0, i;
        struct p3d_bytes_in in;
        size_t n;
        const char *ops;
        d->recv(d, &from, &tag, &b);
        i = tag;
        if (i < 0 || i >= job->n_ranks ||
            p3d_dist_owner_of(d, job, i) != from)
            p3d_die("process %d sent an unexpected message (tag %#x) "
                    "during the scan", from, tag);
        in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
        if (p3d_rank_unpack(&job->ranks[i], &in) < 0)
            p3d_die("the scan of rank file %d from process %d arrived "
                    "damaged", i, from);
        ops = p3d_bytes_view_arr(&in, &n);
        p3d_dist_feed(sink, job->ranks[i].rank, ops, n);
        __atomic_add_fetch(&job->n_read, 1, __ATOMIC_RELAXED);
    }
    p3d_bytes_free(&b);
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

/*
 * The scan runs in its own thread (and the pool it starts) while this
 * one, the thread that calls MPI, sends (other processes) or takes
 * (process 0) rank files as they are read.
 */
void p3d_dist_scan(struct p3d_dist *d, struct p3d_job *job, int threads,
                   const struct p3d_op_sink *sink)
{
    struct p3d_recorder c = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct p3d_op_sink rec = {&c, p3d_rec_open, p3d_rec_op,
                              p3d_rec_rank_end, p3d_rec_close};
    struct p3d_dist_queue q;
    pthread_t scanner;
    int *mine = p3d_xcalloc((size_t)job->n_ranks + 1, sizeof(*mine)), n = 0;

    if (job->n_ranks - 1 > d->tag_max)
        p3d_die("%d rank files, but this MPI's message tags go up to %d "
                "only (a message's tag is its rank file)", job->n_ranks,
                d->tag_max);
    for (int i = 0; i < job->n_ranks; i++)
        if (p3d_dist_owner_of(d, job, i) == d->self) {
            mine[n++] = i;
            job->ranks[i].sink = d->self == 0 ? sink : sink ? &rec : NULL;
        }
    q = (struct p3d_dist_queue){.mu = PTHREAD_MUTEX_INITIALIZER,
                                .cv = PTHREAD_COND_INITIALIZER,
                                .i = p3d_xcalloc((size_t)n + 1, sizeof(int)),
                                .scanning = 1, .job = job, .mine = mine,
                                .n_mine = n, .threads = threads};
    if (d->self != 0) {
        job->on_scanned = p3d_dist_scanned;
        job->on_scanned_ctx = &q;
    }
    if (pthread_create(&scanner, NULL, p3d_dist_scanner, &q))
        p3d_die("cannot start the scan thread");
    if (d->self == 0)
        p3d_dist_scan_take(d, job, job->n_ranks - n, sink);
    else
        p3d_dist_scan_send(d, job, &q, &c);
    pthread_join(scanner, NULL);
    job->on_scanned = NULL;
    for (int i = 0; i < job->n_ranks; i++)
        job->ranks[i].sink = NULL;
    for (size_t k = 0; k < c.n; k++)
        p3d_bytes_free(&c.r[k].ops);
    free(c.r);
    free(q.i);
    free(mine);
    p3d_dist_scan_share(d, job);
}
