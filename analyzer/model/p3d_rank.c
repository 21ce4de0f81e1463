/*
 * p3d_rank.c - one streaming pass over one rank's trace file.
 *
 * Records are read in place from the mapping; the only allocations are
 * per communicator (tens per rank) and one op_id index for joining GPU
 * times to ops.  Ranks are scanned in parallel threads because each file
 * is independent; messages are kept in the rank and printed later in rank
 * order so output does not depend on thread timing.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_job.h"
#include "p3d_layout.h"
#include "p3d_reader.h"
#include "p3d_util.h"

#define P3D_MAX_OP_INDEX (1u << 26) /* op_ids beyond this get no GPU time */
/* nor do op_ids this far past the ops read so far (a damaged op_id would
 * size the index) */
#define P3D_OP_SLACK (1u << 16)

/* A GPU_OP record as the scan keeps it: op_id and duration. */
struct p3d_gdur {
    uint64_t op_id, ns;
};

/*
 * A reader thread's buffers, reused from rank to rank (a fresh rank
 * would fault in and zero megabytes of new memory).  op_ref entries
 * [0, op_hi) may be set; the rest are zero.
 */
struct p3d_scanbuf {
    uint32_t *op_ref; /* op_id -> (rcomm index + 1) << 4 | op */
    size_t op_cap, op_hi;
    struct p3d_gdur *gpu; /* GPU records, resolved at the end */
    size_t n_gpu, gpu_cap;
    const struct p3d_op_sink *sink; /* whose state sink_st is */
    void *sink_st; /* this thread's state of the op sink, made at first use */
};

struct p3d_scan {
    struct p3d_rank *r;
    struct p3d_scanbuf *b;
    int c_last; /* r->comms index of the last op's communicator */
};

static struct p3d_rcomm *p3d_rcomm_get(struct p3d_rank *r, uint64_t hash)
{
    int i = p3d_map_get(&r->idx, hash);
    struct p3d_rcomm *c;

    if (i >= 0)
        return &r->comms[i];
    r->cap = p3d_grow((void **)&r->comms, r->cap, (size_t)r->n_comms,
                      sizeof(*r->comms));
    c = &r->comms[r->n_comms];
    memset(c, 0, sizeof(*c));
    c->hash = hash;
    c->nranks = c->rank = c->device = -1;
    c->order = (uint32_t)r->n_comms;
    c->gcomm = -1;
    p3d_map_put(&r->idx, hash, r->n_comms++);
    return c;
}

static void p3d_on_comm(struct p3d_rank *r, const struct p3d_rec_comm *rc)
{
    struct p3d_rcomm *c;

    if ((rc->flags & P3D_COMMF_NOCOLOR) || rc->comm_hash == 0) {
        r->n_nocolor++;
        return;
    }
    c = p3d_rcomm_get(r, rc->comm_hash);
    c->created = 1;
    c->parent = rc->parent_hash;
    c->how = rc->how;
    c->flags = rc->flags;
    c->t_create = rc->t_exit;
    if (rc->nranks > 0 && rc->nranks <= P3D_MAX_RANKS)
        c->nranks = rc->nranks;
    if (rc->rank >= 0)
        c->rank = rc->rank;
    c->device = rc->device;
}

static void p3d_on_info(struct p3d_rank *r, const struct p3d_rec_comm_info *i)
{
    struct p3d_rcomm *c = p3d_rcomm_get(r, i->comm_hash);

    if (i->nranks > 0 && i->nranks <= P3D_MAX_RANKS)
        c->nranks = i->nranks;
    if (i->rank >= 0)
        c->rank = i->rank;
    if (i->device >= 0)
        c->device = i->device;
}

static void p3d_scan_ref(struct p3d_scanbuf *b, uint64_t op_id,
                         uint32_t ref)
{
    if (op_id >= b->op_cap)
        b->op_cap = p3d_grow((void **)&b->op_ref, b->op_cap, (size_t)op_id,
                             sizeof(*b->op_ref));
    b->op_ref[op_id] = ref;
    if (op_id >= b->op_hi)
        b->op_hi = (size_t)op_id + 1;
}

