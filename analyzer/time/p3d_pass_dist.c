/*
 * p3d_pass_dist.c - a time pass over several processes (model/p3d_dist.h,
 * p3d-analyze-mpi).  Each process loads the ranks it reads, in the merge
 * order, with its reader threads, which also run the per-rank analysis
 * (p3d_pass.c).  The join is split by communicator and seq: each op goes
 * to the owner of its block of seqs (p3d_dist_seq_owner: blocks go round
 * the processes from the communicator's owner), which joins and folds
 * those instances and Send/Recv pairs.  Process 0 gets each rank's per-rank
 * results in pass 1 (not its ops), and at the end of each pass every
 * other process's sums (p3d_pass_dist_sums): the consumers add integers
 * only, so the answer does not depend on how the folding was split, nor
 * on the order the instances were folded in.  Each process receives
 * about 1/n of the ops, even when one communicator carries most of them,
 * not every op of the job;
 * pass 1 sends only the ops of groups spanning hosts (p3d_join_skips).
 *
 * The bytes move in rounds of d->exchange, one loaded rank per process
 * and round: for it, every other process gets one piece (its share of the
 * rank's ops, possibly none: the piece also says the rank is complete
 * there, so that its groups can be folded), and process 0 its results.
 * The rounds end when every process has sent all of its ranks.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_pass_int.h"
#include "p3d_util.h"

enum { P3D_TP_RESULTS = 1, /* pass 1's per-rank results, to process 0 */
       P3D_TP_OPS = 2 /* the ops (struct p3d_jop) of one timeline */ };

struct p3d_tround {
    struct p3d_pass *p;
    struct p3d_dist *d;
    struct p3d_bytes *out, *in; /* [d->n] */
    struct p3d_jop **to;        /* [d->n]: this rank's ops per owner */
    size_t *n_to, *cap_to;
    int *owner;                 /* [n_comms]: its p3d_dist_comm_owner,
                                   where its seq blocks start */
};

/* Timeline i's ops to their owners: this process's joined at once. */
static void p3d_tround_route(struct p3d_tround *r, int i)
{
    const struct p3d_tl *tl = &r->p->t->tl[i];
    struct p3d_dist *d = r->d;
    int n_comms = r->p->job->n_comms;

    for (int q = 0; q < d->n; q++)
        r->n_to[q] = 0;
    for (size_t oi = 0; oi < tl->n_ops && oi < UINT32_MAX; oi++) {
        const struct p3d_top *o = &tl->ops[oi];
        int q;
        if (o->gcomm < 0 || p3d_join_skips(r->p->join, i, o))
            continue; /* the join would take nothing of it */
        q = o->gcomm < n_comms ? p3d_dist_seq_owner(d, r->owner[o->gcomm],
                                                    o->seq) : 0;
        r->cap_to[q] = p3d_grow((void **)&r->to[q], r->cap_to[q], r->n_to[q],
                                sizeof(*r->to[q]));
        p3d_jop_of(&r->to[q][r->n_to[q]++], o, (uint32_t)oi);
    }
    for (int q = 0; q < d->n; q++)
        if (q != d->self)
            p3d_bytes_put_piece(&r->out[q], P3D_TP_OPS, i, r->to[q],
                           r->n_to[q] * sizeof(*r->to[q]));
    p3d_join_rank_ops(r->p->join, i, r->to[d->self], r->n_to[d->self]);
}

/* Process 0: timeline i's per-rank results from the process that read it. */
static void p3d_tround_results(struct p3d_tround *r, int i, int from,
                               const char *v, size_t n)
{
    struct p3d_bytes_in in = {v, n, 0, 0};
    int has_compute = 0;

    if (p3d_tl_unpack_results(&r->p->t->tl[i], &in, &has_compute) < 0 ||
        in.off != in.n)
        p3d_die("the results of rank file %d from process %d arrived "
                "damaged", i, from);
    if (has_compute)
        r->p->t->have_compute = 1;
}

/* What a round brought from process `from` (its ops pieces are
 * aligned: p3d_bytes_put_piece pads). */
