/*
 * p3d_hang_graph.c - hang analysis, part 2: for every waiting op, the
 * members that have not arrived; the wait graph; its roots (reachable
 * ranks that wait for nobody); what each root owes; mismatches met on
 * the way.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_hang_int.h"
#include "p3d_label.h"
#include "p3d_match.h"
#include "p3d_util.h"

struct p3d_hedge {
    int from, to, hard;
    const struct p3d_rec_op *o;       /* the waiting op, NULL for init */
    uint64_t comm, seq, t;            /* what waits: op or init */
    int op, label;
};

struct p3d_hg {
    struct p3d_job *job;
    struct p3d_hjob *hj;
    struct p3d_hedge *e;
    size_t n, cap;
};

static void p3d_hg_edge(struct p3d_hg *g, int from, int to, int hard,
                        const struct p3d_rec_op *o)
{
    struct p3d_hedge e = {from, to, hard, o, 0, 0, 0, -1, -1};

    for (size_t i = 0; i < g->n; i++)
        if (g->e[i].from == from && g->e[i].to == to && g->e[i].o == o)
            return;
    if (o != NULL) {
        e.comm = o->comm_hash, e.seq = o->seq, e.t = o->t_enter;
        e.op = o->op, e.label = p3d_hang_label(g->job, o->comm_hash);
    }
    g->cap = p3d_grow((void **)&g->e, g->cap, g->n, sizeof(*g->e));
    g->e[g->n++] = e;
}

static int p3d_hg_has_file(const struct p3d_hg *g, int b)
{
    return b >= 0 && b < g->hj->world && g->hj->hr[b].r != NULL &&
           g->hj->hr[b].open;
}

/* Has member b (global) issued the counterpart of o (rank a's op)? */
static int p3d_hg_arrived(const struct p3d_hg *g, int b,
                          const struct p3d_rec_op *o)
{
    const struct p3d_hrank *h = &g->hj->hr[b];

    if (!p3d_hg_has_file(g, b))
        return 0;
    if (o->op == P3D_OP_SEND)
        return p3d_hang_count(h, o->comm_hash, P3D_HK_RECV, o->comm_rank) >
               o->seq;
    if (o->op == P3D_OP_RECV)
        return p3d_hang_count(h, o->comm_hash, P3D_HK_SEND, o->comm_rank) >
               o->seq;
    return p3d_hang_count(h, o->comm_hash, P3D_HK_COLL, -1) > o->seq;
}

/* Hard edges of rank a's pending op o: members that have not arrived. */
static int p3d_hg_op_edges(struct p3d_hg *g, int a, const struct p3d_rec_op *o)
{
    int gi = p3d_map_get(&g->job->comm_idx, o->comm_hash), n = 0;
    const struct p3d_gcomm *c;

    if (gi < 0 || o->seq == UINT64_MAX)
        return 0;
    c = &g->job->comms[gi];
    for (int j = 0; j < c->size; j++) {
        int b = c->slot[j];
        if (b < 0 || b == a || (P3D_OP_IS_P2P(o->op) && j != o->peer))
            continue;
        if (!p3d_hg_arrived(g, b, o)) {
            p3d_hg_edge(g, a, b, 1, o);
            n++;
        }
    }
    return n;
}

/* Soft edges: members of a's pending comms that are waiting too. */
static void p3d_hg_soft(struct p3d_hg *g, int a)
{
    const struct p3d_hrank *h = &g->hj->hr[a];

    for (size_t i = 0; i < h->n_ops; i++) {
        int gi;
        if (!h->pend[i])
            continue;
        gi = p3d_map_get(&g->job->comm_idx, h->ops[i]->comm_hash);
        for (int j = 0; gi >= 0 && j < g->job->comms[gi].size; j++) {
            int b = g->job->comms[gi].slot[j];
            if (b >= 0 && b != a && b < g->hj->world &&
                g->hj->hr[b].state == P3D_HS_WAITING)
                p3d_hg_edge(g, a, b, 0, h->ops[i]);
        }
    }
}


/* Coordinate of rank r on dense axis ax under the layout, -1 unknown. */
static int p3d_hg_coord(const struct p3d_job *job, int r, int ax)
{
    const struct p3d_layout *l = &job->layout;
    int stride = 1;

    if (!l->valid)
        return -1;
    for (int j = 0; j < P3D_AX_N; j++) {
        int x = l->ord[j], n = l->size[x] > 0 ? l->size[x] : 1;
        if (x == ax)
            return (r / stride) % n;
        stride *= n;
    }
    return -1;
}

