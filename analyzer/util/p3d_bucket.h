/*
 * p3d_bucket.h - items grouped by a small integer key, each key's items in
 * item order (a counting sort): the indexes built over a list once to
 * read it key by key (a rank's wait edges, a communicator's per-rank
 * entries), instead of walking the whole list for every key.
 */
#ifndef P3D_BUCKET_H
#define P3D_BUCKET_H

#include <stddef.h>

struct p3d_bucket {
    int n_keys;
    int *at;  /* [n_keys + 1]: key k's items are idx[at[k]..at[k + 1]) */
    int *idx; /* item indexes */
};

/* Group items 0..n-1 by key[i]; keys outside [0, n_keys) are left out. */
void p3d_bucket_make(struct p3d_bucket *b, const int *key, size_t n,
                     int n_keys);
/* Key k's items (*n of them); none for a key out of range or an index
 * not made. */
const int *p3d_bucket_of(const struct p3d_bucket *b, int k, int *n);
void p3d_bucket_free(struct p3d_bucket *b);

#endif /* P3D_BUCKET_H */
