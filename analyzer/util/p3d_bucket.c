/*
 * p3d_bucket.c - items grouped by key, in item order (p3d_bucket.h).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_bucket.h"
#include "p3d_util.h"

static int p3d_key_ok(const struct p3d_bucket *b, int k)
{
    return k >= 0 && k < b->n_keys;
}

void p3d_bucket_make(struct p3d_bucket *b, const int *key, size_t n,
                     int n_keys)
{
    int *pos;

    b->n_keys = n_keys > 0 ? n_keys : 0;
    b->at = p3d_xcalloc((size_t)b->n_keys + 2, sizeof(*b->at));
    b->idx = p3d_xcalloc(n + 1, sizeof(*b->idx));
    for (size_t i = 0; i < n; i++)
        if (p3d_key_ok(b, key[i]))
            b->at[key[i] + 1]++;
    for (int k = 0; k < b->n_keys; k++)
        b->at[k + 1] += b->at[k];
    pos = p3d_xcalloc((size_t)b->n_keys + 1, sizeof(*pos));
    memcpy(pos, b->at, (size_t)b->n_keys * sizeof(*pos));
    for (size_t i = 0; i < n; i++)
        if (p3d_key_ok(b, key[i]))
            b->idx[pos[key[i]]++] = (int)i;
    free(pos);
}

const int *p3d_bucket_of(const struct p3d_bucket *b, int k, int *n)
{
    if (!b->at || !p3d_key_ok(b, k)) {
        *n = 0;
        return NULL;
    }
    *n = b->at[k + 1] - b->at[k];
    return b->idx + b->at[k];
}

void p3d_bucket_free(struct p3d_bucket *b)
{
    free(b->at);
    free(b->idx);
    memset(b, 0, sizeof(*b));
}
