/*
 * p3d_clock_solve.c - the host clock offsets from causality bounds
 * (p3d_clock_solve.h): a dense table and Floyd-Warshall up to
 * P3D_CBOUNDS_DENSE hosts, the bounds kept sparse and Bellman-Ford
 * beyond.
 *
 * lo[a][b] keeps the largest bound D[b] - D[a] >= v over all instances;
 * so D[b] - D[a] lies in [lo[a][b], -lo[b][a]], whose width is the
 * smallest wake-up latency seen.  U[a][b] >= D[b] - D[a] is -lo[b][a]
 * (an edge a -> b of that weight), tightened through every chain of
 * hosts (shortest paths).  Each host is put in the middle of its
 * bracket against host 0, [-U[b][0], U[0][b]]; half the bracket is its
 * uncertainty.  Hosts with no bracket keep the anchor-only estimate.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_bytes.h"
#include "p3d_clock_solve.h"
#include "p3d_map.h"
#include "p3d_util.h"

#define P3D_NOBOUND INT64_MAX

/*
 * Bounds that contradict each other around a cycle of hosts make the
 * chains ever shorter: sums stop at P3D_FLOOR (-73 years) instead of
 * overflowing, and such a host's bracket comes out negative.
 */
#define P3D_FLOOR (INT64_MIN / 4)

struct p3d_cedge { /* sparse: the bound D[b] - D[a] >= lo */
    int a, b, cnt;
    int64_t lo;
};

struct p3d_cbounds {
    int nh, sparse;
    int64_t *lo; /* dense: [a * nh + b] */
    int *cnt;
    struct p3d_cedge *e; /* sparse */
    size_t n_e, cap_e;
    struct p3d_map idx;  /* (a << 32 | b) -> e index */
};

static int64_t p3d_clock_sum(int64_t x, int64_t y)
{
    int64_t r;

    if (__builtin_add_overflow(x, y, &r) || r < P3D_FLOOR)
        return P3D_FLOOR;
    return r;
}

struct p3d_cbounds *p3d_cbounds_new(int nh, int sparse)
{
    struct p3d_cbounds *c = p3d_xcalloc(1, sizeof(*c));

    c->nh = nh;
    c->sparse = sparse || nh > P3D_CBOUNDS_DENSE;
    if (!c->sparse) {
        c->lo = p3d_xcalloc((size_t)nh * (size_t)nh, sizeof(*c->lo));
        c->cnt = p3d_xcalloc((size_t)nh * (size_t)nh, sizeof(*c->cnt));
    }
    return c;
}

/* Bound (a, b, v) seen n times. */
static void p3d_cbounds_add_n(struct p3d_cbounds *c, int a, int b, int64_t v,
                              int n)
{
    int64_t *lo;
    int *cnt, added = 0;

    if (a == b)
        return;
    if (c->sparse) {
        size_t i = p3d_map_index(&c->idx, (uint64_t)a << 32 | (uint32_t)b,
                                 (void **)&c->e, &c->n_e, &c->cap_e,
                                 sizeof(*c->e), &added);
        c->e[i].a = a;
        c->e[i].b = b;
        lo = &c->e[i].lo;
        cnt = &c->e[i].cnt;
    } else {
        lo = &c->lo[(size_t)a * (size_t)c->nh + (size_t)b];
        cnt = &c->cnt[(size_t)a * (size_t)c->nh + (size_t)b];
    }
    if (!*cnt || v > *lo)
        *lo = v;
    *cnt += n;
}

void p3d_cbounds_add(struct p3d_cbounds *c, int a, int b, int64_t v)
{
    p3d_cbounds_add_n(c, a, b, v, 1);
}

struct p3d_cbound_msg {
    int32_t a, b, cnt;
    int64_t lo;
};

static void p3d_cbound_put(struct p3d_bytes *out, int a, int b, int cnt,
                           int64_t lo)
{
    struct p3d_cbound_msg m;

    memset(&m, 0, sizeof(m));
    m.a = a;
    m.b = b;
    m.cnt = cnt;
    m.lo = lo;
    p3d_bytes_put(out, &m, sizeof(m));
}

