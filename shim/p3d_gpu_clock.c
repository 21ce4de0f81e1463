/*
 * p3d_gpu_clock.c - put a GPU-side clock (CUPTI timestamps) on the host's
 * CLOCK_MONOTONIC.
 *
 * A pairing reads the host clock, the other clock, the host clock again;
 * the narrowest of a few brackets wins and its midpoint gives the offset.
 * Each pairing is also written as P3D_REC_CLOCK_SYNC, so the analyzer can
 * check or redo the conversion.  The background thread repeats it every
 * second; times written into GPU_OP/GPU_SPAN records are already host
 * times.
 */
#include "p3d_gpu.h"
#include "p3d_shim.h"

int p3d_clock_pair(struct p3d_clock_map *map, p3d_gpu_clock_fn gpu_clock,
                   int device, int tries)
{
    uint64_t best_w = UINT64_MAX, best_g = 0, best_h = 0;
    struct p3d_rec_clock_sync *r;
    int i;

    for (i = 0; i < tries; i++) {
        uint64_t h0 = p3d_now();
        uint64_t g = gpu_clock();
        uint64_t h1 = p3d_now();

        if (!g)
            return -1;
        if (h1 - h0 < best_w) {
            best_w = h1 - h0;
            best_g = g;
            best_h = h0 + (h1 - h0) / 2;
        }
    }
    if (best_w == UINT64_MAX)
        return -1;
    map->offset = (int64_t)(best_h - best_g);
    map->uncert = best_w / 2;
    __atomic_store_n(&map->valid, 1, __ATOMIC_RELEASE);
    r = p3d_rec_reserve(P3D_REC_CLOCK_SYNC, sizeof(*r));
    if (r) {
        r->device = device;
        r->gpu_ns = best_g;
        r->host_mono_ns = best_h;
        r->uncertainty_ns = map->uncert;
        p3d_rec_commit(r);
    }
    return 0;
}

uint64_t p3d_clock_to_host(const struct p3d_clock_map *map, uint64_t gpu)
{
    if (!gpu)
        return 0;
    return (uint64_t)((int64_t)gpu + map->offset);
}
