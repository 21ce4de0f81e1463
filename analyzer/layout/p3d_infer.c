/*
 * p3d_infer.c - find the layout under which the observed communicators
 * are Megatron's groups, and read the layout a user or a command line
 * states.
 *
 * Search: every (tp, cp, dp, pp) with product = world, every ep dividing
 * dp*cp, orders tp-cp-ep-dp-pp and tp-cp-ep-pp-dp (torchtitan's
 * pp-dp-cp-tp mesh, last axis fastest, is the first of these), each as
 * Megatron accepts it (p3d_layout_set_moe); Megatron's MoE parallel
 * folding, an expert tensor-parallel size etp other than tp, only where
 * the traces show it (p3d_folds: an all-to-all communicator whose ranks
 * are etp apart, as the expert generator makes EP groups); and, in
 * the first order, torchtitan's HSDP (with EP too: p3d_try_hsdp): DP split into
 * dp/dp_shard replicas of dp_shard shards (p3d_layout.c), an axis that
 * counts as unseen, like the others, unless a communicator is its shard
 * or replica group with the traffic of one.  Score =
 * (communicators of >= 2 ranks that are an exact group, communicators
 * whose usage fits the group they would be, communicators whose usage
 * points first at that group, then fewer axes > 1 that no observed
 * communicator is a group of: a dimension with no traffic of its own is
 * no evidence that it exists), ties broken towards the default order,
 * then smaller ep (a 2-rank all-to-all is a 2-rank ring step, and only
 * MoE jobs have EP), larger dp (DP takes the ranks the other axes
 * leave), smaller cp, etp = tp (Megatron's default), pp: axes nothing
 * observed needs are not invented.
 *
 * Confidence (what the report and JSON layout.confidence say):
 *   certain    the Megatron command line or --layout states it, the traces
 *              agree, and every rank's trace was read;
 *   likely     inferred, no other layout fits the traces as well, and it
 *              fits them whole: every communicator of 2+ ranks is one of
 *              its groups and every one whose traffic has a kind's
 *              signature is a group of that kind (else the job has groups
 *              or uses the layout model does not know, HSDP's shard and
 *              replica groups say, and the answer is "ambiguous");
 *   ambiguous  another layout fits exactly as well but would label some
 *              observed communicator differently (the priors above chose);
 *              or ranks are missing, so groups are only partly seen;
 *   none       no communicator of 2+ ranks had every member traced: the
 *              layout shown is a placeholder (a single rank file, say).
 * The alternatives listed are the best other layouts, with why each lost.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_infer.h"
#include "p3d_layout.h"
#include "p3d_util.h"

static const char *const p3d_orders[] = {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"};

const char *const p3d_conf_name[] = {"certain", "likely", "ambiguous",
                                     "none"};

struct p3d_score {
    int explained, usage, primary, total;
    int wanted; /* communicators whose traffic points at some group kind */
    int unseen; /* axes > 1 with no observed group (lower is better) */
    int grads, grads_cp; /* communicators with gradient traffic, and of
                            them those that are a group spanning CP */
    int grads_flat; /* of them, those only a whole DP (or DP x CP) group */
    int cut; /* scoring stopped: it cannot reach the floor asked for */
};

/* Candidates kept for the confidence and the alternatives. */
#define P3D_TOP 8

static uint64_t p3d_max_cpm(const struct p3d_job *job)
{
    uint64_t m = 1;

    for (int i = 0; i < job->n_comms; i++) {
        uint64_t c = p3d_calls_per_member(&job->comms[i]);
        if (c > m)
            m = c;
    }
    return m;
}

/* Axes > 1 (tp, cp, pp, ep) none of whose groups is an observed
 * communicator with traffic of that group's kind under l; seen = the
 * label bits the communicators took that their usage supports. */
