/*
 * p3d_vrank.c - read one rank file into the views' interval model
 * (p3d_vrank.h): host calls, ncclGroup brackets, GPU NCCL ops
 * joined to their host call by op_id, GPU spans, memory levels.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_vrank.h"
#include "p3d_vclock.h"
#include "p3d_reader.h"
#include "p3d_util.h"

#define P3D_V_OPEN UINT64_MAX /* end not known yet: the call never returned */

struct p3d_vopinfo { /* what a GPU op record needs from its host call */
    uint64_t comm, bytes, seq, stream;
    int32_t peer, comm_rank;
    uint8_t op;
};

struct p3d_vopen_grp {
    uint32_t tid, id;
    uint64_t t;
};

struct p3d_vctx {
    const struct p3d_job *job;
    const struct p3d_rank *r;
    const struct p3d_vwin *w;
    struct p3d_vrank *v;
    int64_t shift;
    struct p3d_vopinfo *info;
    size_t n_info, cap_info;
    struct p3d_map ids; /* op_id -> info index */
    struct p3d_vopen_grp grp[64];
    int n_grp;
};

int p3d_vlabel(const struct p3d_job *job, uint64_t h)
{
    int i = p3d_map_get(&job->comm_idx, h);

    return i < 0 ? -1 : job->comms[i].label;
}

int64_t p3d_vclock_shift(const struct p3d_job *job, const struct p3d_rank *r)
{
    const struct p3d_rank *ref = r;
    int64_t shift;

    if (p3d_vtime_shift(job, r, &shift) == 0)
        return shift; /* host offsets estimated by the time analysis */
    for (int i = 0; i < job->n_ranks; i++) {
        const struct p3d_rank *o = &job->ranks[i];
        if (!o->failed && o < ref &&
            !strncmp(o->hdr.hostname, r->hdr.hostname, P3D_HOST_LEN))
            ref = o;
    }
    /* unsigned: damaged headers wrap instead of overflowing (UB) */
    return (int64_t)(ref->hdr.start_realtime_ns - ref->hdr.start_mono_ns -
                     p3d_vjob_t0(job));
}

static uint64_t p3d_vt(const struct p3d_vctx *c, uint64_t mono)
{
    int64_t t = (int64_t)(mono + (uint64_t)c->shift); /* wraps, no UB */

    return t < 0 ? 0 : (uint64_t)t;
}

static int p3d_vin(const struct p3d_vwin *w, uint64_t t0, uint64_t t1)
{
    return t1 >= w->t0 && (!w->t1 || t0 < w->t1);
}

static struct p3d_vev *p3d_vpush(struct p3d_vctx *c, int kind, uint64_t t0,
                                 uint64_t t1)
{
    struct p3d_vrank *v = c->v;
    struct p3d_vev *e;

    if (t1 != P3D_V_OPEN && t1 > v->t_end)
        v->t_end = t1;
    if (t0 > v->t_end)
        v->t_end = t0;
    if (t1 != P3D_V_OPEN && !p3d_vin(c->w, t0, t1))
        return NULL;
    v->cap = p3d_grow((void **)&v->ev, v->cap, v->n, sizeof(*v->ev));
    e = &v->ev[v->n++];
    memset(e, 0, sizeof(*e));
    e->kind = (uint8_t)kind;
    e->t0 = t0;
    e->t1 = t1;
    e->peer = e->comm_rank = -1;
    e->label = -1;
    return e;
}

static int32_t p3d_vcomm_rank(const struct p3d_vctx *c, const struct
                              p3d_rec_op *o)
{
    int i;

    if (o->comm_rank >= 0)
        return o->comm_rank;
    i = p3d_map_get(&c->r->idx, o->comm_hash);
    return i < 0 ? -1 : c->r->comms[i].rank;
}

