/*
 * p3d_hang.c - hang analysis, part 1: one pass over each rank's trace
 * keeping pointers to its op, GroupEnd, GPU-op, hang, stack and module
 * records, then per rank which ops never completed and how the rank
 * stands at the end (see p3d_hang.h).  p3d_hang_graph.c does the rest.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_dist.h"
#include "p3d_hang_int.h"
#include "p3d_label.h"
#include "p3d_match.h"
#include "p3d_util.h"

const char *const p3d_hang_state_name[] = {
    "ok", "waiting", "not_in_nccl", "killed", "exited", "no_trace", "stuck",
    "cycle", "mismatch", "records_dropped"};

#define P3D_PUSH(arr, n, cap, v)                                              \
    do {                                                                      \
        (cap) = p3d_grow((void **)&(arr), (cap), (n), sizeof(*(arr)));        \
        (arr)[(n)++] = (v);                                                   \
    } while (0)

static void p3d_hang_last(struct p3d_hrank *h, uint64_t t)
{
    if (t > h->t_last)
        h->t_last = t;
}


static void p3d_hang_on_rec(struct p3d_hrank *h, const struct p3d_rec_hdr *r)
{
    const struct p3d_rec_op *o = (const void *)r;
    const struct p3d_rec_group *g = (const void *)r;
    const struct p3d_rec_gpu_op *u = (const void *)r;
    const struct p3d_rec_hang *k = (const void *)r;

    switch (r->tag) {
    case P3D_REC_OP:
        P3D_PUSH(h->ops, h->n_ops, h->cap_ops, o);
        p3d_hang_last(h, o->t_exit > o->t_enter ? o->t_exit : o->t_enter);
        break;
    case P3D_REC_GROUP:
        if (g->is_end && g->depth == 0)
            P3D_PUSH(h->gends, h->n_gends, h->cap_gends, g);
        p3d_hang_last(h, g->t_exit > g->t_enter ? g->t_exit : g->t_enter);
        break;
    case P3D_REC_GPU_OP:
        P3D_PUSH(h->gpu, h->n_gpu, h->cap_gpu, u);
        h->have_gpu |= u->gpu_end != 0;
        break;
    case P3D_REC_HANG:
        if (h->n_hang < 8)
            h->hang[h->n_hang++] = k;
        break;
    case P3D_REC_NOTE:
        p3d_hang_proxy_note(h, (const void *)r);
        h->wd_known |= p3d_rec_watchdog_timeout((const void *)r,
                                                &h->wd_timeout_ns);
        p3d_rec_watchdog_untracked((const void *)r, &h->wd_untracked);
        p3d_rec_term_time((const void *)r, &h->t_term);
        break;
    case P3D_REC_STACK:         /* frames must fit in the record */
        if (((const struct p3d_rec_stack *)r)->n_frames >
            (r->len - sizeof(struct p3d_rec_stack)) / 8)
            break;
        P3D_PUSH(h->stacks, h->n_stacks, h->cap_stacks, (const void *)r);
        break;
    case P3D_REC_MODULE:        /* path must end inside the record */
        if (memchr(((const struct p3d_rec_module *)r)->path, 0,
                   r->len - sizeof(struct p3d_rec_module)))
            P3D_PUSH(h->mods, h->n_mods, h->cap_mods, (const void *)r);
        break;
    case P3D_REC_COMM_END:
        if (((const struct p3d_rec_comm_end *)r)->how == P3D_END_ABORT &&
            h->n_abort < 4)
            h->abort[h->n_abort++] = (const void *)r;
        break;
    default:
        break;
    }
}

static int p3d_op_cmp(const void *a, const void *b)
{
    const struct p3d_rec_op *x = *(const struct p3d_rec_op *const *)a;
    const struct p3d_rec_op *y = *(const struct p3d_rec_op *const *)b;

    return x->op_id < y->op_id ? -1 : x->op_id > y->op_id;
}

