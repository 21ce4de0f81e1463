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
#include "p3d_ops.h"
#include "p3d_util.h"


int p3d_hg_has_file(const struct p3d_hg *g, int b)
{
    return b >= 0 && b < g->hj->world && g->hj->hr[b].r != NULL &&
           g->hj->hr[b].open;
}

int p3d_hg_lost_records(const struct p3d_hg *g, int b)
{
    return p3d_hg_has_file(g, b) && p3d_lost_records(g->hj->hr[b].r);
}

/* Has member b (global) issued the counterpart of o (rank a's op)? */
int p3d_hg_arrived(const struct p3d_hg *g, int b, const struct p3d_rec_op *o)
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

/*
 * The members (in slot order) of communicator gi that have not issued
 * collective o's seq (an absent set: its index in g->absent).  Every
 * waiter of one instance asks the same, so it is worked out once: a
 * stalled collective of N ranks asked N^2 times.
 */
static int p3d_hg_absent(struct p3d_hg *g, int gi, const struct p3d_rec_op *o)
{
    const struct p3d_gcomm *c = &g->job->comms[gi];
    uint64_t key = (o->comm_hash ^ (o->seq * 0x9e3779b97f4a7c15ull)) *
                   0xff51afd7ed558ccdull;
    struct p3d_hg_absent *x;
    int xi;

    for (int k = p3d_map_get(&g->absent_idx, key); k >= 0;
         k = g->absent[k].prev)
        if (g->absent[k].comm == o->comm_hash && g->absent[k].seq == o->seq)
            return k;
    xi = p3d_hg_absent_add(g, o->comm_hash, o->seq, c->size);
    x = &g->absent[xi];
    x->prev = p3d_map_push(&g->absent_idx, key, xi);
    for (int j = 0; j < c->size; j++)
        if (c->slot[j] >= 0 && !p3d_hg_arrived(g, c->slot[j], o))
            x->b[x->n++] = c->slot[j];
    return xi;
}

/* Hard edges of rank a's pending op o: members that have not arrived. */
static int p3d_hg_op_edges(struct p3d_hg *g, int a, const struct p3d_rec_op *o)
{
    int gi = p3d_map_get(&g->job->comm_idx, o->comm_hash);
    const struct p3d_gcomm *c;
    struct p3d_hedge like = {.o = o};

    if (gi < 0 || o->seq == UINT64_MAX)
        return 0;
    c = &g->job->comms[gi];
    if (P3D_OP_IS_P2P(o->op)) { /* only the peer */
        int b = o->peer >= 0 && o->peer < c->size ? c->slot[o->peer] : -1;
        if (b < 0 || b == a || p3d_hg_arrived(g, b, o))
            return 0;
        p3d_hg_edge(g, a, b, 1, o);
        return 1;
    }
    like.comm = o->comm_hash, like.seq = o->seq, like.t = o->t_enter;
    like.op = o->op, like.label = p3d_hang_label(g->job, o->comm_hash);
    return p3d_hg_wait_absent(g, a, gi, p3d_hg_absent(g, gi, o), &like);
}

/* A Send or Recv of a rank to itself: its own share of PyTorch's
 * all-to-all (p3d_usage_batch_a2a), which waits for no one else. */
/* Soft edges: members of a's pending comms that are waiting too (not by
 * an op to itself: a stuck all-to-all's own share is pending with the
 * rest of it, which is what the wait shows). */
static void p3d_hg_soft(struct p3d_hg *g, int a)
{
    const struct p3d_hrank *h = &g->hj->hr[a];

    for (size_t i = 0; i < h->n_kept; i++) {
        int gi, kept = 0;
        if (!h->pend[i] || p3d_op_to_self(h->ops[i]))
            continue;
        gi = p3d_map_get(&g->job->comm_idx, h->ops[i]->comm_hash);
        for (int j = 0; gi >= 0 && j < g->job->comms[gi].size; j++) {
            int b = g->job->comms[gi].slot[j];
            if (b == a || !p3d_hg_kind_target(g, P3D_HG_SOFT, b))
                continue;
            if (kept == P3D_HANG_WAITFOR) { /* p3d_hang_edges.c: why */
                p3d_hg_cut(g, a, gi, P3D_HG_SOFT);
                break;
            }
            p3d_hg_edge(g, a, b, 0, h->ops[i]);
            kept++;
        }
    }
}


static int p3d_hg_any_gpu(const struct p3d_hg *g)
{
    for (int b = 0; b < g->hj->world; b++)
        if (g->hj->hr[b].have_gpu)
            return 1;
    return 0;
}