static int p3d_unseen(const struct p3d_layout *l, unsigned seen,
                      const struct p3d_score *s)
{
    int n = 0;

    /* weight gradients are reduced across CP (p3d_use_is_grad): where
     * the traces show gradients, one communicator of them spans it */
    n += l->size[P3D_AX_CP] > 1 && s->grads && !s->grads_cp;
    /* torchtitan's HSDP reduces gradients on its shard and replica
     * groups (fully_shard on (dp_replicate, fsdp), _fsdp_collectives.py
     * foreach_reduce), never on the whole DP group: gradients there
     * leave the HSDP axis unexplained */
    n += l->dp_shard > 0 && s->grads_flat;
    n += l->size[P3D_AX_TP] > 1 && !(seen & (1u << P3D_LBL_TP));
    n += l->size[P3D_AX_CP] > 1 && !(seen & (1u << P3D_LBL_CP));
    n += l->size[P3D_AX_PP] > 1 && !(seen & (1u << P3D_LBL_PP));
    n += l->ep > 1 && !(seen & (1u << P3D_LBL_EP));
    /* MoE's other group: expert gradients on EXPERT_DATA_PARALLEL_GROUP
     * (Megatron distributed/finalize_model_grads, the expert buffers),
     * where it has 2+ ranks */
    n += l->ep > 1 && p3d_layout_efsdp(l) > 1 &&
         !(seen & (1u << P3D_LBL_EXPERT_DP));
    /* a folded expert TP group of 2+ ranks gathers the tokens before the
     * experts and reduce-scatters after (token_dispatcher.py
     * MoEAlltoAllTokenDispatcher, tp_size > 1 on pg_collection.expt_tp) */
    n += l->etp > 1 && !(seen & (1u << P3D_LBL_EXPERT_TP));
    n += l->dp_shard > 0 &&
         !(seen & ((1u << P3D_LBL_DP_SHARD) | (1u << P3D_LBL_DP_REP)));
    return n;
}

/*
 * The one group a communicator evidences: among the groups it is (bits)
 * whose kind its traffic fits, the one its traffic points at first, else
 * the most specific.  One communicator is one group, so the same ranks
 * cannot stand for, say, both an EP and a CP group.
 */
static unsigned p3d_one_label(unsigned fit, unsigned primary,
                              unsigned seen)
{
    unsigned pick = fit & primary ? fit & primary : fit;

    if (pick & ~seen) /* two comms on the same ranks are two groups */
        pick &= ~seen;
    return pick & (~pick + 1u); /* lowest bit: most specific label */
}

/*
 * tab: NULL, or filled for l (the search's).  floor: stop (s.cut) once l
 * can no longer explain that many communicators of 2+ members, of which
 * the job has n_multi: the search asks for what its worst kept candidate
 * explains, and explaining more comes first in every comparison
 * (p3d_better_evidence), so a candidate cut there would not be kept.
 */
static struct p3d_score p3d_score(const struct p3d_job *job,
                                  const struct p3d_layout *l,
                                  struct p3d_layout_tab *tab,
                                  const enum p3d_use *use, int floor,
                                  int n_multi)
{
    struct p3d_score s = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    const unsigned cp_wide = (1u << P3D_LBL_DP_CP) | (1u << P3D_LBL_DP_SHARD);
    const unsigned flat = (1u << P3D_LBL_DP) | (1u << P3D_LBL_DP_CP);
    unsigned seen = 0;

    for (int i = 0; i < job->n_comms; i++) {
        const struct p3d_gcomm *g = &job->comms[i];
        unsigned bits, want = p3d_use_labels(use[i]);

        if (!g->n_members || g->n_missing)
            continue;
        bits = tab ? p3d_layout_match_comm(l, tab, i, g->members,
                                           g->n_members)
                   : p3d_layout_match(l, g->members, g->n_members);
        seen |= p3d_one_label(bits & want, p3d_use_primary(use[i]), seen);
        if (g->n_members >= 2) {
            s.total++;
            s.explained += bits != 0;
            if (s.explained + (n_multi - s.total) < floor) {
                s.cut = 1;
                return s;
            }
        }
        if (want) {
            s.usage += (bits & want) != 0;
            s.wanted++;
        }
        s.primary += (bits & p3d_use_primary(use[i])) != 0;
        if (p3d_use_is_grad(use[i]) && (bits & want)) {
            s.grads++;
            s.grads_cp += (bits & want & cp_wide) != 0;
            s.grads_flat += !(bits & want & ~flat);
        }
    }
    s.unseen = p3d_unseen(l, seen, &s);
    return s;
}

