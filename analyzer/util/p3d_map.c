/*
 * p3d_map.c - open addressing with linear probing; keys are mixed first
 * because generated hashes can share low bits.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_map.h"
#include "p3d_util.h"

static size_t p3d_map_slot(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

int p3d_map_get(const struct p3d_map *m, uint64_t key)
{
    if (!m->cap)
        return -1;
    for (size_t i = p3d_map_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->vals[i] < 0)
            return -1;
        if (m->keys[i] == key)
            return m->vals[i];
    }
}

static void p3d_map_resize(struct p3d_map *m)
{
    struct p3d_map old = *m;

    m->cap = old.cap ? old.cap * 2 : 64;
    m->keys = p3d_xcalloc(m->cap, sizeof(*m->keys));
    m->vals = p3d_xmalloc(m->cap * sizeof(*m->vals));
    memset(m->vals, 0xff, m->cap * sizeof(*m->vals));
    m->n = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.vals[i] >= 0)
            p3d_map_put(m, old.keys[i], old.vals[i]);
    free(old.keys);
    free(old.vals);
}

int p3d_map_push(struct p3d_map *m, uint64_t key, int val)
{
    size_t i;
    int old;

    if ((m->n + 1) * 2 > m->cap)
        p3d_map_resize(m);
    for (i = p3d_map_slot(key, m->cap); m->vals[i] >= 0;
         i = (i + 1) & (m->cap - 1))
        if (m->keys[i] == key)
            break;
    old = m->vals[i];
    if (old < 0)
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return old;
}

void p3d_map_put(struct p3d_map *m, uint64_t key, int val)
{
    p3d_map_push(m, key, val);
}

void p3d_map_free(struct p3d_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

size_t p3d_map_index(struct p3d_map *m, uint64_t key, void **arr, size_t *n,
                     size_t *cap, size_t size, int *added)
{
    int i = p3d_map_get(m, key);

    *added = i < 0;
    if (i >= 0)
        return (size_t)i;
    *cap = p3d_grow(arr, *cap, *n, size);
    memset((char *)*arr + *n * size, 0, size);
    p3d_map_put(m, key, (int)*n);
    return (*n)++;
}