void p3d_cbounds_pack(const struct p3d_cbounds *c, struct p3d_bytes *b)
{
    uint64_t n = 0;
    size_t at = b->n;

    p3d_bytes_put(b, &n, sizeof(n)); /* the count, set below */
    for (size_t i = 0; c->sparse && i < c->n_e; i++, n++)
        p3d_cbound_put(b, c->e[i].a, c->e[i].b, c->e[i].cnt, c->e[i].lo);
    for (size_t x = 0; !c->sparse && x < (size_t)c->nh * (size_t)c->nh; x++)
        if (c->cnt[x]) {
            p3d_cbound_put(b, (int)(x / (size_t)c->nh),
                           (int)(x % (size_t)c->nh), c->cnt[x], c->lo[x]);
            n++;
        }
    memcpy(b->p + at, &n, sizeof(n));
}

int p3d_cbounds_merge(struct p3d_cbounds *c, struct p3d_bytes_in *in)
{
    uint64_t n = 0;
    struct p3d_cbound_msg m;

    p3d_bytes_get(in, &n, sizeof(n));
    for (uint64_t i = 0; i < n && !in->bad; i++) {
        p3d_bytes_get(in, &m, sizeof(m));
        if (in->bad || m.a < 0 || m.b < 0 || m.a >= c->nh || m.b >= c->nh)
            return -1;
        p3d_cbounds_add_n(c, m.a, m.b, m.lo, m.cnt);
    }
    return in->bad ? -1 : 0;
}

/* Host b's solution from its bracket [lo_b, hi] against host 0. */
static void p3d_csol_set(struct p3d_csol *s, int64_t lo_b, int64_t hi,
                         int n_inst)
{
    if (hi == P3D_NOBOUND || lo_b == P3D_NOBOUND)
        return;
    s->d = lo_b + (hi - lo_b) / 2;
    s->uncert = hi >= lo_b ? (hi - lo_b) / 2 : (lo_b - hi) / 2;
    s->contra = hi >= lo_b ? 0 : lo_b - hi;
    s->n_inst = n_inst;
    s->solved = 1;
}

static void p3d_cbounds_dense(const struct p3d_cbounds *c,
                              struct p3d_csol *sol)
{
    int nh = c->nh;
    const int64_t *lo = c->lo;
    const int *cnt = c->cnt;
    int64_t *u = p3d_xcalloc((size_t)nh * (size_t)nh, sizeof(*u));

    for (int a = 0; a < nh; a++)
        for (int b = 0; b < nh; b++)
            u[a * nh + b] = a == b ? 0 : cnt[b * nh + a] ? -lo[b * nh + a]
                                                           : P3D_NOBOUND;
    for (int k = 0; k < nh; k++)
        for (int a = 0; a < nh; a++)
            for (int b = 0; b < nh; b++)
                if (u[a * nh + k] != P3D_NOBOUND &&
                    u[k * nh + b] != P3D_NOBOUND &&
                    p3d_clock_sum(u[a * nh + k], u[k * nh + b]) <
                        u[a * nh + b])
                    u[a * nh + b] = p3d_clock_sum(u[a * nh + k],
                                                  u[k * nh + b]);
    for (int b = 1; b < nh; b++)
        p3d_csol_set(&sol[b],
                     u[b * nh] == P3D_NOBOUND ? P3D_NOBOUND : -u[b * nh],
                     u[b], cnt[b] + cnt[b * nh]);
    free(u);
}

/* The ends of bound e as an edge: b -> a, or against it (rev). */
static void p3d_cedge_ends(const struct p3d_cedge *e, int rev, int *from,
                           int *to)
{
    *from = rev ? e->a : e->b;
    *to = rev ? e->b : e->a;
}

/* One Bellman-Ford round from the edges' `from` ends; 1 if a distance
 * fell.  hit (optional) marks the hosts whose distance fell. */
static int p3d_cbounds_round(const struct p3d_cbounds *c, int rev,
                             int64_t *dist, uint8_t *hit)
{
    int changed = 0;

    for (size_t i = 0; i < c->n_e; i++) {
        const struct p3d_cedge *e = &c->e[i];
        int from, to;
        int64_t nd;
        p3d_cedge_ends(e, rev, &from, &to);
        if (dist[from] == P3D_NOBOUND)
            continue;
        nd = p3d_clock_sum(dist[from], -e->lo);
        if (nd < dist[to]) {
            dist[to] = nd;
            changed = 1;
            if (hit)
                hit[to] = 1;
        }
    }
    return changed;
}

