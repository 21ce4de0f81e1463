/*
 * p3d_dist.c - the parts of a run over several processes that are not
 * MPI (p3d_dist.h): which process reads which file, and a scanned rank
 * as bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_dist.h"
#include "p3d_job.h"
#include "p3d_util.h"

struct p3d_dist *p3d_dist_active;
struct p3d_dist *p3d_dist_mpi;

void p3d_dist_block(const struct p3d_dist *d, int n, int p, int *lo, int *hi)
{
    *lo = (int)((int64_t)n * p / d->n);
    *hi = (int)((int64_t)n * (p + 1) / d->n);
}

int p3d_dist_owner(const struct p3d_dist *d, int n, int i)
{
    int p = (int)((int64_t)i * d->n / (n ? n : 1)), lo, hi;

    /* the inverse of the block bounds, off by one at their edges */
    for (;; p += i >= hi ? 1 : -1) {
        p3d_dist_block(d, n, p, &lo, &hi);
        if (i >= lo && i < hi)
            return p;
    }
}

int p3d_dist_comm_owner(const struct p3d_dist *d, uint64_t hash)
{
    /* commHash is NCCL's hash of the unique id already; mixed again so
     * that a hash with a pattern in its low bits still spreads */
    hash ^= hash >> 33;
    hash *= 0xff51afd7ed558ccdull;
    hash ^= hash >> 33;
    return (int)(hash % (uint64_t)d->n);
}

int p3d_dist_seq_owner(const struct p3d_dist *d, int base, uint64_t seq)
{
    uint64_t block = d->seq_block ? d->seq_block : 1;

    return (int)(((uint64_t)base + (seq / block) % (uint64_t)d->n) %
                 (uint64_t)d->n);
}

/* Tags: rank files from 0 up, the scan's rounds at tag_max - 1, the
 * matching results at tag_max. */
int p3d_dist_match_tag(const struct p3d_dist *d)
{
    return d->tag_max;
}

int p3d_dist_round_tag(const struct p3d_dist *d)
{
    return d->tag_max - 1;
}

void p3d_dist_to_zero(struct p3d_dist *d, struct p3d_bytes *b,
                      void (*take)(void *ctx, int from,
                                   const struct p3d_bytes *msg),
                      void *ctx)
{
    if (d->self != 0) {
        d->send(d, p3d_dist_match_tag(d), b);
        return;
    }
    for (int p = 1; p < d->n; p++) {
        int from = p, tag = p3d_dist_match_tag(d);
        d->recv(d, &from, &tag, b);
        take(ctx, p, b);
    }
    p3d_bytes_free(b);
}

int p3d_dist_owner_of(const struct p3d_dist *d, const struct p3d_job *job,
                      int i)
{
    return d->local ? job->ranks[i].owner : p3d_dist_owner(d, job->n_ranks, i);
}

/*
 * The struct as it lies in memory (both ends run one build), then what
 * its pointers point to; the receiver sets the pointers and rebuilds the
 * comm index.
 */
void p3d_rank_pack(const struct p3d_rank *r, struct p3d_bytes *b)
{
    p3d_bytes_put(b, r, sizeof(*r));
    p3d_bytes_put_arr(b, r->path, r->path ? strlen(r->path) + 1 : 0);
    p3d_bytes_put_arr(b, r->cmdline, r->cmdline_len);
    p3d_bytes_put_arr(b, r->comms, (size_t)r->n_comms * sizeof(*r->comms));
}

int p3d_rank_unpack(struct p3d_rank *r, struct p3d_bytes_in *in)
{
    size_t n;

    p3d_rank_free(r);
    p3d_bytes_get(in, r, sizeof(*r));
    r->path = p3d_bytes_get_arr(in, &n);
    r->copy = NULL; /* the sender's own */
    r->cmdline = p3d_bytes_get_arr(in, &n);
    r->cmdline_len = r->cmdline ? n : 0;
    r->comms = p3d_bytes_get_arr(in, &n);
    r->cap = n / sizeof(*r->comms);
    r->sink = NULL;
    memset(&r->idx, 0, sizeof(r->idx));
    for (int c = 0; r->comms && c < r->n_comms; c++)
        p3d_map_put(&r->idx, r->comms[c].hash, c);
    if (in->bad || !r->path || r->cap != (size_t)r->n_comms) {
        r->n_comms = r->comms ? (int)r->cap : 0;
        return -1;
    }
    return 0;
}
