/*
 * test_an_label.c - which label a communicator is used as when several
 * Megatron groups share its members (the usage signatures of layout/p3d_usage.c),
 * and that JSON's "label" stays the member set's label (README.md, "JSON").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_infer.h"
#include "p3d_label.h"
#include "p3d_layout.h"

#define B(x) (1u << (x))

static struct p3d_gcomm comm(int op, uint64_t calls, uint64_t bytes, int n)
{
    struct p3d_gcomm g;

    memset(&g, 0, sizeof(g));
    g.n_members = g.size = n;
    g.st[op].calls = calls;
    g.st[op].bytes = calls * bytes;
    if (op == P3D_OP_ALLREDUCE && bytes <= 8)
        g.use.tiny_ar = calls;
    if (op == P3D_OP_ALLREDUCE && bytes == 4)
        g.use.tiny_f32_ar = calls;
    if (op == P3D_OP_ALLREDUCE && bytes >= (1u << 20))
        g.use.big_ar = calls;
    return g;
}

static void test_pp2_emb_equals_pp(void **state)
{
    unsigned bits = B(P3D_LBL_PP) | B(P3D_LBL_P2P) | B(P3D_LBL_EMB);
    struct p3d_gcomm pp = comm(P3D_OP_SEND, 48, 1 << 19, 2);
    struct p3d_gcomm emb = comm(P3D_OP_ALLREDUCE, 6, 1 << 25, 2);

    (void)state;
    assert_int_equal(p3d_usage_class(&pp, 48), P3D_USE_P2P);
    assert_int_equal(p3d_label_pick(bits, P3D_USE_P2P, &pp, -1), P3D_LBL_PP);
    assert_int_equal(p3d_usage_class(&emb, 48), P3D_USE_BIGAR);
    assert_int_equal(p3d_label_pick(bits, P3D_USE_BIGAR, &emb, P3D_LBL_PP),
                     P3D_LBL_EMB);
    /* a second Send/Recv comm on the PP members is a P2P comm */
    assert_int_equal(p3d_label_pick(bits, P3D_USE_P2P, &pp, P3D_LBL_PP),
                     P3D_LBL_P2P);
}

/* The busiest communicator has nothing to compare its frequency with:
 * all-reduces of one size could be TP or DP (ANY_AR); of varied, bucket
 * sizes they are DDP's gradients; a few int64 broadcasts (DDP's shapes
 * at construction) do not make it Megatron's TP; FSDP's fp32 reduce-
 * scatter of what it all-gathers in bf16 is DP. */
static void test_busiest_alone(void **state)
{
    struct p3d_gcomm ar = comm(P3D_OP_ALLREDUCE, 100, 1 << 20, 8);
    struct p3d_gcomm fsdp = comm(P3D_OP_ALLGATHER, 64, 1 << 20, 8);

    (void)state;
    p3d_usage_ar_size(&ar.use, 1 << 20, 100);
    assert_int_equal(p3d_usage_class(&ar, p3d_calls_per_member(&ar)),
                     P3D_USE_ANY_AR);
    memset(&ar.use, 0, sizeof(ar.use));
    for (int k = 0; k < 5; k++)
        p3d_usage_ar_size(&ar.use, (1u << 20) + 4096u * (unsigned)k, 20);
    ar.st[P3D_OP_BROADCAST].calls = 8;
    ar.use.bc_int64 = 8; /* once per member */
    assert_int_equal(p3d_usage_class(&ar, p3d_calls_per_member(&ar)),
                     P3D_USE_DDP);
    fsdp.st[P3D_OP_REDUCESCATTER].calls = 32 * 8;
    fsdp.use.dtypes[P3D_OP_ALLGATHER] = 1u << 9;      /* bf16 */
    fsdp.use.dtypes[P3D_OP_REDUCESCATTER] = 1u << 7;  /* f32 */
    assert_int_equal(p3d_usage_class(&fsdp, 1000), P3D_USE_GRAD); /* any */
    fsdp.use.dtypes[P3D_OP_REDUCESCATTER] = 1u << 9;  /* as a CP's dK/dV */
    assert_int_equal(p3d_usage_class(&fsdp, p3d_calls_per_member(&fsdp)),
                     P3D_USE_ANY_LAYER);
    fsdp.use.rs_redops = 1u << 4;                     /* but averaged */
    assert_int_equal(p3d_usage_class(&fsdp, p3d_calls_per_member(&fsdp)),
                     P3D_USE_GRAD);
}

