/*
 * p3d_wait.c - wait states (Scalasca patterns on NCCL ops) and
 * stragglers.
 *
 * Per collective instance of the steady iterations: wait at NxN of member
 * i = latest start - own start, the late rank = the argmax of the starts,
 * charged with the waiting it caused (layer groups only, see
 * p3d_wait_layer).  Per pipeline Send/Recv pair: Late
 * Sender (send start - recv start) charged to the sender, Late Receiver
 * (recv start - send start) to the receiver.  Starts are GPU kernel starts
 * when known, else host call entries.  Stragglers are ranks ordered by
 * the waiting they caused others (p3d_wait_rank_list).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_bw.h"
#include "p3d_time.h"
#include "p3d_util.h"

/*
 * Every sum here is of integers (ns, bytes), turned into ms or bytes/ns
 * once, at the end: so the figures do not depend on the order in which
 * instances are folded (a double sum does), which is what lets the
 * folding be split by communicator over several processes.  Bus bytes
 * are kept raw per communicator and op, and weighed by their nccl-tests
 * factor at the end, in communicator order.
 */
struct p3d_wctx {
    const struct p3d_job *job;
    int64_t t0; /* start of the steady iterations */
    int *late_n; /* [label][timeline] instances it arrived last at */
    uint64_t *raw; /* [gcomm][op + 1] bytes of timed instances; op
                      P3D_OP_COUNT: of timed send/recv pairs */
    int64_t ns[P3D_LBL_COUNT];    /* their shortest member's time */
    int64_t nxn_ns[P3D_LBL_COUNT]; /* wait at NxN, steady */
    int64_t late_sender_ns, late_receiver_ns;
    uint64_t best_key;
};

int64_t p3d_wait_steady_start(const struct p3d_time_res *t)
{
    int64_t m = INT64_MAX;

    for (int i = 0; i < t->n; i++) {
        int64_t s, e;
        if (p3d_time_window(&t->tl[i], t->warm, &s, &e) && s < m)
            m = s;
    }
    return m;
}

/*
 * Groups synchronised inside the layers (TP, CP, EP).  Waits at the
 * step-level collectives (DP gradients, optimizer, MP/WORLD) mostly show
 * a rank's place in the pipeline schedule, not its speed, so they are
 * reported per group but not charged to stragglers.
 */
static int p3d_wait_layer(int lbl)
{
    return lbl == P3D_LBL_TP || lbl == P3D_LBL_CP || lbl == P3D_LBL_EP ||
           lbl == P3D_LBL_TP_CP;
}

/*
 * Bus bandwidth per label from the transfer proxy (TraceLens, Megatron-
 * Bridge): a collective's time is its shortest member's kernel, the rest
 * being waiting; a Send/Recv's is the receive after both started.  The
 * best is the fastest instance of 64 KiB or more (the first in creation
 * order, key, among equals).
 */
static void p3d_bw_add(struct p3d_time_res *t, struct p3d_wctx *w,
                       int gcomm, int op, int lbl, double b, int64_t d,
                       uint64_t raw, uint64_t key)
{
    double v;

    if (d <= 0 || b <= 0)
        return;
    w->raw[(size_t)gcomm * (P3D_OP_COUNT + 1) + (size_t)op] += raw;
    w->ns[lbl] += d;
    v = b / (double)d;
    if (raw >= 65536 && (v > t->best_busbw ||
                         (v == t->best_busbw && key < w->best_key))) {
        t->best_busbw = v;
        t->best_lbl = lbl;
        w->best_key = key;
    }
}

/* Wait at NxN of one full instance of the steady iterations. */
static void p3d_wait_nxn(const struct p3d_job *job, struct p3d_time_res *t,
                         struct p3d_wctx *w, const struct p3d_jgrp *g,
                         size_t k)
{
    const struct p3d_jrec *r = &g->rec[k];
    int64_t last = INT64_MIN, sum = 0;
    int late = -1, lbl = job->comms[g->gcomm].label;
    int kind = p3d_wait_layer(lbl) ? P3D_TW_LAYER : P3D_TW_STEP;

    if (r->n < 2 || r->n != job->comms[g->gcomm].size || r->dup)
        return;
    for (int sl = g->m - 1; sl >= 0; sl--) { /* highest timeline first */
        size_t x = p3d_jx(g, k, sl);
        if (!(g->f[x] & 1))
            continue;
        if (g->s[x] < w->t0)
            return;
        if (g->s[x] > last) {
            last = g->s[x];
            late = g->tl[sl];
        }
    }
    for (int sl = 0; sl < g->m; sl++) {
        size_t x = p3d_jx(g, k, sl);
        int64_t d;
        if (!(g->f[x] & 1))
            continue;
        d = last - g->s[x];
        t->tl[g->tl[sl]].nxn[kind].suffered += d;
        sum += d;
    }
    t->tl[late].nxn[kind].caused += sum;
    t->tl[late].nxn[kind].late++;
    w->nxn_ns[lbl] += sum;
    w->late_n[lbl * t->n + late]++;
    t->n_wait_inst++;
}

