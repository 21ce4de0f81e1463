/*
 * test_an_layout.c - layout arithmetic, parsing and inference: the group
 * families of Megatron's worked example, and inference of every layout of
 * the simulator issue plus EP > 1 and the tp-pp-dp order, with and without
 * the command-line hint, from communicators built here by brute force.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_infer.h"
#include "p3d_layout.h"

#define B(x) (1u << (x))

static void test_worked_example(void **state)
{
    struct p3d_layout l;
    int tp[] = {0, 1}, pp[] = {0, 4}, dp[] = {0, 2}, mp[] = {0, 1, 4, 5};
    int pp_alt[] = {0, 2}, bad[] = {0, 3}, w[] = {0, 1, 2, 3, 4, 5, 6, 7};
    int pos[] = {1};

    (void)state;
    assert_int_equal(p3d_layout_set(&l, 2, 1, 2, 2, 1, "tp-cp-ep-dp-pp"), 0);
    /* at EP = 1 Megatron's expert tp-ep group is the TP group, its
     * tp-ep-pp group the MP group */
    assert_int_equal(p3d_layout_match(&l, tp, 2),
                     B(P3D_LBL_TP) | B(P3D_LBL_TP_CP) | B(P3D_LBL_TP_EP));
    assert_int_equal(p3d_layout_match(&l, pp, 2),
                     B(P3D_LBL_PP) | B(P3D_LBL_EMB) | B(P3D_LBL_P2P));
    assert_int_equal(p3d_layout_match(&l, dp, 2), B(P3D_LBL_DP) |
                     B(P3D_LBL_DP_CP) | B(P3D_LBL_EXPERT_DP));
    assert_int_equal(p3d_layout_match(&l, mp, 4),
                     B(P3D_LBL_MP) | B(P3D_LBL_TP_EP_PP));
    assert_int_equal(p3d_layout_match(&l, bad, 2), 0);
    assert_true(p3d_layout_match(&l, w, 8) & B(P3D_LBL_WORLD));
    assert_true(p3d_layout_match(&l, pos, 1) & B(P3D_LBL_POS_EMB));
    /* --use-tp-pp-dp-mapping swaps PP and DP */
    assert_int_equal(p3d_layout_set(&l, 2, 1, 2, 2, 1, "tp-cp-ep-pp-dp"), 0);
    assert_true(p3d_layout_match(&l, pp_alt, 2) & B(P3D_LBL_PP));
    assert_true(p3d_layout_match(&l, pp, 2) & B(P3D_LBL_DP));
    assert_int_equal(p3d_layout_match(&l, (int[]){0, 1, 2, 3}, 4),
                     B(P3D_LBL_MP) | B(P3D_LBL_TP_EP_PP));
}

/* torchtitan's HSDP: dp = 4 as 2 replicas of 2 shards, shard fastest. */
static void test_hsdp(void **state)
{
    struct p3d_layout l;

    (void)state;
    assert_int_equal(p3d_layout_set(&l, 2, 1, 4, 1, 1, "tp-cp-ep-dp-pp"), 0);
    l.dp_shard = 2;
    assert_true(p3d_layout_match(&l, (int[]){0, 2}, 2) & B(P3D_LBL_DP_SHARD));
    assert_false(p3d_layout_match(&l, (int[]){0, 2}, 2) & B(P3D_LBL_DP_REP));
    assert_true(p3d_layout_match(&l, (int[]){1, 5}, 2) & B(P3D_LBL_DP_REP));
    assert_false(p3d_layout_match(&l, (int[]){0, 6}, 2) &
                 (B(P3D_LBL_DP_REP) | B(P3D_LBL_DP_SHARD)));
    assert_true(p3d_layout_match(&l, (int[]){0, 2, 4, 6}, 4) & B(P3D_LBL_DP));
    l.dp_shard = 0;
    assert_false(p3d_layout_match(&l, (int[]){0, 2}, 2) & B(P3D_LBL_DP_SHARD));
}

