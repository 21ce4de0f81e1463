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

#define P3D_TAG_SCAN 1 /* tag: P3D_TAG_SCAN << 28 | rank file index */

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

/* The recorded ops of `rank`, moved out (empty if none). */
static struct p3d_bytes p3d_rec_take(struct p3d_recorder *c, int rank)
{
    struct p3d_bytes b = {0};

    for (size_t k = 0; k < c->n; k++)
        if (c->r[k].rank == rank && c->r[k].ops.p) {
            b = c->r[k].ops;
            memset(&c->r[k].ops, 0, sizeof(c->r[k].ops));
            break;
        }
    return b;
}

static void p3d_dist_scan_send(struct p3d_dist *d, struct p3d_job *job,
                               int lo, int hi, struct p3d_recorder *c)
{
    for (int i = lo; i < hi; i++) {
        struct p3d_bytes b = {0}, ops = p3d_rec_take(c, job->ranks[i].rank);
        p3d_rank_pack(&job->ranks[i], &b);
        p3d_bytes_put_arr(&b, ops.p, ops.n);
        d->send(d, P3D_TAG_SCAN << 28 | i, &b);
        p3d_bytes_free(&b);
        p3d_bytes_free(&ops);
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

static void p3d_dist_scan_take(struct p3d_dist *d, struct p3d_job *job,
                               const struct p3d_op_sink *sink)
{
    for (int i = 0; i < job->n_ranks; i++) {
        int from = p3d_dist_owner(d, job->n_ranks, i);
        struct p3d_bytes b = {0};
        struct p3d_bytes_in in;
        size_t n;
        char *ops;
        if (from == 0)
            continue;
        d->recv(d, from, P3D_TAG_SCAN << 28 | i, &b);
        in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
        if (p3d_rank_unpack(&job->ranks[i], &in) < 0)
            p3d_die("the scan of rank file %d from process %d arrived "
                    "damaged", i, from);
        ops = p3d_bytes_get_arr(&in, &n);
        p3d_dist_feed(sink, job->ranks[i].rank, ops, n);
        free(ops);
        p3d_bytes_free(&b);
        __atomic_add_fetch(&job->n_read, 1, __ATOMIC_RELAXED);
    }
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

void p3d_dist_scan(struct p3d_dist *d, struct p3d_job *job, int threads,
                   const struct p3d_op_sink *sink)
{
    struct p3d_recorder c = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct p3d_op_sink rec = {&c, p3d_rec_open, p3d_rec_op,
                              p3d_rec_rank_end, p3d_rec_close};
    int lo, hi;

    p3d_dist_block(d, job->n_ranks, d->self, &lo, &hi);
    for (int i = lo; i < hi; i++)
        job->ranks[i].sink = d->self == 0 ? sink : sink ? &rec : NULL;
    p3d_job_scan_range(job, threads, lo, hi);
    for (int i = 0; i < job->n_ranks; i++)
        job->ranks[i].sink = NULL;
    if (d->self == 0)
        p3d_dist_scan_take(d, job, sink);
    else
        p3d_dist_scan_send(d, job, lo, hi, &c);
    for (size_t k = 0; k < c.n; k++)
        p3d_bytes_free(&c.r[k].ops);
    free(c.r);
    p3d_dist_scan_share(d, job);
}