/* The k-th communicator rank h created (creation order), or NULL. */
static const struct p3d_rcomm *p3d_hg_created(const struct p3d_hrank *h,
                                              int k)
{
    for (int i = 0; h->r != NULL && i < h->r->n_comms; i++)
        if (h->r->comms[i].created && k-- == 0)
            return &h->r->comms[i];
    return NULL;
}

static int p3d_hg_n_created(const struct p3d_hrank *h)
{
    int n = 0;

    for (int i = 0; h->r != NULL && i < h->r->n_comms; i++)
        n += h->r->comms[i].created;
    return n;
}

/*
 * Members of the communicator rank a was creating when it blocked in an
 * init: a rank t of a's stage created its k-th communicator (same
 * program, same order) with members M; a's is the set shaped like M
 * under the layout (axes M varies take M's values, the others a's).
 */
static int p3d_hg_like(const struct p3d_job *job, const struct p3d_gcomm *m,
                       int a, int *out)
{
    uint64_t vals[P3D_AX_N] = {0};
    int n = 0, fixed[P3D_AX_N];

    for (int ax = 0; ax < P3D_AX_N; ax++) {
        for (int i = 0; i < m->n_members; i++) {
            int c = p3d_hg_coord(job, m->members[i], ax);
            if (c < 0 || c >= 64)
                return 0;
            vals[ax] |= 1ull << c;
        }
        fixed[ax] = __builtin_popcountll(vals[ax]) == 1;
    }
    for (int w = 0; w < job->world_size; w++) {
        int ok = 1;
        for (int ax = 0; ax < P3D_AX_N && ok; ax++) {
            int c = p3d_hg_coord(job, w, ax);
            ok = fixed[ax] ? c == p3d_hg_coord(job, a, ax)
                           : !!(vals[ax] & (1ull << c));
        }
        if (ok)
            out[n++] = w;
    }
    return n;
}

/* Is h blocked in the init of communicator `hash`? */
static int p3d_hg_in_init_of(const struct p3d_hrank *h, uint64_t hash)
{
    for (int k = 0; k < h->n_hang; k++)
        if (h->hang[k]->op == P3D_HANG_OP_INIT &&
            h->hang[k]->comm_hash == hash)
            return 1;
    return 0;
}

/* Did rank b create (or block creating) communicator `hash`? */
static int p3d_hg_joined(const struct p3d_hg *g, int b, uint64_t hash)
{
    const struct p3d_hrank *h = &g->hj->hr[b];

    if (!p3d_hg_has_file(g, b))
        return 0;
    if (p3d_map_get(&h->r->idx, hash) >= 0)
        return 1;
    for (int k = 0; k < h->n_hang; k++)
        if (h->hang[k]->op == P3D_HANG_OP_INIT &&
            h->hang[k]->comm_hash == hash)
            return 1;
    return 0;
}

static int p3d_hg_stage(const struct p3d_job *job, int rank);
static const struct p3d_rec_op *p3d_hg_twin_next(const struct p3d_hg *g,
                                                 int r);

/* Has rank b a communicator used as `label` with members mem[0..n)? */
static int p3d_hg_has_set(const struct p3d_hg *g, int b, const int *mem,
                          int n, int label)
{
    const struct p3d_hrank *h = &g->hj->hr[b];

    for (int i = 0; p3d_hg_has_file(g, b) && i < h->r->n_comms; i++) {
        const struct p3d_gcomm *c;
        if (h->r->comms[i].gcomm < 0)
            continue;
        c = &g->job->comms[h->r->comms[i].gcomm];
        if (c->n_members == n && c->label == label &&
            !memcmp(c->members, mem, sizeof(int) * (size_t)n))
            return 1;
    }
    return 0;
}

/* Is h blocked in a communicator init (so it made that comm's id)? */
static int p3d_hg_in_init(const struct p3d_hrank *h)
{
    for (int k = 0; k < h->n_hang; k++)
        if (h->hang[k]->op == P3D_HANG_OP_INIT)
            return 1;
    return 0;
}

/*
 * A rank outside NCCL whose next op (per a rank of its stage) is the
 * first on a communicator it has not created is blocked making it: in
 * PyTorch the group's lowest rank makes the NCCL id and the others wait
 * for it in the store.  Edge to that lowest rank if it never created it.
 */
