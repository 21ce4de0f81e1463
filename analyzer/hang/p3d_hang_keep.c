/*
 * p3d_hang_keep.c - what a rank's hang evidence keeps once every rank was
 * read (p3d_hang_int.h, p3d_hang_keep_all).
 *
 * The hang scan holds a pointer per op of every rank (about 13.5 bytes an
 * op with its flags): 220 GB at 16k ranks x 1M ops.  The graph asks only
 * for few of them, all known once every rank was read and the returned
 * ops that cannot have completed are proven (p3d_hang_prove.c):
 *   - a rank's pending ops (the waits, the soft and unknown edges, the
 *     frontiers, the odd roots' "waits on");
 *   - the collectives at the seq of a mismatch the matcher kept (the odd
 *     member's votes, p3d_hang_odd.c), and how often each of the
 *     mismatch's two ranks used its value there (p3d_hang_chain.c);
 *   - op n - 1 and n of a twin, where n is the op count of a root of its
 *     pipeline stage below its own (p3d_hg_twin_next), and a root's last
 *     op;
 *   - a rank's op count per communicator (what a root issued on the
 *     communicator it owes).
 * So each rank keeps copies of those records (and of its stacks, modules,
 * watchdog reports, aborts and proxy notes), its pointers into the file
 * are dropped and the file is closed.  Pending ops are few in a hang; the
 * twin positions are two per distinct op count of a stage, which in a
 * hang is a handful (ranks stop at the same collective).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_hang_int.h"
#include "p3d_map.h"
#include "p3d_match.h"
#include "p3d_util.h"

/* What p3d_hang_keep_all works out once for every rank. */
struct p3d_keep_ctx {
    const struct p3d_job *job;
    const struct p3d_hjob *hj;
    uint64_t *mm_seq;    /* the kept mismatches' seqs, sorted */
    int n_mm_seq;
    int n_stages;        /* -1: no layout with stages */
    uint64_t **counts;   /* [stage]: distinct op counts there, sorted */
    int *n_counts;
};

static int p3d_u64_cmp(const void *a, const void *b)
{
    return P3D_CMP(*(const uint64_t *)a, *(const uint64_t *)b);
}

static int p3d_hcount_cmp(const void *a, const void *b)
{
    return P3D_CMP(((const struct p3d_hcount *)a)->comm,
                   ((const struct p3d_hcount *)b)->comm);
}

/* Sort and drop repeats; returns the new count. */
static int p3d_u64_uniq(uint64_t *v, int n)
{
    int m = 0;

    if (n > 1)
        qsort(v, (size_t)n, sizeof(*v), p3d_u64_cmp);
    for (int i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != v[i])
            v[m++] = v[i];
    return m;
}

/* Index of x in v[0..n) (sorted), or n if it is not there. */
static size_t p3d_u64_find(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == x ? lo : n;
}

static int p3d_u64_has(const uint64_t *v, int n, uint64_t x)
{
    return p3d_u64_find(v, (size_t)n, x) < (size_t)n;
}

static void p3d_keep_mm_seqs(struct p3d_keep_ctx *k)
{
    const struct p3d_match_res *m = k->job->match;
    int n = m ? m->n_kept : 0;

    k->mm_seq = p3d_xcalloc((size_t)n + 1, sizeof(*k->mm_seq));
    for (int i = 0; i < n; i++)
        if (m->mm[i].field < P3D_MM_UNMATCHED)
            k->mm_seq[k->n_mm_seq++] = m->mm[i].seq;
    k->n_mm_seq = p3d_u64_uniq(k->mm_seq, k->n_mm_seq);
}

/* The op counts of every stage's ranks (a rank without a file counts 0:
 * it can be a root, whose twin is read at op 0). */
