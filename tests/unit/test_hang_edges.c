/*
 * test_hang_edges.c - the wait graph's edges (p3d_hang_edges.c): an edge
 * is added once; a wait cut at P3D_HANG_WAITFOR edges still gives every
 * rank the distance to a root that all its edges gave (checked against
 * relaxing every edge of the uncut graph, on pseudo-random graphs); a
 * hard wait cut the same way still gives every rank the waits on it, its
 * reach and its in-degree that all its edges gave.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_hang_int.h"
#include "p3d_util.h"
#include "test_rand.h"

#define W 40

static struct p3d_job job;
static struct p3d_rank ranks[W];
static struct p3d_hrank hr[W];
static struct p3d_hjob hj = {hr, W};
static struct p3d_gcomm comms[2];
static int slots[2][W];
static struct p3d_rec_op ops[W];


/* Comm 0: every rank; comm 1: the even ranks.  States at random. */
static void make_job(void)
{
    memset(&job, 0, sizeof(job));
    job.world_size = W;
    job.comms = comms;
    job.n_comms = 2;
    memset(comms, 0, sizeof(comms));
    for (int b = 0; b < W; b++) {
        slots[0][b] = b;
        if (b % 2 == 0)
            slots[1][b / 2] = b;
    }
    comms[0].size = W, comms[0].slot = slots[0];
    comms[1].size = W / 2, comms[1].slot = slots[1];
    for (int b = 0; b < W; b++) {
        memset(&hr[b], 0, sizeof(hr[b]));
        memset(&ranks[b], 0, sizeof(ranks[b]));
        hr[b].rank = b;
        hr[b].r = rnd(8) ? &ranks[b] : NULL;
        hr[b].open = hr[b].r != NULL;
        hr[b].have_gpu = rnd(3) == 0;
        hr[b].state = rnd(4) ? P3D_HS_WAITING : P3D_HS_EXITED;
        ops[b] = (struct p3d_rec_op){.op = P3D_OP_ALLREDUCE};
    }
}

struct full {
    int from[W * W * 4], to[W * W * 4];
    int n;
};

/* Rank a's wait of `kind` on comm gi: every target in full, the first
 * P3D_HANG_WAITFOR in g (and the cut), as p3d_hang_graph.c adds them. */
static void add_wait(struct p3d_hg *g, struct full *f, int a, int gi,
                     int kind)
{
    int kept = 0, cut = 0;

    for (int j = 0; j < comms[gi].size; j++) {
        int b = comms[gi].slot[j];
        if (b == a || !p3d_hg_kind_target(g, kind, b))
            continue;
        f->from[f->n] = a, f->to[f->n++] = b;
        if (kept == P3D_HANG_WAITFOR) {
            cut = 1;
            continue;
        }
        p3d_hg_edge(g, a, b, 0, &ops[a]);
        kept++;
    }
    if (cut)
        p3d_hg_cut(g, a, gi, kind);
}

/* Shortest distance to a root, relaxing every edge until none changes. */
static void relax_depth(const struct full *f, const int *root, int n_root,
                        int *depth)
{
    int changed = 1;

    for (int a = 0; a < W; a++)
        depth[a] = -1;
    for (int i = 0; i < n_root; i++)
        depth[root[i]] = 0;
    while (changed) {
        changed = 0;
        for (int i = 0; i < f->n; i++) {
            int d = depth[f->to[i]];
            if (d >= 0 && (depth[f->from[i]] < 0 ||
                           depth[f->from[i]] > d + 1)) {
                depth[f->from[i]] = d + 1;
                changed = 1;
            }
        }
    }
}

static void test_depth_over_cut_waits(void **state)
{
    static struct full f;
    int root[W], n_root, want[W], got[W], cuts = 0;

    (void)state;
    seed = 11;
    for (int round = 0; round < 200; round++) {
        struct p3d_hg g = {.job = &job, .hj = &hj};
        make_job();
        f.n = 0;
        for (int k = 0; k < W / 4; k++) { /* a few hard waits */
            int a = (int)rnd(W), b = (int)rnd(W);
            if (a != b) {
                p3d_hg_edge(&g, a, b, 1, NULL);
                f.from[f.n] = a, f.to[f.n++] = b;
            }
        }
        for (int a = 0; a < W; a++)
            if (hr[a].state == P3D_HS_WAITING && rnd(2))
                add_wait(&g, &f, a, (int)rnd(2),
                         rnd(2) ? P3D_HG_SOFT : P3D_HG_UNKNOWN);
        cuts += g.n_cut > 0;
        n_root = 0;
        for (int a = 0; a < W; a++)
            if (rnd(10) == 0)
                root[n_root++] = a;
        p3d_hg_index(&g);
        p3d_hg_depth(&g, root, n_root, got);
        relax_depth(&f, root, n_root, want);
        assert_memory_equal(got, want, sizeof(got));
        p3d_hg_free(&g);
    }
    assert_true(cuts > 100); /* the cut groups were exercised */
}

