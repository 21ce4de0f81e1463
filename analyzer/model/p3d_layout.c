/*
 * p3d_layout.c - layout arithmetic, parsing and inference.
 *
 * Megatron's RankGenerator reads a global rank as a mixed-radix number
 * whose first `order` token varies fastest; a group varies some axes and
 * fixes the others (Megatron-LM megatron/core/parallel_state.py,
 * RankGenerator, at d98e8a64).  The expert generator uses the
 * same order with (etp = tp, ep, edp, pp) in place of (tp, cp, dp, pp), so
 * one set of axis indexes serves both views.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_layout.h"
#include "p3d_util.h"

const char *const p3d_label_name[P3D_LBL_COUNT] = {
#define P3D_X_LNAME(name, text) text,
    P3D_LABELS(P3D_X_LNAME)
#undef P3D_X_LNAME
};

const char *const p3d_use_name[] = {"none", "p2p", "tp", "rs/ag", "a2a",
                                    "tiny", "big-ar", "ar", "mixed", "layer",
                                    "grad", "tp-sp", "ddp", "ar?", "rs/ag?",
                                    "ring", "grad-ar", "ring2"};

#define B(x) (1u << (x))
#define M_TP B(P3D_AX_TP)
#define M_CP B(P3D_AX_CP)
#define M_DP B(P3D_AX_DP)
#define M_PP B(P3D_AX_PP)

static const struct { int label; unsigned mask; } p3d_dense_fam[] = {
    {P3D_LBL_TP, M_TP}, {P3D_LBL_CP, M_CP}, {P3D_LBL_DP, M_DP},
    {P3D_LBL_PP, M_PP}, {P3D_LBL_DP_CP, M_DP | M_CP},
    {P3D_LBL_TP_CP, M_TP | M_CP}, {P3D_LBL_MP, M_TP | M_PP},
    {P3D_LBL_TP_DP_CP, M_TP | M_DP | M_CP}, {P3D_LBL_TP_DP, M_TP | M_DP}};

static const char *const p3d_ax_name[P3D_AX_N] = {"tp", "cp", "dp", "pp"};

static int p3d_parse_order(struct p3d_layout *l, const char *order)
{
    char buf[64], *save = NULL, *tok;
    int n = 0, seen = 0;

    if (!strcmp(order, "titan")) /* DeviceMesh (pp, dp, cp, tp), tp fastest */
        order = "tp-cp-ep-dp-pp";
    if (strlen(order) >= sizeof(buf))
        return -1;
    strcpy(buf, order);
    for (tok = strtok_r(buf, "-", &save); tok;
         tok = strtok_r(NULL, "-", &save)) {
        int a;
        if (!strcmp(tok, "ep"))
            continue;
        for (a = 0; a < P3D_AX_N && strcmp(tok, p3d_ax_name[a]); a++)
            ;
        if (a == P3D_AX_N || (seen & B(a)))
            return -1;
        seen |= B(a);
        l->ord[n++] = a;
    }
    for (int a = 0; a < P3D_AX_N; a++) /* missing tokens go last */
        if (!(seen & B(a)))
            l->ord[n++] = a;
    snprintf(l->order, sizeof(l->order), "%s", order);
    return 0;
}

int p3d_layout_etp(const struct p3d_layout *l)
{
    return l->etp > 0 ? l->etp : l->size[P3D_AX_TP];
}

static int p3d_world(const struct p3d_layout *l)
{
    return l->size[0] * l->size[1] * l->size[2] * l->size[3];
}

void p3d_layout_expert_sizes(const struct p3d_layout *l, int es[P3D_AX_N])
{
    es[P3D_AX_TP] = p3d_layout_etp(l);
    es[P3D_AX_CP] = l->ep; /* the ep axis sits where cp sits */
    es[P3D_AX_PP] = l->size[P3D_AX_PP];
    es[P3D_AX_DP] = p3d_world(l) / (es[P3D_AX_TP] * l->ep * es[P3D_AX_PP]);
}