static void p3d_hg_infer(struct p3d_hg *g, int a)
{
    const struct p3d_rec_op *nx = p3d_hg_twin_next(g, a);
    int gi = nx ? p3d_map_get(&g->job->comm_idx, nx->comm_hash) : -1, n;
    int *mem, lbl;
    struct p3d_hedge *e;

    if (gi < 0)
        return;
    mem = p3d_xcalloc((size_t)g->hj->world + 1, sizeof(int));
    n = p3d_hg_like(g->job, &g->job->comms[gi], a, mem);
    lbl = g->job->comms[gi].label;
    if (n > 1 && !p3d_hg_has_set(g, a, mem, n, lbl) && mem[0] != a &&
        !p3d_hg_has_set(g, mem[0], mem, n, lbl) &&
        !p3d_hg_in_init(&g->hj->hr[mem[0]])) {
        p3d_hg_edge(g, a, mem[0], 1, NULL);
        e = &g->e[g->n - 1];
        e->comm = 0, e->seq = UINT64_MAX, e->t = g->hj->hr[a].t_last;
        e->op = P3D_HANG_OP_INIT, e->label = g->job->comms[gi].label;
        g->hj->hr[a].inferred = 1;
    }
    free(mem);
}

/* Edges of a rank blocked in a communicator init; 0 if members unknown. */
/* Set of a's layout group varying the axes in `mask`; returns its size. */
static int p3d_hg_axes_group(const struct p3d_job *job, int a, unsigned mask,
                             int *out)
{
    int n = 0;

    for (int w = 0; w < job->world_size; w++) {
        int ok = 1;
        for (int ax = 0; ax < P3D_AX_N && ok; ax++)
            ok = (mask & (1u << ax)) ||
                 p3d_hg_coord(job, w, ax) == p3d_hg_coord(job, a, ax);
        if (ok)
            out[n++] = w;
    }
    return n;
}

/*
 * Members of an init nobody finished, from the layout: the one group of
 * a (some axes varied) with `nranks` members that holds every rank seen
 * blocked in the same init.  0 if none or several fit.
 */
static int p3d_hg_guess(const struct p3d_hg *g, uint64_t hash,
                        uint64_t nranks, int a, int *mem)
{
    int *cand = p3d_xcalloc((size_t)g->hj->world + 1, sizeof(int));
    int n = 0, found = 0;

    for (unsigned mask = 1; mask < (1u << P3D_AX_N); mask++) {
        int k = p3d_hg_axes_group(g->job, a, mask, cand), ok = 1;
        if ((uint64_t)k != nranks)
            continue;
        for (int b = 0; b < g->hj->world && ok; b++) {
            int in = 0;
            for (int i = 0; i < k; i++)
                in |= cand[i] == b;
            ok = in || !p3d_hg_in_init_of(&g->hj->hr[b], hash);
        }
        if (ok && (!found || n != k || memcmp(mem, cand, sizeof(int) *
                                              (size_t)k))) {
            found++;
            memcpy(mem, cand, sizeof(int) * (size_t)k);
            n = k;
        }
    }
    free(cand);
    return found == 1 ? n : 0;
}

static int p3d_hg_init_members(const struct p3d_hg *g, int a, uint64_t hash,
                               int *mem, int *label)
{
    const struct p3d_hrank *h = &g->hj->hr[a];
    int k = p3d_hg_n_created(h), st = p3d_hg_stage(g->job, a), nm = 0;
    int gi = p3d_map_get(&g->job->comm_idx, hash);

    if (gi >= 0) {
        for (int j = 0; j < g->job->comms[gi].n_members; j++)
            mem[nm++] = g->job->comms[gi].members[j];
    }
    for (int t = 0; gi < 0 && nm == 0 && t < g->hj->world; t++) {
        const struct p3d_rcomm *c;
        if (t == a || !p3d_hg_has_file(g, t) ||
            p3d_hg_stage(g->job, t) != st ||
            (c = p3d_hg_created(&g->hj->hr[t], k)) == NULL || c->gcomm < 0)
            continue;
        nm = p3d_hg_like(g->job, &g->job->comms[c->gcomm], a, mem);
        *label = g->job->comms[c->gcomm].label;
    }
    if (gi >= 0)
        *label = g->job->comms[gi].label;
    for (int j = 0; nm == 0 && j < h->n_hang; j++)
        if (h->hang[j]->op == P3D_HANG_OP_INIT &&
            h->hang[j]->comm_hash == hash)
            nm = p3d_hg_guess(g, hash, h->hang[j]->seq, a, mem);
    return nm;
}