/* A chain of hard waits to a root, and a stalled collective whose
 * members' first P3D_HANG_WAITFOR edges do not reach the chain: the
 * cut wait's group still gives them their distance. */
static void test_depth_beyond_the_kept_edges(void **state)
{
    struct p3d_hg g = {.job = &job, .hj = &hj};
    static struct full f;
    int root[1] = {W - 1}, depth[W];

    (void)state;
    seed = 5;
    make_job();
    for (int b = 0; b < W; b++) {
        hr[b].r = &ranks[b], hr[b].open = 1, hr[b].have_gpu = 1;
        hr[b].state = b == W - 1 ? P3D_HS_EXITED : P3D_HS_WAITING;
    }
    f.n = 0;
    p3d_hg_edge(&g, W - 2, W - 1, 1, NULL); /* W-2 waits on the root */
    for (int a = 0; a < W - 2; a++)
        add_wait(&g, &f, a, 0, P3D_HG_SOFT);
    p3d_hg_index(&g);
    p3d_hg_depth(&g, root, 1, depth);
    assert_int_equal(depth[W - 1], 0);
    assert_int_equal(depth[W - 2], 1);
    for (int a = 0; a < W - 2; a++)
        assert_int_equal(depth[a], 2); /* W-2 is past their 8 edges */
    p3d_hg_free(&g);
}

static void test_edge_once(void **state)
{
    struct p3d_hg g = {.job = &job, .hj = &hj};
    int n;

    (void)state;
    seed = 3;
    make_job();
    p3d_hg_edge(&g, 0, 1, 1, &ops[0]);
    p3d_hg_edge(&g, 0, 1, 1, &ops[0]);
    p3d_hg_edge(&g, 0, 1, 1, &ops[1]); /* another op: another edge */
    p3d_hg_edge(&g, 1, 0, 1, &ops[0]);
    p3d_hg_edge(&g, 0, 1, 0, NULL);
    p3d_hg_edge(&g, 0, 1, 0, NULL);
    assert_int_equal(g.n, 4);
    p3d_hg_index(&g);
    p3d_hg_out_edges(&g, 0, &n);
    assert_int_equal(n, 3);
    p3d_hg_in_edges(&g, 0, &n);
    assert_int_equal(n, 1);
    p3d_hg_free(&g);
}

/* Absent sets: xi 0 on comm 0, xi 1 on comm 1, random members. */
static void make_absent(struct p3d_hg *g)
{
    g->absent = p3d_xcalloc(2, sizeof(*g->absent));
    g->n_absent = g->cap_absent = 2;
    for (int xi = 0; xi < 2; xi++) {
        g->absent[xi].b = p3d_xcalloc(W, sizeof(int));
        for (int j = 0; j < comms[xi].size; j++)
            if (rnd(2))
                g->absent[xi].b[g->absent[xi].n++] = comms[xi].slot[j];
    }
}

static struct p3d_rec_op hops[2][W];

/* Rank a's hard wait on absent set xi, as p3d_hang_graph.c adds it: the
 * first P3D_HANG_WAITFOR edges, then the cut; every edge in f. */
static void add_hard_wait(struct p3d_hg *g, struct full *f, int a, int xi)
{
    const struct p3d_hg_absent *x = &g->absent[xi];
    const struct p3d_rec_op *o = &hops[xi][a];
    size_t e0 = g->n;
    int kept = 0, cut = 0;

    for (int i = 0; i < x->n; i++) {
        if (x->b[i] == a)
            continue;
        f->from[f->n] = a, f->to[f->n++] = x->b[i];
        if (kept == P3D_HANG_WAITFOR) {
            cut = 1;
            continue;
        }
        p3d_hg_edge(g, a, x->b[i], 1, o);
        kept++;
    }
    if (cut)
        p3d_hg_cut_hard(g, a, xi, xi, e0);
}

struct seen_in {
    int from[W * W], n;
    size_t key[W * W];
    uint64_t comm[W * W];
};

static void note_in(void *ctx, const struct p3d_hedge *e, size_t key)
{
    struct seen_in *s = ctx;

    assert_true(e->hard);
    s->from[s->n] = e->from;
    s->comm[s->n] = e->comm;
    s->key[s->n++] = key;
}

/* The hard waits on b as the uncut graph has them, in its order, against
 * p3d_hg_hard_in's ordered by key. */