/* Megatron's checks of the expert grid against the dense one (see
 * p3d_layout_set_moe in p3d_layout.h): the expert grid fills the world,
 * and its pipeline groups are the dense ones, that is the ranks before
 * pp in the order span as many ranks in both grids (with the same world
 * and pp, a pipeline group is the ranks a stride apart). */
static int p3d_expert_fits(const struct p3d_layout *l)
{
    int es[P3D_AX_N], dense = 1, expert = 1;

    if (p3d_world(l) % (p3d_layout_etp(l) * l->ep * l->size[P3D_AX_PP]))
        return 0;
    p3d_layout_expert_sizes(l, es);
    for (int i = 0; i < P3D_AX_N && l->ord[i] != P3D_AX_PP; i++) {
        dense *= l->size[l->ord[i]];
        expert *= es[l->ord[i]];
    }
    return dense == expert;
}

int p3d_layout_set_moe(struct p3d_layout *l, int tp, int cp, int dp, int pp,
                       int ep, int etp, const char *order)
{
    memset(l, 0, sizeof(*l));
    l->size[P3D_AX_TP] = tp;
    l->size[P3D_AX_CP] = cp;
    l->size[P3D_AX_DP] = dp;
    l->size[P3D_AX_PP] = pp;
    l->ep = ep;
    l->etp = etp == tp ? 0 : etp; /* 0: the default, etp = tp */
    if (tp < 1 || cp < 1 || dp < 1 || pp < 1 || ep < 1 || etp < 1 ||
        p3d_parse_order(l, order))
        return -1;
    if ((ep > 1 || etp != tp) && !p3d_expert_fits(l))
        return -1; /* no expert groups without MoE: other frameworks'
                      orders are not bound by Megatron's expert checks */
    l->valid = 1;
    return 0;
}

int p3d_layout_set(struct p3d_layout *l, int tp, int cp, int dp, int pp,
                   int ep, const char *order)
{
    return p3d_layout_set_moe(l, tp, cp, dp, pp, ep, tp, order);
}

void p3d_grid_coords(const int size[P3D_AX_N], const int ord[P3D_AX_N],
                     int rank, int c[P3D_AX_N])
{
    for (int i = 0; i < P3D_AX_N; i++) {
        c[ord[i]] = rank % size[ord[i]];
        rank /= size[ord[i]];
    }
}

void p3d_layout_coords(const struct p3d_layout *l, int rank, int c[P3D_AX_N])
{
    p3d_grid_coords(l->size, l->ord, rank, c);
}

/*
 * One grid (the dense one or the expert one) as the matchers read it:
 * its sizes and order, and where a layout table was filled
 * (p3d_layout_tab_fill) every rank's coordinates packed in one word, so
 * the layout search reads a member's coordinates instead of dividing
 * its rank by every size again for every candidate.
 */
struct p3d_gview {
    const int *size, *ord;
    const struct p3d_grid_pack *pk; /* NULL: compute */
};

static void p3d_gv_coords(const struct p3d_gview *g, int r, int c[P3D_AX_N])
{
    if (!g->pk) {
        p3d_grid_coords(g->size, g->ord, r, c);
        return;
    }
    for (int a = 0; a < P3D_AX_N; a++)
        c[a] = (int)((g->pk->v[r] >> g->pk->shift[a]) & g->pk->field[a]);
}

/* The axes (bits) whose packed fields are not all zero in x. */
static unsigned p3d_pk_axes(const struct p3d_grid_pack *pk, uint64_t x)
{
    unsigned mask = 0;

    for (int a = 0; a < P3D_AX_N; a++)
        if ((x >> pk->shift[a]) & pk->field[a])
            mask |= B(a);
    return mask;
}