/* Give op o to the job's op sink (the matcher), with this thread's state
 * of it. */
static void p3d_sink_op(struct p3d_scan *s, int comm_rank,
                        const struct p3d_rec_op *o)
{
    const struct p3d_op_sink *k = s->r->sink;
    struct p3d_scanbuf *b = s->b;

    if (b->sink != k) { /* first op of this thread (or another sink) */
        if (b->sink)
            b->sink->close(b->sink->ctx, b->sink_st);
        b->sink = k;
        b->sink_st = k->open(k->ctx);
    }
    k->op(k->ctx, b->sink_st, s->r->rank, comm_rank, o);
}

/* Ops come in runs on one communicator: the last one is checked before
 * the map. */
static struct p3d_rcomm *p3d_scan_comm(struct p3d_scan *s, uint64_t hash)
{
    struct p3d_rank *r = s->r;
    struct p3d_rcomm *c;

    if (s->c_last < r->n_comms && r->comms[s->c_last].hash == hash)
        return &r->comms[s->c_last];
    c = p3d_rcomm_get(r, hash);
    s->c_last = (int)(c - r->comms);
    return c;
}

static void p3d_on_op(struct p3d_scan *s, const struct p3d_rec_op *o)
{
    struct p3d_rank *r = s->r;
    struct p3d_rcomm *c;
    unsigned op = o->op < P3D_OP_COUNT ? o->op : 0;

    r->n_ops++;
    c = p3d_scan_comm(s, o->comm_hash);
    if (c->rank < 0 && o->comm_rank >= 0)
        c->rank = o->comm_rank;
    c->st[op].calls++;
    c->st[op].bytes += o->bytes;
    c->hist[p3d_hist_bucket(o->bytes)]++;
    p3d_usage_add(&c->use, o);
    if (r->sink)
        p3d_sink_op(s, o->comm_rank >= 0 ? o->comm_rank : c->rank, o);
    if (o->op_id < P3D_MAX_OP_INDEX && o->op_id < r->n_ops + P3D_OP_SLACK)
        p3d_scan_ref(s->b, o->op_id, (uint32_t)(c - r->comms + 1) << 4 | op);
}

static void p3d_on_str(struct p3d_rank *r, const struct p3d_rec_str *s)
{
    size_t n = s->n_bytes;

    if (n > s->h.len - sizeof(*s))
        n = s->h.len - sizeof(*s);
    if (s->h.tag != P3D_REC_CMDLINE || r->cmdline)
        return;
    r->cmdline = p3d_xmalloc(n + 1);
    memcpy(r->cmdline, s->text, n);
    r->cmdline[n] = 0;
    r->cmdline_len = n;
}

static void p3d_on_gpu(struct p3d_scan *s, const struct p3d_rec_gpu_op *g)
{
    struct p3d_scanbuf *b = s->b;

    if (g->gpu_end < g->gpu_start || !g->gpu_end)
        return;
    if (b->n_gpu >= b->gpu_cap)
        b->gpu_cap = p3d_grow((void **)&b->gpu, b->gpu_cap, b->n_gpu,
                              sizeof(*b->gpu));
    b->gpu[b->n_gpu].op_id = g->op_id;
    b->gpu[b->n_gpu++].ns = g->gpu_end - g->gpu_start;
}

/* Attribute GPU times to (comm, op); ops may follow their GPU record. */
static void p3d_resolve_gpu(struct p3d_scan *s)
{
    struct p3d_scanbuf *b = s->b;

    for (size_t i = 0; i < b->n_gpu; i++) {
        uint64_t id = b->gpu[i].op_id;
        uint32_t ref;
        struct p3d_opstat *st;

        if (id >= b->op_hi || !(ref = b->op_ref[id]))
            continue;
        st = &s->r->comms[(ref >> 4) - 1].st[ref & 15];
        st->gpu_calls++;
        st->gpu_ns += b->gpu[i].ns;
        st->gpu_bytes += st->calls ? st->bytes / st->calls : 0;
        s->r->n_gpu_ops++;
    }
    b->n_gpu = 0;
    if (b->op_hi)   /* op_ref is NULL until a rank has had an op */
        memset(b->op_ref, 0, b->op_hi * sizeof(*b->op_ref));
    b->op_hi = 0;
}