/*
 * Shortest paths from host 0 (Bellman-Ford, at most nh - 1 rounds): along
 * the edges b -> a of weight -lo for each bound (a, b, lo), or against
 * them (rev): U[0][h], or U[h][0].  Where distances still fall after
 * that, bounds contradict around a cycle: the hosts they fall on, and
 * every host reachable from those, are marked in neg (their distances
 * mean nothing).
 */
static void p3d_cbounds_paths(const struct p3d_cbounds *c, int rev,
                              int64_t *dist, uint8_t *neg)
{
    int changed = 1, round;

    for (int h = 0; h < c->nh; h++)
        dist[h] = h ? P3D_NOBOUND : 0;
    for (round = 0; round < c->nh - 1 && changed; round++)
        changed = p3d_cbounds_round(c, rev, dist, NULL);
    if (!changed || !p3d_cbounds_round(c, rev, dist, neg))
        return;
    for (changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < c->n_e; i++) {
            int from, to;
            p3d_cedge_ends(&c->e[i], rev, &from, &to);
            if (neg[from] && !neg[to])
                neg[to] = changed = 1;
        }
    }
}

static int p3d_cbounds_count(const struct p3d_cbounds *c, int a, int b)
{
    int i = p3d_map_get(&c->idx, (uint64_t)a << 32 | (uint32_t)b);

    return i < 0 ? 0 : c->e[i].cnt;
}

/*
 * A host that contradicting bounds reach keeps its anchor estimate and is
 * reported as contradicted beyond any meaning (P3D_FLOOR's magnitude):
 * Floyd-Warshall's figures there compound around the cycle just the
 * same, but its table does not say which hosts the cycle reaches.
 */
static int p3d_cedge_cmp(const void *x, const void *y)
{
    const struct p3d_cedge *a = x, *b = y;

    return P3D_CMP(a->a, b->a) ?: P3D_CMP(a->b, b->b);
}

static void p3d_cbounds_sparse(const struct p3d_cbounds *c,
                               struct p3d_csol *sol)
{
    size_t n = (size_t)c->nh + 1;
    int64_t *hi = p3d_xcalloc(n, sizeof(*hi));
    int64_t *back = p3d_xcalloc(n, sizeof(*back));
    uint8_t *neg = p3d_xcalloc(n, 1);
    struct p3d_cbounds sorted = *c;

    /* The edges in host-pair order, not the order the bounds were first
     * seen in (which depends on how the folding was split over
     * processes).  Bellman-Ford's distances, and the hosts a
     * contradiction reaches, do not depend on that order; where sums
     * stop at P3D_FLOOR they might, and this rules it out. */
    sorted.e = p3d_xcalloc(c->n_e + 1, sizeof(*sorted.e));
    if (c->n_e)
        memcpy(sorted.e, c->e, c->n_e * sizeof(*c->e));
    qsort(sorted.e, c->n_e, sizeof(*sorted.e), p3d_cedge_cmp);
    p3d_cbounds_paths(&sorted, 0, hi, neg);
    p3d_cbounds_paths(&sorted, 1, back, neg);
    free(sorted.e);
    for (int b = 1; b < c->nh; b++) {
        int k = p3d_cbounds_count(c, 0, b) + p3d_cbounds_count(c, b, 0);
        if (neg[b]) {
            sol[b] = (struct p3d_csol){0, 0, -(P3D_FLOOR), k, 1};
            continue;
        }
        p3d_csol_set(&sol[b],
                     back[b] == P3D_NOBOUND ? P3D_NOBOUND : -back[b], hi[b],
                     k);
    }
    P3D_FREE_ALL(hi, back, neg);
}

void p3d_cbounds_solve(const struct p3d_cbounds *c, struct p3d_csol *sol)
{
    for (int h = 0; h < c->nh; h++)
        sol[h] = (struct p3d_csol){0, 0, 0, 0, 0};
    if (c->sparse)
        p3d_cbounds_sparse(c, sol);
    else
        p3d_cbounds_dense(c, sol);
}

void p3d_cbounds_free(struct p3d_cbounds *c)
{
    if (!c)
        return;
    free(c->lo);
    free(c->cnt);
    free(c->e);
    p3d_map_free(&c->idx);
    free(c);
}
