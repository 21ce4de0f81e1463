/*
 * p3d_hang_init.c - hang analysis: ranks blocked creating a
 * communicator.  In an init that never returned (the watchdog's
 * P3D_REC_HANG with op 0x80) the members are those of a communicator a
 * rank of the same stage created at the same point, or of the one layout
 * group that fits (nranks, the ranks seen in the same init); a rank
 * outside NCCL whose next op is the first on a communicator it has not
 * created waits for the member that makes the NCCL id.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_hang_int.h"
#include "p3d_label.h"
#include "p3d_match.h"
#include "p3d_util.h"

/*
 * The grids groups are made from: the dense one (tp, cp, dp, pp) and,
 * with EP, Megatron's expert one (etp, ep in cp's place, edp, pp; the
 * same order, model/p3d_layout.c), whose EP, expert-DP and expert-TP
 * groups the dense axes cannot express (an EP group of 2 among 4 DP
 * ranks, a folded expert TP group inside a TP group).
 */
struct p3d_hg_grid {
    int size[P3D_AX_N];
    const int *ord;
};

/* Grid k (0 dense, 1 expert) of the job's layout; 0 if it has none. */
static int p3d_hg_grid_of(const struct p3d_job *job, int k,
                          struct p3d_hg_grid *gr)
{
    const struct p3d_layout *l = &job->layout;