static void p3d_dispatch(struct p3d_scan *s, const struct p3d_rec_hdr *h)
{
    switch (h->tag) {
    case P3D_REC_OP: p3d_on_op(s, (const void *)h); break;
    case P3D_REC_COMM: p3d_on_comm(s->r, (const void *)h); break;
    case P3D_REC_COMM_INFO: p3d_on_info(s->r, (const void *)h); break;
    case P3D_REC_CMDLINE: p3d_on_str(s->r, (const void *)h); break;
    case P3D_REC_GPU_OP: p3d_on_gpu(s, (const void *)h); break;
    case P3D_REC_HANG: s->r->n_hang_recs++; break;
    case P3D_REC_NOTE:
        s->r->saw_term |= p3d_rec_is_term_note((const void *)h);
        s->r->plugin_timed |= p3d_rec_is_plugin_note((const void *)h);
        break;
    case P3D_REC_COMM_END:
        s->r->n_aborts += ((const struct p3d_rec_comm_end *)h)->how ==
                          P3D_END_ABORT;
        break;
    default: break;
    }
}

static void p3d_rank_note_tail(struct p3d_rank *r, const struct p3d_reader *rd)
{
    r->closed = !!(r->hdr.flags & P3D_F_CLOSED);
    r->truncated = rd->truncated;
    if (r->corrupt)
        snprintf(r->err, sizeof(r->err), "%s; using the %" PRIu64
                 " records before it", rd->msg, r->n_records);
    else if (!r->closed || r->truncated)
        snprintf(r->warn, sizeof(r->warn), "'%s': %s; using %" PRIu64
                 " records", r->path, r->truncated ? "truncated tail"
                 : "not closed cleanly (process killed?)", r->n_records);
}

static void p3d_scan_rec(void *ctx, const struct p3d_reader *rd,
                         const struct p3d_rec_hdr *h)
{
    struct p3d_scan *s = ctx;

    (void)rd;
    if (h->tag != P3D_REC_CHUNK)
        s->r->n_records++;
    p3d_dispatch(s, h);
}

static int p3d_rank_scan_buf(struct p3d_rank *r, struct p3d_reader *rd,
                             struct p3d_scanbuf *b)
{
    struct p3d_scan s = {r, b, 0};
    int n;

    p3d_reader_rewind(rd);
    r->hdr = rd->hdr;
    n = p3d_reader_walk(rd, p3d_scan_rec, &s);
    r->corrupt = n < 0;
    if (n < 0 && rd->bad_off < rd->hdr.data_off + 64 && r->n_records == 0)
        r->failed = 1;
    if (b->sink && b->sink == r->sink)
        b->sink->rank_end(b->sink->ctx, b->sink_st, r->rank);
    p3d_resolve_gpu(&s);
    p3d_rank_note_tail(r, rd);
    return r->failed ? -1 : 0;
}

static void p3d_scanbuf_free(struct p3d_scanbuf *b)
{
    free(b->op_ref);
    free(b->gpu);
    if (b->sink)
        b->sink->close(b->sink->ctx, b->sink_st);
}

int p3d_rank_scan_reader(struct p3d_rank *r, struct p3d_reader *rd)
{
    struct p3d_scanbuf b;
    int ret;

    memset(&b, 0, sizeof(b));
    ret = p3d_rank_scan_buf(r, rd, &b);
    p3d_scanbuf_free(&b);
    return ret;
}

static int p3d_rank_scan_with(struct p3d_rank *r, struct p3d_scanbuf *b)
{
    struct p3d_reader rd;
    int ret = p3d_reader_open(&rd, r->path);

    if (ret != 0) {
        r->failed = 1;
        snprintf(r->err, sizeof(r->err), "%s", rd.msg);
        return -1;
    }
    ret = p3d_rank_scan_buf(r, &rd, b);
    p3d_reader_close(&rd);
    return ret;
}