static void p3d_wait_inst(void *ctx, const struct p3d_join *j,
                          const struct p3d_jgrp *g, size_t k)
{
    const struct p3d_job *job = j->job;
    struct p3d_wctx *w = ctx;
    const struct p3d_gcomm *c = &job->comms[g->gcomm];
    const struct p3d_jrec *r = &g->rec[k];
    int64_t d = INT64_MAX;

    j->t->n_inst++;
    p3d_wait_nxn(job, j->t, w, g, k);
    if (r->n != c->size)
        return;
    for (int sl = 0; sl < g->m; sl++) {
        size_t x = p3d_jx(g, k, sl);
        if (!(g->f[x] & 1))
            continue;
        if (!(g->f[x] & 2))
            d = 0;
        d = g->e[x] - g->s[x] < d ? g->e[x] - g->s[x] : d;
    }
    p3d_bw_add(j->t, w, g->gcomm, r->op, c->label,
               p3d_bw_bytes(r->op, c->size, (double)r->bytes) *
                   p3d_bw_factor(r->op, c->size),
               d, r->bytes, r->ckey);
}

static void p3d_wait_pair(void *ctx, const struct p3d_join *j,
                          const struct p3d_jgrp *g, size_t k)
{
    const struct p3d_job *job = j->job;
    struct p3d_time_res *t = j->t;
    struct p3d_wctx *w = ctx;
    size_t xs = p3d_jx(g, k, 0), xr = p3d_jx(g, k, 1);
    int64_t ss = g->s[xs], rs = g->s[xr], re = g->e[xr];
    int64_t d;

    if (!(g->f[xs] & 1) || !(g->f[xr] & 1))
        return;
    if ((g->f[xs] & 2) && (g->f[xr] & 2))
        p3d_bw_add(t, w, g->gcomm, P3D_OP_COUNT, job->comms[g->gcomm].label,
                   (double)g->rec[k].bytes,
                   p3d_bubble_split(ss, rs, re).transfer, g->rec[k].bytes,
                   g->rec[k].ckey | 1ull << 63);
    if (ss < w->t0 || rs < w->t0 ||
        p3d_time_stage(job, t->tl[g->tl[0]].rank) ==
            p3d_time_stage(job, t->tl[g->tl[1]].rank))
        return;
    d = ss - rs;
    t->n_p2p++;
    if (d > 0) {
        t->tl[g->tl[0]].caused_p2p += d;
        w->late_sender_ns += d;
    } else if (d < 0) {
        t->tl[g->tl[1]].caused_p2p -= d;
        w->late_receiver_ns -= d;
    }
}

void *p3d_wait_begin(struct p3d_time_res *t, struct p3d_join *j)
{
    struct p3d_wctx *w = p3d_xcalloc(1, sizeof(*w));

    w->t0 = t->n_iter ? p3d_wait_steady_start(t) : INT64_MIN;
    w->late_n = p3d_xcalloc((size_t)P3D_LBL_COUNT * (size_t)t->n + 1,
                            sizeof(*w->late_n));
    w->job = j->job;
    w->raw = p3d_xcalloc((size_t)w->job->n_comms * (P3D_OP_COUNT + 1) + 1,
                         sizeof(*w->raw));
    w->best_key = UINT64_MAX;
    p3d_join_use(j, p3d_wait_inst, p3d_wait_pair, w);
    return w;
}

/* What the wait states keep per timeline, as sums: [timeline][7]. */
enum { P3D_WT_N = 7 };

static uint64_t *p3d_wait_per_tl(const struct p3d_time_res *t)
{
    uint64_t *v = p3d_xcalloc((size_t)t->n * P3D_WT_N + 1, sizeof(*v));

    for (int i = 0; i < t->n; i++) {
        const struct p3d_tl *l = &t->tl[i];
        uint64_t *x = &v[(size_t)i * P3D_WT_N];
        for (int k = 0; k < 2; k++) {
            x[3 * k] = (uint64_t)l->nxn[k].caused;
            x[3 * k + 1] = (uint64_t)l->nxn[k].suffered;
            x[3 * k + 2] = (uint64_t)l->nxn[k].late;
        }
        x[6] = (uint64_t)l->caused_p2p;
    }
    return v;
}