static int p3d_hg_init_edges(struct p3d_hg *g, int a, uint64_t hash,
                             uint64_t t0)
{
    int *mem = p3d_xcalloc((size_t)g->hj->world + 1, sizeof(int));
    int label = -1, n = 0, nm = p3d_hg_init_members(g, a, hash, mem, &label);

    for (int i = 0; i < nm; i++)
        if (mem[i] != a && !p3d_hg_joined(g, mem[i], hash)) {
            struct p3d_hedge *e;
            p3d_hg_edge(g, a, mem[i], 1, NULL);
            e = &g->e[g->n - 1];
            e->comm = hash, e->seq = UINT64_MAX, e->t = t0;
            e->op = P3D_HANG_OP_INIT, e->label = label;
            n++;
        }
    free(mem);
    return nm > 0 ? n : -1;
}

static void p3d_hg_edges(struct p3d_hg *g)
{
    for (int a = 0; a < g->hj->world; a++) {
        struct p3d_hrank *h = &g->hj->hr[a];
        int n = 0;
        if (h->state != P3D_HS_WAITING)
            continue;
        for (size_t i = 0; i < h->n_ops; i++)
            if (h->pend[i])
                n += p3d_hg_op_edges(g, a, h->ops[i]);
        for (int k = 0; k < h->n_hang; k++)
            if (h->hang[k]->op == P3D_HANG_OP_INIT) {
                int e = p3d_hg_init_edges(g, a, h->hang[k]->comm_hash,
                                          h->hang[k]->t -
                                              h->hang[k]->pending_ns);
                n += e > 0 ? e : 0;
                h->init_unknown |= e < 0;
            }
        h->hard = n > 0;
    }
    for (int a = 0; a < g->hj->world; a++)
        if (g->hj->hr[a].state == P3D_HS_WAITING && !g->hj->hr[a].hard)
            p3d_hg_soft(g, a);
    for (int a = 0; a < g->hj->world; a++)
        if (g->hj->hr[a].state == P3D_HS_NOT_IN_NCCL)
            p3d_hg_infer(g, a);
}

static int p3d_hg_out(const struct p3d_hg *g, int a)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->e[i].from == a)
            return 1;
    return 0;
}

/*
 * Every waiting rank waits on another: a circular wait (e.g. a rank that
 * skipped a collective and went on to the next one, whose peer still
 * sits in the skipped one).  The root is the rank most others wait on.
 */
static int p3d_hg_cycle_roots(struct p3d_hg *g, const char *reach,
                              int *root)
{
    int w = g->hj->world, best = 0, n = 0;
    int *in = p3d_xcalloc((size_t)w, sizeof(int));

    for (size_t i = 0; i < g->n; i++)
        if (g->e[i].hard && reach[g->e[i].from])
            in[g->e[i].to]++;
    for (int a = 0; a < w; a++)
        if (reach[a] && in[a] > best)
            best = in[a];
    for (int a = 0; best > 0 && a < w; a++)
        if (reach[a] && in[a] == best) {
            root[n++] = a;
            g->hj->hr[a].cycle = 1;
        }
    free(in);
    return n;
}

/* Ranks reachable from any waiting rank; roots = those waiting for none. */
static int p3d_hg_roots(struct p3d_hg *g, int *root)
{
    int w = g->hj->world, n = 0, changed = 1;
    char *reach = p3d_xcalloc((size_t)w, 1);

    for (int a = 0; a < w; a++)
        reach[a] = g->hj->hr[a].state == P3D_HS_WAITING ||
                   g->hj->hr[a].inferred;
    while (changed) {
        changed = 0;
        for (size_t i = 0; i < g->n; i++)
            if (reach[g->e[i].from] && !reach[g->e[i].to])
                reach[g->e[i].to] = 1, changed = 1;
    }
    for (int a = 0; a < w; a++)
        if (reach[a] && !p3d_hg_out(g, a) && !g->hj->hr[a].init_unknown)
            root[n++] = a;
    for (int a = 0; n == 0 && a < w; a++)   /* a cycle: the stuck ones */
        if (reach[a] && g->hj->hr[a].state == P3D_HS_WAITING &&
            !g->hj->hr[a].hard)
            root[n++] = a;
    if (n == 0)                             /* a cycle of hard waits */
        n = p3d_hg_cycle_roots(g, reach, root);
    free(reach);
    return n;
}

