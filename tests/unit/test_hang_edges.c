/*
 * test_hang_edges.c - the wait graph's edges (p3d_hang_edges.c): an edge
 * is added once; a wait cut at P3D_HANG_WAITFOR edges still gives every
 * rank the distance to a root that all its edges gave (checked against
 * relaxing every edge of the uncut graph, on pseudo-random graphs).
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

#define W 40

static struct p3d_job job;
static struct p3d_rank ranks[W];
static struct p3d_hrank hr[W];
static struct p3d_hjob hj = {hr, W};
static struct p3d_gcomm comms[2];
static int slots[2][W];
static struct p3d_rec_op ops[W];

static unsigned seed;

static unsigned rnd(unsigned n)
{
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) % n;
}

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_once),
        cmocka_unit_test(test_depth_beyond_the_kept_edges),
        cmocka_unit_test(test_depth_over_cut_waits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
