/*
 * p3d_pass.c - the time analysis streams the rank files: two passes,
 * each reading every rank once, in threads, each thread holding one
 * rank's ops (in buffers it reuses), so memory does not grow with the
 * number of ranks times their ops.
 *
 * Pass 1 loads a rank, finds its iterations, breakdown and pipeline
 * waits per own iteration (p3d_steps_rank_find, p3d_overlap_rank_all,
 * p3d_bubble_rank_all) and joins its ops of groups spanning hosts for the
 * clock bounds.  Clocks are then solved and the job iterations matched.
 * Pass 2 loads each rank again (ops only), puts it on the aligned clock
 * and joins all its ops for wait states, pipeline pairs and bandwidths,
 * which need the steady start and the iteration windows of pass 1.
 * Joins are merged one rank at a time under a lock, in the merge order
 * whichever thread loaded the rank first (p3d_time_join.c), group by
 * group so that few groups wait for members at once.  The consumers sum
 * integers, so their figures do not depend on the order groups fold in
 * (over several processes, p3d_pass_dist.c, each folds its own).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_dist.h"
#include "p3d_pass_int.h"
#include "p3d_util.h"

/*
 * Loading and the per-rank analysis run in every thread; merging is one
 * rank at a time in `order`.  A loaded rank waiting for its turn keeps
 * its loading buffers (ready[k]) and the thread goes on to the next rank
 * with buffers from the pool; whichever thread finds the rank of the
 * turn ready merges it (and the ones ready after it), so no thread
 * waits while another is still loading an earlier rank.  A thread takes
 * buffers before it takes a rank, so the rank of the turn always has
 * some: the pool cannot run dry with that rank unloaded.
 */
static int p3d_pass_mono(const struct p3d_tl *tl)
{
    for (int k = 0; k < tl->n_iter; k++)
        if (tl->it_t[k + 1] < tl->it_t[k])
            return 0;
    return 1;
}

/* Load rank order[k] into ld and analyse it on its own. */
static void p3d_pass_load(struct p3d_pass *p, struct p3d_tload *ld, int k)
{
    int i = p->order[k];
    struct p3d_tl *tl = &p->t->tl[i];

    if (p->which != 1)
        p3d_tload_shift(ld, p->t->hosts[tl->host].shift);
    p3d_time_load_rank(p->job, tl, i, ld, p->which == 1);
    if (p->which == 1) {
        p3d_steps_rank_find(p->job, tl);
        p3d_overlap_rank_all(p->job, tl);
        p3d_bubble_rank_all(p->job, tl, p->pp);
        p3d_time_span_sums(p->t, tl);
        tl->it_mono = p3d_pass_mono(tl);
        if (tl->compute.n)
            __atomic_store_n(&p->t->have_compute, 1, __ATOMIC_RELAXED);
    }
}

/* Merge the ranks of the turn that are ready, in order (p->mu held;
 * released while merging). */
static void p3d_pass_merge(struct p3d_pass *p)
{
    struct p3d_tload *ld;

    if (p->merging)
        return;
    p->merging = 1;
    while (p->turn < p->t->n && (ld = p->ready[p->turn])) {
        int i = p->order[p->turn];
        p->ready[p->turn] = NULL;
        pthread_mutex_unlock(&p->mu);
        if (p->join)
            p3d_join_rank(p->join, i);
        p3d_time_unload(&p->t->tl[i], ld);
        pthread_mutex_lock(&p->mu);
        p->pool[p->n_pool++] = ld;
        p->turn++;
        pthread_cond_broadcast(&p->cv);
    }
    p->merging = 0;
}

/*
 * The next position (in order) to load, with a buffer for it (p->mu held;
 * waits for a buffer): of every rank, or of this process's (p->mine);
 * -1 once all are taken.
 */
static int p3d_pass_next(struct p3d_pass *p, struct p3d_tload **ld)
{
    while (!p->n_pool && p->next < p->n_mine)
        pthread_cond_wait(&p->cv, &p->mu);
    if (p->next >= p->n_mine)
        return -1;
    *ld = p->pool[--p->n_pool];
    return p->mine ? p->mine[p->next++] : p->next++;
}