static int p3d_key_cmp(const void *a, const void *b)
{
    const struct p3d_hkey *x = a, *y = b;

    return P3D_CMP(x->comm, y->comm) ?: P3D_CMP(x->kind, y->kind) ?:
           P3D_CMP(x->peer, y->peer) ?: P3D_CMP(x->seq, y->seq);
}

/*
 * p3d_hang_count only asks for the highest seq of a (comm, kind, peer), so
 * one key per triple is kept: 100k keys of a rank become one per
 * communicator and peer (24 bytes x ops x ranks was the analyzer's peak).
 */
static void p3d_hang_keys_compact(struct p3d_hrank *h)
{
    size_t n = 0;

    for (size_t i = 0; i < h->n_keys; i++) {
        const struct p3d_hkey *k = &h->keys[i];
        if (i + 1 < h->n_keys && k->comm == k[1].comm &&
            k->kind == k[1].kind && k->peer == k[1].peer)
            continue;              /* a later key of the triple is higher */
        h->keys[n++] = *k;
    }
    h->n_keys = n;
    h->keys = realloc(h->keys, (n + 1) * sizeof(*h->keys)) ?: h->keys;
}

static int p3d_ops_sorted(const struct p3d_hrank *h)
{
    for (size_t i = 1; i < h->n_ops; i++)
        if (h->ops[i - 1]->op_id > h->ops[i]->op_id)
            return 0;
    return 1;
}

void p3d_hang_keys(struct p3d_hrank *h)
{
    h->keys = p3d_xcalloc(h->n_ops + 1, sizeof(*h->keys));
    for (size_t i = 0; i < h->n_ops; i++) {
        const struct p3d_rec_op *o = h->ops[i];
        struct p3d_hkey *k = &h->keys[h->n_keys];
        if (o->seq == UINT64_MAX)
            continue;
        k->comm = o->comm_hash;
        k->kind = o->op == P3D_OP_SEND ? P3D_HK_SEND
                  : o->op == P3D_OP_RECV ? P3D_HK_RECV : P3D_HK_COLL;
        k->peer = k->kind == P3D_HK_COLL ? -1 : o->peer;
        k->seq = o->seq;
        h->n_keys++;
    }
    if (h->n_keys)
        qsort(h->keys, h->n_keys, sizeof(*h->keys), p3d_key_cmp);
    p3d_hang_keys_compact(h);
}