/* Axes that differ among members, or -1 if they are not a whole group. */
static int p3d_vary_mask(const struct p3d_gview *g, const int *m, int n)
{
    int c0[P3D_AX_N], c[P3D_AX_N], prod = 1;
    unsigned mask = 0;

    if (g->pk) { /* a coordinate differs where the packed words do */
        uint64_t v0 = g->pk->v[m[0]], x = 0;
        for (int i = 1; i < n; i++)
            x |= g->pk->v[m[i]] ^ v0;
        mask = p3d_pk_axes(g->pk, x);
    } else {
        p3d_grid_coords(g->size, g->ord, m[0], c0);
        for (int i = 1; i < n; i++) {
            p3d_grid_coords(g->size, g->ord, m[i], c);
            for (int a = 0; a < P3D_AX_N; a++)
                if (c[a] != c0[a])
                    mask |= B(a);
        }
    }
    for (int a = 0; a < P3D_AX_N; a++)
        if (mask & B(a))
            prod *= g->size[a];
    return prod == n ? (int)mask : -1;
}

static unsigned p3d_nontrivial(const int size[P3D_AX_N])
{
    unsigned nt = 0;

    for (int a = 0; a < P3D_AX_N; a++)
        if (size[a] > 1)
            nt |= B(a);
    return nt;
}

/* Pairs of one PP (or CP) group: EMB and P2P shapes. */
static unsigned p3d_pair_match(const struct p3d_layout *l,
                               const struct p3d_gview *d, const int *m)
{
    int a[P3D_AX_N], b[P3D_AX_N], pp = l->size[P3D_AX_PP];
    int cp = l->size[P3D_AX_CP];
    unsigned bits = 0, diff = 0;

    p3d_gv_coords(d, m[0], a);
    p3d_gv_coords(d, m[1], b);
    for (int x = 0; x < P3D_AX_N; x++)
        if (a[x] != b[x])
            diff |= B(x);
    if (diff == M_PP) {
        int lo = a[P3D_AX_PP] < b[P3D_AX_PP] ? a[P3D_AX_PP] : b[P3D_AX_PP];
        int hi = a[P3D_AX_PP] ^ b[P3D_AX_PP] ^ lo;
        if (lo == 0 && hi == pp - 1)
            bits |= B(P3D_LBL_EMB);
        if (hi - lo == 1 || (lo == 0 && hi == pp - 1))
            bits |= B(P3D_LBL_P2P);
    }
    if (diff == M_CP) {
        int gap = abs(a[P3D_AX_CP] - b[P3D_AX_CP]);
        if (gap == 1 || gap == cp - 1)
            bits |= B(P3D_LBL_P2P);
    }
    return bits;
}

int p3d_layout_efsdp(const struct p3d_layout *l)
{
    int es[P3D_AX_N], rep;

    p3d_layout_expert_sizes(l, es);
    if (l->dp_shard < 1)
        return es[P3D_AX_DP];
    rep = l->size[P3D_AX_DP] / l->dp_shard;
    return es[P3D_AX_DP] % rep ? 0 : es[P3D_AX_DP] / rep;
}

/*
 * torchtitan's HSDP with EP: its sparse mesh is (pp, dp_replicate, efsdp,
 * ep), ep fastest (parallel_dims.py build_mesh, pytorch/torchtitan
 * b5bcd76c): Megatron's expert grid at etp 1 whose expert DP coordinate
 * e is replica e / efsdp, efsdp index e % efsdp.  The experts are
 * sharded over efsdp within a replica (EXPERT-DP here), and their
 * replica group has the dense replica group's ranks (DP-REPLICATE).
 */
static unsigned p3d_hsdp_expert_match(const struct p3d_layout *l,
                                      const struct p3d_gview *e,
                                      const int *m, int n)
{
    int f = p3d_layout_efsdp(l), c0[P3D_AX_N], c[P3D_AX_N];

    if (f < 1 || n != f) /* efsdp exists at size 1 too (_mesh_exist) */
        return 0;
    p3d_gv_coords(e, m[0], c0);
    for (int i = 1; i < n; i++) {
        p3d_gv_coords(e, m[i], c);
        if (c[P3D_AX_TP] != c0[P3D_AX_TP] || c[P3D_AX_CP] != c0[P3D_AX_CP] ||
            c[P3D_AX_PP] != c0[P3D_AX_PP] ||
            c[P3D_AX_DP] / f != c0[P3D_AX_DP] / f)
            return 0;
    }
    return B(P3D_LBL_EXPERT_DP);
}