/* Send/Recv: a ring when every batch both sends and receives (CP), a
 * pipeline when warm-up and cool-down batches go one way (PP). */
static void test_ring_vs_pipeline(void **state)
{
    struct p3d_gcomm g = comm(P3D_OP_SEND, 40, 1 << 16, 2);

    (void)state;
    g.st[P3D_OP_RECV].calls = 40;
    g.use.p2p_batches = 40;
    g.use.p2p_both = 40;
    /* two ranks: a ring step is a 2-rank all-to-all as well (CP or EP) */
    assert_int_equal(p3d_usage_class(&g, 40), P3D_USE_RING2);
    g.n_members = 4;
    g.use.p2p_batches = g.use.p2p_both = 160;
    assert_int_equal(p3d_usage_class(&g, 40), P3D_USE_RING);
    g.use.p2p_a2a = 160; /* every batch sends to 3 peers: an all-to-all */
    assert_int_equal(p3d_usage_class(&g, 40), P3D_USE_A2A);
    g.use.p2p_a2a = 0;
    g.use.p2p_both = 148; /* 1F1B: one-way batches */
    assert_int_equal(p3d_usage_class(&g, 40), P3D_USE_P2P);
    g.use.p2p_both = 157; /* one open at each member's trace end */
    assert_int_equal(p3d_usage_class(&g, 40), P3D_USE_RING);
}

/* One Send or Recv of a Send/Recv batch (group gid) as rank `me` of a
 * communicator issues it to comm rank `peer`. */
static void p2p(struct p3d_usage *u, int op, uint32_t gid, int me, int peer)
{
    struct p3d_rec_op o;

    memset(&o, 0, sizeof(o));
    o.op = (uint8_t)op;
    o.group_id = gid;
    o.comm_rank = me;
    o.peer = peer;
    o.bytes = 1 << 16;
    p3d_usage_add(u, &o);
}

/*
 * PyTorch's all-to-all sends to every rank of the communicator, its own
 * included (torch/csrc/cuda/nccl.cpp all2all_single_unequal_split): at two
 * ranks the send to itself is what tells it from a ring step, which sends
 * to the other rank only.
 */
static void test_self_send_is_all_to_all(void **state)
{
    struct p3d_usage u;

    (void)state;
    memset(&u, 0, sizeof(u));
    for (uint32_t gid = 1; gid <= 2; gid++) /* rank 0 of 2: a2a */
        for (int r = 0; r < 2; r++) {
            p2p(&u, P3D_OP_SEND, gid, 0, r);
            p2p(&u, P3D_OP_RECV, gid, 0, r);
        }
    assert_true(p3d_usage_batch_a2a(&u)); /* the open batch, too */
    p2p(&u, P3D_OP_SEND, 3, 0, 1); /* a ring step: the other rank only */
    p2p(&u, P3D_OP_RECV, 3, 0, 1);
    assert_false(p3d_usage_batch_a2a(&u));
    p2p(&u, P3D_OP_SEND, 0, 0, 1); /* a lone op closes the batch */
    assert_int_equal(u.p2p_batches, 4);
    assert_int_equal(u.p2p_both, 3);
    assert_int_equal(u.p2p_a2a, 2);
    p2p(&u, P3D_OP_SEND, 4, -1, 1); /* comm rank unknown: no evidence */
    p2p(&u, P3D_OP_SEND, 4, -1, -1);
    assert_false(p3d_usage_batch_a2a(&u));
}

/* A 2-rank ring is a CP ring or an EP all-to-all whose own share was
 * empty (RING2); with all-gathers beside it, it is torch's context
 * parallelism (K/V gathered, dK/dV rotated): a ring, never EP. */
static void test_ring_with_gathers_is_cp(void **state)
{
    struct p3d_gcomm g = comm(P3D_OP_SEND, 2 * 20, 1 << 16, 2);

    (void)state;
    g.st[P3D_OP_RECV].calls = 2 * 20;
    g.use.p2p_batches = g.use.p2p_both = 2 * 20;
    assert_int_equal(p3d_usage_class(&g, 40), P3D_USE_RING2);
    assert_true(p3d_use_labels(P3D_USE_RING2) & (1u << P3D_LBL_EP));
    g.st[P3D_OP_ALLGATHER].calls = 2 * 20;
    assert_int_equal(p3d_usage_class(&g, 60), P3D_USE_RING);
    assert_false(p3d_use_labels(P3D_USE_RING) & (1u << P3D_LBL_EP));
}

