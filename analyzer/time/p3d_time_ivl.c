/*
 * p3d_time_ivl.c - interval arithmetic for the time analysis: unions of
 * busy intervals and the measure of their overlaps, as the Megatron-Bridge
 * method and HTA define compute/NCCL/idle time (summed kernel durations
 * would count overlapping work twice).
 */
#include <stdlib.h>

#include "p3d_time.h"
#include "p3d_util.h"

void p3d_ivs_add(struct p3d_ivs *l, int64_t s, int64_t e)
{
    if (e <= s)
        return;
    if (l->n >= l->cap) /* a call per interval otherwise */
        l->cap = p3d_grow((void **)&l->v, l->cap, l->n, sizeof(*l->v));
    l->v[l->n].s = s;
    l->v[l->n].e = e;
    l->n++;
}

static int p3d_iv_cmp(const void *a, const void *b)
{
    const struct p3d_iv *x = a, *y = b;

    return x->s < y->s ? -1 : x->s > y->s;
}

void p3d_ivs_union(struct p3d_ivs *l)
{
    size_t k = 0;

    if (l->n < 2)
        return;
    for (size_t i = 1; i < l->n; i++)
        if (l->v[i].s < l->v[i - 1].s) { /* mostly in order already */
            qsort(l->v, l->n, sizeof(*l->v), p3d_iv_cmp);
            break;
        }
    for (size_t i = 1; i < l->n; i++) {
        if (l->v[i].s <= l->v[k].e) {
            if (l->v[i].e > l->v[k].e)
                l->v[k].e = l->v[i].e;
        } else {
            l->v[++k] = l->v[i];
        }
    }
    l->n = k + 1;
}

/* First interval of union u that ends after t. */
static size_t p3d_ivs_find(const struct p3d_ivs *u, int64_t t)
{
    return P3D_COUNT_LE(u->v, u->n, e, t);
}

/*
 * p3d_ivs_find from where the previous search (*hint) ended: callers walk
 * a window's ops or intervals with a start that only grows, so the
 * answer is usually at or just past the hint.  The union's ends ascend:
 * everything before the hint ends at or before t unless t went back
 * (then from the start).  Same answer as p3d_ivs_find.
 */
static size_t p3d_ivs_find_from(const struct p3d_ivs *u, int64_t t,
                                size_t *hint)
{
    size_t lo = *hint;

    if (lo > u->n || (lo > 0 && u->v[lo - 1].e > t))
        lo = 0;
    if (lo < u->n)
        lo = p3d_gallop(&u->v->e, sizeof(*u->v), u->n, lo, t, 0);
    *hint = lo;
    return lo;
}

static int64_t p3d_ivs_cover_at(const struct p3d_ivs *u, size_t i, int64_t s,
                                int64_t e)
{
    int64_t sum = 0;

    for (; i < u->n && u->v[i].s < e; i++) {
        int64_t a = u->v[i].s > s ? u->v[i].s : s;
        int64_t b = u->v[i].e < e ? u->v[i].e : e;
        if (b > a)
            sum += b - a;
    }
    return sum;
}

int64_t p3d_ivs_cover(const struct p3d_ivs *u, int64_t s, int64_t e)
{
    return p3d_ivs_cover_at(u, p3d_ivs_find(u, s), s, e);
}

int64_t p3d_iv_minus(int64_t s0, int64_t e0, const struct p3d_ivs *b)
{
    return e0 > s0 ? (e0 - s0) - p3d_ivs_cover(b, s0, e0) : 0;
}

int64_t p3d_iv_minus_from(int64_t s0, int64_t e0, const struct p3d_ivs *b,
                          size_t *hint)
{
    if (e0 <= s0)
        return 0;
    return (e0 - s0) -
           p3d_ivs_cover_at(b, p3d_ivs_find_from(b, s0, hint), s0, e0);
}

int64_t p3d_ivs_minus(const struct p3d_ivs *a, const struct p3d_ivs *b,
                      int64_t s, int64_t e)
{
    int64_t sum = 0;
    size_t hint = 0;

    for (size_t i = p3d_ivs_find(a, s); i < a->n && a->v[i].s < e; i++) {
        int64_t x = a->v[i].s > s ? a->v[i].s : s;
        int64_t y = a->v[i].e < e ? a->v[i].e : e;
        sum += p3d_iv_minus_from(x, y, b, &hint);
    }
    return sum;
}

void p3d_ivs_free(struct p3d_ivs *l)
{
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}