/* The expert grid's groups the members are (torchtitan's HSDP aside:
 * p3d_hsdp_bits). */
static unsigned p3d_expert_match(const struct p3d_layout *l,
                                 const struct p3d_gview *e, const int *m,
                                 int n)
{
    int mask = p3d_vary_mask(e, m, n);
    unsigned nt = p3d_nontrivial(e->size), bits;

    if (mask < 0)
        return 0;
    bits = ((M_CP & nt) == (unsigned)mask ? B(P3D_LBL_EP) : 0) |
           ((M_DP & nt) == (unsigned)mask ? B(P3D_LBL_EXPERT_DP) : 0) |
           (((M_TP | M_CP) & nt) == (unsigned)mask ? B(P3D_LBL_TP_EP) : 0) |
           (((M_TP | M_CP | M_PP) & nt) == (unsigned)mask
                ? B(P3D_LBL_TP_EP_PP) : 0);
    if (l->etp && (M_TP & nt) && (M_TP & nt) == (unsigned)mask)
        bits |= B(P3D_LBL_EXPERT_TP); /* folded: not TP's ranks */
    return bits;
}

/*
 * torchtitan's HSDP (fully_shard on the 2-D mesh dp_replicate x
 * dp_shard_cp; DeviceMesh dims pp, dp_replicate, dp_shard, cp, tp, the last
 * fastest): a DP coordinate d is replica d / S, shard d % S.  DP-SHARD is
 * every shard and cp position of one replica, DP-REPLICATE one shard and
 * cp position of every replica.
 */
static unsigned p3d_hsdp_match(const struct p3d_layout *l,
                               const struct p3d_gview *d, const int *m, int n)
{
    int s = l->dp_shard, cp = l->size[P3D_AX_CP], c0[P3D_AX_N];
    int c[P3D_AX_N], same_rep = 1, same_shard = 1;

    if (s < 1 || s >= l->size[P3D_AX_DP])
        return 0;
    p3d_gv_coords(d, m[0], c0);
    for (int i = 1; i < n; i++) {
        p3d_gv_coords(d, m[i], c);
        if (c[P3D_AX_TP] != c0[P3D_AX_TP] || c[P3D_AX_PP] != c0[P3D_AX_PP])
            return 0; /* only DP and CP may vary */
        same_rep &= c[P3D_AX_DP] / s == c0[P3D_AX_DP] / s;
        same_shard &= c[P3D_AX_DP] % s == c0[P3D_AX_DP] % s &&
                      c[P3D_AX_CP] == c0[P3D_AX_CP];
    }
    return (same_rep && n == s * cp ? B(P3D_LBL_DP_SHARD) : 0) |
           (same_shard && n == l->size[P3D_AX_DP] / s ? B(P3D_LBL_DP_REP)
                                                      : 0);
}

/*
 * The groups the members are that depend on the grids alone, not on
 * dp_shard: a layout's HSDP variants share them (p3d_layout_match_comm
 * keeps them).  No other part gives EXPERT-DP.
 */