/* torchtitan's HSDP with EP: the dense FSDP and the experts' on the same
 * ranks; the first communicator is the dense one's, the second the
 * experts'. */
static void test_hsdp_dense_then_experts(void **state)
{
    struct p3d_gcomm g = comm(P3D_OP_REDUCESCATTER, 20, 1 << 20, 2);
    unsigned bits = (1u << P3D_LBL_DP_SHARD) | (1u << P3D_LBL_EXPERT_DP);

    (void)state;
    assert_int_equal(p3d_label_pick(bits, P3D_USE_GRAD, &g, -1),
                     P3D_LBL_DP_SHARD);
    assert_int_equal(p3d_label_pick(bits, P3D_USE_GRAD, &g,
                                    P3D_LBL_DP_SHARD), P3D_LBL_EXPERT_DP);
}

/* An all-to-all through Send/Recv is one collective of the group, not
 * the 2 x members calls PyTorch issues for it: a group's frequency
 * (calls per member) counts its batches. */
static void test_a2a_counts_once(void **state)
{
    struct p3d_gcomm g = comm(P3D_OP_SEND, 4 * 4 * 10, 1 << 16, 4);

    (void)state;
    g.st[P3D_OP_RECV].calls = 4 * 4 * 10;  /* 10 all-to-alls of 4 ranks */
    g.st[P3D_OP_ALLGATHER].calls = 4 * 2;  /* and 2 all-gathers */
    g.use.p2p_batches = g.use.p2p_both = 4 * 10;
    assert_int_equal(p3d_calls_per_member(&g), 82); /* a ring's calls */
    g.use.p2p_a2a = 4 * 10;
    assert_int_equal(p3d_calls_per_member(&g), 12);
    assert_int_equal(p3d_usage_class(&g, 12), P3D_USE_A2A);
}

static void test_two_world_comms(void **state)
{
    unsigned bits = B(P3D_LBL_WORLD);
    struct p3d_gcomm w = comm(P3D_OP_ALLREDUCE, 1, 4, 8);

    (void)state;
    assert_int_equal(p3d_usage_class(&w, 100), P3D_USE_TINY);
    assert_int_equal(p3d_label_pick(bits, P3D_USE_TINY, &w, -1),
                     P3D_LBL_WORLD);
}

static void test_tp_vs_mp_at_pp1(void **state)
{
    unsigned bits = B(P3D_LBL_TP) | B(P3D_LBL_TP_CP) | B(P3D_LBL_MP);
    struct p3d_gcomm tp = comm(P3D_OP_ALLREDUCE, 200, 1 << 19, 2);
    struct p3d_gcomm mp = comm(P3D_OP_ALLREDUCE, 9, 4, 2);

    (void)state;
    tp.st[P3D_OP_BROADCAST].calls = 30;
    tp.use.bc_int64 = 30; /* Megatron's batch broadcasts are int64 */
    p3d_usage_ar_size(&tp.use, 1 << 19, 200);
    assert_int_equal(p3d_usage_class(&tp, 115), P3D_USE_BCAST);
    assert_int_equal(p3d_label_pick(bits, P3D_USE_BCAST, &tp, -1),
                     P3D_LBL_TP);
    mp.use.tiny_f32_ar = 6; /* int32 MIN + fp32 MAXes */
    assert_int_equal(p3d_usage_class(&mp, 115), P3D_USE_TINY);
    assert_int_equal(p3d_label_pick(bits, P3D_USE_TINY, &mp, P3D_LBL_TP),
                     P3D_LBL_MP);
}