static void test_parse(void **state)
{
    struct p3d_layout l;
    static const char argv[] = "python3\0x.py\0--tensor-model-parallel-size"
        "\0" "4\0--pipeline-model-parallel-size=2\0--use-tp-pp-dp-mapping\0"
        "--micro-batch-size\0" "2\0--global-batch-size\0" "64\0--seq-length"
        "\0" "4096";

    (void)state;
    assert_int_equal(p3d_layout_parse(&l, "tp=2,pp=2,cp=1,ep=1,"
                                      "order=tp-cp-ep-dp-pp", 8), 0);
    assert_int_equal(l.size[P3D_AX_DP], 2);
    assert_string_equal(l.source, "user");
    assert_int_equal(p3d_layout_parse(&l, "tp=3", 8), -1);
    assert_int_equal(p3d_layout_parse(&l, "tp=2,bogus=1", 8), -1);
    assert_int_equal(p3d_layout_parse(&l, "tp=2,order=tp-xx-pp", 8), -1);
    assert_int_equal(p3d_layout_parse(&l, "tp=2,ep=4,etp=1", 8), 0);
    assert_int_equal(p3d_layout_etp(&l), 1);
    assert_int_equal(p3d_layout_parse(&l, "tp=2,ep=4,etp=1", 0), 0);
    assert_int_equal(p3d_layout_parse(&l, "tp=2,ep=4,etp=3", 8), -1);
    /* torchtitan's HSDP: dp_shard divides dp and is smaller */
    assert_int_equal(p3d_layout_parse(&l, "tp=2,dp_shard=2", 8), 0);
    assert_int_equal(l.dp_shard, 2);
    assert_int_equal(p3d_layout_parse(&l, "tp=2,dp_shard=3", 8), -1);
    assert_int_equal(p3d_layout_parse(&l, "tp=2,dp_shard=4", 8), -1);
    assert_int_equal(p3d_layout_parse(&l, "tp=2,ep=2,etp=1,dp_shard=2", 8),
                     0);
    assert_int_equal(p3d_layout_efsdp(&l), 2);
    assert_int_equal(p3d_layout_from_cmdline(&l, argv, sizeof(argv), 16), 1);
    assert_int_equal(l.size[P3D_AX_TP], 4);
    assert_int_equal(l.size[P3D_AX_PP], 2);
    assert_int_equal(l.size[P3D_AX_DP], 2);
    assert_string_equal(l.order, "tp-cp-ep-pp-dp");
    assert_int_equal(l.mbs, 2);
    assert_int_equal(l.gbs, 64);
    assert_int_equal(l.seq, 4096);
    assert_int_equal(p3d_layout_from_cmdline(&l, "python3\0a.py", 12, 8), 0);
}

/* ---- a job built from a layout, with Megatron-like usage ---- */

static struct p3d_job job;

static void add_comm(const int *m, int n, int op, uint64_t calls,
                     uint64_t bytes)
{
    struct p3d_gcomm *g;

    job.comms = realloc(job.comms, sizeof(*g) * (size_t)(job.n_comms + 1));
    g = &job.comms[job.n_comms++];
    memset(g, 0, sizeof(*g));
    g->hash = (uint64_t)job.n_comms;
    g->size = g->n_members = n;
    g->members = malloc(sizeof(int) * (size_t)n);
    memcpy(g->members, m, sizeof(int) * (size_t)n);
    g->st[op].calls = calls * (uint64_t)n;
    g->st[op].bytes = calls * bytes * (uint64_t)n;
    if (op == P3D_OP_ALLREDUCE && bytes <= 8)
        g->use.tiny_ar = g->st[op].calls;
    if (op == P3D_OP_ALLREDUCE && bytes >= (1u << 20))
        g->use.big_ar = g->st[op].calls;
    g->order = (uint32_t)job.n_comms;
}

/* Every group of `mask` under l (EMB: first+last stage of PP groups). */
static void add_family(const struct p3d_layout *l, unsigned mask, int emb,
                       int op, uint64_t calls, uint64_t bytes)
{
    int w = l->size[0] * l->size[1] * l->size[2] * l->size[3];
    char *done = calloc((size_t)w, 1);
    int *m = malloc(sizeof(int) * (size_t)w);

    for (int r = 0; r < w; r++) {
        int c0[P3D_AX_N], c[P3D_AX_N], n = 0;
        if (done[r])
            continue;
        p3d_layout_coords(l, r, c0);
        for (int s = 0; s < w; s++) {
            int same = 1;
            p3d_layout_coords(l, s, c);
            for (int a = 0; a < P3D_AX_N; a++)
                same &= (mask & B(a)) || c[a] == c0[a];
            if (!same)
                continue;
            done[s] = 1;
            if (!emb || c[P3D_AX_PP] == 0 ||
                c[P3D_AX_PP] == l->size[P3D_AX_PP] - 1)
                m[n++] = s;
        }
        add_comm(m, n, op, calls, bytes);
    }
    free(done);
    free(m);
}

/* EP groups: expert view (etp, ep, edp, pp), same order, the ep axis in
 * cp's place; a folded expert TP group of 2+ ranks gathers tokens per
 * layer (token_dispatcher.py). */