/* >0 if score a is better than b on the evidence (not the priors). */
static int p3d_better_evidence(struct p3d_score sa, struct p3d_score sb)
{
    if (sa.explained != sb.explained)
        return sa.explained - sb.explained;
    if (sa.usage != sb.usage)
        return sa.usage - sb.usage;
    if (sa.primary != sb.primary)
        return sa.primary - sb.primary;
    return sb.unseen - sa.unseen;
}

/* >0 if candidate a is better than b. */
static int p3d_better(const struct p3d_layout *a, struct p3d_score sa,
                      const struct p3d_layout *b, struct p3d_score sb)
{
    int oa = !strcmp(a->order, p3d_orders[0]);
    int ob = !strcmp(b->order, p3d_orders[0]);
    int ev = p3d_better_evidence(sa, sb);

    if (ev)
        return ev;
    if (!a->dp_shard != !b->dp_shard) /* plain DP unless HSDP shows */
        return !a->dp_shard - !b->dp_shard;
    if (oa != ob)
        return oa - ob;
    if (a->ep != b->ep) /* MoE only on evidence a CP ring cannot give */
        return b->ep - a->ep;
    if (a->size[P3D_AX_DP] != b->size[P3D_AX_DP])
        return a->size[P3D_AX_DP] - b->size[P3D_AX_DP];
    if (a->size[P3D_AX_CP] != b->size[P3D_AX_CP])
        return b->size[P3D_AX_CP] - a->size[P3D_AX_CP];
    /* Megatron's default: experts split as TP; after CP, so that a pair
     * with TP's per-layer gathers is TP with unsplit experts (MoE
     * parallel folding; torchtitan's experts have no TP) before it is CP */
    if (!a->etp != !b->etp)
        return !a->etp - !b->etp;
    return b->size[P3D_AX_PP] - a->size[P3D_AX_PP];
}

struct p3d_cand {
    struct p3d_layout l;
    struct p3d_score s;
};

/* Most (ep, etp) pairs of folded expert layouts tried (p3d_folds). */
#define P3D_MAX_FOLDS 8

struct p3d_search {
    const struct p3d_job *job;
    const enum p3d_use *use;
    struct { int ep, etp; } folds[P3D_MAX_FOLDS];
    int n_folds;
    struct p3d_cand top[P3D_TOP]; /* the best candidates, best first: */
    int n_top;                    /* top[0] is the best (zeroed if none) */
    struct p3d_layout_tab tab;    /* the candidate's coordinates */
    int pack;    /* fill tab: the world is no larger than twice the
                    members of all communicators (packing costs a walk
                    over the world per candidate, scoring one over the
                    members; a damaged file can claim a rank of 2^30) */
    int n_multi; /* communicators of 2+ members, all present */
};

/* Keep candidate (l, sc) among the P3D_TOP best. */
static void p3d_keep(struct p3d_search *s, const struct p3d_layout *l,
                     struct p3d_score sc)
{
    int full = s->n_top == P3D_TOP;
    int i = full ? P3D_TOP - 1 : s->n_top++;

    if (full && p3d_better(l, sc, &s->top[i].l, s->top[i].s) <= 0)
        return;
    while (i > 0 && p3d_better(l, sc, &s->top[i - 1].l, s->top[i - 1].s) > 0) {
        s->top[i] = s->top[i - 1];
        i--;
    }
    s->top[i].l = *l;
    s->top[i].s = sc;
}

