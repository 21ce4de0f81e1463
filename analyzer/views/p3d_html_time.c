/*
 * p3d_html_time.c - a sweep over a rank's compute and NCCL intervals that
 * cuts a window into compute / exposed NCCL (by label) / bubble / idle
 * pieces.  PP and P2P transfers with no compute running are bubble; a
 * piece where several groups' NCCL ops run goes to the most specific
 * label (lowest P3D_LBL_*).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_html_time.h"
#include "p3d_util.h"

struct p3d_vpt {
    uint64_t t;
    int delta; /* +1 start, -1 end */
    int what;  /* 0 compute, 1 + label (P3D_LBL_COUNT = unknown) NCCL */
};

int p3d_vis_nccl(const struct p3d_vrank *v, const struct p3d_vev *e)
{
    if (v->have_gpu)
        return e->kind == P3D_V_GPU_NCCL;
    return e->kind == P3D_V_HOST && e->op != P3D_V_INIT;
}

static int p3d_vpt_cmp(const void *a, const void *b)
{
    const struct p3d_vpt *x = a, *y = b;

    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->delta - y->delta; /* ends first */
}

static size_t p3d_vpoints(const struct p3d_vrank *v, uint64_t t0,
                          uint64_t t1, struct p3d_vpt *p)
{
    size_t n = 0;

    for (size_t i = 0; i < v->n; i++) {
        const struct p3d_vev *e = &v->ev[i];
        int what;
        uint64_t a = e->t0 < t0 ? t0 : e->t0, b = e->t1 > t1 ? t1 : e->t1;
        if (e->kind == P3D_V_COMPUTE)
            what = 0;
        else if (p3d_vis_nccl(v, e))
            what = 1 + (e->label >= 0 ? e->label : P3D_LBL_COUNT);
        else
            continue;
        if (a >= b)
            continue;
        p[n++] = (struct p3d_vpt){a, 1, what};
        p[n++] = (struct p3d_vpt){b, -1, what};
    }
    qsort(p, n, sizeof(*p), p3d_vpt_cmp);
    return n;
}

/* State of a piece given the active counts; *label for NCCL. */
static int p3d_vstate_of(const int *act, int host_only, int *label)
{
    int any = 0;

    for (int l = 0; l <= P3D_LBL_COUNT; l++)
        any |= act[1 + l] > 0;
    if (act[0] > 0 || (host_only && !any))
        return P3D_VS_COMPUTE;
    if (!any)
        return P3D_VS_IDLE;
    if (act[1 + P3D_LBL_PP] > 0 || act[1 + P3D_LBL_P2P] > 0) {
        int other = 0;
        for (int l = 0; l < P3D_LBL_PP; l++)
            other |= act[1 + l] > 0;
        if (!other)
            return P3D_VS_BUBBLE;
    }
    for (int l = 0; l <= P3D_LBL_COUNT; l++)
        if (act[1 + l] > 0) {
            *label = l;
            break;
        }
    return P3D_VS_NCCL;
}

int p3d_vstates(const struct p3d_vrank *v, uint64_t t0, uint64_t t1,
                p3d_vstate_fn fn, void *ctx)
{
    struct p3d_vpt *p = p3d_xmalloc((2 * v->n + 1) * sizeof(*p));
    int act[P3D_LBL_COUNT + 2] = {0}, host_only = !v->have_spans;
    size_t n = p3d_vpoints(v, t0, t1, p);
    uint64_t t = t0;

    for (size_t i = 0; i <= n; i++) {
        uint64_t u = i < n ? p[i].t : t1;
        if (u > t) {
            int label = P3D_LBL_COUNT;
            int st = p3d_vstate_of(act, host_only, &label);
            fn(t, u, st, label, ctx);
            t = u;
        }
        if (i < n)
            act[p[i].what] += p[i].delta;
    }
    free(p);
    return v->n ? 0 : -1;
}

struct p3d_vbctx {
    struct p3d_vbreak *b;
    const struct p3d_vrank *v;
};

static void p3d_vbreak_add(uint64_t a, uint64_t b, int st, int label,
                           void *ctx)
{
    struct p3d_vbreak *bk = ((struct p3d_vbctx *)ctx)->b;
    uint64_t d = b - a;

    switch (st) {
    case P3D_VS_COMPUTE: bk->compute += d; break;
    case P3D_VS_BUBBLE: bk->bubble += d; break;
    case P3D_VS_IDLE: bk->idle += d; break;
    default:
        bk->exposed[label] += d;
        bk->exposed_all += d;
        break;
    }
}

/* NCCL time hidden behind compute: NCCL busy minus exposed minus bubble */
static uint64_t p3d_vnccl_busy(const struct p3d_vrank *v, uint64_t t0,
                               uint64_t t1)
{
    struct p3d_vpt *p = p3d_xmalloc((2 * v->n + 1) * sizeof(*p));
    size_t n = p3d_vpoints(v, t0, t1, p);
    uint64_t busy = 0, t = t0;
    int on = 0;

    for (size_t i = 0; i < n; i++) {
        if (p[i].what == 0)
            continue;
        if (on > 0)
            busy += p[i].t - t;
        t = p[i].t;
        on += p[i].delta;
    }
    free(p);
    return busy;
}

void p3d_vbreak_rank(const struct p3d_vrank *v, uint64_t t0, uint64_t t1,
                     struct p3d_vbreak *b)
{
    struct p3d_vbctx c = {b, v};
    uint64_t busy;

    memset(b, 0, sizeof(*b));
    b->span = t1 > t0 ? t1 - t0 : 0;
    b->host_only = !v->have_spans;
    if (!b->span)
        return;
    p3d_vstates(v, t0, t1, p3d_vbreak_add, &c);
    busy = p3d_vnccl_busy(v, t0, t1);
    if (!b->host_only && busy > b->exposed_all + b->bubble)
        b->overlapped = busy - b->exposed_all - b->bubble;
}