/* The late counts as sums ([label][timeline]). */
static uint64_t *p3d_wait_late(const struct p3d_time_res *t,
                               const struct p3d_wctx *w)
{
    size_t n = (size_t)P3D_LBL_COUNT * (size_t)t->n;
    uint64_t *v = p3d_xcalloc(n + 1, sizeof(*v));

    for (size_t i = 0; i < n; i++)
        v[i] = (uint64_t)w->late_n[i];
    return v;
}

struct p3d_wait_fixed { /* the sums and the best instance */
    uint64_t n_inst, n_wait_inst, n_p2p, best_key;
    int64_t ns[P3D_LBL_COUNT], nxn_ns[P3D_LBL_COUNT];
    int64_t late_sender_ns, late_receiver_ns;
    double best_busbw;
    int64_t best_lbl;
};

void p3d_wait_pack(const struct p3d_time_res *t, const void *ctx,
                   struct p3d_bytes *b)
{
    const struct p3d_wctx *w = ctx;
    struct p3d_wait_fixed f = {
        .n_inst = t->n_inst, .n_wait_inst = t->n_wait_inst,
        .n_p2p = t->n_p2p, .best_key = w->best_key,
        .late_sender_ns = w->late_sender_ns,
        .late_receiver_ns = w->late_receiver_ns,
        .best_busbw = t->best_busbw, .best_lbl = t->best_lbl};
    uint64_t *v;

    memcpy(f.ns, w->ns, sizeof(f.ns));
    memcpy(f.nxn_ns, w->nxn_ns, sizeof(f.nxn_ns));
    p3d_bytes_put(b, &f, sizeof(f));
    v = p3d_wait_per_tl(t);
    p3d_bytes_put_sums(b, v, (size_t)t->n * P3D_WT_N);
    free(v);
    v = p3d_wait_late(t, w);
    p3d_bytes_put_sums(b, v, (size_t)P3D_LBL_COUNT * (size_t)t->n);
    free(v);
    p3d_bytes_put_sums(b, w->raw, (size_t)w->job->n_comms * (P3D_OP_COUNT + 1));
}

int p3d_wait_merge(struct p3d_time_res *t, void *ctx, struct p3d_bytes_in *in)
{
    struct p3d_wctx *w = ctx;
    struct p3d_wait_fixed f;
    size_t n_late = (size_t)P3D_LBL_COUNT * (size_t)t->n;
    uint64_t *v = p3d_xcalloc((size_t)t->n * P3D_WT_N + n_late + 1,
                              sizeof(*v));

    p3d_bytes_get(in, &f, sizeof(f));
    p3d_bytes_add_sums(in, v, (size_t)t->n * P3D_WT_N);
    p3d_bytes_add_sums(in, v + (size_t)t->n * P3D_WT_N, n_late);
    p3d_bytes_add_sums(in, w->raw, (size_t)w->job->n_comms * (P3D_OP_COUNT + 1));
    if (in->bad || f.best_lbl < 0 || f.best_lbl >= P3D_LBL_COUNT) {
        free(v);
        return -1;
    }
    t->n_inst += f.n_inst;
    t->n_wait_inst += f.n_wait_inst;
    t->n_p2p += f.n_p2p;
    for (int l = 0; l < P3D_LBL_COUNT; l++) {
        w->ns[l] += f.ns[l];
        w->nxn_ns[l] += f.nxn_ns[l];
    }
    w->late_sender_ns += f.late_sender_ns;
    w->late_receiver_ns += f.late_receiver_ns;
    if (f.best_busbw > t->best_busbw ||
        (f.best_busbw == t->best_busbw && f.best_key < w->best_key)) {
        t->best_busbw = f.best_busbw; /* as p3d_bw_add chooses */
        t->best_lbl = (int)f.best_lbl;
        w->best_key = f.best_key;
    }
    for (int i = 0; i < t->n; i++) {
        struct p3d_tl *l = &t->tl[i];
        const uint64_t *x = &v[(size_t)i * P3D_WT_N];
        for (int k = 0; k < 2; k++) {
            l->nxn[k].caused += (int64_t)x[3 * k];
            l->nxn[k].suffered += (int64_t)x[3 * k + 1];
            l->nxn[k].late += (int64_t)x[3 * k + 2];
        }
        l->caused_p2p += (int64_t)x[6];
    }
    for (size_t i = 0; i < n_late; i++)
        w->late_n[i] += (int)v[(size_t)t->n * P3D_WT_N + i];
    free(v);
    return 0;
}

