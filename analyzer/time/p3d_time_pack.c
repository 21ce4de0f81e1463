/*
 * p3d_time_pack.c - pass 1's per-rank results as bytes and back, for the
 * time passes over several processes (p3d_pass_dist.c, model/p3d_dist.h):
 * the process that read a rank sends process 0 what loading it set
 * besides the ops (counts, the GPU-time source, the memory peak, the
 * kernel windows) and what the per-rank analysis found (iterations, breakdowns, pipeline waits).
 * The ops themselves go to their communicators' owners, which join them.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

/* What loading sets besides the buffers. */
struct p3d_tl_fixed {
    uint64_t n_ops, n_placed, peak_mem;
    int64_t kwin_on;
    int32_t windowed, src, has_compute;
};

/* What pass 1's per-rank analysis adds. */
struct p3d_tl_found {
    uint64_t period;
    int32_t n_iter, it_mono, n_lbl;
    uint8_t lbl[P3D_LBL_COUNT];
};

void p3d_tl_pack_results(const struct p3d_tl *tl, struct p3d_bytes *b)
{
    size_t it = tl->n_iter ? (size_t)tl->n_iter + 1 : 0;
    struct p3d_tl_fixed f;
    struct p3d_tl_found g;

    memset(&f, 0, sizeof(f)); /* padding travels too: zeroed */
    f.n_ops = tl->n_ops;
    f.n_placed = tl->n_placed;
    f.peak_mem = tl->peak_mem;
    f.kwin_on = tl->kwin_on;
    f.windowed = tl->windowed;
    f.src = tl->src;
    f.has_compute = tl->compute.n > 0;
    p3d_bytes_put(b, &f, sizeof(f));
    memset(&g, 0, sizeof(g));
    g.period = tl->period;
    g.n_iter = tl->n_iter;
    g.it_mono = tl->it_mono;
    g.n_lbl = tl->n_lbl;
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
    /* the kernel windows stay with the timeline (the views draw them) */
    p3d_bytes_put_arr(b, tl->kwin.v, tl->kwin.n * sizeof(*tl->kwin.v));
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

int p3d_tl_unpack_results(struct p3d_tl *tl, struct p3d_bytes_in *in,
                          int *has_compute)
{
    struct p3d_tl_fixed f;
    struct p3d_tl_found g;
    size_t it, n;

    p3d_bytes_get(in, &f, sizeof(f));
    p3d_bytes_get(in, &g, sizeof(g));
    if (in->bad || g.n_iter < 0 || g.n_lbl < 0 || g.n_lbl > P3D_LBL_COUNT)
        return -1;
    tl->n_ops = (size_t)f.n_ops;
    tl->n_placed = (size_t)f.n_placed;
    tl->peak_mem = f.peak_mem;
    tl->kwin_on = f.kwin_on;
    tl->windowed = f.windowed;
    tl->src = f.src;
    *has_compute = f.has_compute;
    tl->period = (size_t)g.period;
    tl->n_iter = g.n_iter;
    tl->it_mono = g.it_mono;
    tl->n_lbl = g.n_lbl;
    memcpy(tl->lbl, g.lbl, sizeof(g.lbl));
    it = (size_t)g.n_iter + 1;
    tl->it_op = p3d_tl_arr(in, it * sizeof(*tl->it_op));
    tl->it_t = p3d_tl_arr(in, it * sizeof(*tl->it_t));
    tl->br = p3d_tl_arr(in, it * sizeof(*tl->br));
    tl->br_lbl = p3d_tl_arr(in, (it * (size_t)g.n_lbl + 1) *
                                    sizeof(*tl->br_lbl));
    tl->it_fwd = p3d_tl_arr(in, it * sizeof(*tl->it_fwd));
    tl->it_wrap = p3d_tl_arr(in, it * sizeof(*tl->it_wrap));
    p3d_ivs_free(&tl->kwin);
    tl->kwin.v = p3d_bytes_get_arr(in, &n);
    tl->kwin.n = tl->kwin.cap = n / sizeof(*tl->kwin.v);
    return in->bad ? -1 : 0;
}
