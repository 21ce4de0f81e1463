/*
 * p3d_chrome_lane.c - per-track lane assignment so that events nest:
 * an event goes to the first lane whose innermost open event contains it
 * (or that has none open).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_chrome_lane.h"

struct p3d_lane {
    uint64_t end[P3D_LANE_DEPTH];
    int depth;
};

int p3d_chrome_class(const struct p3d_vev *e)
{
    switch (e->kind) {
    case P3D_V_COMPUTE: return 1;
    case P3D_V_GPU_NCCL: return 2;
    case P3D_V_COPY: return 3;
    default: return 0;
    }
}

static int p3d_lane_cmp(const void *a, const void *b)
{
    const struct p3d_vev *x = a, *y = b;
    int cx = p3d_chrome_class(x), cy = p3d_chrome_class(y);

    if (cx != cy)
        return cx - cy;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1)
        return x->t1 > y->t1 ? -1 : 1;
    if (x->kind != y->kind) /* a group before the calls inside it */
        return x->kind == P3D_V_GROUP ? -1 : 1;
    return (x->op_id > y->op_id) - (x->op_id < y->op_id);
}

/* Lane for e among lanes[0..*n), opening a new one if needed; -1 none. */
static int p3d_lane_pick(struct p3d_lane *lanes, int *n,
                         const struct p3d_vev *e)
{
    for (int l = 0; l < P3D_LANES; l++) {
        struct p3d_lane *ln = &lanes[l];
        if (l == *n)
            (*n)++, ln->depth = 0;
        while (ln->depth && ln->end[ln->depth - 1] <= e->t0)
            ln->depth--;
        if (ln->depth == P3D_LANE_DEPTH)
            continue;
        if (ln->depth && ln->end[ln->depth - 1] < e->t1)
            continue;
        ln->end[ln->depth++] = e->t1;
        return l;
    }
    return -1;
}

size_t p3d_chrome_lanes(struct p3d_vrank *v)
{
    static __thread struct p3d_lane lanes[P3D_LANES];
    int n_lanes = 0, track = -1, cls = -1;
    uint64_t id = 0;
    size_t dropped = 0;

    if (v->n)
        qsort(v->ev, v->n, sizeof(*v->ev), p3d_lane_cmp);
    for (size_t i = 0; i < v->n; i++) {
        struct p3d_vev *e = &v->ev[i];
        int l;
        if (track < 0 || p3d_chrome_class(e) != cls || e->track != id) {
            track++;
            cls = p3d_chrome_class(e);
            id = e->track;
            n_lanes = 0;
        }
        l = p3d_lane_pick(lanes, &n_lanes, e);
        if (l < 0) {
            e->kind = P3D_V_KIND_N;
            dropped++;
            continue;
        }
        e->lane = (uint32_t)l;
        e->tid = (uint32_t)(track + 1) * P3D_LANES + (uint32_t)l;
    }
    return dropped;
}