uint64_t p3d_hang_count(const struct p3d_hrank *h, uint64_t comm, int kind,
                        int peer)
{
    struct p3d_hkey want = {comm, kind, peer, UINT64_MAX};
    size_t lo = 0, hi = h->n_keys;

    while (lo < hi) {              /* first key > want */
        size_t mid = (lo + hi) / 2;
        if (p3d_key_cmp(&h->keys[mid], &want) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    want.seq = 0;
    if (p3d_key_cmp(&h->keys[lo - 1], &want) < 0)
        return 0;                  /* no key of this (comm, kind, peer) */
    return h->keys[lo - 1].seq + 1;
}

static size_t p3d_hang_find(const struct p3d_hrank *h, uint64_t op_id)
{
    size_t lo = 0, hi = h->n_ops;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (h->ops[mid]->op_id < op_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < h->n_ops && h->ops[lo]->op_id == op_id ? lo : SIZE_MAX;
}

/* GroupEnd of group `gid`: 1 returned, 0 never returned, -1 none. */
static int p3d_hang_group_state(const struct p3d_hrank *h, uint32_t gid)
{
    for (size_t i = h->n_gends; i-- > 0;)
        if (h->gends[i]->group_id == gid)
            return h->gends[i]->t_exit != 0;
    return -1;
}

/* Each op's latest GPU end from its GPU_OP records, 0 when none
 * completed: [n_ops], for p3d_hang_gpu_done and p3d_hang_longest_done. */
static uint64_t *p3d_hang_gpu_ends(const struct p3d_hrank *h)
{
    uint64_t *end = p3d_xcalloc(h->n_ops + 1, sizeof(*end));

    for (size_t i = 0; i < h->n_gpu; i++) {
        size_t k = p3d_hang_find(h, h->gpu[i]->op_id);
        if (k != SIZE_MAX && h->gpu[i]->gpu_end > end[k])
            end[k] = h->gpu[i]->gpu_end;
    }
    return end;
}

/* Mark ops the GPU finished, and (stream order) every op before them. */
static void p3d_hang_gpu_done(struct p3d_hrank *h, const uint64_t *end)
{
    uint64_t streams[64];
    int n_streams = 0;

    h->done = p3d_xcalloc(h->n_ops + 1, 1);
    for (size_t i = 0; i < h->n_ops; i++)
        h->done[i] = end[i] != 0;
    for (size_t i = h->n_ops; i-- > 0;) {
        uint64_t s = h->ops[i]->stream;
        int j = 0;
        while (j < n_streams && streams[j] != s)
            j++;
        if (j < n_streams)
            h->done[i] = 1;
        else if (h->done[i] && n_streams < 64)
            streams[n_streams++] = s;
    }
}

/*
 * A rank whose trace lost records (its file reached P3D_MAX_MB) still
 * has its watchdog's reports: the shim keeps the file's last chunk for
 * them (shim/p3d_writer.c).  A report names the op pending for longer
 * than P3D_HANG_TIMEOUT: communicator, seq, op, peer, since when
 * (shim/p3d_watchdog.c, p3d_wd_record).  When that op's own record was
 * dropped, the report stands in for it: the rank waits in it.  What the
 * report lacks (bytes, stream, group) the graph does not ask of a wait;
 * the rank's place in the communicator comes from its comm record.
 */
static void p3d_hang_told_ops(struct p3d_hrank *h)
{
    int n = 0;

    if (!p3d_lost_records(h->r))
        return;
    for (int k = 0; k < h->n_hang; k++) {
        const struct p3d_rec_hang *w = h->hang[k];
        struct p3d_rec_op *o;
        int c;
        if (w->op >= P3D_OP_COUNT || p3d_hang_find(h, w->op_id) != SIZE_MAX)
            continue;      /* an init (P3D_HANG_OP_INIT), or recorded */
        if (!h->told)
            h->told = p3d_xcalloc((size_t)h->n_hang, sizeof(*h->told));
        o = &h->told[n++];
        o->h.tag = P3D_REC_OP;
        o->h.len = sizeof(*o);
        o->op = w->op;
        o->redop = P3D_REDOP_NONE;
        o->op_id = w->op_id;
        o->comm_hash = w->comm_hash;
        o->seq = w->seq;
        o->t_enter = w->t > w->pending_ns ? w->t - w->pending_ns : 0;
        o->peer = w->peer;
        o->stack_id = w->stack_id;
        c = p3d_map_get(&h->r->idx, w->comm_hash);
        o->comm_rank = c >= 0 ? h->r->comms[c].rank : -1;
        P3D_PUSH(h->ops, h->n_ops, h->cap_ops, o);
    }
    if (n)
        qsort(h->ops, h->n_ops, sizeof(*h->ops), p3d_op_cmp);
}

/*
 * The watchdog reported op_id pending past its timeout, and no later
 * report shows it done.  A report names the oldest op in flight at its
 * time (p3d_inflight_pending keeps the oldest), so a later report of an
 * op entered after this one means this one had completed by then: a load
 * spike can carry an op past the timeout before it completes, and in a
 * trace that lost records its completion may be among them, which
 * would leave it pending here.  The reports of inits in flight
 * at SIGTERM are not the oldest op (p3d_wd_inits_at_term) and prove
 * nothing of other ops; nor does any report when the in-flight table
 * could not track every op (wd_untracked).
 */
int p3d_hang_report_pending(const struct p3d_hrank *h, uint64_t op_id)
{
    for (int k = 0; k < h->n_hang; k++) {
        const struct p3d_rec_hang *w = h->hang[k];
        uint64_t entered = w->t - w->pending_ns;

        if (w->op_id != op_id)
            continue;
        for (int j = 0; j < h->n_hang && !h->wd_untracked; j++) {
            const struct p3d_rec_hang *v = h->hang[j];
            if (v->t > w->t && v->op_id != op_id &&
                v->op < P3D_OP_COUNT && v->t - v->pending_ns > entered)
                return 0;
        }
        return 1;
    }
    return 0;
}

/*
 * The longest any op of h took to complete (its GPU end where a record
 * has one, else its call's return), from its call: how long a wait of
 * this rank lasted in the job's normal course (p3d_hang_stop.c).  Ops of
 * seq 0 are left out, a communicator's first collective and the first
 * send or receive with each peer: NCCL connects lazily, so they pay for
 * the connection setup, seconds on a real job.
 */
static uint64_t p3d_hang_longest_done(const struct p3d_hrank *h,
                                      const uint64_t *end)
{
    uint64_t best = 0;

    for (size_t i = 0; i < h->n_ops; i++) {
        const struct p3d_rec_op *o = h->ops[i];
        uint64_t e = end[i] ? end[i] : o->t_exit;
        if (o->seq != 0 && e > o->t_enter && e - o->t_enter > best)
            best = e - o->t_enter;
    }
    return best;
}

/* Did op i never complete? */
/*
 * GPU-only pending ops of a killed rank (file not closed, no SIGTERM)
 * count only when its watchdog confirmed a hang: a killed process is not
 * waiting, and its last GPU completions may simply not have been flushed.
 */
static int p3d_hang_gpu_trusted(const struct p3d_hrank *h)
{
    return h->closed || h->term || h->n_hang > 0;
}

/*
 * A call made under CUDA-graph capture (P3D_OPF_CAPTURING) enqueued
 * nothing: its kernels run at the graph's replays, which no record of
 * ours shows, so no GPU completion is to be had for it.  Once the call
 * (and its group's GroupEnd) returned it waits on nothing.
 */
static int p3d_hang_op_pending(const struct p3d_hrank *h, size_t i)
{
    const struct p3d_rec_op *o = h->ops[i];
    int g;

    if (o->t_exit == 0)
        return 1;
    if (o->flags & P3D_OPF_IN_GROUP) {
        g = p3d_hang_group_state(h, o->group_id);
        if (g == 0)
            return 1;  /* its GroupEnd never returned (captured or not) */
        if (g < 0)
            return 0;           /* GroupEnd never called: not submitted */
    }
    if (o->flags & P3D_OPF_CAPTURING)
        return 0;
    if (p3d_lost_records(h->r)) /* its GPU completions may be lost */
        return p3d_hang_report_pending(h, o->op_id);
    return h->have_gpu && !h->done[i] && p3d_hang_gpu_trusted(h);
}

static void p3d_hang_classify(struct p3d_hrank *h)
{
    int init_hang = 0;

    h->pend = p3d_xcalloc(h->n_ops + 1, 1);
    for (int k = 0; k < h->n_hang; k++) /* an init that later returned */
        if (h->hang[k]->op == P3D_HANG_OP_INIT &&
            p3d_map_get(&h->r->idx, h->hang[k]->comm_hash) >= 0)
            h->hang[k--] = h->hang[--h->n_hang];
    for (int k = 0; k < h->n_hang; k++)
        init_hang |= h->hang[k]->op == P3D_HANG_OP_INIT;
    if (!(h->closed && !h->term))
        for (size_t i = 0; i < h->n_ops; i++)
            if ((h->pend[i] = (uint8_t)p3d_hang_op_pending(h, i)))
                h->n_pend++;
    if (h->n_pend > 0 || init_hang)
        h->state = P3D_HS_WAITING;
    else if (p3d_lost_records(h->r) && (h->closed || h->term))
        h->state = P3D_HS_DROPPED; /* alive, but its end is not traced */
    else if (h->closed && !h->term)
        h->state = P3D_HS_EXITED;
    else if (h->term)
        h->state = P3D_HS_NOT_IN_NCCL;
    else
        h->state = P3D_HS_KILLED;
}

static void p3d_hang_rec(void *ctx, const struct p3d_reader *rd,
                         const struct p3d_rec_hdr *r)
{
    (void)rd;
    p3d_hang_on_rec(ctx, r);
}

static void p3d_hang_scan(struct p3d_hrank *h)
{
    uint64_t *end;

    if (p3d_reader_open_mapped(&h->rd, p3d_rank_file(h->r)) != 0)
        return;
    h->open = h->mapped = 1;
    p3d_reader_walk(&h->rd, p3d_hang_rec, h);
    h->closed = !!(h->rd.hdr.flags & P3D_F_CLOSED);
    h->term = h->r->saw_term;      /* the scan saw every NOTE already */
    h->t_close = h->closed ? h->rd.hdr.end_mono_ns : 0;
    if (h->n_ops && !p3d_ops_sorted(h))
        qsort(h->ops, h->n_ops, sizeof(*h->ops), p3d_op_cmp);
    p3d_hang_told_ops(h);
    h->n_kept = h->n_ops; /* until p3d_hang_keep_all */
    p3d_hang_keys(h);
    end = p3d_hang_gpu_ends(h);    /* the one lookup of the GPU records */
    p3d_hang_gpu_done(h, end);
    h->longest_done_ns = p3d_hang_longest_done(h, end);
    free(end);
    free(h->gpu);                  /* only p3d_hang_gpu_ends reads them */
    h->gpu = NULL;
    h->n_gpu = h->cap_gpu = 0;
    p3d_hang_classify(h);
    /* Pages come back from the file if the graph reads this rank again. */
    p3d_reader_release(&h->rd);
}

struct p3d_hpool {
    struct p3d_hjob *hj;
    void (*fn)(void *ctx, struct p3d_hrank *h);
    void *ctx;
    int next;
};

static void *p3d_hang_worker(void *arg)
{
    struct p3d_hpool *p = arg;
    int i;

    while ((i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) <
           p->hj->world)
        p->fn(p->ctx, &p->hj->hr[i]);
    return NULL;
}

void p3d_hang_each(struct p3d_hjob *hj,
                   void (*fn)(void *ctx, struct p3d_hrank *h), void *ctx)
{
    struct p3d_hpool pool = {hj, fn, ctx, 0};
    pthread_t t[3];
    int n = 0;

    for (; n < 3 && n + 1 < hj->world; n++)
        if (pthread_create(&t[n], NULL, p3d_hang_worker, &pool))
            break;
    p3d_hang_worker(&pool);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

static void p3d_hang_scan_mine(void *ctx, struct p3d_hrank *h)
{
    (void)ctx;
    if (h->r != NULL && h->mine)
        p3d_hang_scan(h);
}

const struct p3d_rec_stack *p3d_hang_stack(const struct p3d_hrank *h,
                                           uint32_t id)
{
    for (size_t i = 0; id != 0 && i < h->n_stacks; i++)
        if (h->stacks[i]->stack_id == id)
            return h->stacks[i];
    return NULL;
}

int p3d_hang_label(const struct p3d_job *job, uint64_t comm)
{
    int g = p3d_map_get(&job->comm_idx, comm);

    return g < 0 ? -1 : job->comms[g].label;
}

/*
 * Every rank's file is there and closed by the process itself, with no
 * watchdog report, no SIGTERM note and no abort, and the matcher found no
 * mismatch (whose odd rank p3d_hg_mismatches picks from the ops): then
 * p3d_hang_classify would find every rank "exited" without looking at one
 * op, so the files are not read again (the common case: a healthy job).
 */
static int p3d_hang_all_exited(const struct p3d_job *job)
{
    int world = job->world_size > 0 ? job->world_size : 1;

    if (job->match != NULL && job->match->n_mismatch > 0)
        return 0;
    for (int i = 0; i < world; i++) {
        const struct p3d_rank *r = p3d_job_rank(job, i);
        if (r == NULL || r->failed || !r->closed || r->truncated ||
            r->corrupt || r->saw_term || r->n_hang_recs || r->n_aborts)
            return 0;
    }
    return 1;
}

int p3d_hang_reads_files(const struct p3d_job *job)
{
    return !p3d_hang_all_exited(job);
}

static void p3d_hang_mark_exited(struct p3d_hjob *hj)
{
    for (int i = 0; i < hj->world; i++) {
        struct p3d_hrank *h = &hj->hr[i];
        h->closed = 1;
        h->t_close = h->r->hdr.end_mono_ns;
        h->state = P3D_HS_EXITED;
    }
}

/* Read the ranks this process reads, prove and keep them; over several
 * processes with the others' counts, and then to process 0. */
static void p3d_hang_read(struct p3d_job *job, struct p3d_hjob *hj,
                          struct p3d_dist *d)
{
    struct p3d_hg g = {job, hj, NULL, 0, 0};

    p3d_hang_each(hj, p3d_hang_scan_mine, NULL);
    if (d)
        p3d_hang_dist_counts(hj, d);
    p3d_hg_prove(&g); /* reads every op: before they are dropped */
    p3d_hang_keep_all(job, hj);
    if (d)
        p3d_hang_dist_gather(hj, job, d);
}

void p3d_hang_analyze(struct p3d_job *job)
{
    struct p3d_hang_res *res = p3d_xcalloc(1, sizeof(*res));
    struct p3d_hjob *hj = p3d_xcalloc(1, sizeof(*hj));
    struct p3d_dist *d = p3d_dist_active;
    int reads;

    hj->world = job->world_size > 0 ? job->world_size : 1;
    hj->hr = p3d_xcalloc((size_t)hj->world, sizeof(*hj->hr));
    for (int i = 0; i < hj->world; i++) {
        struct p3d_rank *r = p3d_job_rank(job, i);
        hj->hr[i].rank = i;
        hj->hr[i].r = r != NULL && !r->failed ? r : NULL;
        hj->hr[i].state = P3D_HS_NO_TRACE;
        hj->hr[i].mine = r != NULL &&
            (!d || p3d_dist_owner_of(d, job, (int)(r - job->ranks)) ==
                       d->self);
    }
    res->priv = hj;
    job->hang = res;
    reads = d ? p3d_hang_dist_reads(job, d) : p3d_hang_reads_files(job);
    if (!reads)
        p3d_hang_mark_exited(hj);
    else
        p3d_hang_read(job, hj, d);
    if (d && d->self != 0)
        return; /* process 0 follows the waits */
    p3d_hang_graph(job, hj, res);
}

void p3d_hang_res_clear(struct p3d_hang_res *res)
{
    for (int i = 0; i < P3D_HANG_FRONTIERS; i++)
        free(res->fr[i].by_state);
    free(res->wait);
    free(res->roots);
    free(res->state);
}

void p3d_hang_free(struct p3d_job *job)
{
    struct p3d_hang_res *res = job->hang;
    struct p3d_hjob *hj;

    if (res == NULL)
        return;
    hj = res->priv;
    for (int i = 0; hj && i < hj->world; i++)
        p3d_hang_rank_free(&hj->hr[i]);
    if (hj)
        free(hj->hr);
    free(hj);
    p3d_hang_res_clear(res);
    free(res);
    job->hang = NULL;
}
