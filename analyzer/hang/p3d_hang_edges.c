/*
 * p3d_hang_edges.c - the wait graph's edges (p3d_hang_int.h): each added
 * once, found again through a hash of (from, to, op) instead of a scan
 * of every edge before it; indexed by the rank they leave and the rank
 * they reach once all are in (p3d_hg_index); and the distance of every
 * rank to a root along them (p3d_hg_depth).
 *
 * A stalled collective of N ranks (every member arrived, none completed:
 * an NCCL or network stall) has each member wait on every other: N^2
 * soft edges, 268M at 16k ranks, and checking each new edge against all
 * before it kept 1,024 ranks busy for many minutes.  So a wait on
 * members that wait too (soft) or that have no GPU times (unknown) keeps
 * its first P3D_HANG_WAITFOR edges only (the caller stops there and
 * records the cut, p3d_hg_cut).  Nothing else changes with it:
 *   - a wait lists at most P3D_HANG_WAITFOR ranks (waiting_for), the
 *     first ones in edge order, and a cut wait alone fills the list
 *     before its dropped edges would come;
 *   - a rank with a wait is not a root whether it has one edge or many;
 *   - reachability: a soft edge ends at a waiting rank, reachable
 *     already, and an unknown edge is not followed;
 *   - the distance to a root is the one figure that needs every edge:
 *     p3d_hg_depth goes over a cut wait's whole group of members.
 * A hard wait is cut the same way (a collective that half of 16k ranks
 * never issued while the other half wait in it: 64M edges, 8 GB).  Its
 * edges end at roots and say what they owe, so its group (the members
 * that have not issued that instance, worked out once for all its
 * waiters: p3d_hg_absent) stands for every edge it dropped wherever
 * they were read: the walk that finds the roots goes over the group
 * (p3d_hg_reach_cut), the waits on a rank (how many wait on a root, the
 * op it owes, the frontier's "not arrived") come from p3d_hg_hard_in,
 * a circular wait's in-degrees from p3d_hg_cut_indegree; the wait's kept
 * edges are marked `grouped` so that none counts twice.
 * test_hang_edges checks each against the uncut graph.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_bucket.h"
#include "p3d_hang_int.h"
#include "p3d_label.h"
#include "p3d_util.h"

static uint64_t p3d_hg_key(int from, int to, const struct p3d_rec_op *o)
{
    uint64_t h = ((uint64_t)(uint32_t)from << 32) ^ (uint32_t)to;

    h ^= (uint64_t)(uintptr_t)o * 0x9e3779b97f4a7c15ull;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

void p3d_hg_edge(struct p3d_hg *g, int from, int to, int hard,
                 const struct p3d_rec_op *o)
{
    struct p3d_hedge e = {.from = from, .to = to, .hard = hard, .o = o,
                          .op = -1, .label = -1};
    uint64_t key = p3d_hg_key(from, to, o);

    for (int k = p3d_map_get(&g->seen, key); k >= 0; k = g->seen_prev[k])
        if (g->e[k].from == from && g->e[k].to == to && g->e[k].o == o)
            return;
    if (o != NULL) {
        e.comm = o->comm_hash, e.seq = o->seq, e.t = o->t_enter;
        e.op = o->op, e.label = p3d_hang_label(g->job, o->comm_hash);
    }
    g->cap_prev = p3d_grow((void **)&g->seen_prev, g->cap_prev, g->n,
                           sizeof(*g->seen_prev));
    g->seen_prev[g->n] = p3d_map_push(&g->seen, key, (int)g->n);
    g->cap = p3d_grow((void **)&g->e, g->cap, g->n, sizeof(*g->e));
    g->e[g->n++] = e;
}

int p3d_hg_kind_target(const struct p3d_hg *g, int kind, int b)
{
    const struct p3d_hrank *h;

    if (b < 0 || b >= g->hj->world)
        return 0;
    h = &g->hj->hr[b];
    if (kind == P3D_HG_SOFT)
        return h->state == P3D_HS_WAITING;
    return p3d_hg_has_file(g, b) && !h->have_gpu &&
           h->state != P3D_HS_WAITING;
}

void p3d_hg_cut(struct p3d_hg *g, int a, int gi, int kind)
{
    g->cap_cut = p3d_grow((void **)&g->cut, g->cap_cut, g->n_cut,
                          sizeof(*g->cut));
    g->cut[g->n_cut++] = (struct p3d_hg_cut){.rank = a, .gi = gi,
                                             .kind = kind, .xi = -1};
}

void p3d_hg_cut_hard(struct p3d_hg *g, int a, int gi, int xi, size_t e0)
{
    g->cap_cut = p3d_grow((void **)&g->cut, g->cap_cut, g->n_cut,
                          sizeof(*g->cut));
    g->cut[g->n_cut++] = (struct p3d_hg_cut){a, gi, P3D_HG_HARD, xi,
                                             g->e[e0], e0};
    for (size_t i = e0; i < g->n; i++)
        g->e[i].grouped = 1;
}

int p3d_hg_absent_add(struct p3d_hg *g, uint64_t comm, uint64_t seq, int cap)
{
    g->cap_absent = p3d_grow((void **)&g->absent, g->cap_absent,
                             g->n_absent, sizeof(*g->absent));
    g->absent[g->n_absent] = (struct p3d_hg_absent){
        comm, seq, p3d_xcalloc((size_t)cap + 1, sizeof(int)), 0, -1};
    return (int)g->n_absent++;
}

int p3d_hg_wait_absent(struct p3d_hg *g, int a, int gi, int xi,
                       const struct p3d_hedge *like)
{
    size_t e0 = g->n;
    int n = 0;

    for (int i = 0; i < g->absent[xi].n; i++) {
        int b = g->absent[xi].b[i];
        size_t n0 = g->n;
        if (b == a)
            continue;
        if (n == P3D_HANG_WAITFOR) {
            /* none kept anew: this wait was recorded before (the shim
             * reports a blocked init past its timeout and at SIGTERM) */
            if (g->n > e0)
                p3d_hg_cut_hard(g, a, gi, xi, e0);
            break;
        }
        p3d_hg_edge(g, a, b, 1, like->o);
        if (g->n > n0) { /* new: the wait's own description */
            struct p3d_hedge *e = &g->e[n0];
            e->comm = like->comm, e->seq = like->seq, e->t = like->t;
            e->op = like->op, e->label = like->label;
        }
        n++;
    }
    return n;
}