static void add_ep(const struct p3d_layout *l)
{
    struct p3d_layout e;
    int w = l->size[0] * l->size[1] * l->size[2] * l->size[3];
    int etp = p3d_layout_etp(l);
    int edp = w / (etp * l->ep * l->size[P3D_AX_PP]);

    assert_int_equal(p3d_layout_set(&e, etp, l->ep, edp, l->size[P3D_AX_PP],
                                    1, l->order), 0);
    add_family(&e, B(P3D_AX_CP), 0, P3D_OP_ALLTOALL, 60, 1 << 17);
    add_family(&e, B(P3D_AX_DP), 0, P3D_OP_REDUCESCATTER, 3, 1 << 23);
    if (l->etp > 1)
        add_family(&e, B(P3D_AX_TP), 0, P3D_OP_ALLGATHER, 60, 1 << 17);
}

enum { DT_F32 = 7, DT_BF16 = 9 }; /* ncclFloat32, ncclBfloat16 */

/* Give the communicators added since `from` a second op kind, with the
 * dtypes (ncclDataType_t) of both: an all-gather in `ag_dt` and a
 * reduce-scatter in `rs_dt`, `calls` of each per member. */
static void with_rsag(int from, uint64_t calls, int ag_dt, int rs_dt)
{
    for (int i = from; i < job.n_comms; i++) {
        struct p3d_gcomm *g = &job.comms[i];
        uint64_t n = (uint64_t)g->n_members;
        g->st[P3D_OP_ALLGATHER].calls = calls * n;
        g->st[P3D_OP_REDUCESCATTER].calls = calls * n;
        g->use.dtypes[P3D_OP_ALLGATHER] = (uint16_t)(1u << ag_dt);
        g->use.dtypes[P3D_OP_REDUCESCATTER] = (uint16_t)(1u << rs_dt);
    }
}

static void build_job(const struct p3d_layout *l)
{
    int w = l->size[0] * l->size[1] * l->size[2] * l->size[3];
    int all[64], k;

    for (int i = 0; i < job.n_comms; i++)
        free(job.comms[i].members);
    free(job.comms);
    memset(&job, 0, sizeof(job));
    job.world_size = w;
    for (int i = 0; i < w; i++)
        all[i] = i;
    add_comm(all, w, P3D_OP_ALLREDUCE, 1, 4);                  /* WORLD */
    add_family(l, B(P3D_AX_TP), 0, P3D_OP_BROADCAST, 100, 4096); /* TP */
    if (l->size[P3D_AX_PP] > 1) {
        add_family(l, B(P3D_AX_PP), 0, P3D_OP_SEND, 40, 1 << 19);
        add_family(l, B(P3D_AX_PP), 1, P3D_OP_ALLREDUCE, 1, 1 << 24);
    }
    k = job.n_comms; /* Megatron's distributed optimizer: fp32 gradients
                        reduce-scattered, bf16 parameters all-gathered */
    add_family(l, B(P3D_AX_DP) | B(P3D_AX_CP), 0, P3D_OP_REDUCESCATTER, 3,
               1 << 23);
    with_rsag(k, 3, DT_BF16, DT_F32);
    add_family(l, B(P3D_AX_TP) | B(P3D_AX_PP), 0, P3D_OP_ALLREDUCE, 3, 4);
    add_comm(all, w, P3D_OP_ALLREDUCE, 3, 4);             /* grad norm */
    if (l->size[P3D_AX_CP] > 1)
        add_family(l, B(P3D_AX_CP), 0, P3D_OP_ALLGATHER, 50, 1 << 18);
    if (l->ep > 1)
        add_ep(l);
}

static void check_infer_etp(int tp, int pp, int dp, int cp, int ep,
                            int etp, const char *order)
{
    struct p3d_layout truth, got, wrong;

    assert_int_equal(p3d_layout_set_moe(&truth, tp, cp, dp, pp, ep, etp,
                                        order), 0);
    truth.source = "cmdline";
    build_job(&truth);
    for (int hint = 0; hint < 2; hint++) {
        p3d_layout_infer(&job, hint ? &truth : NULL, 0, &got);
        if (memcmp(got.size, truth.size, sizeof(got.size)) || got.ep != ep ||
            p3d_layout_etp(&got) != etp ||
            ((pp > 1 && dp > 1) && strcmp(got.order, order)))
            fail_msg("tp%d pp%d dp%d cp%d ep%d etp%d %s hint=%d: got tp%d "
                     "pp%d dp%d cp%d ep%d etp%d %s", tp, pp, dp, cp, ep, etp,
                     order, hint, got.size[P3D_AX_TP], got.size[P3D_AX_PP],
                     got.size[P3D_AX_DP], got.size[P3D_AX_CP], got.ep,
                     p3d_layout_etp(&got), got.order);
        assert_string_equal(got.source, hint ? "cmdline" : "inferred");
        assert_int_equal(got.explained, got.total);
        assert_int_equal(got.contradicted, 0);
        /* MoE: Megatron's gradients on the whole DP x CP group rule out
         * torchtitan's HSDP with EP: none of its layouts ties
         * (p3d_unseen; this job's TP groups, without Megatron's int64
         * batch broadcasts, tie with DP ones anyway at ep 1) */
        for (int a = 0; ep > 1 && a < got.n_alts; a++)
            if (strstr(got.alts[a].text, "dp_shard") &&
                !strncmp(got.alts[a].why, "fits", 4))
                fail_msg("tp%d pp%d dp%d cp%d ep%d: HSDP alternative %s: "
                         "%s", tp, pp, dp, cp, ep, got.alts[a].text,
                         got.alts[a].why);
    }
    /* a wrong hint is contradicted and not used */
    if (tp * 2 <= 8 && (dp % 2 == 0)) {
        p3d_layout_set(&wrong, tp * 2, cp, dp / 2, pp, 1, order);
        wrong.source = "cmdline";
        p3d_layout_infer(&job, &wrong, 0, &got);
        assert_int_equal(got.contradicted, 1);
        assert_string_equal(got.source, "inferred");
        assert_int_equal(got.size[P3D_AX_TP], tp);
    }
}