/*
 * A waiting rank whose peers all issued their part (no hard edge) may
 * still wait on a peer with no GPU completion times while the job has
 * them elsewhere (a lost or full event ring, a GPU thread that stalled):
 * there "its call returned" does not say its kernel ran, and PyTorch
 * queues a process group's NCCL work behind the compute stream, which
 * waits on earlier collectives (ProcessGroupNCCL's syncStream before each
 * op, work.wait() after).  Such a rank is not named a root on that
 * evidence alone while another root has evidence of its own; if none
 * has, it still is (p3d_hg_roots).  The edge says so ("unknown").
 */
static void p3d_hg_unknown(struct p3d_hg *g, int a)
{
    const struct p3d_hrank *h = &g->hj->hr[a];

    for (size_t i = 0; i < h->n_kept; i++) {
        const struct p3d_rec_op *o = h->ops[i];
        int gi, kept = 0;
        if (!h->pend[i])
            continue;
        gi = p3d_map_get(&g->job->comm_idx, o->comm_hash);
        for (int j = 0; gi >= 0 && j < g->job->comms[gi].size; j++) {
            int b = g->job->comms[gi].slot[j];
            size_t n0 = g->n;
            if (b == a || (P3D_OP_IS_P2P(o->op) && j != o->peer) ||
                !p3d_hg_kind_target(g, P3D_HG_UNKNOWN, b))
                continue;
            if (kept == P3D_HANG_WAITFOR) { /* p3d_hang_edges.c: why */
                p3d_hg_cut(g, a, gi, P3D_HG_UNKNOWN);
                break;
            }
            p3d_hg_edge(g, a, b, 0, o);
            if (g->n > n0) /* not already there as another kind */
                g->e[n0].unknown = 1;
            kept++;
        }
    }
}