static void p3d_try_one(struct p3d_search *s, const struct p3d_layout *l)
{
    struct p3d_score sc;
    int floor = s->n_top == P3D_TOP ? s->top[P3D_TOP - 1].s.explained : -1;

    if (s->pack)
        p3d_layout_tab_fill(&s->tab, l);
    sc = p3d_score(s->job, l, s->pack ? &s->tab : NULL, s->use, floor,
                   s->n_multi);

    if (getenv("P3D_DEBUG_LAYOUT"))
        fprintf(stderr, "layout tp%d cp%d dp%d pp%d ep%d etp%d dps%d %s: "
                "explained %d usage %d primary %d unseen %d%s\n",
                l->size[P3D_AX_TP], l->size[P3D_AX_CP], l->size[P3D_AX_DP],
                l->size[P3D_AX_PP], l->ep, l->etp, l->dp_shard, l->order,
                sc.explained, sc.usage,
                sc.primary, sc.unseen,
                sc.cut ? " (cut: cannot be among the best)" : "");
    if (!sc.cut)
        p3d_keep(s, l, sc);
}

/*
 * l, and in the first order (torchtitan's mesh) its HSDP variants: DP as
 * dp/sh replicas of sh shards, each sh < dp dividing dp; with EP only where
 * the replicas divide the experts' DP too (torchtitan's sparse mesh,
 * p3d_layout_efsdp).
 */
static void p3d_try_hsdp(struct p3d_search *s, struct p3d_layout *l,
                         int titan_order)
{
    int dp = l->size[P3D_AX_DP];

    p3d_try_one(s, l);
    /* sh = 1: torchtitan's dp_replicate alone still runs FSDP, on its
     * fsdp mesh of dp_shard x cp = cp ranks (parallel_dims.py keeps the
     * fsdp mesh at size 1; fully_shard on (dp_replicate, fsdp)) */
    for (int sh = 1; titan_order && sh < dp; sh++) {
        if (dp % sh)
            continue;
        l->dp_shard = sh;
        if (l->ep == 1 || p3d_layout_efsdp(l) > 0)
            p3d_try_one(s, l);
    }
    l->dp_shard = 0;
}

/* Megatron's MoE parallel folding at (tp, cp, dp, pp): the (ep, etp)
 * pairs the traces show (p3d_folds) with etp other than tp. */
static void p3d_try_folded(struct p3d_search *s, int tp, int cp, int dp,
                           int pp)
{
    for (int f = 0; f < s->n_folds; f++) {
        if (s->folds[f].etp == tp)
            continue;
        for (size_t o = 0; o < sizeof(p3d_orders) / sizeof(*p3d_orders);
             o++) {
            struct p3d_layout l;
            if (o == 1 && (pp == 1 || dp == 1))
                continue; /* same groups as the default order */
            if (!p3d_layout_set_moe(&l, tp, cp, dp, pp, s->folds[f].ep,
                                    s->folds[f].etp, p3d_orders[o]))
                p3d_try_hsdp(s, &l, o == 0);
        }
    }
}

static void p3d_try(struct p3d_search *s, int tp, int cp, int dp, int pp)
{
    p3d_try_folded(s, tp, cp, dp, pp);
    for (int ep = 1; ep <= dp * cp; ep++) {
        if ((dp * cp) % ep)
            continue;
        for (size_t o = 0; o < sizeof(p3d_orders) / sizeof(*p3d_orders);
             o++) {
            struct p3d_layout l;
            if (p3d_layout_set(&l, tp, cp, dp, pp, ep, p3d_orders[o]))
                continue;
            if (o == 1 && (pp == 1 || dp == 1))
                continue; /* same groups as the default order */
            p3d_try_hsdp(s, &l, o == 0);
        }
    }
}

