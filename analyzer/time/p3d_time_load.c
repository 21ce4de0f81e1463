/*
 * p3d_time_load.c - read each rank's timeline for the time analysis: its
 * NCCL ops (host enter/exit, GPU start/end joined by op_id), the merged
 * compute/copy/NCCL busy spans of its streams and its peak memory.
 *
 * Ops keep their host times when the trace has no GPU times; when it has
 * NCCL spans but no GPU_OP records (kernel-to-op linking failed), the
 * spans are attributed to ops by stream and time order
 * (p3d_time_attribute).
 *
 * A loading thread keeps its buffers (struct p3d_tload) from rank to
 * rank: a rank's timeline borrows them while it is analysed
 * (p3d_pass.c), so no rank allocates or faults in fresh memory.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_reader.h"
#include "p3d_time.h"
#include "p3d_util.h"

/*
 * Times at or past P3D_TIME_MAX (year 2116 as CLOCK_REALTIME) and
 * intervals longer than P3D_DUR_MAX (13 days) can only come from a
 * damaged file: such records are left out, so the int64 arithmetic of the
 * time analysis (offsets, sums of durations) cannot overflow.
 */
#define P3D_TIME_MAX (1ull << 62)
#define P3D_DUR_MAX (1ull << 50)

static int p3d_tl_sane(uint64_t s, uint64_t e)
{
    return s < P3D_TIME_MAX && e < P3D_TIME_MAX &&
           (e <= s || e - s <= P3D_DUR_MAX);
}

struct p3d_gpuref {
    uint64_t op_id, s, e;
};

struct p3d_tload {
    struct p3d_top *ops, *ops2; /* lent to the timeline; sort target */
    size_t cap_ops, cap_ops2;
    struct p3d_ivs compute, copy, nccl, nsp_raw; /* lent likewise */
    uint64_t *nsp_stream;
    size_t nsp_cap;
    int spans; /* compute/copy spans wanted */
    uint64_t c_hash; /* last communicator looked up, */
    int c_gi;        /* its index (-2: none yet) */
    struct p3d_map gidx; /* group_id -> gend index */
    int64_t *gend, *gstart; /* outermost ncclGroupStart enter, End exit */
    size_t n_gend, cap_gend;
    struct p3d_gpuref *g;
    size_t n_g, cap_g;
    size_t g_lazy;  /* g[g_lazy..n_g) wait for the join at the end; */
    size_t n_eager; /* the ones before were put on their op on arrival */
    struct p3d_topx *x; /* [n_ops], load order, then op_id order */
    size_t cap_x;
    uint64_t peak[P3D_MEM_KIND_COUNT];
    int64_t shift; /* added to the next rank's times (p3d_tload_shift) */
};

static void p3d_tl_op(struct p3d_job *job, struct p3d_tl *tl,
                      struct p3d_tload *ld, const struct p3d_rec_op *o)
{
    struct p3d_top *t;
    int peer = -1;
    int gi = ld->c_hash == o->comm_hash && ld->c_gi != -2
                 ? ld->c_gi : p3d_map_get(&job->comm_idx, o->comm_hash);

    ld->c_hash = o->comm_hash; /* ops come in runs on one communicator */
    ld->c_gi = gi;
    if (o->op >= P3D_OP_COUNT || !p3d_tl_sane(o->t_enter, o->t_exit))
        return;
    if (tl->n_ops >= tl->cap_ops) /* buffers are reused: rarely grows */
        tl->cap_ops = p3d_grow((void **)&tl->ops, tl->cap_ops, tl->n_ops,
                               sizeof(*tl->ops));
    if (gi >= 0 && P3D_OP_IS_P2P(o->op) && o->peer >= 0 &&
        o->peer < job->comms[gi].size)
        peer = job->comms[gi].slot[o->peer];
    t = &tl->ops[tl->n_ops];
    *t = (struct p3d_top){ /* every field: the buffer is reused */
        .h0 = (int64_t)o->t_enter,
        .h1 = (int64_t)(o->t_exit > o->t_enter ? o->t_exit : o->t_enter),
        .seq = o->seq,
        .bytes = o->bytes,
        .gcomm = gi,
        .peer = peer,
        .op = o->op,
    };
    if (tl->n_ops >= ld->cap_x)
        ld->cap_x = p3d_grow((void **)&ld->x, ld->cap_x, tl->n_ops,
                             sizeof(*ld->x));
    ld->x[tl->n_ops] = (struct p3d_topx){o->op_id, o->stream, o->group_id,
                                         (uint32_t)tl->n_ops};
    tl->n_ops++;
}