static void check_infer(int tp, int pp, int dp, int cp, int ep,
                        const char *order)
{
    check_infer_etp(tp, pp, dp, cp, ep, tp, order);
}

static void test_infer_issue3_layouts(void **state)
{
    static const char *const orders[] = {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"};

    (void)state;
    for (int o = 0; o < 2; o++) {
        check_infer(2, 2, 2, 1, 1, orders[o]);
        check_infer(1, 4, 2, 1, 1, orders[o]);
        check_infer(2, 1, 4, 1, 1, orders[o]);
        check_infer(2, 2, 1, 2, 1, orders[o]);
        check_infer(4, 2, 1, 1, 1, orders[o]);
    }
}

static void test_infer_ep_and_more(void **state)
{
    (void)state;
    check_infer(2, 1, 4, 1, 2, "tp-cp-ep-dp-pp");
    check_infer(2, 2, 2, 1, 2, "tp-cp-ep-dp-pp");
    check_infer(2, 2, 2, 2, 2, "tp-cp-ep-pp-dp");
    check_infer(1, 2, 4, 1, 4, "tp-cp-ep-dp-pp");
    check_infer(2, 2, 4, 2, 1, "tp-cp-ep-dp-pp");
    check_infer(1, 2, 8, 1, 1, "tp-cp-ep-pp-dp");
}

/*
 * Megatron's MoE parallel folding: the expert generator is
 * RankGenerator(tp=etp, ep, dp=world/(etp*ep*pp), pp, cp=1) in the same
 * order (parallel_state.py, d98e8a64), as tests/data/layout/megatron-etp-
 * groups.jsonl.gz has it from Megatron's own code, e.g. world 8, tp 2,
 * ep 4, etp 1: EXPERT_MODEL_PARALLEL_GROUP [0,1,2,3], EXPERT_DATA_
 * PARALLEL_GROUP [0,4].
 */
static void test_expert_folding(void **state)
{
    struct p3d_layout l;

    (void)state;
    assert_int_equal(p3d_layout_set_moe(&l, 2, 1, 4, 1, 4, 1,
                                        "tp-cp-ep-dp-pp"), 0);
    assert_int_equal(p3d_layout_etp(&l), 1);
    assert_true(p3d_layout_match(&l, (int[]){0, 1, 2, 3}, 4) & B(P3D_LBL_EP));
    assert_false(p3d_layout_match(&l, (int[]){0, 2, 4, 6}, 4) &
                 B(P3D_LBL_EP));
    assert_true(p3d_layout_match(&l, (int[]){0, 4}, 2) &
                B(P3D_LBL_EXPERT_DP));
    assert_false(p3d_layout_match(&l, (int[]){0, 1}, 2) &
                 B(P3D_LBL_EXPERT_TP)); /* size 1: no expert TP group */
    /* tp 4, etp 2: the expert TP group is half a TP group */
    assert_int_equal(p3d_layout_set_moe(&l, 4, 1, 2, 1, 4, 2,
                                        "tp-cp-ep-dp-pp"), 0);
    assert_true(p3d_layout_match(&l, (int[]){0, 1}, 2) &
                B(P3D_LBL_EXPERT_TP));
    assert_false(p3d_layout_match(&l, (int[]){0, 1, 2, 3}, 4) &
                 B(P3D_LBL_EXPERT_TP));
    assert_true(p3d_layout_match(&l, (int[]){0, 2, 4, 6}, 4) &
                B(P3D_LBL_EP));
    /* unfolded (etp = tp) there is no EXPERT-TP label: that group is TP */
    assert_int_equal(p3d_layout_set_moe(&l, 2, 1, 4, 1, 2, 2,
                                        "tp-cp-ep-dp-pp"), 0);
    assert_int_equal(l.etp, 0);
    assert_false(p3d_layout_match(&l, (int[]){0, 1}, 2) &
                 B(P3D_LBL_EXPERT_TP));
    /* what Megatron refuses: etp * ep * pp not dividing the world (its
     * RuntimeError), expert and dense pipeline groups that differ, i.e.
     * EDP != DP off a pp-last order (its asserts) */
    assert_int_equal(p3d_layout_set_moe(&l, 2, 1, 3, 1, 4, 1,
                                        "tp-cp-ep-dp-pp"), -1);
    assert_int_equal(p3d_layout_set_moe(&l, 2, 1, 2, 2, 4, 1,
                                        "tp-cp-ep-pp-dp"), -1);
    assert_int_equal(p3d_layout_set(&l, 2, 1, 2, 2, 2, "tp-cp-ep-pp-dp"),
                     -1);
    assert_int_equal(p3d_layout_set(&l, 2, 2, 2, 2, 2, "tp-cp-ep-pp-dp"),
                     0);
}

static void test_infer_folded(void **state)
{
    static const char cmd[] = "x.py\0--tensor-model-parallel-size\0" "2\0"
        "--expert-model-parallel-size\0" "4\0"
        "--expert-tensor-parallel-size\0" "1";
    struct p3d_layout l;

    (void)state;
    check_infer_etp(2, 1, 4, 1, 4, 1, "tp-cp-ep-dp-pp");
    check_infer_etp(4, 1, 2, 1, 4, 2, "tp-cp-ep-dp-pp");
    check_infer_etp(2, 2, 4, 1, 8, 1, "tp-cp-ep-dp-pp");
    check_infer_etp(2, 2, 2, 1, 2, 1, "tp-cp-ep-pp-dp");
    check_infer_etp(1, 1, 8, 1, 4, 2, "tp-cp-ep-dp-pp");
    assert_int_equal(p3d_layout_from_cmdline(&l, cmd, sizeof(cmd), 8), 1);
    assert_int_equal(l.ep, 4);
    assert_int_equal(p3d_layout_etp(&l), 1);
}

/*
 * A torchtitan job (pytorch/torchtitan b5bcd76c): TP as sequence
 * parallelism (a bf16 all-gather in, reduce-scatter out, per layer), CP's
 * K/V all-gather, FSDP on dp_shard x cp (bf16 gathers, fp32 reduce-
 * scatters), with EP the sparse mesh (pp, efsdp, ep): Megatron's expert
 * grid at etp 1, token all-to-alls on ep, the experts' FSDP on efsdp.
 */
static void build_titan_job(const struct p3d_layout *l)
{
    struct p3d_layout e;
    int w = l->size[0] * l->size[1] * l->size[2] * l->size[3];
    int edp = w / (l->ep * l->size[P3D_AX_PP]), k;

    build_job(l);
    for (int i = 0; i < job.n_comms; i++)
        free(job.comms[i].members);
    job.n_comms = 0;
    k = job.n_comms;
    if (l->size[P3D_AX_TP] > 1)
        add_family(l, B(P3D_AX_TP), 0, P3D_OP_ALLGATHER, 60, 1 << 18);
    with_rsag(k, 60, DT_BF16, DT_BF16);
    if (l->size[P3D_AX_CP] > 1)
        add_family(l, B(P3D_AX_CP), 0, P3D_OP_ALLGATHER, 30, 1 << 18);
    if (l->size[P3D_AX_PP] > 1)
        add_family(l, B(P3D_AX_PP), 0, P3D_OP_SEND, 40, 1 << 19);
    k = job.n_comms;
    add_family(l, B(P3D_AX_DP) | B(P3D_AX_CP), 0, P3D_OP_ALLGATHER, 10,
               1 << 20);
    with_rsag(k, 10, DT_BF16, DT_F32);
    if (l->ep < 2)
        return;
    assert_int_equal(p3d_layout_set(&e, 1, l->ep, edp, l->size[P3D_AX_PP],
                                    1, l->order), 0);
    add_family(&e, B(P3D_AX_CP), 0, P3D_OP_ALLTOALL, 60, 1 << 17);
    k = job.n_comms;
    add_family(&e, B(P3D_AX_DP), 0, P3D_OP_ALLGATHER, 10, 1 << 20);
    with_rsag(k, 10, DT_BF16, DT_F32);
}

/* ---- torchtitan's HSDP: groups by a predicate on two ranks ---- */

static const struct p3d_layout *hl; /* the layout the predicates read */

static void coords_dense(int r, int c[P3D_AX_N])
{
    p3d_layout_coords(hl, r, c);
}

static void coords_expert(int r, int c[P3D_AX_N])
{
    int es[P3D_AX_N];

    p3d_layout_expert_sizes(hl, es);
    p3d_grid_coords(es, hl->ord, r, c);
}

/* same replica, tp, pp: DP-SHARD (dp_shard x cp) */
static int same_shard_group(int a, int b)
{
    int x[P3D_AX_N], y[P3D_AX_N], s = hl->dp_shard;

    coords_dense(a, x);
    coords_dense(b, y);
    return x[P3D_AX_DP] / s == y[P3D_AX_DP] / s &&
           x[P3D_AX_TP] == y[P3D_AX_TP] && x[P3D_AX_PP] == y[P3D_AX_PP];
}

/* same shard, cp, tp, pp: DP-REPLICATE */
static int same_rep_group(int a, int b)
{
    int x[P3D_AX_N], y[P3D_AX_N], s = hl->dp_shard;

    coords_dense(a, x);
    coords_dense(b, y);
    return x[P3D_AX_DP] % s == y[P3D_AX_DP] % s &&
           x[P3D_AX_CP] == y[P3D_AX_CP] && x[P3D_AX_TP] == y[P3D_AX_TP] &&
           x[P3D_AX_PP] == y[P3D_AX_PP];
}

/* the sparse mesh's efsdp: same ep, pp and replica */
static int same_efsdp_group(int a, int b)
{
    int x[P3D_AX_N], y[P3D_AX_N], f = p3d_layout_efsdp(hl);

    coords_expert(a, x);
    coords_expert(b, y);
    return x[P3D_AX_CP] == y[P3D_AX_CP] && x[P3D_AX_PP] == y[P3D_AX_PP] &&
           x[P3D_AX_DP] / f == y[P3D_AX_DP] / f;
}

/* Every group of `same` (an equivalence on ranks), with op and calls. */
static void add_groups(int (*same)(int, int), int w, int op, uint64_t calls,
                       uint64_t bytes)
{
    char done[64] = {0};
    int m[64];

    for (int r = 0; r < w; r++) {
        int n = 0;
        if (done[r])
            continue;
        for (int t = 0; t < w; t++)
            if (same(r, t)) {
                done[t] = 1;
                m[n++] = t;
            }
        add_comm(m, n, op, calls, bytes);
    }
}

/* Averaging all-reduces of gradients on the comms since `from`. */
static void averaging(int from)
{
    for (int i = from; i < job.n_comms; i++)
        job.comms[i].use.ar_avg = job.comms[i].st[P3D_OP_ALLREDUCE].calls;
}

/* torchtitan's HSDP (dp_shard of l) with EP: FSDP on the shard groups,
 * the shards averaged over the replicas, the experts the same on the
 * efsdp groups (fsdp.py, _fsdp_collectives.py foreach_reduce). */
static void build_titan_hsdp_job(const struct p3d_layout *l)
{
    struct p3d_layout e;
    int w = l->size[0] * l->size[1] * l->size[2] * l->size[3], k;

    build_job(l);
    for (int i = 0; i < job.n_comms; i++)
        free(job.comms[i].members);
    job.n_comms = 0;
    hl = l;
    if (l->size[P3D_AX_TP] > 1)
        add_family(l, B(P3D_AX_TP), 0, P3D_OP_ALLGATHER, 60, 1 << 18);
    with_rsag(0, 60, DT_BF16, DT_BF16);
    k = job.n_comms;
    add_groups(same_shard_group, w, P3D_OP_ALLGATHER, 10, 1 << 20);
    with_rsag(k, 10, DT_BF16, DT_F32);
    k = job.n_comms;
    add_groups(same_rep_group, w, P3D_OP_ALLREDUCE, 20, 1 << 20);
    averaging(k);
    assert_int_equal(p3d_layout_set(&e, 1, l->ep, w / l->ep, 1, 1,
                                    l->order), 0);
    add_family(&e, B(P3D_AX_CP), 0, P3D_OP_ALLTOALL, 60, 1 << 17);
    k = job.n_comms;
    add_groups(same_efsdp_group, w, P3D_OP_ALLGATHER, 10, 1 << 20);
    with_rsag(k, 10, DT_BF16, DT_F32);
}

/*
 * torchtitan's HSDP with EP: DP as replicas of shards, the experts
 * sharded within a replica (p3d_layout.c p3d_hsdp_expert_match).
 */
static void test_infer_titan_hsdp_ep(void **state)
{
    struct p3d_layout truth, got;
    static const int want[][4] = {/* tp, dp, dp_shard, ep */
                                  {2, 4, 2, 2}, {1, 8, 4, 4}, {2, 4, 2, 4},
                                  {1, 8, 4, 2}};

    (void)state;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const int *c = want[i];
        assert_int_equal(p3d_layout_set_moe(&truth, c[0], 1, c[1], 1, c[3],
                                            1, "tp-cp-ep-dp-pp"), 0);
        truth.dp_shard = c[2];
        build_titan_hsdp_job(&truth);
        p3d_layout_infer(&job, NULL, 0, &got);
        if (got.size[P3D_AX_TP] != c[0] || got.size[P3D_AX_DP] != c[1] ||
            got.dp_shard != c[2] || got.ep != c[3] ||
            got.explained != got.total)
            fail_msg("titan hsdp tp%d dp%d dp_shard%d ep%d: got tp%d cp%d "
                     "dp%d dp_shard%d ep%d (%s: %s)", c[0], c[1], c[2], c[3],
                     got.size[P3D_AX_TP], got.size[P3D_AX_CP],
                     got.size[P3D_AX_DP], got.dp_shard, got.ep,
                     p3d_conf_name[got.confidence], got.conf_why);
    }
}

