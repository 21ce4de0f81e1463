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

static int64_t p3d_wait_steady_start(const struct p3d_time_res *t)
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

static void p3d_wait_inst(const struct p3d_job *job, struct p3d_time_res *t,
                          const struct p3d_itab *it, size_t k, int64_t t0,
                          int *late_n)
{
    const struct p3d_inst *in = &it->inst[k];
    int64_t last = INT64_MIN, sum = 0;
    int late = -1, lbl = job->comms[in->gcomm].label;

    if (in->n < 2 || in->n != job->comms[in->gcomm].size)
        return;
    for (int e = in->first; e >= 0; e = it->ents[e].next) {
        const struct p3d_top *o = P3D_OPP(t, it->ents[e].r);
        if (o->s < t0)
            return;
        if (o->s > last) {
            last = o->s;
            late = it->ents[e].r.tl;
        }
    }
    for (int e = in->first; e >= 0; e = it->ents[e].next) {
        int64_t w = last - P3D_OPP(t, it->ents[e].r)->s;
        if (p3d_wait_layer(lbl))
            t->tl[it->ents[e].r.tl].suffered_wait += w;
        sum += w;
    }
    if (p3d_wait_layer(lbl)) {
        t->tl[late].caused_wait += sum;
        t->tl[late].late_count++;
    }
    t->nxn_ms[lbl] += (double)sum / 1e6;
    late_n[lbl * t->n + late]++;
    t->n_wait_inst++;
}

static void p3d_wait_pair(const struct p3d_job *job, struct p3d_time_res *t,
                          const struct p3d_pair2 *p, int64_t t0)
{
    const struct p3d_top *sd, *rv;
    int64_t d;

    if (p->have != 3)
        return;
    sd = P3D_OPP(t, p->send);
    rv = P3D_OPP(t, p->recv);
    if (sd->s < t0 || rv->s < t0 ||
        p3d_time_stage(job, t->tl[p->send.tl].rank) ==
            p3d_time_stage(job, t->tl[p->recv.tl].rank))
        return;
    d = sd->s - rv->s;
    t->n_p2p++;
    if (d > 0) {
        t->tl[p->send.tl].caused_p2p += d;
        t->late_sender_ms += (double)d / 1e6;
    } else if (d < 0) {
        t->tl[p->recv.tl].caused_p2p -= d;
        t->late_receiver_ms -= (double)d / 1e6;
    }
}

/*
 * Bus bandwidth per label from the transfer proxy (TraceLens, Megatron-
 * Bridge): a collective's time is its shortest member's kernel, the rest
 * being waiting; a Send/Recv's is the receive after both started.  The
 * best is the fastest instance of 64 KiB or more.
 */
static void p3d_bw_add(struct p3d_time_res *t, double *bytes, double *ns,
                       int lbl, double b, int64_t d, uint64_t raw)
{
    if (d <= 0 || b <= 0)
        return;
    bytes[lbl] += b;
    ns[lbl] += (double)d;
    if (raw >= 65536 && b / (double)d > t->best_busbw) {
        t->best_busbw = b / (double)d;
        t->best_lbl = lbl;
    }
}

static void p3d_wait_busbw(const struct p3d_job *job, struct p3d_time_res *t,
                           const struct p3d_itab *it)
{
    double bytes[P3D_LBL_COUNT] = {0}, ns[P3D_LBL_COUNT] = {0};

    for (size_t k = 0; k < it->n_inst; k++) {
        const struct p3d_inst *in = &it->inst[k];
        const struct p3d_gcomm *g = &job->comms[in->gcomm];
        const struct p3d_top *o = P3D_OPP(t, it->ents[in->first].r);
        int64_t d = INT64_MAX;
        if (in->n != g->size)
            continue;
        for (int e = in->first; e >= 0; e = it->ents[e].next) {
            const struct p3d_top *x = P3D_OPP(t, it->ents[e].r);
            if (!x->has_gpu)
                d = 0;
            d = x->e - x->s < d ? x->e - x->s : d;
        }
        p3d_bw_add(t, bytes, ns, g->label, p3d_bw_bytes(o->op, g->size,
                   (double)o->bytes) * p3d_bw_factor(o->op, g->size), d,
                   o->bytes);
    }
    for (size_t k = 0; k < it->n_pairs; k++) {
        const struct p3d_pair2 *p = &it->pairs[k];
        const struct p3d_top *sd, *rv;
        if (p->have != 3)
            continue;
        sd = P3D_OPP(t, p->send);
        rv = P3D_OPP(t, p->recv);
        if (sd->has_gpu && rv->has_gpu && rv->gcomm >= 0)
            p3d_bw_add(t, bytes, ns, job->comms[rv->gcomm].label,
                       (double)rv->bytes, p3d_bubble_split(sd->s, rv->s,
                                                           rv->e).transfer,
                       rv->bytes);
    }
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        t->busbw[l] = ns[l] > 0 ? bytes[l] / ns[l] : 0;
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
 * every rank of its stage, so they rank only jobs without layer groups.
 */
static void p3d_wait_rank_list(struct p3d_time_res *t)
{
    int64_t layer = 0;

    for (int i = 0; i < t->n; i++)
        layer += t->tl[i].caused_wait;
    t->strag = p3d_xcalloc((size_t)t->n + 1, sizeof(*t->strag));
    t->strag_p2p = !layer;
    for (int i = 0; i < t->n; i++) {
        struct p3d_tstrag *s = &t->strag[t->n_strag++];
        s->rank = t->tl[i].rank;
        s->p2p_ms = (double)t->tl[i].caused_p2p / 1e6;
        s->caused_ms = (double)(layer ? t->tl[i].caused_wait
                                      : t->tl[i].caused_p2p) / 1e6;
        s->suffered_ms = (double)t->tl[i].suffered_wait / 1e6;
        s->late_count = t->tl[i].late_count;
    }
    qsort(t->strag, (size_t)t->n_strag, sizeof(*t->strag), p3d_strag_cmp);
}

void p3d_wait_all(struct p3d_job *job, struct p3d_time_res *t)
{
    struct p3d_itab it;
    int64_t t0 = t->n_iter ? p3d_wait_steady_start(t) : INT64_MIN;
    int *late_n = p3d_xcalloc((size_t)P3D_LBL_COUNT * (size_t)t->n + 1,
                              sizeof(*late_n));

    p3d_itab_build(t, &it);
    t->n_inst = it.n_inst;
    for (size_t k = 0; k < it.n_inst; k++)
        p3d_wait_inst(job, t, &it, k, t0, late_n);
    for (size_t k = 0; k < it.n_pairs; k++)
        p3d_wait_pair(job, t, &it.pairs[k], t0);
    for (int l = 0; l < P3D_LBL_COUNT; l++) {
        int best = 0;
        t->late_rank[l] = -1;
        for (int i = 0; i < t->n; i++)
            if (late_n[l * t->n + i] > best) {
                best = late_n[l * t->n + i];
                t->late_rank[l] = t->tl[i].rank;
            }
    }
    p3d_wait_rank_list(t);
    p3d_wait_busbw(job, t, &it);
    p3d_itab_free(&it);
    free(late_n);
}
