/*
 * p3d_comm.c - join every rank's communicators by commHash.
 *
 * Each rank knows its own slot (rank in comm) and the comm's size; the
 * union over ranks gives the member set of global ranks.  Inconsistencies
 * (two sizes for one hash, two ranks in one slot, one rank in two slots,
 * slots no file claims) are reported as warnings: the job may be broken,
 * the analysis still runs.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_job.h"
#include "p3d_layout.h"
#include "p3d_util.h"

static int p3d_cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

static struct p3d_gcomm *p3d_gcomm_get(struct p3d_job *job, size_t *cap,
                                       const struct p3d_rcomm *rc)
{
    int i = p3d_map_get(&job->comm_idx, rc->hash);
    struct p3d_gcomm *g;

    if (i >= 0)
        return &job->comms[i];
    *cap = p3d_grow((void **)&job->comms, *cap, (size_t)job->n_comms,
                    sizeof(*job->comms));
    g = &job->comms[job->n_comms];
    memset(g, 0, sizeof(*g));
    g->hash = rc->hash;
    g->order = UINT32_MAX;
    p3d_map_put(&job->comm_idx, rc->hash, job->n_comms++);
    return g;
}

static void p3d_slot_claim(struct p3d_gcomm *g, const struct p3d_rcomm *rc,
                           int rank)
{
    if (rc->nranks <= 0 || rc->rank < 0 || rc->rank >= rc->nranks ||
        rank < 0) /* a file of unknown rank claims no slot */
        return;
    if (!g->size) {
        g->size = rc->nranks;
        g->slot = p3d_xmalloc((size_t)g->size * sizeof(int));
        for (int i = 0; i < g->size; i++)
            g->slot[i] = -1;
    }
    if (rc->nranks != g->size) {
        if (!g->bad_size++)
            p3d_warning("communicator 0x%016" PRIx64 ": rank %d says it has "
                        "%d ranks, another member says %d", g->hash, rank,
                        rc->nranks, g->size);
        return;
    }
    for (int i = 0; i < g->size; i++)
        if (g->slot[i] == rank && i != rc->rank) {
            p3d_warning("communicator 0x%016" PRIx64 ": rank %d claims "
                        "slots %d and %d", g->hash, rank, i, rc->rank);
            break;
        }
    if (g->slot[rc->rank] >= 0 && g->slot[rc->rank] != rank)
        p3d_warning("communicator 0x%016" PRIx64 ": ranks %d and %d both "
                    "claim slot %d", g->hash, g->slot[rc->rank], rank,
                    rc->rank);
    else
        g->slot[rc->rank] = rank;
}

static void p3d_gcomm_add(struct p3d_gcomm *g, const struct p3d_rcomm *rc)
{
    for (int k = 0; k < P3D_OP_COUNT; k++) {
        g->st[k].calls += rc->st[k].calls;
        g->st[k].bytes += rc->st[k].bytes;
        g->st[k].gpu_calls += rc->st[k].gpu_calls;
        g->st[k].gpu_bytes += rc->st[k].gpu_bytes;
        g->st[k].gpu_ns += rc->st[k].gpu_ns;
    }
    for (int b = 0; b < P3D_HIST_N; b++)
        g->hist[b] += rc->hist[b];
    g->use.tiny_ar += rc->use.tiny_ar;
    g->use.tiny_ag += rc->use.tiny_ag;
    g->use.ar_avg += rc->use.ar_avg;
    g->use.tiny_f32_ar += rc->use.tiny_f32_ar;
    g->use.big_ar += rc->use.big_ar;
    for (int k = 0; k < P3D_OP_COUNT; k++)
        g->use.dtypes[k] |= rc->use.dtypes[k];
    g->use.rs_redops |= rc->use.rs_redops;
    for (int k = 0; k < P3D_USE_SIZES; k++)
        if (rc->use.ar_n[k])
            p3d_usage_ar_size(&g->use, rc->use.ar_size[k], rc->use.ar_n[k]);
    g->use.ar_sizes_other += rc->use.ar_sizes_other;
    g->use.bc_int64 += rc->use.bc_int64;
    /* with the rank's last batch, still open when its trace ended */
    g->use.p2p_batches += rc->use.p2p_batches + (rc->use.p2p_dirs != 0);
    g->use.p2p_both += rc->use.p2p_both + (rc->use.p2p_dirs == 3);
    g->use.p2p_a2a += rc->use.p2p_a2a + p3d_usage_batch_a2a(&rc->use);
    if (rc->order < g->order)
        g->order = rc->order;
}

static void p3d_gcomm_finish(struct p3d_gcomm *g)
{
    g->members = p3d_xmalloc(((size_t)g->size + 1) * sizeof(int));
    g->n_members = 0;
    for (int i = 0; i < g->size; i++) {
        if (g->slot[i] >= 0)
            g->members[g->n_members++] = g->slot[i];
        else
            g->n_missing++;
    }
    if (g->n_members)
        qsort(g->members, (size_t)g->n_members, sizeof(int), p3d_cmp_int);
}

/*
 * No member recorded the comm's size and its rank in it (ops on a comm
 * the shim never saw created): its members are the ranks that used it.
 */
static void p3d_users_as_members(const struct p3d_job *job,
                                 struct p3d_gcomm *g)
{
    g->size_unknown = 1;
    g->slot = p3d_xmalloc(((size_t)job->n_ranks + 1) * sizeof(int));
    for (int i = 0; i < job->n_ranks; i++) {
        const struct p3d_rank *r = &job->ranks[i];
        if (!r->failed && p3d_map_get(&r->idx, g->hash) >= 0)
            g->slot[g->size++] = r->rank;
    }
    if (!g->size)
        g->slot[g->size++] = -1;
}

static int p3d_cmp_order(const void *a, const void *b)
{
    const struct p3d_gcomm *x = a, *y = b;

    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    if (x->n_members && y->n_members && x->members[0] != y->members[0])
        return x->members[0] < y->members[0] ? -1 : 1;
    return (x->hash > y->hash) - (x->hash < y->hash);
}

void p3d_comm_join(struct p3d_job *job)
{
    size_t cap = 0;

    for (int i = 0; i < job->n_ranks; i++) {
        struct p3d_rank *r = &job->ranks[i];
        for (int k = 0; !r->failed && k < r->n_comms; k++) {
            struct p3d_gcomm *g = p3d_gcomm_get(job, &cap, &r->comms[k]);
            p3d_slot_claim(g, &r->comms[k], r->rank);
            p3d_gcomm_add(g, &r->comms[k]);
        }
    }
    for (int i = 0; i < job->n_comms; i++)
        if (!job->comms[i].size)
            p3d_users_as_members(job, &job->comms[i]);
    for (int i = 0; i < job->n_comms; i++)
        p3d_gcomm_finish(&job->comms[i]);
    if (job->n_comms)
        qsort(job->comms, (size_t)job->n_comms, sizeof(*job->comms),
              p3d_cmp_order);
    p3d_map_free(&job->comm_idx);
    for (int i = 0; i < job->n_comms; i++)
        p3d_map_put(&job->comm_idx, job->comms[i].hash, i);
    for (int i = 0; i < job->n_ranks; i++)
        for (int k = 0; k < job->ranks[i].n_comms; k++)
            job->ranks[i].comms[k].gcomm =
                p3d_map_get(&job->comm_idx, job->ranks[i].comms[k].hash);
}

struct p3d_rank *p3d_job_rank(const struct p3d_job *job, int rank)
{
    int lo = 0, hi = job->n_ranks - 1;

    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (job->ranks[mid].rank == rank)
            return &job->ranks[mid];
        if (job->ranks[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}