/*
 * Weight gradients span CP (p3d_usage.c p3d_use_is_grad): with FSDP on
 * 4 of 8 ranks, a pair with per-layer gathers is TP (the experts then
 * without TP: torchtitan's EP borrows from TP), not CP, which would put
 * the gradients on all 8.  And a true CP keeps its answer.
 */
static void test_infer_titan_ep(void **state)
{
    struct p3d_layout truth, got;
    static const int want[][5] = {/* tp, cp, dp, ep, pp */
                                  {2, 1, 4, 4, 1}, {2, 1, 4, 2, 1},
                                  {4, 1, 2, 8, 1}, {2, 1, 2, 4, 2},
                                  {1, 2, 4, 1, 1}, {2, 2, 2, 1, 1}};

    (void)state;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const int *c = want[i];
        assert_int_equal(p3d_layout_set_moe(&truth, c[0], c[1], c[2], c[4],
                                            c[3], c[3] > 1 ? 1 : c[0],
                                            "tp-cp-ep-dp-pp"), 0);
        build_titan_job(&truth);
        p3d_layout_infer(&job, NULL, 0, &got);
        if (got.size[P3D_AX_TP] != c[0] || got.size[P3D_AX_CP] != c[1] ||
            got.size[P3D_AX_DP] != c[2] || got.ep != c[3])
            fail_msg("titan tp%d cp%d dp%d ep%d pp%d: got tp%d cp%d dp%d "
                     "ep%d etp%d (%s)", c[0], c[1], c[2], c[3], c[4],
                     got.size[P3D_AX_TP], got.size[P3D_AX_CP],
                     got.size[P3D_AX_DP], got.ep, p3d_layout_etp(&got),
                     p3d_conf_name[got.confidence]);
    }
}

