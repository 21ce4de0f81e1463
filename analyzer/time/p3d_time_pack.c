/*
 * p3d_time_pack.c - a loaded timeline as bytes and back, for the time
 * passes over several processes (p3d_pass.c, model/p3d_dist.h): the
 * process that read the rank sends what loading it gave (its ops, their
 * unions, kernel windows) and, in pass 1, what the per-rank analysis
 * found (iterations, breakdowns, pipeline waits); process 0 takes it
 * into its own loading buffers, as if it had loaded the rank itself.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

/* What loading sets besides the buffers, and what pass 1 adds. */
struct p3d_tl_fixed {
    size_t n_ops, n_placed;
    int64_t kwin_on;
    int windowed, src;
    uint64_t peak_mem;
};

struct p3d_tl_found {
    int n_iter, it_mono, n_lbl;
    size_t period;
    uint8_t lbl[P3D_LBL_COUNT];
};

static void p3d_ivs_pack(const struct p3d_ivs *l, struct p3d_bytes *b)
{
    p3d_bytes_put_arr(b, l->v, l->n * sizeof(*l->v));
}

/* Into l's own buffer (a loading buffer lent to the timeline). */
static void p3d_ivs_unpack(struct p3d_ivs *l, struct p3d_bytes_in *in)
{
    size_t n;
    const struct p3d_iv *v = p3d_bytes_view_arr(in, &n);

    n /= sizeof(*v);
    if (n) {
        l->cap = p3d_grow((void **)&l->v, l->cap, n, sizeof(*l->v));
        memcpy(l->v, v, n * sizeof(*v));
    }
    l->n = n;
}

void p3d_tl_pack(const struct p3d_tl *tl, int found, struct p3d_bytes *b)
{
    struct p3d_tl_fixed f = {tl->n_ops, tl->n_placed, tl->kwin_on,
                             tl->windowed, tl->src, tl->peak_mem};
    size_t it = tl->n_iter ? (size_t)tl->n_iter + 1 : 0;
    struct p3d_tl_found g;

    p3d_bytes_put(b, &f, sizeof(f));
    p3d_bytes_put_arr(b, tl->ops, tl->n_ops * sizeof(*tl->ops));
    p3d_ivs_pack(&tl->compute, b);
    p3d_ivs_pack(&tl->copy, b);
    p3d_ivs_pack(&tl->nccl, b);
    p3d_ivs_pack(&tl->nsp_raw, b);
    p3d_ivs_pack(&tl->kwin, b);
    if (!found)
        return;
    memset(&g, 0, sizeof(g));
    g.n_iter = tl->n_iter;
    g.it_mono = tl->it_mono;
    g.n_lbl = tl->n_lbl;
    g.period = tl->period;
    memcpy(g.lbl, tl->lbl, sizeof(g.lbl));
    p3d_bytes_put(b, &g, sizeof(g));
    p3d_bytes_put_arr(b, tl->it_op, it * sizeof(*tl->it_op));
    p3d_bytes_put_arr(b, tl->it_t, it * sizeof(*tl->it_t));
    p3d_bytes_put_arr(b, tl->br, it * sizeof(*tl->br));
    p3d_bytes_put_arr(b, tl->br_lbl, (size_t)tl->n_iter *
                                         (size_t)tl->n_lbl *
                                         sizeof(*tl->br_lbl));
    p3d_bytes_put_arr(b, tl->it_fwd, it * sizeof(*tl->it_fwd));
    p3d_bytes_put_arr(b, tl->it_wrap, it * sizeof(*tl->it_wrap));
}

/* An array of at least `want` bytes (zeroed past what came), or NULL
 * when nothing came. */
static void *p3d_tl_arr(struct p3d_bytes_in *in, size_t want)
{
    size_t n;
    void *v = p3d_bytes_get_arr(in, &n);

    if (!v || n >= want)
        return v;
    v = p3d_xrealloc(v, want, 1);
    memset((char *)v + n, 0, want - n);
    return v;
}

static void p3d_tl_unpack_found(struct p3d_tl *tl, struct p3d_bytes_in *in)
{
    struct p3d_tl_found g;
    size_t it;

    p3d_bytes_get(in, &g, sizeof(g));
    tl->n_iter = g.n_iter;
    tl->it_mono = g.it_mono;
    tl->n_lbl = g.n_lbl;
    tl->period = g.period;
    memcpy(tl->lbl, g.lbl, sizeof(g.lbl));
    it = (size_t)g.n_iter + 1;
    tl->it_op = p3d_tl_arr(in, it * sizeof(*tl->it_op));
    tl->it_t = p3d_tl_arr(in, it * sizeof(*tl->it_t));
    tl->br = p3d_tl_arr(in, it * sizeof(*tl->br));
    tl->br_lbl = p3d_tl_arr(in, (it * (size_t)g.n_lbl + 1) *
                                    sizeof(*tl->br_lbl));
    tl->it_fwd = p3d_tl_arr(in, it * sizeof(*tl->it_fwd));
    tl->it_wrap = p3d_tl_arr(in, it * sizeof(*tl->it_wrap));
}

int p3d_tl_unpack(struct p3d_tl *tl, struct p3d_tload *ld, int found,
                  struct p3d_bytes_in *in)
{
    struct p3d_tl_fixed f;
    size_t n;
    const struct p3d_top *ops;

    p3d_time_lend(tl, ld);
    p3d_bytes_get(in, &f, sizeof(f));
    ops = p3d_bytes_view_arr(in, &n);
    n /= sizeof(*ops);
    if (n) {
        tl->cap_ops = p3d_grow((void **)&tl->ops, tl->cap_ops, n,
                               sizeof(*tl->ops));
        memcpy(tl->ops, ops, n * sizeof(*ops));
    }
    tl->n_ops = n;
    tl->n_placed = f.n_placed;
    tl->kwin_on = f.kwin_on;
    tl->windowed = f.windowed;
    tl->src = f.src;
    tl->peak_mem = f.peak_mem;
    p3d_ivs_unpack(&tl->compute, in);
    p3d_ivs_unpack(&tl->copy, in);
    p3d_ivs_unpack(&tl->nccl, in);
    p3d_ivs_unpack(&tl->nsp_raw, in);
    p3d_ivs_unpack(&tl->kwin, in);
    if (found)
        p3d_tl_unpack_found(tl, in);
    return in->bad || n != f.n_ops ? -1 : 0;
}