static unsigned p3d_grid_bits(const struct p3d_layout *l,
                              const struct p3d_gview *d,
                              const struct p3d_gview *e, const int *m,
                              int n)
{
    unsigned bits = 0, nt = p3d_nontrivial(l->size);
    int mask = p3d_vary_mask(d, m, n), c[P3D_AX_N];

    for (size_t i = 0; mask >= 0 && i < sizeof(p3d_dense_fam) /
                                        sizeof(p3d_dense_fam[0]); i++)
        if ((p3d_dense_fam[i].mask & nt) == (unsigned)mask)
            bits |= B(p3d_dense_fam[i].label);
    bits |= p3d_expert_match(l, e, m, n);
    if (n == p3d_world(l))
        bits |= B(P3D_LBL_WORLD);
    if (n == 2)
        bits |= p3d_pair_match(l, d, m);
    if (n == 1) {
        p3d_gv_coords(d, m[0], c);
        if (c[P3D_AX_PP] == 0)
            bits |= B(P3D_LBL_POS_EMB);
        if (l->size[P3D_AX_PP] == 1)
            bits |= B(P3D_LBL_EMB);
    }
    return bits;
}

/* What torchtitan's HSDP changes of the grid bits g: the experts' shard
 * group instead of their DP group, and the dense shard and replica
 * groups (at dp_shard 1, no cp, its shards are 1 rank). */
static unsigned p3d_hsdp_bits(const struct p3d_layout *l,
                              const struct p3d_gview *d,
                              const struct p3d_gview *e, const int *m, int n,
                              unsigned g)
{
    if (l->dp_shard <= 0)
        return g;
    return (g & ~B(P3D_LBL_EXPERT_DP)) | p3d_hsdp_expert_match(l, e, m, n) |
           p3d_hsdp_match(l, d, m, n);
}

/* The two grids' views: packed from t where it was filled for l. */
static int p3d_views(const struct p3d_layout *l,
                     const struct p3d_layout_tab *t, int es[P3D_AX_N],
                     struct p3d_gview *d, struct p3d_gview *e)
{
    int packed = t && t->ok && t->w == p3d_world(l);

    *d = (struct p3d_gview){l->size, l->ord, packed ? &t->dense : NULL};
    *e = (struct p3d_gview){es, l->ord, packed ? &t->expert : NULL};
    if (packed)
        e->size = t->expert.size;
    else
        p3d_layout_expert_sizes(l, es);
    return packed;
}

static int p3d_members_fit(const struct p3d_layout *l, const int *m, int n)
{
    return n >= 1 && l->valid && m[n - 1] < p3d_world(l) && m[0] >= 0;
}

unsigned p3d_layout_match_comm(const struct p3d_layout *l,
                               struct p3d_layout_tab *t, int ci,
                               const int *m, int n)
{
    int es[P3D_AX_N];
    struct p3d_gview d, e;

    if (!p3d_members_fit(l, m, n))
        return 0;
    if (!p3d_views(l, t, es, &d, &e) || ci < 0)
        return p3d_hsdp_bits(l, &d, &e, m, n,
                             p3d_grid_bits(l, &d, &e, m, n));
    if ((size_t)ci >= t->n_memo) {
        size_t k = t->n_memo;
        t->n_memo = (size_t)ci + 64;
        t->memo = p3d_xrealloc(t->memo, t->n_memo, sizeof(*t->memo));
        memset(t->memo + k, 0, (t->n_memo - k) * sizeof(*t->memo));
    }
    if (t->memo[ci].gen != t->gen) {
        t->memo[ci].gen = t->gen;
        t->memo[ci].bits = p3d_grid_bits(l, &d, &e, m, n);
    }
    return p3d_hsdp_bits(l, &d, &e, m, n, t->memo[ci].bits);
}

unsigned p3d_layout_match(const struct p3d_layout *l, const int *m, int n)
{
    return p3d_layout_match_comm(l, NULL, -1, m, n);
}

/* Bits a coordinate below size takes (0 for size 1). */
static int p3d_bits_for(int size)
{
    int b = 0;

    while (b < 31 && (1 << b) < size)
        b++;
    return b;
}

/* Pack every rank's coordinates on the grid (size, ord); 0 if they do
 * not fit in a word.  Ranks count up in the order's mixed radix, so no
 * rank is divided. */