/* Check the packed path against the computed one on every group of
 * every mask (both grids) and on pseudo-random member sets. */
static void check_tab_same(struct p3d_layout_tab *t, const struct p3d_layout *l,
                           unsigned *seed)
{
    int w = l->size[0] * l->size[1] * l->size[2] * l->size[3], es[4];
    int *m = malloc((size_t)w * sizeof(*m)), n;

    p3d_layout_tab_fill(t, l);
    assert_true(t->ok);
    p3d_layout_expert_sizes(l, es);
    for (int r = 0; r < w; r++)
        for (unsigned mask = 0; mask < 16; mask++) {
            n = p3d_layout_group(l, w, r, mask, m);
            assert_int_equal(p3d_layout_match_comm(l, t, -1, m, n),
                             p3d_layout_match(l, m, n));
            n = p3d_grid_group(es, l->ord, w, r, mask, m);
            assert_int_equal(p3d_layout_match_comm(l, t, -1, m, n),
                             p3d_layout_match(l, m, n));
        }
    for (int k = 0; k < 400; k++) { /* ascending, as communicators are */
        n = 0;
        for (int r = 0; r < w; r++)
            if ((*seed = *seed * 1103515245u + 12345u) >> 16 & 1)
                m[n++] = r;
        if (n)
            assert_int_equal(p3d_layout_match_comm(l, t, -1, m, n),
                             p3d_layout_match(l, m, n));
    }
    free(m);
}