/* Describe the wait by op record o of rank a's comm. */
static void p3d_hg_wait_op(const struct p3d_hg *g, const struct p3d_rec_op *o,
                           struct p3d_hang_wait *w)
{
    int gi = p3d_map_get(&g->job->comm_idx, o->comm_hash);

    w->comm = o->comm_hash;
    w->op = o->op;
    w->seq = o->seq;
    w->t_enter = o->t_enter;
    w->stack_id = o->stack_id;
    if (o->peer >= 0 && gi >= 0 && o->peer < g->job->comms[gi].size)
        w->peer = g->job->comms[gi].slot[o->peer];
    w->label = p3d_hang_label(g->job, o->comm_hash);
}

/* No edge: the oldest pending op, else the init it is blocked in. */
static void p3d_hg_wait_plain(const struct p3d_hg *g, int a,
                              struct p3d_hang_wait *w)
{
    const struct p3d_hrank *h = &g->hj->hr[a];

    for (size_t i = 0; i < h->n_ops; i++)
        if (h->pend[i]) {
            p3d_hg_wait_op(g, h->ops[i], w);
            return;
        }
    for (int k = 0; k < h->n_hang; k++)
        if (h->hang[k]->op == P3D_HANG_OP_INIT) {
            w->comm = h->hang[k]->comm_hash, w->op = P3D_HANG_OP_INIT;
            w->seq = UINT64_MAX;
            w->t_enter = h->hang[k]->t - h->hang[k]->pending_ns;
            return;
        }
}

/* The op rank a is blocked in: oldest op with a hard edge; whom for. */
static void p3d_hg_wait(struct p3d_hg *g, int a, struct p3d_hang_wait *w)
{
    const struct p3d_hedge *best = NULL;

    memset(w, 0, sizeof(*w));
    w->rank = a;
    w->peer = -1;
    w->label = -1;
    for (size_t i = 0; i < g->n; i++) {
        const struct p3d_hedge *e = &g->e[i];
        int k = 0;
        if (e->from != a)
            continue;
        if (best == NULL || (e->hard > best->hard) ||
            (e->hard == best->hard && e->t < best->t))
            best = e;
        while (k < w->n_for && w->waiting_for[k] != e->to)
            k++;
        if (k == w->n_for && w->n_for < P3D_HANG_WAITFOR)
            w->waiting_for[w->n_for++] = e->to;
    }
    if (best == NULL) {
        p3d_hg_wait_plain(g, a, w);
    } else if (best->o == NULL) {               /* an init */
        w->comm = best->comm, w->op = best->op, w->seq = best->seq;
        w->t_enter = best->t, w->label = best->label;
    } else {
        p3d_hg_wait_op(g, best->o, w);
    }
}

/* Distance of each rank to a root along wait edges (BFS backwards). */
static void p3d_hg_depth(struct p3d_hg *g, const int *root, int n_root,
                         int *depth)
{
    int w = g->hj->world, changed = 1;

    for (int a = 0; a < w; a++)
        depth[a] = -1;
    for (int i = 0; i < n_root; i++)
        depth[root[i]] = 0;
    while (changed) {
        changed = 0;
        for (size_t i = 0; i < g->n; i++) {
            int d = depth[g->e[i].to];
            if (d >= 0 && (depth[g->e[i].from] < 0 ||
                           depth[g->e[i].from] > d + 1)) {
                depth[g->e[i].from] = d + 1;
                changed = 1;
            }
        }
    }
}

static int p3d_wait_cmp(const void *a, const void *b)
{
    const struct p3d_hang_wait *x = a, *y = b;

    if (x->depth != y->depth)
        return x->depth - y->depth;
    return x->rank - y->rank;
}

/* Pipeline stage of a global rank under the job's layout, -1 unknown. */
static int p3d_hg_stage(const struct p3d_job *job, int rank)
{
    const struct p3d_layout *l = &job->layout;
    int stride = 1;

    if (!l->valid)
        return -1;
    for (int j = 0; j < P3D_AX_N; j++) {
        int ax = l->ord[j];
        if (ax == P3D_AX_PP)
            return l->size[ax] > 0 ? (rank / stride) % l->size[ax] : -1;
        stride *= l->size[ax] > 0 ? l->size[ax] : 1;
    }
    return -1;
}