/* An event of op `in` (its host call or its kernel) on track `track`. */
static void p3d_vev_op(const struct p3d_vctx *c, struct p3d_vev *e,
                       const struct p3d_vopinfo *in, uint64_t op_id,
                       uint64_t track)
{
    e->track = track;
    e->comm = in->comm;
    e->bytes = in->bytes;
    e->seq = in->seq;
    e->op_id = op_id;
    e->peer = in->peer;
    e->comm_rank = in->comm_rank;
    e->op = in->op;
    e->label = (int16_t)p3d_vlabel(c->job, in->comm);
}

static void p3d_vop(struct p3d_vctx *c, const struct p3d_rec_op *o)
{
    uint64_t t1 = o->t_exit ? p3d_vt(c, o->t_exit) : P3D_V_OPEN;
    struct p3d_vopinfo *in;
    struct p3d_vev *e;

    c->cap_info = p3d_grow((void **)&c->info, c->cap_info, c->n_info,
                           sizeof(*c->info));
    in = &c->info[c->n_info];
    *in = (struct p3d_vopinfo){o->comm_hash, o->bytes, o->seq, o->stream,
                               o->peer, p3d_vcomm_rank(c, o), o->op};
    p3d_map_put(&c->ids, o->op_id, (int)c->n_info++);
    e = p3d_vpush(c, P3D_V_HOST, p3d_vt(c, o->t_enter), t1);
    if (e)
        p3d_vev_op(c, e, in, o->op_id, o->tid);
}

static void p3d_vgpu_op(struct p3d_vctx *c, const struct p3d_rec_gpu_op *g)
{
    int i = p3d_map_get(&c->ids, g->op_id);
    const struct p3d_vopinfo *in;
    struct p3d_vev *e;

    c->v->have_gpu = 1;
    if (i < 0 || !g->gpu_start)
        return;
    in = &c->info[i];
    e = p3d_vpush(c, P3D_V_GPU_NCCL, p3d_vt(c, g->gpu_start),
                  g->gpu_end ? p3d_vt(c, g->gpu_end) : P3D_V_OPEN);
    if (e)
        p3d_vev_op(c, e, in, g->op_id, in->stream);
}

static void p3d_vspan(struct p3d_vctx *c, const struct p3d_rec_gpu_span *s)
{
    struct p3d_vev *e;
    int kind = s->kind == P3D_SPAN_COPY ? P3D_V_COPY : P3D_V_COMPUTE;

    c->v->have_gpu = 1;
    c->v->have_spans |= s->kind != P3D_SPAN_NCCL;
    if (s->kind == P3D_SPAN_NCCL) /* NCCL ops come as GPU_OP records */
        return;
    e = p3d_vpush(c, kind, p3d_vt(c, s->start), p3d_vt(c, s->end));
    if (e)
        e->track = s->stream;
}

static void p3d_vgroup(struct p3d_vctx *c, const struct p3d_rec_group *g)
{
    struct p3d_vev *e;

    if (!g->is_end) {
        if (g->depth == 1 && c->n_grp < 64)
            c->grp[c->n_grp++] = (struct p3d_vopen_grp){
                g->tid, g->group_id, p3d_vt(c, g->t_enter)};
        return;
    }
    if (g->depth != 0)
        return;
    for (int i = c->n_grp - 1; i >= 0; i--) {
        if (c->grp[i].tid != g->tid || c->grp[i].id != g->group_id)
            continue;
        e = p3d_vpush(c, P3D_V_GROUP, c->grp[i].t, p3d_vt(c, g->t_exit));
        if (e) {
            e->track = g->tid;
            e->seq = g->n_ops;
        }
        c->grp[i] = c->grp[--c->n_grp];
        return;
    }
}

static void p3d_vcomm(struct p3d_vctx *c, const struct p3d_rec_comm *m)
{
    struct p3d_vev *e;

    if (m->flags & P3D_COMMF_NOCOLOR)
        return;
    e = p3d_vpush(c, P3D_V_HOST, p3d_vt(c, m->t_enter),
                  m->t_exit ? p3d_vt(c, m->t_exit) : P3D_V_OPEN);
    if (!e)
        return;
    e->track = m->tid;
    e->comm = m->comm_hash;
    e->op = P3D_V_INIT;
    e->seq = m->how;
    e->label = (int16_t)p3d_vlabel(c->job, m->comm_hash);
}