static void p3d_keep_stage_counts(struct p3d_keep_ctx *k)
{
    const struct p3d_layout *l = &k->job->layout;
    int world = k->hj->world;

    k->n_stages = l->valid && l->size[P3D_AX_PP] > 0 ? l->size[P3D_AX_PP]
                                                      : -1;
    if (k->n_stages < 0)
        return;
    k->counts = p3d_xcalloc((size_t)k->n_stages, sizeof(*k->counts));
    k->n_counts = p3d_xcalloc((size_t)k->n_stages, sizeof(*k->n_counts));
    for (int r = 0; r < world; r++) { /* each stage's room: its ranks */
        int s = p3d_hg_stage(k->job, r);
        if (s >= 0 && s < k->n_stages)
            k->n_counts[s]++;
    }
    for (int s = 0; s < k->n_stages; s++) {
        k->counts[s] = p3d_xcalloc((size_t)k->n_counts[s] + 1,
                                   sizeof(uint64_t));
        k->n_counts[s] = 0;
    }
    for (int r = 0; r < world; r++) {
        int s = p3d_hg_stage(k->job, r);
        if (s >= 0 && s < k->n_stages)
            k->counts[s][k->n_counts[s]++] = k->hj->hr[r].n_ops;
    }
    for (int s = 0; s < k->n_stages; s++)
        k->n_counts[s] = p3d_u64_uniq(k->counts[s], k->n_counts[s]);
}

/* Mark the ops of h a twin lookup can read. */
static void p3d_keep_twin(const struct p3d_keep_ctx *k,
                          const struct p3d_hrank *h, uint8_t *keep)
{
    int s = k->n_stages > 0 ? p3d_hg_stage(k->job, h->rank) : -1;

    if (s < 0 || s >= k->n_stages)
        return;
    for (int i = 0; i < k->n_counts[s] && k->counts[s][i] < h->n_ops; i++) {
        uint64_t n = k->counts[s][i];
        keep[n] = 1;
        if (n > 0)
            keep[n - 1] = 1;
    }
}

static void p3d_keep_per_comm(struct p3d_hrank *h)
{
    struct p3d_map idx = {0};
    size_t cap = 0;
    uint64_t last = 0;
    int k = -1;

    for (size_t i = 0; i < h->n_ops; i++) {
        uint64_t c = h->ops[i]->comm_hash;
        if (k < 0 || c != last) { /* ops of one comm come in runs */
            k = p3d_map_get(&idx, c);
            if (k < 0) {
                cap = p3d_grow((void **)&h->per_comm, cap, h->n_per_comm,
                               sizeof(*h->per_comm));
                k = (int)h->n_per_comm++;
                h->per_comm[k] = (struct p3d_hcount){c, 0};
                p3d_map_put(&idx, c, k);
            }
            last = c;
        }
        h->per_comm[k].n++;
    }
    p3d_map_free(&idx);
    if (h->n_per_comm > 1)
        qsort(h->per_comm, h->n_per_comm, sizeof(*h->per_comm),
              p3d_hcount_cmp);
}

static void p3d_keep_mm_uses(const struct p3d_keep_ctx *k,
                             struct p3d_hrank *h)
{
    const struct p3d_match_res *m = k->job->match;

    if (m == NULL || m->n_kept <= 0)
        return;
    h->mm_uses = p3d_xcalloc((size_t)m->n_kept, sizeof(*h->mm_uses));
    for (int j = 0; j < m->n_kept; j++) {
        const struct p3d_mismatch *x = &m->mm[j];
        int64_t v;
        if (x->rank_a != h->rank && x->rank_b != h->rank)
            continue;
        v = x->rank_a == h->rank ? x->va : x->vb;
        for (size_t i = 0; i < h->n_ops; i++)
            h->mm_uses[j] += h->ops[i]->comm_hash == x->comm &&
                             h->ops[i]->op == x->op &&
                             (int64_t)h->ops[i]->count == v;
    }
}

/* Which ops h keeps (1 in keep[i]). */
static void p3d_keep_mark(const struct p3d_keep_ctx *k,
                          const struct p3d_hrank *h, uint8_t *keep)
{
    for (size_t i = 0; i < h->n_ops; i++)
        keep[i] = h->pend[i] ||
                  (!P3D_OP_IS_P2P(h->ops[i]->op) &&
                   p3d_u64_has(k->mm_seq, k->n_mm_seq, h->ops[i]->seq));
    if (h->n_ops)
        keep[h->n_ops - 1] = 1; /* a root's last op */
    p3d_keep_twin(k, h, keep);
}