/*
 * What root r would have issued next, read from a "twin": a rank of the
 * same pipeline stage (same program) that got further and agrees on r's
 * last op.  Returns the twin's next op, or NULL.
 */
static const struct p3d_rec_op *p3d_hg_twin_next(const struct p3d_hg *g,
                                                 int r)
{
    const struct p3d_hrank *h = &g->hj->hr[r];
    int st = p3d_hg_stage(g->job, r);
    size_t n = h->n_ops;

    if (st < 0)
        return NULL;
    for (int t = 0; t < g->hj->world; t++) {
        const struct p3d_hrank *x = &g->hj->hr[t];
        const struct p3d_rec_op *a, *b;
        if (t == r || !p3d_hg_has_file(g, t) || x->n_ops <= n ||
            p3d_hg_stage(g->job, t) != st)
            continue;
        if (n == 0)
            return x->ops[0];
        a = h->ops[n - 1];
        b = x->ops[n - 1];
        if (a->op == b->op && a->seq == b->seq &&
            p3d_hang_label(g->job, a->comm_hash) ==
                p3d_hang_label(g->job, b->comm_hash))
            return x->ops[n];
    }
    return NULL;
}

/* Members of the owed op's communicator (for the report). */
static void p3d_hg_owed_members(const struct p3d_hg *g,
                                const struct p3d_hedge *e,
                                struct p3d_hang_root *rt)
{
    int gi = p3d_map_get(&g->job->comm_idx, e->comm), lbl;
    int *mem = p3d_xcalloc((size_t)g->hj->world + 1, sizeof(int)), n = 0;

    if (gi >= 0)
        for (int j = 0; j < g->job->comms[gi].n_members; j++)
            mem[n++] = g->job->comms[gi].members[j];
    else if (e->op == P3D_HANG_OP_INIT)
        n = p3d_hg_init_members(g, e->from, e->comm, mem, &lbl);
    for (int i = 0; i < n && i < P3D_HANG_MEMBERS; i++)
        rt->owed_members[rt->n_owed_members++] = mem[i];
    free(mem);
}

/* Pick the op root r owes first among the hard waits on it. */
static void p3d_hg_owed(const struct p3d_hg *g, struct p3d_hang_root *rt)
{
    const struct p3d_rec_op *nx = p3d_hg_twin_next(g, rt->rank);
    const struct p3d_hedge *best = NULL;
    int lbl = nx ? p3d_hang_label(g->job, nx->comm_hash) : -1, how = 0;

    for (size_t i = 0; i < g->n; i++) {
        const struct p3d_hedge *e = &g->e[i];
        int eh;
        if (e->to != rt->rank || !e->hard)
            continue;
        rt->n_waiters++;
        eh = nx && e->label == lbl ? (e->op == nx->op ? 3 : 2) : 0;
        if (best == NULL || eh > how || (eh == how && e->t < best->t))
            best = e, how = eh;
    }
    if (best == NULL)
        return;
    rt->owed_comm = best->comm;
    rt->owed_label = best->label;
    rt->owed_op = best->op == P3D_OP_SEND ? P3D_OP_RECV
                  : best->op == P3D_OP_RECV ? P3D_OP_SEND : best->op;
    rt->owed_seq = best->seq;
    rt->owed_how = how ? 1 : rt->n_waiters == 1 ? 2 : 0;
    rt->issued_on_comm = p3d_hang_count_comm(&g->hj->hr[rt->rank],
                                             best->comm);
    p3d_hg_owed_members(g, best, rt);
}

static void p3d_hg_fill_root(const struct p3d_hg *g, int r,
                             struct p3d_hang_root *rt, uint64_t t_end)
{
    const struct p3d_hrank *h = &g->hj->hr[r];

    memset(rt, 0, sizeof(*rt));
    rt->rank = r;
    rt->state = h->cycle ? P3D_HS_CYCLE
                : h->state == P3D_HS_WAITING ? P3D_HS_STUCK : h->state;
    rt->owed_label = rt->owed_op = -1;
    rt->last = h->n_ops ? h->ops[h->n_ops - 1] : NULL;
    rt->t_last = h->t_last;
    rt->since_ns = t_end > h->t_last && h->t_last ? t_end - h->t_last : 0;
    p3d_hg_owed(g, rt);
}

