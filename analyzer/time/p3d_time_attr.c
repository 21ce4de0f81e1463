/*
 * p3d_time_attr.c - give ops GPU times from NCCL busy spans when the
 * trace has no GPU_OP records (CUPTI saw the kernels but could not link
 * them to calls).
 *
 * An op's stream (a cudaStream_t value) and a span's stream (CUPTI's
 * stream id) are different names, so op streams are first paired with
 * span streams: for each pair, ops are walked in call order against the
 * spans in time order (a kernel starts after its call entered; the ops of
 * one ncclGroupStart/End share one launch), and the pairing that places
 * the most ops within a second of their call wins.  The same walk then
 * sets the ops' GPU intervals.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

#define P3D_ATTR_MAX_LAG 1000000000LL /* call to kernel start */

struct p3d_sstream {
    uint64_t id;
    size_t *sp; /* indexes into nsp_raw, by start */
    size_t n, cap;
    int used;
};

static __thread const struct p3d_ivs *p3d_attr_spans; /* for qsort */

static int p3d_attr_cmp(const void *a, const void *b)
{
    const struct p3d_iv *x = &p3d_attr_spans->v[*(const size_t *)a];
    const struct p3d_iv *y = &p3d_attr_spans->v[*(const size_t *)b];

    return x->s < y->s ? -1 : x->s > y->s;
}

static int p3d_attr_streams(struct p3d_tl *tl, struct p3d_sstream **out)
{
    struct p3d_sstream *ss = NULL;
    size_t cap = 0;
    int n = 0;

    for (size_t i = 0; i < tl->nsp_raw.n; i++) {
        int k;
        for (k = 0; k < n && ss[k].id != tl->nsp_stream[i]; k++)
            ;
        if (k == n) {
            cap = p3d_grow((void **)&ss, cap, (size_t)n, sizeof(*ss));
            ss[n++].id = tl->nsp_stream[i];
        }
        ss[k].cap = p3d_grow((void **)&ss[k].sp, ss[k].cap, ss[k].n,
                             sizeof(size_t));
        ss[k].sp[ss[k].n++] = i;
    }
    p3d_attr_spans = &tl->nsp_raw;
    for (int k = 0; k < n; k++)
        qsort(ss[k].sp, ss[k].n, sizeof(size_t), p3d_attr_cmp);
    *out = ss;
    return n;
}

/* Walk the ops of op stream `os` against span stream ss; set times if
 * apply.  Returns the number of ops placed within the lag. */
static size_t p3d_attr_walk(struct p3d_tl *tl, const struct p3d_topx *x,
                            uint64_t os, const struct p3d_sstream *ss,
                            int apply)
{
    const struct p3d_iv *v = tl->nsp_raw.v;
    size_t j = 0, good = 0, last = (size_t)-1;
    uint32_t last_group = 0;

    for (size_t i = 0; i < tl->n_ops; i++) {
        struct p3d_top *t = &tl->ops[i];
        size_t k;
        if (x[i].stream != os)
            continue;
        if (x[i].group_id && x[i].group_id == last_group &&
            last != (size_t)-1) {
            k = last;
        } else {
            while (j < ss->n && v[ss->sp[j]].e < t->h0)
                j++;
            if (j == ss->n)
                break;
            k = j++;
        }
        last = k;
        last_group = x[i].group_id;
        if (v[ss->sp[k]].s - t->h0 < P3D_ATTR_MAX_LAG)
            good++;
        if (apply) {
            t->s = v[ss->sp[k]].s > t->h0 ? v[ss->sp[k]].s : t->h0;
            t->e = v[ss->sp[k]].e;
            t->has_gpu = 1;
        }
    }
    return good;
}

/* Distinct op streams, in first-use order. */
static int p3d_attr_opstreams(const struct p3d_tl *tl,
                              const struct p3d_topx *x, uint64_t **out)
{
    uint64_t *os = NULL;
    size_t cap = 0;
    int n = 0;

    for (size_t i = 0; i < tl->n_ops; i++) {
        int k;
        for (k = 0; k < n && os[k] != x[i].stream; k++)
            ;
        if (k < n)
            continue;
        cap = p3d_grow((void **)&os, cap, (size_t)n, sizeof(*os));
        os[n++] = x[i].stream;
    }
    *out = os;
    return n;
}

void p3d_time_attribute(struct p3d_tl *tl, const struct p3d_topx *x)
{
    struct p3d_sstream *ss;
    uint64_t *os;
    int n_ss = p3d_attr_streams(tl, &ss);
    int n_os = p3d_attr_opstreams(tl, x, &os);

    for (int round = 0; round < n_os; round++) {
        size_t best = 0;
        int bo = -1, bs = -1;
        for (int a = 0; a < n_os; a++)
            for (int b = 0; b < n_ss; b++) {
                size_t g;
                if (ss[b].used || os[a] == (uint64_t)-1)
                    continue;
                g = p3d_attr_walk(tl, x, os[a], &ss[b], 0);
                if (g > best) {
                    best = g;
                    bo = a;
                    bs = b;
                }
            }
        if (bo < 0)
            break;
        p3d_attr_walk(tl, x, os[bo], &ss[bs], 1);
        ss[bs].used = 1;
        os[bo] = (uint64_t)-1;
    }
    for (int b = 0; b < n_ss; b++)
        free(ss[b].sp);
    free(ss);
    free(os);
}

void p3d_time_span_sums(struct p3d_time_res *t, const struct p3d_tl *tl)
{
    if (!t->span_gpu || tl->src != P3D_TSRC_SPAN)
        return;
    for (size_t i = 0; i < tl->n_ops; i++) {
        const struct p3d_top *o = &tl->ops[i];
        uint64_t *c;
        if (!o->has_gpu || o->gcomm < 0 || o->gcomm >= t->n_span_comms ||
            o->op >= P3D_OP_COUNT || o->e <= o->s)
            continue;
        c = &t->span_gpu[((size_t)o->gcomm * P3D_OP_COUNT + o->op) * 3];
        __atomic_add_fetch(&c[0], 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&c[1], o->bytes, __ATOMIC_RELAXED);
        __atomic_add_fetch(&c[2], (uint64_t)(o->e - o->s), __ATOMIC_RELAXED);
    }
}

void p3d_time_span_fill(struct p3d_job *job, const struct p3d_time_res *t)
{
    for (int g = 0; t->span_gpu && g < t->n_span_comms && g < job->n_comms;
         g++)
        for (int k = 0; k < P3D_OP_COUNT; k++) {
            const uint64_t *c =
                &t->span_gpu[((size_t)g * P3D_OP_COUNT + (size_t)k) * 3];
            struct p3d_opstat *st = &job->comms[g].st[k];
            if (!c[0] || st->gpu_calls)
                continue; /* none placed, or times from GPU_OP records */
            st->gpu_calls = c[0];
            st->gpu_bytes = c[1];
            st->gpu_ns = c[2];
            job->comms[g].gpu_placed = 1;
        }
}