/* Layouts whose matches are checked packed and computed: the same grid
 * with another dp_shard, another order, expert grids. */
static const struct {
    int tp, cp, dp, pp, ep, etp, dp_shard;
    const char *order;
} tab_cases[] = {
    {2, 1, 2, 2, 1, 2, 0, "tp-cp-ep-dp-pp"},
    {2, 1, 2, 2, 1, 2, 0, "tp-cp-ep-pp-dp"},
    {2, 2, 4, 2, 1, 2, 0, "tp-cp-ep-dp-pp"},
    {2, 2, 4, 2, 1, 2, 2, "tp-cp-ep-dp-pp"},
    {2, 2, 4, 2, 1, 2, 1, "tp-cp-ep-dp-pp"},
    {2, 1, 4, 2, 4, 2, 0, "tp-cp-ep-dp-pp"},
    {2, 1, 4, 2, 4, 1, 0, "tp-cp-ep-dp-pp"},
    {1, 1, 8, 2, 4, 1, 2, "tp-cp-ep-dp-pp"},
    {4, 1, 4, 2, 4, 1, 0, "tp-cp-ep-pp-dp"},
    {1, 3, 5, 1, 1, 1, 0, "tp-cp-ep-dp-pp"},
    {2, 1, 4, 2, 2, 2, 0, "pp-dp-cp-tp"},
};