/* Copy rec to *at in the block and point *ref at the copy. */
static void p3d_keep_copy(uint8_t *block, size_t *at, const void **ref)
{
    size_t len = ((const struct p3d_rec_hdr *)*ref)->len;

    memcpy(block + *at, *ref, len);
    *ref = block + *at;
    *at += p3d_hang_rec_room(block + *at);
}

/* Every record h still points at, copied into one block of its own. */
static void p3d_keep_records(struct p3d_hrank *h)
{
    size_t room = 8, at = 0;

#define P3D_ROOM(ref) (room += p3d_hang_rec_room(*(ref)))
#define P3D_COPY(ref) p3d_keep_copy(h->block, &at, (ref))
    P3D_KEEP_EACH(h, P3D_ROOM);
    h->block = p3d_xmalloc(room);
    P3D_KEEP_EACH(h, P3D_COPY);
#undef P3D_ROOM
#undef P3D_COPY
}

/* Keep what the graph can ask for of h, then close its file. */
static void p3d_keep_rank(const struct p3d_keep_ctx *k, struct p3d_hrank *h)
{
    uint8_t *keep = p3d_xcalloc(h->n_ops + 1, 1);
    size_t n = 0;

    p3d_keep_per_comm(h);
    p3d_keep_mm_uses(k, h);
    p3d_keep_mark(k, h, keep);
    h->at = p3d_xcalloc(h->n_ops + 1, sizeof(*h->at));
    for (size_t i = 0; i < h->n_ops; i++) {
        if (!keep[i])
            continue;
        h->at[n] = i;
        h->ops[n] = h->ops[i];
        h->pend[n] = h->pend[i];
        if (h->proven)
            h->proven[n] = h->proven[i];
        n++;
    }
    free(keep);
    h->n_kept = n;
    p3d_keep_records(h);
    free(h->told);                   /* copied into the block */
    h->told = NULL;
    free(h->done);
    h->done = NULL;
    free(h->gends);
    h->gends = NULL;
    h->n_gends = h->cap_gends = 0;
    h->ops = realloc(h->ops, (n + 1) * sizeof(*h->ops)) ?: h->ops;
    h->at = realloc(h->at, (n + 1) * sizeof(*h->at)) ?: h->at;
    p3d_reader_close(&h->rd);
    h->mapped = 0;
}

static void p3d_keep_mapped(void *ctx, struct p3d_hrank *h)
{
    if (h->mapped)
        p3d_keep_rank(ctx, h);
}

void p3d_hang_keep_all(struct p3d_job *job, struct p3d_hjob *hj)
{
    struct p3d_keep_ctx k = {.job = job, .hj = hj};

    p3d_keep_mm_seqs(&k);
    p3d_keep_stage_counts(&k);
    p3d_hang_each(hj, p3d_keep_mapped, &k);
    for (int s = 0; s < k.n_stages; s++)
        free(k.counts[s]);
    free(k.counts);
    free(k.n_counts);
    free(k.mm_seq);
}

const struct p3d_rec_op *p3d_hang_op_at(const struct p3d_hrank *h,
                                        uint64_t k)
{
    size_t i;

    if (h->at == NULL)
        return k < h->n_kept ? h->ops[k] : NULL;
    i = p3d_u64_find(h->at, h->n_kept, k);
    return i < h->n_kept ? h->ops[i] : NULL;
}

uint64_t p3d_hang_count_comm(const struct p3d_hrank *h, uint64_t comm)
{
    size_t k = P3D_COUNT_LE(h->per_comm, h->n_per_comm, comm, comm);

    return k > 0 && h->per_comm[k - 1].comm == comm ? h->per_comm[k - 1].n
                                                    : 0;
}

int p3d_hang_mm_uses(const struct p3d_hrank *h, int i)
{
    return h->mm_uses ? h->mm_uses[i] : 0;
}

void p3d_hang_rank_free(struct p3d_hrank *h)
{
    if (h->mapped)
        p3d_reader_close(&h->rd);
    h->mapped = 0;
    P3D_FREE_ALL(h->ops, h->at, h->done, h->pend, h->keys, h->proven,
                 h->per_comm, h->mm_uses, h->block, h->gends, h->gpu,
                 h->stacks, h->mods, h->told);
}