/* How often rank r used `count` in ops of kind `op` on `comm`. */
static int p3d_hg_uses(const struct p3d_hg *g, int r, uint64_t comm, int op,
                       int64_t count)
{
    const struct p3d_hrank *h;
    int n = 0;

    if (!p3d_hg_has_file(g, r))
        return 0;
    h = &g->hj->hr[r];
    for (size_t i = 0; i < h->n_ops; i++)
        n += h->ops[i]->comm_hash == comm && h->ops[i]->op == op &&
             (int64_t)h->ops[i]->count == count;
    return n;
}

/* 1 if comm is on the chain (a wait's or a root's communicator). */
static int p3d_hg_on_chain(const struct p3d_hang_res *res, uint64_t comm)
{
    for (int i = 0; i < res->n_waiting; i++)
        if (res->wait[i].comm == comm)
            return 1;
    for (int i = 0; i < res->n_roots; i++)
        if (res->roots[i].owed_comm == comm)
            return 1;
    return 0;
}

/*
 * Mismatches on the chain (all of them when no hang was found).  Of two
 * disagreeing members the odd one is the one whose value it used only
 * this once on that communicator (matching keeps the lowest rank as
 * reference, which is not necessarily the odd one).
 */
static void p3d_hg_mismatches(const struct p3d_hg *g,
                              struct p3d_hang_res *res)
{
    const struct p3d_match_res *m = g->job->match;

    for (int i = 0; m != NULL && i < m->n_kept && res->n_mm < 16; i++) {
        const struct p3d_mismatch *x = &m->mm[i];
        struct p3d_hang_mm *y = &res->mm[res->n_mm];
        if (x->field >= P3D_MM_UNMATCHED ||
            (res->detected && !p3d_hg_on_chain(res, x->comm)))
            continue;
        y->comm = x->comm, y->seq = x->seq, y->field = x->field;
        y->op = x->op, y->rank_a = x->rank_a, y->rank_b = x->rank_b;
        y->va = x->va, y->vb = x->vb;
        y->rank_a = x->rank_b, y->rank_b = x->rank_a;  /* b is the odd */
        y->va = x->vb, y->vb = x->va;                  /* one by default */
        if (x->field == P3D_MM_COUNT &&
            p3d_hg_uses(g, x->rank_a, x->comm, x->op, x->va) == 1 &&
            p3d_hg_uses(g, x->rank_b, x->comm, x->op, x->vb) > 1) {
            y->rank_a = x->rank_a, y->rank_b = x->rank_b;  /* a is odd */
            y->va = x->va, y->vb = x->vb;
        }
        res->n_mm++;
    }
}

/* Lowest pending seq of rank h on comm (collectives; P2P: any pending
 * op counts as seq 0 of its pair), or -1. */
static int64_t p3d_hg_min_pending(const struct p3d_hrank *h, uint64_t comm,
                                  int *any)
{
    int64_t m = -1;

    *any = 0;
    for (size_t i = 0; i < h->n_ops; i++) {
        const struct p3d_rec_op *o = h->ops[i];
        if (!h->pend[i] || o->comm_hash != comm)
            continue;
        *any = 1;
        if (!P3D_OP_IS_P2P(o->op) && (m < 0 || (int64_t)o->seq < m))
            m = (int64_t)o->seq;
    }
    return m;
}

/* Is any hard wait on `comm` waiting for rank b? */
static int p3d_hg_waited_on(const struct p3d_hg *g, uint64_t comm, int b)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->e[i].hard && g->e[i].to == b && g->e[i].comm == comm)
            return 1;
    return 0;
}

/* Frontier of one joined communicator and each member's status there. */
static void p3d_hg_frontier(const struct p3d_hg *g, uint64_t comm,
                            struct p3d_hang_frontier *fr)
{
    const struct p3d_gcomm *c =
        &g->job->comms[p3d_map_get(&g->job->comm_idx, comm)];
    int any;