static void p3d_vmemrec(struct p3d_vctx *c, const struct p3d_rec_mem *m)
{
    struct p3d_vrank *v = c->v;
    uint64_t t = p3d_vt(c, m->t);

    if (m->kind >= P3D_MEM_KIND_COUNT)
        return;
    if (m->peak > v->peak[m->kind])
        v->peak[m->kind] = m->peak;
    if (m->current > v->peak[m->kind])
        v->peak[m->kind] = m->current;
    if (!p3d_vin(c->w, t, t))
        return;
    v->cap_mem = p3d_grow((void **)&v->mem, v->cap_mem, v->n_mem,
                          sizeof(*v->mem));
    v->mem[v->n_mem++] = (struct p3d_vmem){t, m->current, m->kind};
}

static void p3d_vsummary(struct p3d_vctx *c, const struct p3d_rec_summary *s)
{
    for (int k = 0; k < 4 && k < P3D_MEM_KIND_COUNT; k++)
        if (s->peak[k] > c->v->peak[k])
            c->v->peak[k] = s->peak[k];
}

static void p3d_vrecord(struct p3d_vctx *c, const struct p3d_rec_hdr *h)
{
    switch (h->tag) {
    case P3D_REC_OP: p3d_vop(c, (const void *)h); break;
    case P3D_REC_GPU_OP: p3d_vgpu_op(c, (const void *)h); break;
    case P3D_REC_GPU_SPAN: p3d_vspan(c, (const void *)h); break;
    case P3D_REC_GROUP: p3d_vgroup(c, (const void *)h); break;
    case P3D_REC_COMM: p3d_vcomm(c, (const void *)h); break;
    case P3D_REC_MEM: p3d_vmemrec(c, (const void *)h); break;
    case P3D_REC_SUMMARY: p3d_vsummary(c, (const void *)h); break;
    default: break;
    }
}

/* Calls that never returned last until the end of the trace. */
static void p3d_vclose_open(struct p3d_vrank *v)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->ev[i].t1 == P3D_V_OPEN)
            v->ev[i].t1 = v->t_end > v->ev[i].t0 ? v->t_end : v->ev[i].t0;
}

static int p3d_vev_cmp(const void *a, const void *b)
{
    const struct p3d_vev *x = a, *y = b;

    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return (x->t1 < y->t1) - (x->t1 > y->t1);
}

static void p3d_vrec(void *ctx, const struct p3d_reader *rd,
                     const struct p3d_rec_hdr *h)
{
    (void)rd;
    p3d_vrecord(ctx, h);
}

int p3d_vrank_load(const struct p3d_job *job, const struct p3d_rank *r,
                   const struct p3d_vwin *w, struct p3d_vrank *v)
{
    struct p3d_vctx c = {job, r, w, v, 0, NULL, 0, 0, {0}, {{0}}, 0};
    struct p3d_reader rd;

    memset(v, 0, sizeof(*v));
    v->rank = r->rank;
    if (r->failed || p3d_reader_open(&rd, p3d_rank_file(r)) != 0)
        return -1;
    c.shift = p3d_vclock_shift(job, r);
    p3d_reader_walk(&rd, p3d_vrec, &c);
    p3d_reader_close(&rd);
    p3d_vclose_open(v);
    if (v->n)
        qsort(v->ev, v->n, sizeof(*v->ev), p3d_vev_cmp);
    free(c.info);
    p3d_map_free(&c.ids);
    return 0;
}

void p3d_vrank_free(struct p3d_vrank *v)
{
    free(v->ev);
    free(v->mem);
    memset(v, 0, sizeof(*v));
}