int p3d_rank_scan(struct p3d_rank *r)
{
    struct p3d_scanbuf b;
    int ret;

    memset(&b, 0, sizeof(b));
    ret = p3d_rank_scan_with(r, &b);
    p3d_scanbuf_free(&b);
    return ret;
}

int p3d_lost_records(const struct p3d_rank *r)
{
    return !r->failed && (r->hdr.flags & P3D_F_DROPPED);
}

const char *p3d_rank_file(const struct p3d_rank *r)
{
    return r->copy ? r->copy : r->path;
}

void p3d_rank_free(struct p3d_rank *r)
{
    free(r->path);
    free(r->copy);
    free(r->cmdline);
    free(r->comms);
    p3d_map_free(&r->idx);
}

/*
 * Each thread reads its own lane, a run of consecutive ranks, then helps
 * with the others' (from their fronts).  Neighbouring ranks share their
 * busiest communicators (tensor-parallel groups are consecutive ranks),
 * and two threads scanning neighbours took turns at the matcher's shard
 * locks: at 1,024 ranks the scan's two threads used little more than one
 * core.  Threads in lanes far apart feed the matcher mostly different
 * communicators.  Which thread reads a rank does not change the results.
 */
#define P3D_SCAN_LANES 64

struct p3d_pool {
    struct p3d_job *job;
    const int *pick; /* the rank files to read, by position */
    int n_lanes;
    int next[P3D_SCAN_LANES], end[P3D_SCAN_LANES];
};

/* The next rank of lane k, or -1 when the lane is done. */
static int p3d_pool_take(struct p3d_pool *p, int k)
{
    int i;

    if (__atomic_load_n(&p->next[k], __ATOMIC_RELAXED) >= p->end[k])
        return -1;
    i = __atomic_fetch_add(&p->next[k], 1, __ATOMIC_RELAXED);
    return i < p->end[k] ? i : -1;
}

struct p3d_lane {
    struct p3d_pool *pool;
    int lane;
};

static void *p3d_scan_worker(void *arg)
{
    struct p3d_lane *l = arg;
    struct p3d_pool *p = l->pool;
    struct p3d_scanbuf b;

    memset(&b, 0, sizeof(b));
    for (int d = 0; d < p->n_lanes; d++) {
        int k = (l->lane + d) % p->n_lanes, i;
        while ((i = p3d_pool_take(p, k)) >= 0) {
            i = p->pick[i];
            p3d_rank_scan_with(&p->job->ranks[i], &b);
            __atomic_add_fetch(&p->job->n_read, 1, __ATOMIC_RELAXED);
            if (p->job->on_scanned)
                p->job->on_scanned(p->job->on_scanned_ctx, i);
        }
    }
    p3d_scanbuf_free(&b);
    return NULL;
}

void p3d_job_scan(struct p3d_job *job, int threads)
{
    int *all = p3d_xcalloc((size_t)job->n_ranks + 1, sizeof(*all));

    for (int i = 0; i < job->n_ranks; i++)
        all[i] = i;
    p3d_job_scan_some(job, threads, all, job->n_ranks);
    free(all);
}

void p3d_job_scan_some(struct p3d_job *job, int threads, const int *pick,
                       int m)
{
    struct p3d_pool pool = {.job = job, .pick = pick};
    struct p3d_lane lane[P3D_SCAN_LANES];
    pthread_t tid[P3D_SCAN_LANES];
    int n = 0, lo = 0;

    job->threads = threads;
    if (threads > P3D_SCAN_LANES)
        threads = P3D_SCAN_LANES;
    if (threads > m)
        threads = m;
    if (threads < 1)
        threads = 1;
    pool.n_lanes = threads;
    for (int k = 0; k < threads; k++) {
        pool.next[k] = lo + (int)((int64_t)m * k / threads);
        pool.end[k] = lo + (int)((int64_t)m * (k + 1) / threads);
        lane[k] = (struct p3d_lane){&pool, k};
    }
    for (; n < threads - 1; n++)
        if (pthread_create(&tid[n], NULL, p3d_scan_worker, &lane[n + 1]))
            break;
    p3d_scan_worker(&lane[0]);
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
}