/* p3d_layout_match_comm without its memo (ci -1: the search's packed
 * coordinates alone) answers as p3d_layout_match does, with one table
 * refilled from layout to layout: the same grid with another dp_shard,
 * another order, an expert grid. */
static void test_match_tab_same(void **state)
{
    struct p3d_layout_tab t = {0};
    unsigned seed = 7;

    (void)state;
    for (size_t i = 0; i < sizeof(tab_cases) / sizeof(tab_cases[0]); i++) {
        const __typeof__(tab_cases[0]) *c = &tab_cases[i];
        struct p3d_layout l;
        assert_int_equal(p3d_layout_set_moe(&l, c->tp, c->cp, c->dp, c->pp,
                                            c->ep, c->etp, c->order), 0);
        l.dp_shard = c->dp_shard;
        check_tab_same(&t, &l, &seed);
    }
    p3d_layout_tab_free(&t);
}

/* Member sets of a world of w ranks, the same for the same w: runs of
 * every stride and length (most groups are such runs) and random sets. */
static int world_sets(int w, int (*set)[64], int *len, int max)
{
    unsigned seed = (unsigned)w;
    int k = 0;

    for (int st = 1; st < w; st++)
        for (int n = 2; n <= w / st && k < max; n *= 2)
            for (int a = 0; a + (n - 1) * st < w && k < max; a += 3) {
                for (int j = 0; j < n; j++)
                    set[k][j] = a + j * st;
                len[k++] = n;
            }
    while (k < max) {
        len[k] = 0;
        for (int r = 0; r < w && r < 64; r++)
            if ((seed = seed * 1103515245u + 12345u) >> 16 & 1)
                set[k][len[k]++] = r;
        k += len[k] > 0;
    }
    return k;
}

/* p3d_layout_match_comm (the search's: bits of the grids remembered per
 * communicator across a layout's HSDP variants) answers as
 * p3d_layout_match does, over the layouts of test_match_tab_same in
 * turn, with one table. */
static void test_match_comm_memo(void **state)
{
    static int set[600][64], len[600];
    struct p3d_layout_tab t = {0};

    (void)state;
    for (size_t i = 0; i < sizeof(tab_cases) / sizeof(tab_cases[0]); i++) {
        struct p3d_layout l;
        int n = 0;
        assert_int_equal(p3d_layout_set_moe(&l, tab_cases[i].tp,
                                            tab_cases[i].cp, tab_cases[i].dp,
                                            tab_cases[i].pp, tab_cases[i].ep,
                                            tab_cases[i].etp,
                                            tab_cases[i].order), 0);
        l.dp_shard = tab_cases[i].dp_shard;
        n = world_sets(l.size[0] * l.size[1] * l.size[2] * l.size[3], set,
                       len, 600);
        p3d_layout_tab_fill(&t, &l);
        for (int k = 0; k < n; k++)
            assert_int_equal(p3d_layout_match_comm(&l, &t, k, set[k], len[k]),
                             p3d_layout_match(&l, set[k], len[k]));
    }
    p3d_layout_tab_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_example),
        cmocka_unit_test(test_hsdp),
        cmocka_unit_test(test_match_tab_same),
        cmocka_unit_test(test_match_comm_memo),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_infer_issue3_layouts),
        cmocka_unit_test(test_infer_ep_and_more),
        cmocka_unit_test(test_expert_folding),
        cmocka_unit_test(test_infer_folded),
        cmocka_unit_test(test_infer_titan_ep),
        cmocka_unit_test(test_infer_titan_hsdp_ep),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
