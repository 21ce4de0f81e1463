/*
 * p3d_layout.h - the parallel layout (tp, cp, dp, pp, ep sizes and rank
 * order) and the group families it defines over global ranks.
 */
#ifndef P3D_LAYOUT_H
#define P3D_LAYOUT_H

#include "p3d_job.h"

/* Labels, in order of specificity (the order of "labels" lists; the same
 * order as the simulator's truth.json).  TP-DP, TP-EP and TP-EP-PP come
 * after WORLD: Megatron creates them (TENSOR_AND_DATA_PARALLEL_GROUP,
 * EXPERT_TENSOR_AND_MODEL_PARALLEL_GROUP, EXPERT_TENSOR_MODEL_PIPELINE_
 * PARALLEL_GROUP) but issues little or nothing on them, and a set that is
 * also the world reads better as WORLD.  EXPERT-TP is Megatron's
 * EXPERT_TENSOR_PARALLEL_GROUP where it is not TP's member set (an
 * --expert-tensor-parallel-size other than --tensor-model-parallel-size);
 * where it is, the group is TP's and is called TP. */
#define P3D_LABELS(X)                                                         \
    X(P3D_LBL_TP, "TP") X(P3D_LBL_CP, "CP") X(P3D_LBL_EP, "EP")               \
    X(P3D_LBL_DP, "DP") X(P3D_LBL_PP, "PP") X(P3D_LBL_P2P, "P2P")             \
    X(P3D_LBL_DP_CP, "DP-CP") X(P3D_LBL_TP_CP, "TP-CP") X(P3D_LBL_MP, "MP")   \
    X(P3D_LBL_TP_DP_CP, "TP-DP-CP") X(P3D_LBL_EXPERT_DP, "EXPERT-DP")         \
    X(P3D_LBL_EMB, "EMB") X(P3D_LBL_POS_EMB, "POS-EMB")                       \
    X(P3D_LBL_WORLD, "WORLD") X(P3D_LBL_TP_DP, "TP-DP")                       \
    X(P3D_LBL_TP_EP, "TP-EP") X(P3D_LBL_TP_EP_PP, "TP-EP-PP")                 \
    X(P3D_LBL_DP_SHARD, "DP-SHARD") X(P3D_LBL_DP_REP, "DP-REPLICATE")         \
    X(P3D_LBL_EXPERT_TP, "EXPERT-TP") X(P3D_LBL_OTHER, "OTHER")

enum p3d_label {
#define P3D_X_LBL(name, text) name,
    P3D_LABELS(P3D_X_LBL)
#undef P3D_X_LBL
    P3D_LBL_COUNT
};

extern const char *const p3d_label_name[P3D_LBL_COUNT];

/* Usage classes of a communicator (layout/p3d_usage.c, with the frameworks'
 * sources). */
enum p3d_use {
    P3D_USE_NONE,  /* no ops */
    P3D_USE_P2P,   /* mostly Send/Recv */
    P3D_USE_BCAST, /* all-reduces plus broadcasts: TP */
    P3D_USE_RSAG,  /* reduce-scatter/all-gather of big buffers: DP */
    P3D_USE_A2A,   /* all-to-all: EP */
    P3D_USE_TINY,  /* only <= 8-byte all-reduces: MP, WORLD */
    P3D_USE_BIGAR, /* few big all-reduces: EMB (or DP without dist-opt) */
    P3D_USE_AR,    /* many all-reduces: TP */
    P3D_USE_MIXED,
    P3D_USE_LAYER, /* frequent reduce-scatter/all-gather: CP (or TP+SP) */
    P3D_USE_GRAD,  /* gradients reduce-scattered, params all-gathered: DP */
    P3D_USE_SP,    /* per-layer RS/AG with Megatron's batch broadcasts: TP */
    P3D_USE_DDP,   /* all-reduces of varied bucket sizes: DP (DDP) */
    P3D_USE_ANY_AR,    /* only all-reduces, how often unknown: TP or DP */
    P3D_USE_ANY_LAYER, /* only RS/AG, how often unknown: DP, CP or TP */
    P3D_USE_RING,  /* Send/Recv, every batch both ways: a CP ring */
    P3D_USE_GRAD_AR, /* all-reduces averaging (ncclAvg, premul sum):
                        gradients, HSDP's replicas or DDP */
    P3D_USE_RING2  /* a 2-rank ring, no send to itself: a CP ring, or an
                      all-to-all of two whose own share was empty */
};

extern const char *const p3d_use_name[];

/* Set sizes and an order ("tp-cp-ep-dp-pp", any permutation of
 * tp, cp, dp, pp with an optional ep).  Returns 0 or -1. */