static int p3d_strag_cmp(const void *a, const void *b)
{
    const struct p3d_tstrag *x = a, *y = b;

    if (x->caused_ms != y->caused_ms)
        return x->caused_ms > y->caused_ms ? -1 : 1;
    return x->rank - y->rank;
}

/*
 * Rank by waiting caused in layer groups, where the slow member of a
 * group is seen directly; pipeline waits pass a slow rank's delay on to
 * every rank of its stage, so they rank only jobs without layer groups;
 * a job with neither (pure data parallel) has only its step-level
 * collectives, where with no pipeline the last to arrive is the slow one.
 */
static int p3d_wait_strag_by(const struct p3d_time_res *t)
{
    int64_t layer = 0;

    for (int i = 0; i < t->n; i++)
        layer += t->tl[i].nxn[P3D_TW_LAYER].caused;
    if (layer)
        return P3D_STRAG_LAYER;
    return t->n_p2p ? P3D_STRAG_P2P : P3D_STRAG_STEP;
}

static void p3d_wait_rank_list(struct p3d_time_res *t)
{
    t->strag = p3d_xcalloc((size_t)t->n + 1, sizeof(*t->strag));
    t->strag_by = p3d_wait_strag_by(t);
    for (int i = 0; i < t->n; i++) {
        const struct p3d_tl *l = &t->tl[i];
        const struct p3d_twait *w =
            &l->nxn[t->strag_by == P3D_STRAG_STEP ? P3D_TW_STEP
                                                  : P3D_TW_LAYER];
        struct p3d_tstrag *s = &t->strag[t->n_strag++];

        s->rank = l->rank;
        s->p2p_ms = (double)l->caused_p2p / 1e6;
        s->caused_ms = (double)(t->strag_by == P3D_STRAG_P2P
                                    ? l->caused_p2p : w->caused) / 1e6;
        s->suffered_ms = (double)w->suffered / 1e6;
        s->late_count = w->late;
    }
    qsort(t->strag, (size_t)t->n_strag, sizeof(*t->strag), p3d_strag_cmp);
}

int p3d_time_straggler(const struct p3d_time_res *t)
{
    if (t->n_strag < 2 || t->strag[0].caused_ms <= 0 ||
        t->strag[0].caused_ms < 1.5 * t->strag[1].caused_ms)
        return -1;
    return t->strag[0].rank;
}

/* Bus bandwidth per label: every communicator's bytes weighed by their
 * op's factor, in communicator order, over the time they took. */
static void p3d_wait_busbw(const struct p3d_job *job, struct p3d_time_res *t,
                           const struct p3d_wctx *w)
{
    double bytes[P3D_LBL_COUNT] = {0};

    for (int g = 0; g < w->job->n_comms; g++) {
        const struct p3d_gcomm *c = &job->comms[g];
        const uint64_t *raw = &w->raw[(size_t)g * (P3D_OP_COUNT + 1)];
        for (int op = 0; op < P3D_OP_COUNT; op++)
            if (raw[op])
                bytes[c->label] += p3d_bw_bytes(op, c->size, (double)raw[op]) *
                                   p3d_bw_factor(op, c->size);
        bytes[c->label] += (double)raw[P3D_OP_COUNT]; /* pairs */
    }
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        t->busbw[l] = w->ns[l] > 0 ? bytes[l] / (double)w->ns[l] : 0;
}

/* After pass 2 (p3d_wait_begin's folds): late ranks, stragglers,
 * bandwidths. */
void p3d_wait_end(struct p3d_time_res *t, void *ctx)
{
    struct p3d_wctx *w = ctx;

    for (int l = 0; l < P3D_LBL_COUNT; l++) {
        int best = 0;
        t->late_rank[l] = -1;
        for (int i = 0; i < t->n; i++)
            if (w->late_n[l * t->n + i] > best) {
                best = w->late_n[l * t->n + i];
                t->late_rank[l] = t->tl[i].rank;
            }
    }
    p3d_wait_rank_list(t);
    p3d_wait_busbw(w->job, t, w);
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        t->nxn_ms[l] = (double)w->nxn_ns[l] / 1e6;
    t->late_sender_ms = (double)w->late_sender_ns / 1e6;
    t->late_receiver_ms = (double)w->late_receiver_ns / 1e6;
    free(w->late_n);
    free(w->raw);
    free(w);
}