    if (!l->valid || (k == 1 && l->ep <= 1) || k > 1)
        return 0;
    if (k == 1)
        p3d_layout_expert_sizes(l, gr->size);
    else
        memcpy(gr->size, l->size, sizeof(gr->size));
    gr->ord = l->ord;
    return 1;
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

/* The set shaped like m on grid gr for rank a (axes m varies take m's
 * values, the others a's); 0 unless it holds a and as many as m. */
static int p3d_hg_like_on(const struct p3d_job *job,
                          const struct p3d_hg_grid *gr,
                          const struct p3d_gcomm *m, int a, int *out)
{
    uint64_t vals[P3D_AX_N] = {0};
    int n = 0, fixed[P3D_AX_N], has_a = 0, c[P3D_AX_N], ca[P3D_AX_N];

    for (int i = 0; i < m->n_members; i++) {
        p3d_grid_coords(gr->size, gr->ord, m->members[i], c);
        for (int ax = 0; ax < P3D_AX_N; ax++) {
            if (c[ax] < 0 || c[ax] >= 64)
                return 0;
            vals[ax] |= 1ull << c[ax];
        }
    }
    for (int ax = 0; ax < P3D_AX_N; ax++)
        fixed[ax] = __builtin_popcountll(vals[ax]) == 1;
    p3d_grid_coords(gr->size, gr->ord, a, ca);
    for (int w = 0; w < job->world_size; w++) {
        int ok = 1;
        p3d_grid_coords(gr->size, gr->ord, w, c);
        for (int ax = 0; ax < P3D_AX_N && ok; ax++)
            ok = fixed[ax] ? c[ax] == ca[ax] : !!(vals[ax] & (1ull << c[ax]));
        if (ok) {
            out[n++] = w;
            has_a |= w == a;
        }
    }
    return has_a && n == m->n_members ? n : 0;
}

/*
 * Members of the communicator rank a was creating when it blocked in an
 * init: a rank t of a's stage created its k-th communicator (same
 * program, same order) with members M; a's is the set shaped like M
 * under the layout, on the grid where M is a group (the dense one, or
 * the expert one for EP's and the expert groups).
 */
static int p3d_hg_like(const struct p3d_job *job, const struct p3d_gcomm *m,
                       int a, int *out)
{
    struct p3d_hg_grid gr;
    int n = 0;

    for (int k = 0; n == 0 && p3d_hg_grid_of(job, k, &gr); k++)
        n = p3d_hg_like_on(job, &gr, m, a, out);
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
void p3d_hg_infer(struct p3d_hg *g, int a)
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

/* Every rank blocked in the init of `hash` is in cand[0..k) (in: a
 * scratch [world] of zeros, left so). */
static int p3d_hg_holds_init(const struct p3d_hg *g, uint64_t hash,
                             const int *cand, int k, uint8_t *in)
{
    int ok = 1;

    for (int i = 0; i < k; i++)
        if (cand[i] >= 0 && cand[i] < g->hj->world)
            in[cand[i]] = 1;
    for (int b = 0; b < g->hj->world && ok; b++)
        ok = in[b] || !p3d_hg_in_init_of(&g->hj->hr[b], hash);
    for (int i = 0; i < k; i++)
        if (cand[i] >= 0 && cand[i] < g->hj->world)
            in[cand[i]] = 0;
    return ok;
}

/*
 * Members of an init nobody finished, from the layout: the one group of
 * a (some axes varied, on the dense grid or with EP on the expert one)
 * with `nranks` members that holds every rank seen blocked in the same
 * init.  0 if none or several fit.
 */
static int p3d_hg_guess(const struct p3d_hg *g, uint64_t hash,
                        uint64_t nranks, int a, int *mem)
{
    int *cand = p3d_xcalloc((size_t)g->hj->world + 1, sizeof(int));
    uint8_t *in = p3d_xcalloc((size_t)g->hj->world + 1, 1);
    int n = 0, found = 0;
    struct p3d_hg_grid gr;

    for (int grid = 0; p3d_hg_grid_of(g->job, grid, &gr); grid++)
    for (unsigned mask = 1; mask < (1u << P3D_AX_N); mask++) {
        int k = p3d_grid_group(gr.size, gr.ord, g->job->world_size, a,
                               mask, cand);
        if ((uint64_t)k != nranks || !p3d_hg_holds_init(g, hash, cand, k, in))
            continue;
        if (!found || n != k || memcmp(mem, cand, sizeof(int) * (size_t)k)) {
            found++;
            memcpy(mem, cand, sizeof(int) * (size_t)k);
            n = k;
        }
    }
    free(cand);
    free(in);
    return found == 1 ? n : 0;
}

static int p3d_int_cmp(const void *x, const void *y)
{
    return P3D_CMP(*(const int *)x, *(const int *)y);
}

/* The label of a communicator of the job with these members (a guessed
 * init's: the same ranks make the same kind of group), -1 if none. */
static int p3d_hg_label_of_set(const struct p3d_job *job, const int *mem,
                               int n)
{
    int *s = p3d_xcalloc((size_t)n + 1, sizeof(int)), label = -1;

    memcpy(s, mem, sizeof(int) * (size_t)n);
    qsort(s, (size_t)n, sizeof(int), p3d_int_cmp);
    for (int c = 0; n > 0 && c < job->n_comms && label < 0; c++)
        if (job->comms[c].n_members == n &&
            !memcmp(job->comms[c].members, s, sizeof(int) * (size_t)n))
            label = job->comms[c].label;
    free(s);
    return label;
}

/* p3d_hg_init_members worked out (no memo). */
static int p3d_hg_init_find(const struct p3d_hg *g, int a, uint64_t hash,
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
            h->hang[j]->comm_hash == hash) {
            nm = p3d_hg_guess(g, hash, h->hang[j]->seq, a, mem);
            *label = p3d_hg_label_of_set(g->job, mem, nm);
        }
    return nm;
}

/*
 * A world communicator's init that half of 16k ranks never joined: each
 * of the 8k blocked in it asked for its members (a walk of the world, and
 * the layout's groups checked against every rank blocked in it), and
 * for each member whether it joined.  One communicator has one set of
 * members, which holds every rank making it: worked out once, for the
 * first rank that asks, and given to every other rank it holds.
 */
static struct p3d_hg_initm *p3d_hg_memo_of(const struct p3d_hg *g,
                                           uint64_t hash)
{
    for (size_t i = 0; g->memo && i < g->memo->n; i++)
        if (g->memo->v[i].hash == hash)
            return &g->memo->v[i];
    return NULL;
}

static struct p3d_hg_initm *p3d_hg_memo_add(const struct p3d_hg *g,
                                            uint64_t hash, const int *mem,
                                            int n, int label)
{
    struct p3d_hg_memo *m = g->memo;
    struct p3d_hg_initm *v;

    m->cap = p3d_grow((void **)&m->v, m->cap, m->n, sizeof(*m->v));
    v = &m->v[m->n++];
    *v = (struct p3d_hg_initm){hash, p3d_xcalloc((size_t)n, sizeof(int)),
                               n, label, -1,
                               p3d_xcalloc((size_t)g->hj->world + 1, 1)};
    memcpy(v->mem, mem, sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        if (mem[i] >= 0 && mem[i] < g->hj->world)
            v->in[mem[i]] = 1;
    return v;
}

/* The memo's entry for rank a's init of `hash`, NULL when it has none
 * that holds a (a rank the inferred members lack is worked out alone). */
static struct p3d_hg_initm *p3d_hg_memo_for(const struct p3d_hg *g, int a,
                                            uint64_t hash)
{
    struct p3d_hg_initm *v = p3d_hg_memo_of(g, hash);

    return v && a >= 0 && a < g->hj->world && v->in[a] ? v : NULL;
}

const int *p3d_hg_init_members(const struct p3d_hg *g, int a, uint64_t hash,
                               int *buf, int *n, int *label)
{
    const struct p3d_hg_initm *v = p3d_hg_memo_for(g, a, hash);

    if (v == NULL) {
        *n = p3d_hg_init_find(g, a, hash, buf, label);
        if (g->memo == NULL || *n == 0 || p3d_hg_memo_of(g, hash))
            return buf;
        v = p3d_hg_memo_add(g, hash, buf, *n, *label);
        if (!v->in[a]) /* kept for the members it holds */
            return buf;
    }
    *n = v->n;
    *label = v->label;
    return v->mem;
}

/* Members mem[0..n) that did not join communicator `hash`: a new absent
 * set (its index). */
static int p3d_hg_not_joined(struct p3d_hg *g, uint64_t hash, const int *mem,
                             int n)
{
    int xi = p3d_hg_absent_add(g, hash, UINT64_MAX, n);
    struct p3d_hg_absent *x = &g->absent[xi];

    for (int i = 0; i < n; i++)
        if (!p3d_hg_joined(g, mem[i], hash))
            x->b[x->n++] = mem[i];
    return xi;
}

int p3d_hg_init_edges(struct p3d_hg *g, int a, uint64_t hash,
                             uint64_t t0)
{
    int *buf = p3d_xcalloc((size_t)g->hj->world + 1, sizeof(int));
    struct p3d_hedge like = {.comm = hash, .seq = UINT64_MAX, .t = t0,
                             .op = P3D_HANG_OP_INIT, .label = -1};
    int n, nm;
    const int *mem = p3d_hg_init_members(g, a, hash, buf, &nm, &like.label);
    struct p3d_hg_initm *v = p3d_hg_memo_for(g, a, hash);
    int xi = v && v->xi >= 0 ? v->xi : p3d_hg_not_joined(g, hash, mem, nm);

    if (v) /* worked out once for all its members */
        v->xi = xi;
    n = p3d_hg_wait_absent(g, a, -1, xi, &like);
    free(buf);
    return nm > 0 ? n : -1;
}