    fr->comm = comm;
    fr->label = c->label;
    fr->max_enqueued = fr->min_incomplete = -1;
    for (int j = 0; j < c->n_members; j++) {
        int b = c->members[j];
        int64_t mp;
        if (!p3d_hg_has_file(g, b))
            continue;
        mp = p3d_hg_min_pending(&g->hj->hr[b], comm, &any);
        if (mp >= 0 && (fr->min_incomplete < 0 || mp < fr->min_incomplete))
            fr->min_incomplete = mp;
        if ((int64_t)p3d_hang_count(&g->hj->hr[b], comm, P3D_HK_COLL, -1) - 1 >
            fr->max_enqueued)
            fr->max_enqueued = (int64_t)p3d_hang_count(
                                   &g->hj->hr[b], comm, P3D_HK_COLL, -1) - 1;
    }
    for (int j = 0; j < c->n_members && fr->n < P3D_HANG_MEMBERS; j++) {
        int b = c->members[j];
        fr->rank[fr->n] = b;
        fr->st[fr->n] = P3D_HF_DONE;
        if (!p3d_hg_has_file(g, b) || p3d_hg_waited_on(g, comm, b))
            fr->st[fr->n] = P3D_HF_NOT_ARRIVED;
        else if (p3d_hg_min_pending(&g->hj->hr[b], comm, &any), any)
            fr->st[fr->n] = P3D_HF_WAITING;
        fr->n++;
    }
}

/* Frontiers of the communicators the waits are on. */
static void p3d_hg_frontiers(const struct p3d_hg *g, struct p3d_hang_res *res)
{
    for (int i = 0; i < res->n_waiting && res->n_fr < P3D_HANG_FRONTIERS;
         i++) {
        uint64_t comm = res->wait[i].comm;
        int k = 0;
        if (p3d_map_get(&g->job->comm_idx, comm) < 0)
            continue;
        while (k < res->n_fr && res->fr[k].comm != comm)
            k++;
        if (k == res->n_fr)
            p3d_hg_frontier(g, comm, &res->fr[res->n_fr++]);
    }
}

static uint64_t p3d_hg_t_end(const struct p3d_hjob *hj)
{
    uint64_t t = 0;

    for (int a = 0; a < hj->world; a++) {
        if (hj->hr[a].t_last > t)
            t = hj->hr[a].t_last;
        if (hj->hr[a].t_close > t)
            t = hj->hr[a].t_close;
    }
    return t;
}

static void p3d_hg_waits(struct p3d_hg *g, struct p3d_hang_res *res,
                         const int *depth)
{
    res->wait = p3d_xcalloc((size_t)g->hj->world, sizeof(*res->wait));
    for (int a = 0; a < g->hj->world; a++) {
        if (g->hj->hr[a].state != P3D_HS_WAITING && !g->hj->hr[a].inferred)
            continue;
        p3d_hg_wait(g, a, &res->wait[res->n_waiting]);
        res->wait[res->n_waiting].inferred = g->hj->hr[a].inferred;
        res->wait[res->n_waiting++].depth = depth[a] > 0 ? depth[a] - 1
                                                         : depth[a];
    }
    if (res->n_waiting > 1)
        qsort(res->wait, (size_t)res->n_waiting, sizeof(*res->wait),
              p3d_wait_cmp);
}

void p3d_hang_graph(struct p3d_job *job, struct p3d_hjob *hj,
                    struct p3d_hang_res *res)
{
    struct p3d_hg g = {job, hj, NULL, 0, 0};
    int *root = p3d_xcalloc((size_t)hj->world, sizeof(int));
    int *depth = p3d_xcalloc((size_t)hj->world, sizeof(int));
    int n_root = 0;

    res->t_end = p3d_hg_t_end(hj);
    res->state = p3d_xcalloc((size_t)hj->world, sizeof(int));
    for (int a = 0; a < hj->world; a++)
        res->detected |= hj->hr[a].state == P3D_HS_WAITING ||
                         hj->hr[a].state == P3D_HS_NOT_IN_NCCL;
    if (res->detected) {
        p3d_hg_edges(&g);
        res->detected = 0;
        for (int a = 0; a < hj->world; a++)
            res->detected |= hj->hr[a].state == P3D_HS_WAITING ||
                             hj->hr[a].inferred;
    }
    if (res->detected) {
        n_root = p3d_hg_roots(&g, root);
        p3d_hg_depth(&g, root, n_root, depth);
        p3d_hg_waits(&g, res, depth);
        res->roots = p3d_xcalloc((size_t)n_root + 1, sizeof(*res->roots));
        for (int i = 0; i < n_root; i++)
            p3d_hg_fill_root(&g, root[i], &res->roots[res->n_roots++],
                             res->t_end);
        p3d_hg_frontiers(&g, res);
    }
    for (int a = 0; a < hj->world; a++)
        res->state[a] = hj->hr[a].state;
    for (int i = 0; i < res->n_roots; i++)
        res->state[res->roots[i].rank] = res->roots[i].state;
    p3d_hg_mismatches(&g, res);
    free(g.e);
    free(root);
    free(depth);
}