int p3d_layout_set(struct p3d_layout *l, int tp, int cp, int dp, int pp,
                   int ep, const char *order);
/*
 * Like p3d_layout_set with Megatron's --expert-tensor-parallel-size etp
 * (MoE parallel folding): the expert generator is RankGenerator(tp=etp,
 * ep, dp=world/(etp*ep*pp), pp, cp=1) in the same order, which Megatron
 * accepts when etp*ep*pp divides the world and the expert and dense
 * pipeline groups are the same (megatron/core/parallel_state.py
 * initialize_model_parallel at d98e8a64: its RuntimeError and the two
 * asserts after expert_decoder_rank_generator).  etp = tp is the default.
 */
int p3d_layout_set_moe(struct p3d_layout *l, int tp, int cp, int dp, int pp,
                       int ep, int etp, const char *order);
/* The expert tensor-parallel size: etp if stated, else tp. */
int p3d_layout_etp(const struct p3d_layout *l);
/* The expert generator's sizes as a grid in l's order: etp in tp's
 * place, ep in cp's, the expert DP world/(etp*ep*pp) in dp's, pp. */
void p3d_layout_expert_sizes(const struct p3d_layout *l, int es[P3D_AX_N]);
/* Ranks of the experts' data-parallel sharding group: the expert DP size,
 * or with torchtitan's HSDP one replica's part of it (0: the replicas do
 * not divide it). */
int p3d_layout_efsdp(const struct p3d_layout *l);
/* Coordinates of a global rank on a grid of `size` in order `ord`
 * (axes from fastest to slowest). */
void p3d_grid_coords(const int size[P3D_AX_N], const int ord[P3D_AX_N],
                     int rank, int c[P3D_AX_N]);
/* Dense coordinates of a global rank. */
void p3d_layout_coords(const struct p3d_layout *l, int rank, int c[P3D_AX_N]);
/* The members (ascending) of rank r's group varying the axes in mask
 * (bits 1 << P3D_AX_*), in a world of w ranks; out holds w.  Returns
 * how many. */
int p3d_layout_group(const struct p3d_layout *l, int w, int r,
                     unsigned mask, int *out);
/* The same on a grid of `size` in order `ord` (the expert grid, say). */
int p3d_grid_group(const int size[P3D_AX_N], const int ord[P3D_AX_N], int w,
                   int r, unsigned mask, int *out);
/* Bitmask of P3D_LBL_* that the member set matches under l. */
unsigned p3d_layout_match(const struct p3d_layout *l, const int *members,
                          int n);

/* Every rank's coordinates on one grid, packed one word a rank. */
struct p3d_grid_pack {
    uint64_t *v; /* [w] */
    int shift[P3D_AX_N];
    uint64_t field[P3D_AX_N];
    int w, ok, size[P3D_AX_N], ord[P3D_AX_N]; /* the grid packed in v */
};

/*
 * A layout's dense and expert grids packed, for matching many member
 * sets against one layout (the layout search tries thousands of layouts
 * against every communicator: at 4,096 ranks, dividing each member's
 * rank again for each took seconds).  Fill it for a layout, match with
 * it, fill it again for the next; its arrays are reused.
 */
struct p3d_layout_tab {
    int w, ok; /* ok: filled, and the coordinates fit a word */
    size_t cap;
    struct p3d_grid_pack dense, expert;
    unsigned gen; /* counts the grids packed: a memo entry's is current */
    struct { unsigned gen, bits; } *memo; /* [n_memo]: a communicator's */
    size_t n_memo;                        /* bits of the grids alone */
};

void p3d_layout_tab_fill(struct p3d_layout_tab *t, const struct p3d_layout *l);
void p3d_layout_tab_free(struct p3d_layout_tab *t);
/* p3d_layout_match with t filled for l (t NULL or for another world:
 * computed as p3d_layout_match does; the same answer either way), for
 * the job's communicator ci (members, n).  With ci >= 0 it remembers the
 * bits that depend on the grids alone: a layout's HSDP variants
 * (dp_shard) share its grids, and only what dp_shard changes is worked
 * out again.  The memo assumes communicator ci's members do not change
 * while t is in use; ci < 0: no memo. */
unsigned p3d_layout_match_comm(const struct p3d_layout *l,
                               struct p3d_layout_tab *t, int ci,
                               const int *members, int n);

/* Write "tp=2 cp=1 ep=1 dp=2 pp=2 order=tp-cp-ep-dp-pp". */
void p3d_layout_str(const struct p3d_layout *l, char *buf, size_t n);

#endif /* P3D_LAYOUT_H */