/* GPU times s..e onto op t (one GPU_OP record; an op has one per
 * kernel).  Returns 1 if taken. */
static int p3d_tl_put_gpu(struct p3d_top *t, const struct p3d_gpuref *g)
{
    if (!g->s)
        return 0;
    if (!t->has_gpu || (int64_t)g->s < t->s)
        t->s = (int64_t)g->s;
    if (!t->has_gpu || (int64_t)g->e > t->e)
        t->e = (int64_t)g->e;
    if (t->e < t->s)
        t->e = t->s; /* never completed */
    t->has_gpu = 1;
    return 1;
}

/*
 * A GPU_OP record.  It usually follows its op right away: then it goes
 * onto the op now, while the op is in the cache.  The first that does
 * not (it comes before its op, or after others) and all after it wait
 * for the join at the end (p3d_tl_join), so records are applied in file
 * order either way.  An op_id recorded twice undoes this (p3d_tl_finish).
 */
static void p3d_tl_gpu(struct p3d_tl *tl, struct p3d_tload *ld,
                       const struct p3d_rec_gpu_op *g)
{
    struct p3d_gpuref *r;

    if (!p3d_tl_sane(g->gpu_start, g->gpu_end))
        return;
    if (ld->n_g >= ld->cap_g)
        ld->cap_g = p3d_grow((void **)&ld->g, ld->cap_g, ld->n_g,
                             sizeof(*ld->g));
    r = &ld->g[ld->n_g++];
    r->op_id = g->op_id;
    r->s = g->gpu_start;
    r->e = g->gpu_end;
    if (ld->g_lazy == ld->n_g - 1 && tl->n_ops &&
        ld->x[tl->n_ops - 1].op_id == g->op_id) {
        ld->n_eager += (size_t)p3d_tl_put_gpu(&tl->ops[tl->n_ops - 1], r);
        ld->g_lazy = ld->n_g;
    }
}

static void p3d_tl_span(struct p3d_tl *tl, struct p3d_tload *ld,
                        const struct p3d_rec_gpu_span *s)
{
    if (s->end <= s->start || !p3d_tl_sane(s->start, s->end))
        return;
    if (!ld->spans && s->kind != P3D_SPAN_NCCL)
        return;
    if (s->kind == P3D_SPAN_COMPUTE) {
        p3d_ivs_add(&tl->compute, (int64_t)s->start, (int64_t)s->end);
    } else if (s->kind == P3D_SPAN_COPY) {
        p3d_ivs_add(&tl->copy, (int64_t)s->start, (int64_t)s->end);
    } else if (s->kind == P3D_SPAN_NCCL) {
        size_t n = tl->nsp_raw.n;
        p3d_ivs_add(&tl->nsp_raw, (int64_t)s->start, (int64_t)s->end);
        tl->nsp_cap = p3d_grow((void **)&tl->nsp_stream, tl->nsp_cap, n,
                               sizeof(*tl->nsp_stream));
        tl->nsp_stream[n] = s->stream;
    }
}

static void p3d_tl_group(struct p3d_tload *ld, const struct p3d_rec_group *g)
{
    int k = p3d_map_get(&ld->gidx, g->group_id);
    size_t cap = ld->cap_gend;

    if (g->depth != (g->is_end ? 0 : 1) || !g->group_id)
        return; /* only the outermost level; depth is after the call */
    if (k < 0) {
        ld->cap_gend = p3d_grow((void **)&ld->gend, cap, ld->n_gend,
                                sizeof(*ld->gend));
        p3d_grow((void **)&ld->gstart, cap, ld->n_gend, sizeof(*ld->gstart));
        k = (int)ld->n_gend++;
        ld->gend[k] = ld->gstart[k] = 0; /* buffers are reused */
        p3d_map_put(&ld->gidx, g->group_id, k);
    }
    if (g->is_end)
        ld->gend[k] = (int64_t)g->t_exit;
    else
        ld->gstart[k] = (int64_t)g->t_enter;
}