static void p3d_tround_take(struct p3d_tround *r, int from)
{
    size_t off = 0;
    struct p3d_piece pc;
    int got;

    while ((got = p3d_bytes_next_piece(&r->in[from], &off, &pc)) > 0) {
        if (pc.num < 0 || pc.num >= r->p->t->n)
            break;
        if (pc.kind == P3D_TP_RESULTS && r->d->self == 0)
            p3d_tround_results(r, pc.num, from, pc.p, pc.n);
        else if (pc.kind == P3D_TP_OPS && r->p->join) {
            if (pc.n % sizeof(struct p3d_jop))
                break;
            p3d_join_rank_ops(r->p->join, pc.num, (const void *)pc.p,
                              pc.n / sizeof(struct p3d_jop));
        }
    }
    if (got != 0)
        p3d_die("a round of the time pass from process %d arrived damaged",
                from);
}

/* This process's next rank, loaded by a reader thread, into the round. */
static void p3d_tround_give(struct p3d_tround *r, int k)
{
    struct p3d_pass *p = r->p;
    int i = p->order[k];
    struct p3d_tload *ld;

    pthread_mutex_lock(&p->mu);
    while (!p->ready[k])
        pthread_cond_wait(&p->cv, &p->mu);
    ld = p->ready[k];
    p->ready[k] = NULL;
    pthread_mutex_unlock(&p->mu);
    if (p->which == 1 && r->d->self != 0) {
        struct p3d_bytes b = {0};
        p3d_tl_pack_results(&p->t->tl[i], &b);
        p3d_bytes_put_piece(&r->out[0], P3D_TP_RESULTS, i, b.p, b.n);
        p3d_bytes_free(&b);
    }
    if (p->join)
        p3d_tround_route(r, i);
    p3d_time_unload(&p->t->tl[i], ld);
    pthread_mutex_lock(&p->mu);
    p->pool[p->n_pool++] = ld;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* This process's positions in the merge order, and its loaders. */
static int p3d_dist_start(struct p3d_pass *p, struct p3d_dist *d,
                          pthread_t *tid, int max)
{
    int n = 0, want = p->job->threads - (d->self == 0);

    p->mine = p3d_xcalloc((size_t)p->t->n + 1, sizeof(*p->mine));
    for (int k = 0; k < p->t->n; k++)
        if (p3d_dist_owner_of(d, p->job, p->order[k]) == d->self)
            p->mine[p->n_mine++] = k;
    want = want < 1 ? 1 : want > max ? max : want;
    want = want > p->n_mine ? p->n_mine : want;
    /* spare buffers: the main thread sends one while the loaders fill
     * the next */
    p->ready = p3d_xcalloc((size_t)p->t->n + 1, sizeof(*p->ready));
    p->n_pool = want + P3D_PASS_SPARE;
    p->pool = p3d_xcalloc((size_t)p->n_pool, sizeof(*p->pool));
    for (int i = 0; i < p->n_pool; i++)
        p->pool[i] = p3d_tload_new();
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (; n < want; n++)
        if (pthread_create(&tid[n], NULL, p3d_pass_worker, p))
            p3d_die("cannot start a reader thread");
    return n;
}

static void p3d_tround_init(struct p3d_tround *r, struct p3d_pass *p,
                            struct p3d_dist *d)
{
    size_t n = (size_t)d->n;

    memset(r, 0, sizeof(*r));
    r->p = p;
    r->d = d;
    r->out = p3d_xcalloc(n, sizeof(*r->out));
    r->in = p3d_xcalloc(n, sizeof(*r->in));
    r->to = p3d_xcalloc(n, sizeof(*r->to));
    r->n_to = p3d_xcalloc(n, sizeof(*r->n_to));
    r->cap_to = p3d_xcalloc(n, sizeof(*r->cap_to));
    r->owner = p3d_xcalloc((size_t)p->job->n_comms + 1, sizeof(*r->owner));
    for (int g = 0; g < p->job->n_comms; g++)
        r->owner[g] = p3d_dist_comm_owner(d, p->job->comms[g].hash);
    if (p->join) /* it gets 1/n of each communicator's instances */
        p3d_join_share(p->join, d->n, d->seq_block);
}

static void p3d_tround_free(struct p3d_tround *r)
{
    for (int q = 0; q < r->d->n; q++) {
        p3d_bytes_free(&r->out[q]);
        p3d_bytes_free(&r->in[q]);
        free(r->to[q]);
    }
    P3D_FREE_ALL(r->out, r->in, r->to, r->n_to, r->cap_to, r->owner);
}

void p3d_pass_dist(struct p3d_pass *p, struct p3d_dist *d)
{
    struct p3d_tround r;
    pthread_t tid[64];
    int n_tid, next = 0, all_done = 0;

    p3d_pass_order(p);
    n_tid = p3d_dist_start(p, d, tid, 64);
    p3d_tround_init(&r, p, d);
    while (!all_done) {
        if (next < p->n_mine)
            p3d_tround_give(&r, p->mine[next++]);
        all_done = d->exchange(d, r.out, r.in, next >= p->n_mine);
        for (int q = 0; q < d->n; q++) {
            r.out[q].n = 0;
            if (q != d->self)
                p3d_tround_take(&r, q);
        }
    }
    for (int t = 0; t < n_tid; t++)
        pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    p3d_pass_free(p);
    free(p->mine);
    p3d_tround_free(&r);
}

/* Pass 1's GPU-time sums per communicator and op (p3d_time_span_sums),
 * then its clock bounds; pass 2's receives before their send, its wait
 * states and its pipeline pairs. */
static void p3d_pass_sums_pack(struct p3d_pass *p, const void *ctx,
                               struct p3d_bytes *b)
{
    const struct p3d_time_res *t = p->t;
    uint64_t v = (uint64_t)t->clock_violations;

    if (p->which == 1) {
        p3d_bytes_put_sums(b, t->span_gpu, t->span_gpu ?
                           (size_t)t->n_span_comms * P3D_OP_COUNT * 3 : 0);
        p3d_clock_pack(ctx, b);
        return;
    }
    p3d_bytes_put(b, &v, sizeof(v));
    p3d_wait_pack(t, ctx, b);
    p3d_bubble_pack(t, b);
}

static int p3d_pass_sums_merge(struct p3d_pass *p, void *ctx,
                               struct p3d_bytes_in *in)
{
    struct p3d_time_res *t = p->t;
    uint64_t v = 0;

    if (p->which == 1) {
        p3d_bytes_add_sums(in, t->span_gpu, t->span_gpu ?
                           (size_t)t->n_span_comms * P3D_OP_COUNT * 3 : 0);
        return in->bad || p3d_clock_merge(ctx, in) < 0 ? -1 : 0;
    }
    p3d_bytes_get(in, &v, sizeof(v));
    t->clock_violations += (int)v;
    if (in->bad || p3d_wait_merge(t, ctx, in) < 0 ||
        p3d_bubble_merge(t, in) < 0)
        return -1;
    return 0;
}

struct p3d_sums_take {
    struct p3d_pass *p;
    void *ctx;
};

/* Process 0: another process's sums of this pass, added to its own. */
static void p3d_pass_sums_take(void *arg, int from,
                               const struct p3d_bytes *msg)
{
    struct p3d_sums_take *k = arg;
    struct p3d_bytes_in in = {msg->p, msg->n, 0, 0};

    if (p3d_pass_sums_merge(k->p, k->ctx, &in) < 0 || in.off != in.n)
        p3d_die("the sums of time pass %d from process %d arrived "
                "damaged", k->p->which, from);
}

void p3d_pass_dist_sums(struct p3d_pass *p, struct p3d_dist *d, void *ctx)
{
    struct p3d_bytes b = {0};
    struct p3d_sums_take k = {p, ctx};

    if (d->self != 0)
        p3d_pass_sums_pack(p, ctx, &b);
    p3d_dist_to_zero(d, &b, p3d_pass_sums_take, &k);
}

/*
 * Over several processes, after pass 1: process 0's count of ops loaded
 * (the others loaded only their own) and the hosts' clock shifts, which
 * pass 2 loads with, from process 0 to all.
 */
void p3d_pass_agree(struct p3d_time_res *t, size_t *n_ops)
{
    struct p3d_dist *d = p3d_dist_active;
    struct p3d_bytes b = {0};
    struct p3d_bytes_in in;
    uint64_t n = *n_ops;

    if (!d)
        return;
    if (d->self == 0) {
        p3d_bytes_put(&b, &n, sizeof(n));
        for (int h = 0; h < t->n_hosts; h++)
            p3d_bytes_put(&b, &t->hosts[h].shift, sizeof(t->hosts[h].shift));
    }
    d->bcast(d, &b);
    in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
    p3d_bytes_get(&in, &n, sizeof(n));
    for (int h = 0; d->self != 0 && h < t->n_hosts; h++)
        p3d_bytes_get(&in, &t->hosts[h].shift, sizeof(t->hosts[h].shift));
    if (in.bad)
        p3d_die("the clock shifts from process 0 arrived damaged");
    *n_ops = (size_t)n;
    p3d_bytes_free(&b);
}

/* What pass 2's consumers read of the job's iterations (p3d_wait_begin's
 * steady start, p3d_bubble_pair's iteration of a receive). */
struct p3d_share_job {
    int32_t n_iter, warm, pp, clock_checked;
};
struct p3d_share_tl {
    int32_t n_iter, first_it, it_mono, has_br;
};

static void p3d_share_put(const struct p3d_time_res *t, struct p3d_bytes *b)
{
    struct p3d_share_job j = {t->n_iter, t->warm, t->pp, t->clock_checked};
    int pairs = t->pp >= 2 && t->n_iter; /* p3d_bubble_use in pass 2 */

    p3d_bytes_put(b, &j, sizeof(j));
    for (int i = 0; i < t->n; i++) {
        const struct p3d_tl *tl = &t->tl[i];
        struct p3d_share_tl s = {tl->n_iter, tl->first_it, tl->it_mono,
                                 pairs && tl->br != NULL};
        p3d_bytes_put(b, &s, sizeof(s));
        p3d_bytes_put_arr(b, tl->it_t, tl->it_t && tl->n_iter
                          ? ((size_t)tl->n_iter + 1) * sizeof(*tl->it_t) : 0);
    }
}

/* On the other processes: the timelines' iterations as process 0 has
 * them, and empty breakdowns for the pipeline pairs' parts. */
static void p3d_share_get(struct p3d_time_res *t, struct p3d_bytes_in *in)
{
    struct p3d_share_job j;
    size_t n;

    p3d_bytes_get(in, &j, sizeof(j));
    t->n_iter = j.n_iter;
    t->warm = j.warm;
    t->pp = j.pp;
    t->clock_checked = j.clock_checked;
    for (int i = 0; i < t->n && !in->bad; i++) {
        struct p3d_tl *tl = &t->tl[i];
        struct p3d_share_tl s;
        p3d_bytes_get(in, &s, sizeof(s));
        free(tl->it_t);
        free(tl->br);
        tl->n_iter = s.n_iter;
        tl->first_it = s.first_it;
        tl->it_mono = s.it_mono;
        tl->it_t = p3d_bytes_get_arr(in, &n);
        if (s.n_iter < 0 || n != (tl->it_t && s.n_iter ?
                                  ((size_t)s.n_iter + 1) * sizeof(*tl->it_t)
                                  : 0))
            in->bad = 1;
        tl->br = NULL; /* made by the first pair that needs it: the pairs
                          of this process's communicators only */
        tl->br_lazy = s.has_br;
    }
}

void p3d_pass_share(struct p3d_time_res *t)
{
    struct p3d_dist *d = p3d_dist_active;
    struct p3d_bytes b = {0};
    struct p3d_bytes_in in;

    if (!d)
        return;
    if (d->self == 0)
        p3d_share_put(t, &b);
    d->bcast(d, &b);
    in = (struct p3d_bytes_in){b.p, b.n, 0, 0};
    if (d->self != 0)
        p3d_share_get(t, &in);
    if (in.bad)
        p3d_die("the iterations from process 0 arrived damaged");
    p3d_bytes_free(&b);
}

int p3d_pass_helper(void)
{
    return p3d_dist_active && p3d_dist_active->self != 0;
}