/*
 * The (ep, etp) pairs the all-to-all communicators show: the expert
 * generator varies etp fastest, then ep, in both of Megatron's orders
 * (its cp is 1), so an EP group is ep ranks etp apart.  Only these are
 * tried with etp other than tp: folding is a choice the traces must
 * show, and trying every etp would multiply the search.
 */
static void p3d_folds(struct p3d_search *s)
{
    const struct p3d_job *job = s->job;

    for (int i = 0; i < job->n_comms && s->n_folds < P3D_MAX_FOLDS; i++) {
        const struct p3d_gcomm *g = &job->comms[i];
        int n = g->n_members, d, k, f;

        if (s->use[i] != P3D_USE_A2A || n < 2 || g->n_missing)
            continue;
        d = g->members[1] - g->members[0];
        for (k = 2; k < n && g->members[k] - g->members[k - 1] == d; k++)
            ;
        if (k < n)
            continue; /* not evenly spaced: no expert generator's group */
        for (f = 0; f < s->n_folds; f++)
            if (s->folds[f].ep == n && s->folds[f].etp == d)
                break;
        if (f == s->n_folds) {
            s->folds[f].ep = n;
            s->folds[f].etp = d;
            s->n_folds++;
        }
    }
}

static void p3d_search(struct p3d_search *s, int w)
{
    p3d_folds(s);
    for (int tp = 1; tp <= w; tp++) {
        if (w % tp)
            continue;
        for (int cp = 1; cp <= w / tp; cp++) {
            if ((w / tp) % cp)
                continue;
            for (int pp = 1; pp <= w / (tp * cp); pp++)
                if ((w / (tp * cp)) % pp == 0)
                    p3d_try(s, tp, cp, w / (tp * cp * pp), pp);
        }
    }
}

static enum p3d_use *p3d_classify_all(const struct p3d_job *job)
{
    enum p3d_use *use = p3d_xcalloc((size_t)job->n_comms + 1, sizeof(*use));
    uint64_t max_cpm = p3d_max_cpm(job);

    for (int i = 0; i < job->n_comms; i++)
        use[i] = p3d_usage_class(&job->comms[i], max_cpm);
    return use;
}

static void p3d_adopt(struct p3d_layout *out, const struct p3d_layout *l,
                      struct p3d_score s, const char *source)
{
    int vpp = out->vpp, mbs = out->mbs, gbs = out->gbs, seq = out->seq;

    *out = *l;
    out->source = source;
    out->explained = s.explained;
    out->total = s.total;
    out->usage_ok = s.usage;
    out->vpp = vpp ? vpp : l->vpp;
    out->mbs = mbs ? mbs : l->mbs;
    out->gbs = gbs ? gbs : l->gbs;
    out->seq = seq ? seq : l->seq;
}

/* Whether a and b label some observed communicator differently. */
static int p3d_labels_differ(const struct p3d_job *job,
                             const struct p3d_layout *a,
                             const struct p3d_layout *b)
{
    for (int i = 0; i < job->n_comms; i++) {
        const struct p3d_gcomm *g = &job->comms[i];

        if (g->n_members < 2 || g->n_missing)
            continue;
        if (p3d_layout_match(a, g->members, g->n_members) !=
            p3d_layout_match(b, g->members, g->n_members))
            return 1;
    }
    return 0;
}

static int p3d_same_layout(const struct p3d_layout *a,
                           const struct p3d_layout *b)
{
    return !memcmp(a->size, b->size, sizeof(a->size)) && a->ep == b->ep &&
           a->etp == b->etp && a->dp_shard == b->dp_shard &&
           !strcmp(a->order, b->order);
}

