/*
 * p3d_infer.c - find the layout under which the observed communicators
 * are Megatron's groups, and read the layout a user or a command line
 * states.
 *
 * Search: every (tp, cp, dp, pp) with product = world, every ep dividing
 * dp*cp, orders tp-cp-ep-dp-pp and tp-cp-ep-pp-dp (torchtitan's
 * pp-dp-cp-tp mesh, last axis fastest, is the first of these).  Score =
 * (communicators of >= 2 ranks that are an exact group, communicators
 * whose usage fits the group they would be, communicators whose usage
 * points first at that group), ties broken towards the
 * default order, then larger dp, then smaller cp, ep, pp: axes nothing
 * observed needs are not invented.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_layout.h"
#include "p3d_util.h"

static const char *const p3d_orders[] = {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"};

struct p3d_score {
    int explained, usage, primary, total;
};

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

static struct p3d_score p3d_score(const struct p3d_job *job,
                                  const struct p3d_layout *l,
                                  const enum p3d_use *use)
{
    struct p3d_score s = {0, 0, 0, 0};

    for (int i = 0; i < job->n_comms; i++) {
        const struct p3d_gcomm *g = &job->comms[i];
        unsigned bits, want = p3d_use_labels(use[i]);

        if (!g->n_members || g->n_missing)
            continue;
        bits = p3d_layout_match(l, g->members, g->n_members);
        if (g->n_members >= 2) {
            s.total++;
            s.explained += bits != 0;
        }
        if (want)
            s.usage += (bits & want) != 0;
        s.primary += (bits & p3d_use_primary(use[i])) != 0;
    }
    return s;
}

/* >0 if candidate a is better than b. */
static int p3d_better(const struct p3d_layout *a, struct p3d_score sa,
                      const struct p3d_layout *b, struct p3d_score sb)
{
    int oa = !strcmp(a->order, p3d_orders[0]);
    int ob = !strcmp(b->order, p3d_orders[0]);

    if (sa.explained != sb.explained)
        return sa.explained - sb.explained;
    if (sa.usage != sb.usage)
        return sa.usage - sb.usage;
    if (sa.primary != sb.primary)
        return sa.primary - sb.primary;
    if (oa != ob)
        return oa - ob;
    if (a->size[P3D_AX_DP] != b->size[P3D_AX_DP])
        return a->size[P3D_AX_DP] - b->size[P3D_AX_DP];
    if (a->size[P3D_AX_CP] != b->size[P3D_AX_CP])
        return b->size[P3D_AX_CP] - a->size[P3D_AX_CP];
    if (a->ep != b->ep)
        return b->ep - a->ep;
    return b->size[P3D_AX_PP] - a->size[P3D_AX_PP];
}

struct p3d_search {
    const struct p3d_job *job;
    const enum p3d_use *use;
    struct p3d_layout best;
    struct p3d_score best_s;
};

static void p3d_try(struct p3d_search *s, int tp, int cp, int dp, int pp)
{
    for (int ep = 1; ep <= dp * cp; ep++) {
        if ((dp * cp) % ep)
            continue;
        for (size_t o = 0; o < sizeof(p3d_orders) / sizeof(*p3d_orders);
             o++) {
            struct p3d_layout l;
            struct p3d_score sc;
            if (p3d_layout_set(&l, tp, cp, dp, pp, ep, p3d_orders[o]))
                continue;
            if (o == 1 && (pp == 1 || dp == 1))
                continue; /* same groups as the default order */
            sc = p3d_score(s->job, &l, s->use);
            if (getenv("P3D_DEBUG_LAYOUT"))
                fprintf(stderr, "layout tp%d cp%d dp%d pp%d ep%d %s: "
                        "explained %d usage %d primary %d\n", tp, cp, dp,
                        pp, ep, l.order, sc.explained, sc.usage, sc.primary);
            if (!s->best.valid ||
                p3d_better(&l, sc, &s->best, s->best_s) > 0) {
                s->best = l;
                s->best_s = sc;
            }
        }
    }
}

static void p3d_search(struct p3d_search *s, int w)
{
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

void p3d_layout_infer(struct p3d_job *job, const struct p3d_layout *hint,
                      int force, struct p3d_layout *out)
{
    struct p3d_search s;
    int w = job->world_size > 0 ? job->world_size : job->n_ranks;

    memset(&s, 0, sizeof(s));
    memset(out, 0, sizeof(*out));
    s.job = job;
    s.use = p3d_classify_all(job);
    if (w > 0)
        p3d_search(&s, w);
    if (hint && hint->valid) {
        struct p3d_score hs = p3d_score(job, hint, s.use);
        int fits = hs.explained >= s.best_s.explained &&
                   hs.usage >= s.best_s.usage &&
                   hs.primary >= s.best_s.primary;
        if (fits || force)
            p3d_adopt(out, hint, hs, hint->source);
        else
            p3d_adopt(out, &s.best, s.best_s, "inferred");
        out->contradicted = !fits;
    } else if (s.best.valid) {
        p3d_adopt(out, &s.best, s.best_s, "inferred");
    }
    if (s.best.valid)
        p3d_layout_str(&s.best, out->best, sizeof(out->best));
    out->best_explained = s.best_s.explained;
    free((void *)s.use);
}
