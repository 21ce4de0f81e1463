/*
 * p3d_map.h - a small open-addressing map from 64-bit keys (comm hashes)
 * to int indexes, used wherever records name a communicator by hash.
 */
#ifndef P3D_MAP_H
#define P3D_MAP_H

#include <stddef.h>
#include <stdint.h>

struct p3d_map {
    uint64_t *keys;
    int *vals;     /* -1 = empty slot */
    size_t cap;    /* power of two */
    size_t n;
};

/* Value for key, or -1. */
int p3d_map_get(const struct p3d_map *m, uint64_t key);
/* Insert or overwrite. */
void p3d_map_put(struct p3d_map *m, uint64_t key, int val);
/* The same, returning the value key had (-1: none): items whose keys
 * may be equal (hashes) chain each to the one put before it, the map
 * holding the latest. */
int p3d_map_push(struct p3d_map *m, uint64_t key, int val);
void p3d_map_free(struct p3d_map *m);
/*
 * The element of key in an array that m indexes (*arr: *n elements of
 * size bytes, *cap allocated): its index, or, for a new key, that of a
 * zeroed element appended for it (*added = 1; the caller fills it).
 */
size_t p3d_map_index(struct p3d_map *m, uint64_t key, void **arr, size_t *n,
                     size_t *cap, size_t size, int *added);

#endif /* P3D_MAP_H */