/* Why candidate c (score cs) is not the chosen layout (score bs). */
static void p3d_why_not(const struct p3d_job *job, const struct p3d_layout *b,
                        struct p3d_score bs, const struct p3d_layout *c,
                        struct p3d_score cs, char *buf, size_t n)
{
    if (cs.explained != bs.explained)
        snprintf(buf, n, "%d of %d communicators of 2+ ranks are its groups"
                 " (%d for the chosen)", cs.explained, cs.total,
                 bs.explained);
    else if (cs.usage != bs.usage)
        snprintf(buf, n, "the traffic of %d communicators fits the groups "
                 "it would make them (%d for the chosen)", cs.usage,
                 bs.usage);
    else if (cs.primary != bs.primary)
        snprintf(buf, n, "the traffic of %d communicators is the signature "
                 "of the group it would make them (%d for the chosen)",
                 cs.primary, bs.primary);
    else if (cs.unseen != bs.unseen)
        snprintf(buf, n, "%d of its dimensions > 1 have no communicator of "
                 "their own", cs.unseen);
    else if (p3d_labels_differ(job, b, c))
        snprintf(buf, n, "fits the traces exactly as well, with other "
                 "labels; chosen by prior: the default order, then smaller "
                 "EP, larger DP, smaller CP, expert TP = TP, PP");
    else
        snprintf(buf, n, "fits as well and labels every communicator the "
                 "same (it differs only where no traffic shows); chosen by "
                 "prior");
}

/* The alternatives to the chosen layout, from the best candidates. */
static void p3d_alternatives(const struct p3d_search *s,
                             const struct p3d_layout *chosen,
                             struct p3d_score cs, struct p3d_layout *out)
{
    out->n_alts = 0;
    for (int i = 0; i < s->n_top && out->n_alts < 3; i++) {
        const struct p3d_cand *c = &s->top[i];
        struct p3d_layout_alt *a = &out->alts[out->n_alts];

        if (p3d_same_layout(&c->l, chosen))
            continue;
        p3d_layout_str(&c->l, a->text, sizeof(a->text));
        p3d_why_not(s->job, chosen, cs, &c->l, c->s, a->why, sizeof(a->why));
        out->n_alts++;
    }
}

/* A candidate that fits exactly as well as chosen but labels some
 * communicator differently, or NULL. */
static const struct p3d_cand *p3d_rival(const struct p3d_search *s,
                                        const struct p3d_layout *chosen,
                                        struct p3d_score cs)
{
    for (int i = 0; i < s->n_top; i++) {
        const struct p3d_cand *c = &s->top[i];

        if (!p3d_same_layout(&c->l, chosen) &&
            p3d_better_evidence(c->s, cs) == 0 &&
            p3d_labels_differ(s->job, chosen, &c->l))
            return c;
    }
    return NULL;
}

/* What of the traces the chosen layout leaves unexplained, in buf; 0 if
 * nothing: every communicator of 2+ ranks is one of its groups, and every
 * one with a kind's traffic signature a group of that kind. */
static int p3d_misfit(const struct p3d_search *s, const struct p3d_layout *l,
                      char *buf, size_t n)
{
    const struct p3d_job *job = s->job;

    for (int i = 0; i < job->n_comms; i++) {
        const struct p3d_gcomm *g = &job->comms[i];
        unsigned bits, want = p3d_use_labels(s->use[i]);

        if (!g->n_members || g->n_missing)
            continue;
        bits = p3d_layout_match(l, g->members, g->n_members);
        if (g->n_members >= 2 && !bits) {
            snprintf(buf, n, "comm 0x%016" PRIx64 " (%d ranks from %d) is "
                     "none of its groups", g->hash, g->n_members,
                     g->members[0]);
            return 1;
        }
        if (want && !(bits & want)) {
            snprintf(buf, n, "comm 0x%016" PRIx64 " (%d ranks from %d) "
                     "carries %s traffic, not that of the group it would be",
                     g->hash, g->n_members, g->members[0],
                     p3d_use_name[s->use[i]]);
            return 1;
        }
    }
    return 0;
}