/* Each rank's edges, out (by_to 0) or in, in edge order. */
static void p3d_hg_by_rank(const struct p3d_hg *g, int by_to,
                           struct p3d_bucket *b)
{
    int *key = p3d_xcalloc(g->n + 1, sizeof(*key));

    for (size_t i = 0; i < g->n; i++)
        key[i] = by_to ? g->e[i].to : g->e[i].from;
    p3d_bucket_free(b);
    p3d_bucket_make(b, key, g->n, g->hj->world);
    free(key);
}

static void p3d_hg_groups(struct p3d_hg *g, struct p3d_hg_groups *gr);
static void p3d_hg_groups_free(struct p3d_hg_groups *gr);

void p3d_hg_index(struct p3d_hg *g)
{
    p3d_hg_by_rank(g, 0, &g->out);
    p3d_hg_by_rank(g, 1, &g->in);
    p3d_hg_groups_free(&g->gr);
    p3d_hg_groups(g, &g->gr);
}

const int *p3d_hg_out_edges(const struct p3d_hg *g, int a, int *n)
{
    return p3d_bucket_of(&g->out, a, n);
}

const int *p3d_hg_in_edges(const struct p3d_hg *g, int b, int *n)
{
    return p3d_bucket_of(&g->in, b, n);
}

static int p3d_cut_cmp(const void *x, const void *y)
{
    const struct p3d_hg_cut *a = x, *b = y;

    if (a->gi != b->gi)
        return P3D_CMP(a->gi, b->gi);
    if (a->kind != b->kind)
        return P3D_CMP(a->kind, b->kind);
    if (a->xi != b->xi)
        return P3D_CMP(a->xi, b->xi);
    return P3D_CMP(a->rank, b->rank);
}

/* The members of cut c's communicator that its kind waits on, added
 * as (member, group k) pairs. */
static void p3d_hg_group_targets(const struct p3d_hg *g,
                                 const struct p3d_hg_cut *c, int k,
                                 int **mem, int **grp, size_t *n,
                                 size_t *cap)
{
    const struct p3d_hg_absent *x = c->xi >= 0 ? &g->absent[c->xi] : NULL;
    const struct p3d_gcomm *cm = x ? NULL : &g->job->comms[c->gi];
    int m = x ? x->n : cm->size;

    for (int j = 0; j < m; j++) {
        int b = x ? x->b[j] : cm->slot[j];
        if (!x && !p3d_hg_kind_target(g, c->kind, b))
            continue;
        if (*n >= *cap) {
            size_t old = *cap;
            *cap = p3d_grow((void **)mem, old, *n, sizeof(**mem));
            p3d_grow((void **)grp, old, *n, sizeof(**grp));
        }
        (*mem)[*n] = b;
        (*grp)[(*n)++] = k;
    }
}