static void p3d_hg_edges(struct p3d_hg *g)
{
    int any_gpu = p3d_hg_any_gpu(g);

    for (int a = 0; a < g->hj->world; a++) {
        struct p3d_hrank *h = &g->hj->hr[a];
        int n = 0;
        if (h->state != P3D_HS_WAITING)
            continue;
        for (size_t i = 0; i < h->n_kept; i++)
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
        if (g->hj->hr[a].state == P3D_HS_WAITING && !g->hj->hr[a].hard) {
            p3d_hg_soft(g, a);
            if (any_gpu)
                p3d_hg_unknown(g, a);
        }
    for (int a = 0; a < g->hj->world; a++)
        if (g->hj->hr[a].state == P3D_HS_NOT_IN_NCCL)
            p3d_hg_infer(g, a);
    p3d_hg_index(g);
}

static int p3d_hg_out(const struct p3d_hg *g, int a)
{
    int n;

    p3d_hg_out_edges(g, a, &n);
    return n > 0;
}

/* Ranks reachable from those marked in reach (a walk along the edges,
 * not along "unknown": its end proved nothing). */
static void p3d_hg_reach(const struct p3d_hg *g, char *reach)
{
    int w = g->hj->world, head = 0, tail = 0;
    int *q = p3d_xcalloc((size_t)w + 1, sizeof(*q));
    char *grp_done = p3d_xcalloc((size_t)g->gr.n + 1, 1);

    for (int a = 0; a < w; a++)
        if (reach[a])
            q[tail++] = a;
    while (head < tail) {
        int n, a = q[head++];
        const int *out = p3d_hg_out_edges(g, a, &n);
        for (int i = 0; i < n; i++) {
            int b = g->e[out[i]].to;
            if (!g->e[out[i]].unknown && b >= 0 && b < w && !reach[b]) {
                reach[b] = 1;
                q[tail++] = b;
            }
        }
        p3d_hg_reach_cut(g, a, grp_done, reach, q, &tail);
    }
    free(grp_done);
    free(q);
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
        if (g->e[i].hard && !g->e[i].grouped && reach[g->e[i].from])
            in[g->e[i].to]++;
    p3d_hg_cut_indegree(g, reach, in);
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
    int w = g->hj->world, n = 0;
    char *reach = p3d_xcalloc((size_t)w, 1);

    for (int a = 0; a < w; a++)
        reach[a] = g->hj->hr[a].state == P3D_HS_WAITING ||
                   g->hj->hr[a].inferred;
    p3d_hg_reach(g, reach);
    for (int a = 0; a < w; a++)
        if (reach[a] && !p3d_hg_out(g, a) && !g->hj->hr[a].init_unknown)
            root[n++] = a;
    if (n == 0)                             /* none: all the stuck ones */
        for (int a = 0; a < w; a++)
            if (reach[a] && g->hj->hr[a].state == P3D_HS_WAITING &&
                !g->hj->hr[a].hard)
                root[n++] = a;
    if (n == 0)                             /* a cycle of hard waits */
        n = p3d_hg_cycle_roots(g, reach, root);
    free(reach);
    return n;
}

/* Whether rank a's op record o is pending only by p3d_hang_prove.c. */
static int p3d_hg_proven(const struct p3d_hrank *h, const struct p3d_rec_op *o)
{
    for (size_t i = 0; h->proven && i < h->n_kept; i++)
        if (h->ops[i] == o)
            return h->proven[i];
    return 0;
}

/* Describe the wait by op record o of rank a's comm. */
static void p3d_hg_wait_op(const struct p3d_hg *g, const struct p3d_rec_op *o,
                           struct p3d_hang_wait *w)
{
    int gi = p3d_map_get(&g->job->comm_idx, o->comm_hash);

    w->proven = p3d_hg_proven(&g->hj->hr[w->rank], o);
    w->comm = o->comm_hash;
    w->op = o->op;
    w->seq = o->seq;
    w->t_enter = o->t_enter;
    w->stack_id = o->stack_id;
    if (o->peer >= 0 && gi >= 0 && o->peer < g->job->comms[gi].size)
        w->peer = g->job->comms[gi].slot[o->peer];
    w->label = p3d_hang_label(g->job, o->comm_hash);
}

/* No edge: the oldest pending op (one to another rank first: a stuck
 * all-to-all's own share is pending with it), else the init it is
 * blocked in. */
static void p3d_hg_wait_plain(const struct p3d_hg *g, int a,
                              struct p3d_hang_wait *w)
{
    const struct p3d_hrank *h = &g->hj->hr[a];

    for (int self = 0; self < 2; self++)
        for (size_t i = 0; i < h->n_kept; i++)
            if (h->pend[i] && p3d_op_to_self(h->ops[i]) == self) {
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

/* Add rank `to` to w's waiting_for once. */
static void p3d_hg_for(struct p3d_hang_wait *w, int to)
{
    int k = 0;

    while (k < w->n_for && w->waiting_for[k] != to)
        k++;
    if (k == w->n_for && w->n_for < P3D_HANG_WAITFOR)
        w->waiting_for[w->n_for++] = to;
}

static int p3d_hg_same_wait(const struct p3d_hedge *a,
                            const struct p3d_hedge *b)
{
    return a->comm == b->comm && a->seq == b->seq && a->op == b->op;
}

/* The op rank a is blocked in: oldest op with a hard edge; whom for:
 * first the members that op waits for, then those of its other pending
 * ops (a rank can wait on several streams at once). */
static void p3d_hg_wait(struct p3d_hg *g, int a, struct p3d_hang_wait *w)
{
    const struct p3d_hedge *best = NULL;
    int n;
    const int *out = p3d_hg_out_edges(g, a, &n);

    memset(w, 0, sizeof(*w));
    w->rank = a;
    w->peer = -1;
    w->label = -1;
    for (int i = 0; i < n; i++) {
        const struct p3d_hedge *e = &g->e[out[i]];
        if (best == NULL || (e->hard > best->hard) ||
            (e->hard == best->hard && e->t < best->t))
            best = e;
    }
    for (int i = 0; best && i < n; i++)
        if (p3d_hg_same_wait(&g->e[out[i]], best))
            p3d_hg_for(w, g->e[out[i]].to);
    w->unknown = best && best->unknown;
    w->n_for_op = w->n_for;
    for (int i = 0; i < n; i++)
        p3d_hg_for(w, g->e[out[i]].to);
    if (best == NULL) {
        p3d_hg_wait_plain(g, a, w);
    } else if (best->o == NULL) {               /* an init */
        w->comm = best->comm, w->op = best->op, w->seq = best->seq;
        w->t_enter = best->t, w->label = best->label;
    } else {
        p3d_hg_wait_op(g, best->o, w);
    }
}

static int p3d_wait_cmp(const void *a, const void *b)
{
    const struct p3d_hang_wait *x = a, *y = b;

    if (x->depth != y->depth)
        return x->depth - y->depth;
    return x->rank - y->rank;
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
    struct p3d_hg g = {.job = job, .hj = hj,
                       .memo = p3d_xcalloc(1, sizeof(struct p3d_hg_memo))};
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
        n_root = p3d_hg_odd_roots(&g, root, n_root);
        res->stall = n_root == 0;
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
    if (res->detected && p3d_hang_stopped_running(job, hj, res)) {
        res->detected = res->stall = 0; /* what it found is kept in */
        res->n_roots = res->n_waiting = res->n_fr = 0; /* res->stopped */
        for (int a = 0; a < hj->world; a++) /* not a root's state */
            res->state[a] = hj->hr[a].state;
    }
    p3d_hg_free(&g);
    free(root);
    free(depth);
}