static void p3d_tl_mem(struct p3d_tload *ld, const struct p3d_rec_mem *m)
{
    if (m->kind < P3D_MEM_KIND_COUNT && m->peak > ld->peak[m->kind])
        ld->peak[m->kind] = m->peak;
}

/* Kernel windows: an on opens one, an off closes it (a window still
 * open at the end of the trace lasts to its end, p3d_tl_finish). */
static void p3d_tl_window(struct p3d_tl *tl,
                          const struct p3d_rec_gpu_window *w)
{
    if (w->t >= P3D_TIME_MAX)
        return;
    tl->windowed = 1;
    if (w->on && tl->kwin_on < 0)
        tl->kwin_on = (int64_t)w->t;
    else if (!w->on && tl->kwin_on >= 0) {
        if ((int64_t)w->t > tl->kwin_on)
            p3d_ivs_add(&tl->kwin, tl->kwin_on, (int64_t)w->t);
        tl->kwin_on = -1;
    }
}

static void p3d_tl_record(struct p3d_job *job, struct p3d_tl *tl,
                          struct p3d_tload *ld, const struct p3d_rec_hdr *h)
{
    switch (h->tag) {
    case P3D_REC_OP: p3d_tl_op(job, tl, ld, (const void *)h); break;
    case P3D_REC_GPU_OP: p3d_tl_gpu(tl, ld, (const void *)h); break;
    case P3D_REC_GPU_SPAN: p3d_tl_span(tl, ld, (const void *)h); break;
    case P3D_REC_MEM: p3d_tl_mem(ld, (const void *)h); break;
    case P3D_REC_GROUP: p3d_tl_group(ld, (const void *)h); break;
    case P3D_REC_GPU_WINDOW: p3d_tl_window(tl, (const void *)h); break;
    default: break;
    }
}

/* Load-order index of the op with this op_id (the last one read if
 * several have it), -1 if none; ld->x is in (op_id, load order) order.
 * *hint: where the previous search ended; GPU_OP records mostly come in
 * op_id order, so the next one is usually just after it. */