/* out->confidence and conf_why (the rule is in the comment at the top). */
static void p3d_confidence(const struct p3d_search *s, int stated,
                           struct p3d_layout *out)
{
    const struct p3d_job *job = s->job;
    int w = p3d_job_world(job);
    int found = p3d_job_ranks_found(job);
    const struct p3d_cand *rival = NULL;
    char r[160];

    if (out->total == 0) {
        out->confidence = P3D_CONF_NONE;
        snprintf(out->conf_why, sizeof(out->conf_why), "no communicator of "
                 "2+ ranks has every member traced (%d of %d ranks read)",
                 found, w);
        return;
    }
    if (stated && !out->contradicted && found == w) {
        out->confidence = P3D_CONF_CERTAIN;
        snprintf(out->conf_why, sizeof(out->conf_why), "%s, and the traces "
                 "agree", !strcmp(out->source, "user") ? "--layout says so"
                 : "the job's command line says so");
        return;
    }
    if (!stated)
        rival = p3d_rival(s, out, s->top[0].s); /* the best's score */
    out->confidence = P3D_CONF_AMBIGUOUS;
    if (rival) {
        p3d_layout_str(&rival->l, r, sizeof(r));
        snprintf(out->conf_why, sizeof(out->conf_why), "%s fits the traces "
                 "exactly as well and labels communicators differently",
                 r);
    } else if (found < w) {
        snprintf(out->conf_why, sizeof(out->conf_why), "only %d of %d "
                 "ranks traced: their groups are only partly seen", found,
                 w);
    } else if (stated) {
        snprintf(out->conf_why, sizeof(out->conf_why), "stated, but the "
                 "traces fit another layout better");
    } else if (p3d_misfit(s, out, r, sizeof(r))) {
        snprintf(out->conf_why, sizeof(out->conf_why), "the best layout "
                 "does not fit the traces whole: %s (the job may have groups "
                 "its tp/cp/ep/dp/pp model lacks)", r);
    } else {
        out->confidence = P3D_CONF_LIKELY;
        snprintf(out->conf_why, sizeof(out->conf_why), "inferred: no other "
                 "layout fits the traces as well");
    }
}

void p3d_layout_infer(struct p3d_job *job, const struct p3d_layout *hint,
                      int force, struct p3d_layout *out)
{
    const struct p3d_cand *best;
    struct p3d_search s;
    int w = p3d_job_world(job);
    uint64_t members = 0;

    memset(&s, 0, sizeof(s));
    memset(out, 0, sizeof(*out));
    s.job = job;
    s.use = p3d_classify_all(job);
    for (int i = 0; i < job->n_comms; i++) {
        s.n_multi += job->comms[i].n_members >= 2 && !job->comms[i].n_missing;
        members += job->comms[i].n_members;
    }
    s.pack = w > 0 && (uint64_t)w <= 2 * members;
    if (w > 0)
        p3d_search(&s, w);
    best = &s.top[0];
    if (hint && hint->valid) {
        struct p3d_score hs = p3d_score(job, hint, NULL, s.use, -1, 0);
        int fits = hs.explained >= best->s.explained &&
                   hs.usage >= best->s.usage &&
                   hs.primary >= best->s.primary;
        if (fits || force)
            p3d_adopt(out, hint, hs, hint->source);
        else
            p3d_adopt(out, &best->l, best->s, "inferred");
        out->contradicted = !fits;
    } else if (best->l.valid) {
        p3d_adopt(out, &best->l, best->s, "inferred");
    }
    if (best->l.valid)
        p3d_layout_str(&best->l, out->best, sizeof(out->best));
    out->best_explained = best->s.explained;
    if (out->valid) {
        int stated = strcmp(out->source, "inferred") != 0;

        p3d_confidence(&s, stated, out);
        if (out->confidence != P3D_CONF_NONE) /* else nothing to compare */
            p3d_alternatives(&s, out,
                             stated ? p3d_score(job, out, NULL, s.use, -1, 0)
                                    : best->s, out);
    }
    p3d_layout_tab_free(&s.tab);
    free((void *)s.use);
}