static int p3d_grid_pack(struct p3d_grid_pack *pk, const int size[P3D_AX_N],
                         const int ord[P3D_AX_N], int w, int *repacked)
{
    int c[P3D_AX_N] = {0}, at = 0;
    uint64_t v = 0;

    if (pk->w == w && !memcmp(pk->size, size, sizeof(pk->size)) &&
        !memcmp(pk->ord, ord, sizeof(pk->ord)))
        return pk->ok; /* the same grid (HSDP's variants of a layout) */
    *repacked = 1;
    pk->w = w;
    pk->ok = 0;
    memcpy(pk->size, size, sizeof(pk->size));
    memcpy(pk->ord, ord, sizeof(pk->ord));

    for (int i = 0; i < P3D_AX_N; i++) {
        int a = ord[i], b = p3d_bits_for(size[a]);
        pk->shift[a] = at;
        pk->field[a] = b ? ((uint64_t)1 << b) - 1 : 0;
        at += b;
    }
    if (at > 64)
        return 0;
    pk->ok = 1;
    for (int r = 0; r < w; r++) {
        pk->v[r] = v;
        for (int i = 0; i < P3D_AX_N; i++) {
            int a = ord[i];
            if (++c[a] < size[a]) {
                v += (uint64_t)1 << pk->shift[a];
                break;
            }
            v -= (uint64_t)(c[a] - 1) << pk->shift[a];
            c[a] = 0;
        }
    }
    return 1;
}

void p3d_layout_tab_fill(struct p3d_layout_tab *t, const struct p3d_layout *l)
{
    int es[P3D_AX_N], w = p3d_world(l), repacked = 0;

    t->ok = 0;
    t->w = w;
    if (!l->valid || w < 1)
        return;
    if ((size_t)w > t->cap) {
        free(t->dense.v);
        free(t->expert.v);
        t->cap = (size_t)w;
        t->dense.v = p3d_xmalloc(t->cap * sizeof(*t->dense.v));
        t->expert.v = p3d_xmalloc(t->cap * sizeof(*t->expert.v));
        t->dense.w = t->expert.w = 0; /* nothing packed in these */
        repacked = 1;
    }
    p3d_layout_expert_sizes(l, es);
    t->ok = p3d_grid_pack(&t->dense, l->size, l->ord, w, &repacked) &&
            p3d_grid_pack(&t->expert, es, l->ord, w, &repacked);
    t->gen += repacked; /* the memo's grid bits are of other grids */
}

void p3d_layout_tab_free(struct p3d_layout_tab *t)
{
    free(t->dense.v);
    free(t->expert.v);
    free(t->memo);
    memset(t, 0, sizeof(*t));
}

void p3d_layout_str(const struct p3d_layout *l, char *buf, size_t n)
{
    int k = snprintf(buf, n, "tp=%d cp=%d ep=%d dp=%d pp=%d order=%s",
                     l->size[P3D_AX_TP], l->size[P3D_AX_CP], l->ep,
                     l->size[P3D_AX_DP], l->size[P3D_AX_PP], l->order);

    if (l->etp && k > 0 && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, " etp=%d", l->etp);
    if (l->dp_shard > 0 && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " dp_shard=%d", l->dp_shard);
}

int p3d_layout_group(const struct p3d_layout *l, int w, int r,
                     unsigned mask, int *out)
{
    return p3d_grid_group(l->size, l->ord, w, r, mask, out);
}

int p3d_grid_group(const int size[P3D_AX_N], const int ord[P3D_AX_N], int w,
                   int r, unsigned mask, int *out)
{
    int c0[P3D_AX_N], c[P3D_AX_N], n = 0;

    p3d_grid_coords(size, ord, r, c0);
    for (int s = 0; s < w; s++) {
        int same = 1;
        p3d_grid_coords(size, ord, s, c);
        for (int a = 0; a < P3D_AX_N; a++)
            same &= (mask >> a & 1u) || c[a] == c0[a];
        if (same)
            out[n++] = s;
    }
    return n;
}