static long p3d_tl_find(const struct p3d_tl *tl, const struct p3d_tload *ld,
                        uint64_t op_id, size_t *hint)
{
    size_t lo = 0, hi = tl->n_ops, h = *hint;

    if (h < hi && (h == 0 || ld->x[h - 1].op_id <= op_id)) {
        /* gallop forward from the hint to bracket the answer */
        size_t step = 1;
        lo = h;
        while (lo + step < hi && ld->x[lo + step].op_id <= op_id) {
            lo += step;
            step *= 2;
        }
        hi = lo + step < hi ? lo + step : hi;
    }
    while (lo < hi) { /* first entry with a larger op_id */
        size_t mid = lo + (hi - lo) / 2;
        if (ld->x[mid].op_id <= op_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    *hint = lo;
    return lo && ld->x[lo - 1].op_id == op_id ? (long)ld->x[lo - 1].i : -1;
}

/* GPU_OP records g[from..) (one per kernel of an op) onto their ops. */
static size_t p3d_tl_join(struct p3d_tl *tl, struct p3d_tload *ld,
                          size_t from)
{
    size_t n = 0, hint = 0;

    for (size_t i = from; i < ld->n_g; i++) {
        long k = p3d_tl_find(tl, ld, ld->g[i].op_id, &hint);
        if (k >= 0)
            n += (size_t)p3d_tl_put_gpu(&tl->ops[k], &ld->g[i]);
    }
    return n;
}

/* Two ops with one op_id (ld->x in op_id order): a GPU record goes to
 * the last one read, which an early join could not know. */
static int p3d_tl_dup_ids(const struct p3d_tl *tl, const struct p3d_tload *ld)
{
    for (size_t i = 1; i < tl->n_ops; i++)
        if (ld->x[i].op_id == ld->x[i - 1].op_id)
            return 1;
    return 0;
}

/* All GPU records onto their ops, in file order (dup: two ops have one
 * op_id). */
static size_t p3d_tl_join_all(struct p3d_tl *tl, struct p3d_tload *ld,
                              int dup)
{
    if (!ld->n_eager)
        return p3d_tl_join(tl, ld, ld->g_lazy);
    if (!dup)
        return ld->n_eager + p3d_tl_join(tl, ld, ld->g_lazy);
    for (size_t i = 0; i < tl->n_ops; i++) { /* undo the early ones */
        tl->ops[i].has_gpu = 0;
        tl->ops[i].s = tl->ops[i].e = 0;
    }
    return p3d_tl_join(tl, ld, 0);
}

static int p3d_topx_cmp(const void *a, const void *b)
{
    const struct p3d_topx *x = a, *y = b;

    if (x->op_id != y->op_id)
        return x->op_id < y->op_id ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* ld->x into (op_id, load order) order; usually it already is.
 * Returns 0 if nothing moved; *dup: whether two ops have one op_id
 * (found on the way when nothing moves). */
static int p3d_tl_order(struct p3d_tl *tl, struct p3d_tload *ld, int *dup)
{
    int eq = 0;

    for (size_t i = 1; i < tl->n_ops; i++) {
        if (ld->x[i].op_id < ld->x[i - 1].op_id) {
            qsort(ld->x, tl->n_ops, sizeof(*ld->x), p3d_topx_cmp);
            *dup = p3d_tl_dup_ids(tl, ld);
            return 1;
        }
        eq |= ld->x[i].op_id == ld->x[i - 1].op_id;
    }
    *dup = eq;
    return 0;
}

/* Ops into the order of ld->x (through the thread's second buffer). */
static void p3d_tl_sort(struct p3d_tl *tl, struct p3d_tload *ld)
{
    struct p3d_top *v;
    size_t c;

    if (!tl->n_ops)
        return;
    if (ld->cap_ops2 < tl->n_ops) {
        free(ld->ops2);
        ld->cap_ops2 = tl->cap_ops;
        ld->ops2 = p3d_xmalloc(ld->cap_ops2 * sizeof(*ld->ops2));
    }
    v = ld->ops2;
    for (size_t i = 0; i < tl->n_ops; i++)
        v[i] = tl->ops[ld->x[i].i];
    ld->ops2 = tl->ops;
    c = ld->cap_ops2;
    ld->cap_ops2 = tl->cap_ops;
    tl->ops = v;
    tl->cap_ops = c;
}

static void p3d_tl_finish(struct p3d_tl *tl, struct p3d_tload *ld)
{
    size_t n_gpu;
    int64_t d = ld->shift;
    int moved, dup;

    if (tl->kwin_on >= 0)
        p3d_ivs_add(&tl->kwin, tl->kwin_on, P3D_KWIN_OPEN_END);
    p3d_ivs_union(&tl->kwin);
    moved = p3d_tl_order(tl, ld, &dup);
    n_gpu = p3d_tl_join_all(tl, ld, dup);
    if (moved)
        p3d_tl_sort(tl, ld);
    tl->src = n_gpu ? P3D_TSRC_GPU : P3D_TSRC_HOST;
    if (!n_gpu && tl->nsp_raw.n) {
        p3d_time_attribute(tl, ld->x);
        tl->src = P3D_TSRC_SPAN;
    }
    tl->n_placed = 0;
    for (size_t i = 0; i < tl->n_ops; i++) {
        struct p3d_top *t = &tl->ops[i];
        uint32_t gid = ld->x[i].group_id;
        int gk = gid ? p3d_map_get(&ld->gidx, gid) : -1;
        t->hg = gk >= 0 && ld->gend[gk] > t->h1 ? ld->gend[gk] : t->h1;
        t->hs = gk >= 0 && ld->gstart[gk] && ld->gstart[gk] < t->h0
                    ? ld->gstart[gk] : t->h0;
        if (!t->has_gpu) { /* host only: up to the blocking return */
            t->s = t->h0;
            t->e = t->hg;
        }
        tl->n_placed += t->has_gpu;
        if (ld->spans)
            p3d_ivs_add(&tl->nccl, t->s, t->e);
        if (d) /* as p3d_time_shift_ops, on this walk */
            p3d_time_shift_op(t, d);
    }
    if (!ld->spans) {
        p3d_time_shift_ivs(tl, d);
        return;
    }
    for (size_t i = 0; i < tl->nsp_raw.n; i++)
        p3d_ivs_add(&tl->nccl, tl->nsp_raw.v[i].s, tl->nsp_raw.v[i].e);
    p3d_ivs_union(&tl->nccl);
    p3d_ivs_union(&tl->compute);
    p3d_ivs_union(&tl->copy);
    p3d_time_shift_ivs(tl, d);
    tl->peak_mem = ld->peak[P3D_MEM_DEVICE];
    if (!tl->peak_mem)
        tl->peak_mem = ld->peak[P3D_MEM_DEVICE_USED];
}

void p3d_tload_shift(struct p3d_tload *ld, int64_t d)
{
    ld->shift = d;
}

struct p3d_tload *p3d_tload_new(void)
{
    return p3d_xcalloc(1, sizeof(struct p3d_tload));
}

void p3d_tload_free(struct p3d_tload *ld)
{
    if (!ld)
        return;
    free(ld->ops);
    free(ld->ops2);
    p3d_ivs_free(&ld->compute);
    p3d_ivs_free(&ld->copy);
    p3d_ivs_free(&ld->nccl);
    p3d_ivs_free(&ld->nsp_raw);
    free(ld->nsp_stream);
    p3d_map_free(&ld->gidx);
    free(ld->g);
    free(ld->x);
    free(ld->gend);
    free(ld->gstart);
    free(ld);
}

#define P3D_SWAP(a, b)                                                        \
    do {                                                                      \
        __typeof__(a) t_ = (a);                                               \
        (a) = (b);                                                            \
        (b) = t_;                                                             \
    } while (0)

/*
 * The loading buffers change hands, emptied: from the thread to the
 * timeline (lend) and back (unload).  Whoever receives them had none (a
 * swap with NULLs), so one function does both.
 */
static void p3d_tl_swap_bufs(struct p3d_tl *tl, struct p3d_tload *ld)
{
    struct p3d_ivs *a[] = {&tl->compute, &tl->copy, &tl->nccl, &tl->nsp_raw};
    struct p3d_ivs *b[] = {&ld->compute, &ld->copy, &ld->nccl, &ld->nsp_raw};

    P3D_SWAP(tl->ops, ld->ops);
    P3D_SWAP(tl->cap_ops, ld->cap_ops);
    P3D_SWAP(tl->nsp_stream, ld->nsp_stream);
    P3D_SWAP(tl->nsp_cap, ld->nsp_cap);
    for (int k = 0; k < 4; k++) {
        P3D_SWAP(*a[k], *b[k]);
        a[k]->n = b[k]->n = 0;
    }
}

/* The thread's buffers to the timeline, emptied. */
void p3d_time_lend(struct p3d_tl *tl, struct p3d_tload *ld)
{
    p3d_tl_swap_bufs(tl, ld);
    tl->n_ops = 0;
    tl->kwin.n = 0; /* the rank's own, rebuilt by every load */
    tl->kwin_on = -1;
    tl->windowed = 0;
    ld->n_g = ld->n_gend = ld->g_lazy = ld->n_eager = 0;
    ld->c_gi = -2;
    memset(ld->peak, 0, sizeof(ld->peak));
    if (ld->gidx.cap) {
        memset(ld->gidx.vals, 0xff, ld->gidx.cap * sizeof(*ld->gidx.vals));
        ld->gidx.n = 0;
    }
}

/* Back to the thread; the timeline keeps its counts only. */
void p3d_time_unload(struct p3d_tl *tl, struct p3d_tload *ld)
{
    p3d_tl_swap_bufs(tl, ld);
}

struct p3d_tl_walk {
    struct p3d_job *job;
    struct p3d_tl *tl;
    struct p3d_tload *ld;
};

static void p3d_tl_rec(void *ctx, const struct p3d_reader *rd,
                       const struct p3d_rec_hdr *h)
{
    struct p3d_tl_walk *w = ctx;

    (void)rd;
    p3d_tl_record(w->job, w->tl, w->ld, h);
}

void p3d_time_load_rank(struct p3d_job *job, struct p3d_tl *tl, int i,
                        struct p3d_tload *ld, int spans)
{
    struct p3d_rank *rk = &job->ranks[i];
    struct p3d_tl_walk w = {job, tl, ld};
    struct p3d_reader rd;

    p3d_time_lend(tl, ld);
    ld->spans = spans;
    if (rk->failed || p3d_reader_open(&rd, rk->path) != 0) {
        ld->shift = 0;
        return;
    }
    p3d_reader_walk(&rd, p3d_tl_rec, &w);
    p3d_reader_close(&rd);
    p3d_tl_finish(tl, ld);
    ld->shift = 0;
}