void *p3d_pass_worker(void *arg)
{
    struct p3d_pass *p = arg;
    struct p3d_tload *ld;
    int k;

    pthread_mutex_lock(&p->mu);
    while ((k = p3d_pass_next(p, &ld)) >= 0) {
        pthread_mutex_unlock(&p->mu);
        p3d_pass_load(p, ld, k);
        pthread_mutex_lock(&p->mu);
        p->ready[k] = ld;
        if (p->mine) /* over several processes: the main thread routes
                        (p3d_pass_dist.c) */
            pthread_cond_broadcast(&p->cv);
        else
            p3d_pass_merge(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/*
 * Group key of a rank: the lowest member of the communicator it calls
 * most collectives on.  A group's records are held until its last member
 * is merged, so ranks are read group after group: Megatron's orders keep
 * the busiest group (TP) in consecutive ranks anyway, torchtitan's mesh
 * (TP slowest) would otherwise hold every TP op of the job.
 */
static int p3d_pass_key(const struct p3d_job *job, int i)
{
    const struct p3d_rank *r = &job->ranks[i];
    uint64_t best = 0;
    int key = r->rank;

    for (int c = 0; c < r->n_comms; c++) {
        const struct p3d_rcomm *rc = &r->comms[c];
        uint64_t n = 0;
        for (int op = 0; op < P3D_OP_COUNT; op++)
            n += P3D_OP_IS_P2P(op) ? 0 : rc->st[op].calls;
        if (n > best && rc->gcomm >= 0 && rc->gcomm < job->n_comms &&
            job->comms[rc->gcomm].n_members > 0) {
            best = n;
            key = job->comms[rc->gcomm].members[0];
        }
    }
    return key;
}

static __thread const int *p3d_pass_keys; /* for qsort */

static int p3d_pass_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    if (p3d_pass_keys[x] != p3d_pass_keys[y])
        return p3d_pass_keys[x] < p3d_pass_keys[y] ? -1 : 1;
    return x - y;
}

void p3d_pass_order(struct p3d_pass *p)
{
    int n = p->t->n, *key = p3d_xcalloc((size_t)n + 1, sizeof(*key));

    p->order = p3d_xcalloc((size_t)n + 1, sizeof(*p->order));
    for (int i = 0; i < n; i++) {
        p->order[i] = i;
        key[i] = p3d_pass_key(p->job, i);
    }
    p3d_pass_keys = key;
    qsort(p->order, (size_t)n, sizeof(*p->order), p3d_pass_cmp);
    free(key);
}

static void p3d_pass_alloc(struct p3d_pass *p, int threads)
{
    p->ready = p3d_xcalloc((size_t)p->t->n + 1, sizeof(*p->ready));
    p->n_pool = threads + (threads > 1 ? P3D_PASS_SPARE : 0);
    p->pool = p3d_xcalloc((size_t)p->n_pool, sizeof(*p->pool));
    for (int i = 0; i < p->n_pool; i++)
        p->pool[i] = p3d_tload_new();
}

void p3d_pass_free(struct p3d_pass *p)
{
    for (int i = 0; i < p->n_pool; i++)
        p3d_tload_free(p->pool[i]);
    free(p->pool);
    free(p->ready);
    free(p->order);
}

/* Ranks in job->threads threads (the scan's count), group by group. */
static void p3d_pass_run(struct p3d_pass *p)
{
    pthread_t tid[64];
    int n = 0, want = p->job->threads > 64 ? 64 : p->job->threads;

    want = want < 1 ? 1 : want;
    p3d_pass_order(p);
    p->n_mine = p->t->n; /* every rank, in order (p->mine NULL) */
    p3d_pass_alloc(p, want);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (; n < want - 1 && n < p->t->n - 1; n++)
        if (pthread_create(&tid[n], NULL, p3d_pass_worker, p))
            break;
    p3d_pass_worker(p);
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    p3d_pass_free(p);
}

/*
 * A pass over every rank with the cross-rank join: begin registers the
 * pass's consumers of joined instances (p3d_join_use) and returns the
 * state end reads once the last instances are folded.  No consumer: the
 * pass does not join.
 */
typedef void *(*p3d_join_begin_fn)(struct p3d_job *job,
                                   struct p3d_time_res *t, struct p3d_join *j);
typedef void (*p3d_join_end_fn)(struct p3d_time_res *t, void *ctx);

static void p3d_pass_joined(struct p3d_job *job, struct p3d_time_res *t,
                            int which, p3d_join_begin_fn begin,
                            p3d_join_end_fn end)
{
    struct p3d_pass p = {.job = job, .t = t, .which = which};
    struct p3d_join j;
    void *ctx;

    p.pp = job->layout.valid ? job->layout.size[P3D_AX_PP] : 1;
    p3d_join_init(&j, job, t);
    ctx = begin(job, t, &j);
    if (j.n_use)
        p.join = &j;
    if (p3d_dist_active)
        p3d_pass_dist(&p, p3d_dist_active);
    else
        p3d_pass_run(&p);
    p3d_join_finish(&j); /* folds the rest */
    if (p3d_dist_active)
        p3d_pass_dist_sums(&p, p3d_dist_active, ctx);
    end(t, ctx);
}

/* Pass 2's consumers, in the order they are called per pair. */
static void *p3d_pass_two_begin(struct p3d_job *job, struct p3d_time_res *t,
                                struct p3d_join *j)
{
    (void)job;
    if (t->clock_checked)
        p3d_clock_check_use(j);
    if (t->pp >= 2 && t->n_iter)
        p3d_bubble_use(j);
    return p3d_wait_begin(t, j);
}

void p3d_pass_one(struct p3d_job *job, struct p3d_time_res *t)
{
    p3d_pass_joined(job, t, 1, p3d_clock_begin, p3d_clock_end);
    for (int i = 0; i < t->n; i++) {
        struct p3d_tl *tl = &t->tl[i];
        int64_t d = t->hosts[tl->host].shift;
        for (int k = 0; d && k <= tl->n_iter && tl->it_t; k++)
            tl->it_t[k] += d;
        /* kept from pass 1 where pass 2 does not load the rank again
         * (process 0, a rank another process read), drawn by --chrome */
        for (size_t k = 0; d && k < tl->kwin.n; k++) {
            tl->kwin.v[k].s += d;
            tl->kwin.v[k].e += d;
        }
        if (tl->peak_mem > t->peak_mem)
            t->peak_mem = tl->peak_mem;
    }
}

void p3d_pass_two(struct p3d_job *job, struct p3d_time_res *t)
{
    p3d_pass_joined(job, t, 2, p3d_pass_two_begin, p3d_wait_end);
}