static void p3d_hg_groups(struct p3d_hg *g, struct p3d_hg_groups *gr)
{
    int *mem = NULL, *src;
    size_t n = 0, cap = 0;

    memset(gr, 0, sizeof(*gr));
    if (g->n_cut > 1)
        qsort(g->cut, g->n_cut, sizeof(*g->cut), p3d_cut_cmp);
    gr->cut_at = p3d_xcalloc(g->n_cut + 2, sizeof(*gr->cut_at));
    gr->kind = p3d_xcalloc(g->n_cut + 1, sizeof(*gr->kind));
    gr->xi = p3d_xcalloc(g->n_cut + 1, sizeof(*gr->xi));
    gr->grp_of_cut = p3d_xcalloc(g->n_cut + 1, sizeof(*gr->grp_of_cut));
    src = p3d_xcalloc(g->n_cut + 1, sizeof(*src));
    for (size_t i = 0; i < g->n_cut; i++) {
        const struct p3d_hg_cut *c = &g->cut[i];
        if (i == 0 || c->gi != c[-1].gi || c->kind != c[-1].kind ||
            c->xi != c[-1].xi) {
            gr->cut_at[gr->n] = (int)i;
            gr->kind[gr->n] = c->kind;
            gr->xi[gr->n] = c->xi;
            p3d_hg_group_targets(g, c, gr->n, &mem, &gr->grp, &n, &cap);
            gr->n++;
        }
        gr->grp_of_cut[i] = gr->n - 1;
        src[i] = c->rank;
    }
    gr->cut_at[gr->n] = (int)g->n_cut;
    p3d_bucket_make(&gr->of, mem, n, g->hj->world);
    p3d_bucket_make(&gr->by_src, src, g->n_cut, g->hj->world);
    free(src);
    free(mem);
}

static void p3d_hg_groups_free(struct p3d_hg_groups *gr)
{
    p3d_bucket_free(&gr->of);
    p3d_bucket_free(&gr->by_src);
    P3D_FREE_ALL(gr->cut_at, gr->kind, gr->xi, gr->grp, gr->grp_of_cut);
}

void p3d_hg_hard_in(const struct p3d_hg *g, int b, p3d_hg_in_fn fn,
                    void *ctx)
{
    const struct p3d_hg_groups *gr = &g->gr;
    int n, n_grp;
    const int *in = p3d_hg_in_edges(g, b, &n);
    const int *pair = p3d_bucket_of(&gr->of, b, &n_grp);

    for (int i = 0; i < n; i++)
        if (g->e[in[i]].hard && !g->e[in[i]].grouped)
            fn(ctx, &g->e[in[i]], (size_t)in[i]);
    for (int i = 0; i < n_grp; i++) {
        int k = gr->grp[pair[i]];
        if (gr->kind[k] != P3D_HG_HARD)
            continue;
        for (int s = gr->cut_at[k]; s < gr->cut_at[k + 1]; s++) {
            const struct p3d_hg_cut *c = &g->cut[s];
            struct p3d_hedge e = c->proto;
            e.to = b;
            e.grouped = 0;
            if (c->rank != b) /* no rank waits on itself */
                fn(ctx, &e, c->e0);
        }
    }
}

int p3d_hg_hard_on(const struct p3d_hg *g, int b, uint64_t comm)
{
    const struct p3d_hg_groups *gr = &g->gr;
    int n, n_grp;
    const int *in = p3d_hg_in_edges(g, b, &n);
    const int *pair = p3d_bucket_of(&gr->of, b, &n_grp);

    for (int i = 0; i < n; i++)
        if (g->e[in[i]].hard && g->e[in[i]].comm == comm)
            return 1;
    for (int i = 0; i < n_grp; i++) {
        int k = gr->grp[pair[i]], s = gr->cut_at[k];
        if (gr->kind[k] == P3D_HG_HARD && g->cut[s].proto.comm == comm &&
            (gr->cut_at[k + 1] - s > 1 || g->cut[s].rank != b))
            return 1;
    }
    return 0;
}