static void check_hard_in(const struct p3d_hg *g, const struct full *f, int b)
{
    static struct seen_in s;
    int want[W * W], n = 0;

    s.n = 0;
    p3d_hg_hard_in(g, b, note_in, &s);
    for (int i = 0; i < f->n; i++)
        if (f->to[i] == b)
            want[n++] = f->from[i];
    assert_int_equal(s.n, n);
    for (uint64_t c = 0; c < 3; c++) { /* none, then each set's comm */
        int on = 0;
        uint64_t comm = c ? 0x100 + c - 1 : 0;
        for (int i = 0; i < s.n; i++)
            on |= s.comm[i] == comm;
        assert_int_equal(p3d_hg_hard_on(g, b, comm), on);
    }
    assert_int_equal(p3d_hg_hard_on(g, b, 0x999), 0);
    for (int i = 1; i < s.n; i++) /* insertion sort by key, stable */
        for (int j = i; j > 0 && s.key[j - 1] > s.key[j]; j--) {
            int t = s.from[j];
            size_t k = s.key[j];
            s.from[j] = s.from[j - 1], s.key[j] = s.key[j - 1];
            s.from[j - 1] = t, s.key[j - 1] = k;
        }
    assert_memory_equal(s.from, want, (size_t)n * sizeof(int));
}

/* Ranks reached from `start` along f's edges, and along g's kept edges
 * and cut groups (as p3d_hang_graph.c's walk). */
static void check_reach(const struct p3d_hg *g, const struct full *f,
                        const char *start)
{
    char want[W], got[W], *done = p3d_xcalloc((size_t)g->gr.n + 1, 1);
    int q[W], head = 0, tail = 0, changed = 1;

    memcpy(want, start, W);
    while (changed) {
        changed = 0;
        for (int i = 0; i < f->n; i++)
            if (want[f->from[i]] && !want[f->to[i]])
                want[f->to[i]] = 1, changed = 1;
    }
    memcpy(got, start, W);
    for (int a = 0; a < W; a++)
        if (got[a])
            q[tail++] = a;
    while (head < tail) {
        int n, a = q[head++];
        const int *out = p3d_hg_out_edges(g, a, &n);
        for (int i = 0; i < n; i++)
            if (!got[g->e[out[i]].to])
                got[g->e[out[i]].to] = 1, q[tail++] = g->e[out[i]].to;
        p3d_hg_reach_cut(g, a, done, got, q, &tail);
    }
    assert_memory_equal(got, want, W);
    free(done);
}

static void check_indegree(const struct p3d_hg *g, const struct full *f,
                           const char *from)
{
    int want[W] = {0}, got[W] = {0};

    for (int i = 0; i < f->n; i++)
        want[f->to[i]] += from[f->from[i]] != 0;
    for (size_t i = 0; i < g->n; i++)
        if (!g->e[i].grouped && from[g->e[i].from])
            got[g->e[i].to]++;
    p3d_hg_cut_indegree(g, from, got);
    assert_memory_equal(got, want, sizeof(got));
}

static void test_hard_cut_same_as_uncut(void **state)
{
    static struct full f;
    int root[W], n_root, want[W], got[W], cuts = 0;
    char start[W];

    (void)state;
    seed = 17;
    for (int round = 0; round < 200; round++) {
        struct p3d_hg g = {.job = &job, .hj = &hj};
        make_job();
        make_absent(&g);
        for (int a = 0; a < W; a++) /* each set's waits on its comm */
            hops[0][a].comm_hash = 0x100, hops[1][a].comm_hash = 0x101;
        f.n = 0;
        for (int k = 0; k < W / 4; k++) { /* a few hard waits kept */
            int a = (int)rnd(W), b = (int)rnd(W);
            size_t n0 = g.n;
            if (a != b)
                p3d_hg_edge(&g, a, b, 1, NULL);
            if (g.n > n0) /* not there already */
                f.from[f.n] = a, f.to[f.n++] = b;
        }
        for (int a = 0; a < W; a++)
            for (int xi = 0; xi < 2; xi++)
                if (rnd(3) == 0)
                    add_hard_wait(&g, &f, a, xi);
        cuts += g.n_cut > 0;
        p3d_hg_index(&g);
        for (int b = 0; b < W; b++)
            check_hard_in(&g, &f, b);
        for (int a = 0; a < W; a++)
            start[a] = rnd(4) == 0;
        check_reach(&g, &f, start);
        check_indegree(&g, &f, start);
        n_root = 0;
        for (int a = 0; a < W; a++)
            if (rnd(10) == 0)
                root[n_root++] = a;
        p3d_hg_depth(&g, root, n_root, got);
        relax_depth(&f, root, n_root, want);
        assert_memory_equal(got, want, sizeof(got));
        p3d_hg_free(&g);
    }
    assert_true(cuts > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_once),
        cmocka_unit_test(test_depth_beyond_the_kept_edges),
        cmocka_unit_test(test_depth_over_cut_waits),
        cmocka_unit_test(test_hard_cut_same_as_uncut),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