static void test_dp_cp(void **state)
{
    unsigned bits = B(P3D_LBL_DP) | B(P3D_LBL_DP_CP) | B(P3D_LBL_EXPERT_DP);
    struct p3d_gcomm dp = comm(P3D_OP_REDUCESCATTER, 6, 1 << 23, 2);
    struct p3d_gcomm cp = comm(P3D_OP_ALLGATHER, 64, 1 << 18, 2);

    (void)state;
    assert_int_equal(p3d_usage_class(&dp, 100), P3D_USE_RSAG);
    assert_int_equal(p3d_label_pick(bits, P3D_USE_RSAG, &dp, -1),
                     P3D_LBL_DP_CP); /* Megatron's dist-opt group */
    assert_int_equal(p3d_label_pick(B(P3D_LBL_DP_CP), P3D_USE_RSAG, &dp, -1),
                     P3D_LBL_DP_CP);
    assert_int_equal(p3d_usage_class(&cp, 100), P3D_USE_LAYER);
    assert_int_equal(p3d_label_pick(B(P3D_LBL_CP) | B(P3D_LBL_DP_CP),
                                    P3D_USE_LAYER, &cp, -1), P3D_LBL_CP);
    assert_int_equal(p3d_label_pick(0, P3D_USE_RSAG, &dp, -1),
                     P3D_LBL_OTHER);
}

/*
 * PP = 2: the PP comm (Send/Recv) and the embedding comm (big all-reduce)
 * have the same members.  Both get "label" PP (the member set's most
 * specific label, as DP for the DP-CP comm at CP = 1); "used_as" tells
 * them apart.
 */
/*
 * Label n comms on the ranks of the PP pair of a tp=1 pp=2 job: g[0] the
 * pipeline's Send/Recv comm, g[1] the embedding's big all-reduces, the
 * rest as the caller set them (before the call: g[k] = g[0] for another
 * Send/Recv comm); each comm's members and slots are {0, 1}.
 */
static void label_pp_pair(struct p3d_gcomm *g, int n)
{
    static int pair[2] = {0, 1};
    struct p3d_job job;

    memset(&job, 0, sizeof(job));
    assert_int_equal(p3d_layout_parse(&job.layout, "tp=1,pp=2,cp=1", 2), 0);
    job.world_size = 2;
    g[0] = comm(P3D_OP_SEND, 48, 1 << 19, 2);
    g[0].st[P3D_OP_RECV] = g[0].st[P3D_OP_SEND];
    g[1] = comm(P3D_OP_ALLREDUCE, 6, 1 << 25, 2);
    for (int i = 2; i < n; i++)
        g[i] = g[0];
    for (int i = 0; i < n; i++) {
        g[i].members = g[i].slot = pair;
        g[i].order = (uint32_t)i + 1;
    }
    job.comms = g;
    job.n_comms = n;
    p3d_label_all(&job);
}

static void test_label_is_member_set_used_as_is_usage(void **state)
{
    struct p3d_gcomm g[2];

    (void)state;
    label_pp_pair(g, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(g[i].label_first, P3D_LBL_PP);
        assert_true(g[i].labels & B(P3D_LBL_EMB));
        assert_true(g[i].labels & B(P3D_LBL_PP));
    }
    assert_int_equal(g[0].label, P3D_LBL_PP);
    assert_int_equal(g[1].label, P3D_LBL_EMB);
}

/*
 * Three communicators on the PP pair's ranks, in creation order: the
 * pipeline's Send/Recv comm (PP), the embedding's (EMB) and a second
 * Send/Recv comm, which is a P2P comm because the earliest comm on its
 * ranks (not the latest) is PP's.  Through p3d_label_all: its index of
 * the comms with the same members must find the earlier ones.
 */
static void test_same_members_earliest_counts(void **state)
{
    struct p3d_gcomm g[3];

    (void)state;
    label_pp_pair(g, 3);
    assert_int_equal(g[0].label, P3D_LBL_PP);
    assert_int_equal(g[1].label, P3D_LBL_EMB);
    assert_int_equal(g[2].label, P3D_LBL_P2P);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pp2_emb_equals_pp),
        cmocka_unit_test(test_two_world_comms),
        cmocka_unit_test(test_busiest_alone),
        cmocka_unit_test(test_ring_vs_pipeline),
        cmocka_unit_test(test_self_send_is_all_to_all),
        cmocka_unit_test(test_a2a_counts_once),
        cmocka_unit_test(test_ring_with_gathers_is_cp),
        cmocka_unit_test(test_hsdp_dense_then_experts),
        cmocka_unit_test(test_same_members_earliest_counts),
        cmocka_unit_test(test_tp_vs_mp_at_pp1),
        cmocka_unit_test(test_dp_cp),
        cmocka_unit_test(test_label_is_member_set_used_as_is_usage),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