void p3d_hg_reach_cut(const struct p3d_hg *g, int a, char *grp_done,
                      char *reach, int *q, int *tail)
{
    const struct p3d_hg_groups *gr = &g->gr;
    int n;
    const int *cut = p3d_bucket_of(&gr->by_src, a, &n);

    for (int i = 0; i < n; i++) {
        int k = gr->grp_of_cut[cut[i]];
        const struct p3d_hg_absent *x;
        if (gr->kind[k] != P3D_HG_HARD || grp_done[k])
            continue;
        grp_done[k] = 1;
        x = &g->absent[gr->xi[k]];
        for (int j = 0; j < x->n; j++)
            if (!reach[x->b[j]]) {
                reach[x->b[j]] = 1;
                q[(*tail)++] = x->b[j];
            }
    }
}

void p3d_hg_cut_indegree(const struct p3d_hg *g, const char *from, int *in)
{
    const struct p3d_hg_groups *gr = &g->gr;
    int *waits_in = p3d_xcalloc((size_t)g->hj->world + 1, sizeof(int));

    for (int k = 0; k < gr->n; k++) {
        const struct p3d_hg_absent *x;
        int waits = 0;
        if (gr->kind[k] != P3D_HG_HARD)
            continue;
        for (int s = gr->cut_at[k]; s < gr->cut_at[k + 1]; s++) {
            waits += from[g->cut[s].rank] != 0;
            waits_in[g->cut[s].rank] = k + 1;
        }
        x = &g->absent[gr->xi[k]];
        for (int j = 0; j < x->n; j++) { /* no rank waits on itself */
            int b = x->b[j];
            in[b] += waits - (from[b] && waits_in[b] == k + 1);
        }
    }
    free(waits_in);
}

/* Ranks that reach b (depth d) in one step: along an edge into b, or by
 * a cut wait b is a target of (each group once: the first member to be
 * reached is the nearest). */
static void p3d_hg_reach_from(const struct p3d_hg *g, char *done, int b,
                              int *depth, int *q, int *tail)
{
    const struct p3d_hg_groups *gr = &g->gr;
    int n, n_grp, d = depth[b];
    const int *in = p3d_hg_in_edges(g, b, &n);
    const int *pair = p3d_bucket_of(&gr->of, b, &n_grp);

    for (int i = 0; i < n; i++) {
        int x = g->e[in[i]].from;
        if (x >= 0 && x < g->hj->world && depth[x] < 0) {
            depth[x] = d + 1;
            q[(*tail)++] = x;
        }
    }
    for (int i = 0; i < n_grp; i++) {
        int k = gr->grp[pair[i]];
        if (done[k])
            continue;
        done[k] = 1;
        for (int s = gr->cut_at[k]; s < gr->cut_at[k + 1]; s++) {
            int a = g->cut[s].rank; /* b itself has its depth */
            if (depth[a] < 0) {
                depth[a] = d + 1;
                q[(*tail)++] = a;
            }
        }
    }
}

/*
 * Distance of each rank to a root along wait edges, -1 if none: a
 * breadth-first walk back from the roots (the shortest distance, as
 * relaxing every edge until nothing changes gave), over the edges kept
 * and the cut waits' groups.
 */
void p3d_hg_depth(struct p3d_hg *g, const int *root, int n_root, int *depth)
{
    int w = g->hj->world, head = 0, tail = 0;
    int *q = p3d_xcalloc((size_t)w + 1, sizeof(*q));
    char *done = p3d_xcalloc((size_t)g->gr.n + 1, 1);

    for (int a = 0; a < w; a++)
        depth[a] = -1;
    for (int i = 0; i < n_root; i++)
        if (depth[root[i]] < 0) {
            depth[root[i]] = 0;
            q[tail++] = root[i];
        }
    while (head < tail)
        p3d_hg_reach_from(g, done, q[head++], depth, q, &tail);
    free(done);
    free(q);
}

static void p3d_hg_memo_free(struct p3d_hg_memo *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n; i++)
        P3D_FREE_ALL(m->v[i].mem, m->v[i].in);
    p3d_map_free(&m->tw_idx);
    P3D_FREE_ALL(m->v, m->tw, m);
}

void p3d_hg_free(struct p3d_hg *g)
{
    p3d_hg_memo_free(g->memo);
    g->memo = NULL;
    for (size_t i = 0; i < g->n_absent; i++)
        free(g->absent[i].b);
    p3d_map_free(&g->absent_idx);
    p3d_map_free(&g->seen);
    p3d_bucket_free(&g->out);
    p3d_bucket_free(&g->in);
    p3d_hg_groups_free(&g->gr);
    P3D_FREE_ALL(g->e, g->seen_prev, g->cut, g->absent);
}
