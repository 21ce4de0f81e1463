/*
 * p3d_steps.c - iterations of each rank from the repetition of its op
 * sequence.
 *
 * Every op gets a signature (communicator, op, bytes, peer).  The period
 * is the shortest P for which the longest periodic tail of the sequence
 * (sig[i] == sig[i - P]) is longest and spans two periods or more; a
 * multiple of the true period covers no more, a sub-pattern (the
 * micro-batch loop) breaks at the optimizer.  The phase comes from the
 * schedule: an iteration ends with a run of step-level collectives (DP
 * gradient reduce-scatter, optimizer, MP/WORLD all-reduces), so the op
 * after the longest such run starts the next one; without such ops, the
 * op after the largest host gap does.  Iterations are numbered from the
 * end so all ranks agree; the job keeps as many as every rank has.
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

#define P3D_STEPS_MAX_OPS 400000 /* look at the last ops only */

size_t p3d_steps_period(const uint64_t *sig, size_t n, size_t *cover)
{
    size_t best = 0, best_cov = 0;

    for (size_t p = 1; p <= n / 2; p++) {
        size_t l = 0;
        while (l + p < n && sig[n - 1 - l] == sig[n - 1 - l - p])
            l++;
        if (l >= p && l + p > best_cov) {
            best = p;
            best_cov = l + p;
        }
    }
    *cover = best_cov;
    return best;
}

static int p3d_step_level(const struct p3d_job *job, const struct p3d_top *o)
{
    int l;

    if (o->gcomm < 0 || P3D_OP_IS_P2P(o->op))
        return 0;
    l = job->comms[o->gcomm].label;
    return l != P3D_LBL_TP && l != P3D_LBL_CP && l != P3D_LBL_PP &&
           l != P3D_LBL_P2P && l != P3D_LBL_EP && l != P3D_LBL_TP_CP;
}

/* Cyclic position in [w, w + p) where an iteration starts. */
static size_t p3d_steps_phase(const struct p3d_job *job,
                              const struct p3d_tl *tl, size_t w, size_t p)
{
    size_t best_len = 0, best_end = 0, run = 0;
    int64_t gap = -1;

    for (size_t k = 0; k < 2 * p; k++) { /* twice round: runs that wrap */
        const struct p3d_top *o = &tl->ops[w + k % p];
        run = p3d_step_level(job, o) ? run + 1 : 0;
        if (run > best_len && run <= p) {
            best_len = run;
            best_end = (k + 1) % p;
        }
    }
    if (best_len)
        return best_end;
    for (size_t k = 1; k < p; k++) {
        int64_t g = tl->ops[w + k].h0 - tl->ops[w + k - 1].h1;
        if (g > gap) {
            gap = g;
            best_end = k;
        }
    }
    return best_end;
}

static uint64_t p3d_sig(const struct p3d_top *o)
{
    uint64_t h = (uint64_t)(o->gcomm + 2) * 0x9e3779b97f4a7c15ull;

    h ^= ((uint64_t)o->op << 56) ^ o->bytes ^ ((uint64_t)(o->peer + 1) << 40);
    return h * 0xff51afd7ed558ccdull;
}

static void p3d_steps_rank(const struct p3d_job *job, struct p3d_tl *tl)
{
    size_t base = tl->n_ops > P3D_STEPS_MAX_OPS
                      ? tl->n_ops - P3D_STEPS_MAX_OPS : 0;
    size_t n = tl->n_ops - base, cov, p, c, first;
    uint64_t *sig = p3d_xcalloc(n + 1, sizeof(*sig));
    int k = 0;

    for (size_t i = 0; i < n; i++)
        sig[i] = p3d_sig(&tl->ops[base + i]);
    p = p3d_steps_period(sig, n, &cov);
    free(sig);
    if (!p)
        return;
    c = p3d_steps_phase(job, tl, base + n - p, p);
    first = n - p + c; /* relative start of the last (maybe cut) one */
    while (first >= p && first - p >= n - cov)
        first -= p;
    tl->period = p;
    tl->it_op = p3d_xcalloc((n - first) / p + 2, sizeof(*tl->it_op));
    for (size_t s = first; s + p <= n; s += p)
        tl->it_op[k++] = base + s;
    if (!k)
        return;
    tl->n_iter = k;
    tl->it_op[k] = tl->it_op[k - 1] + p;
}

static void p3d_steps_times(struct p3d_tl *tl)
{
    int64_t end = 0;

    tl->it_t = p3d_xcalloc((size_t)tl->n_iter + 1, sizeof(*tl->it_t));
    for (int k = 0; k < tl->n_iter; k++)
        tl->it_t[k] = tl->ops[tl->it_op[k]].h0;
    for (size_t i = tl->it_op[tl->n_iter - 1]; i < tl->it_op[tl->n_iter];
         i++) {
        if (tl->ops[i].h1 > end)
            end = tl->ops[i].h1;
        if (tl->ops[i].e > end)
            end = tl->ops[i].e;
    }
    tl->it_t[tl->n_iter] = end;
}

int p3d_time_window(const struct p3d_tl *tl, int k, int64_t *s, int64_t *e)
{
    int i = tl->first_it + k;

    if (!tl->n_iter || i < 0 || i >= tl->n_iter)
        return 0;
    *s = tl->it_t[i];
    *e = tl->it_t[i + 1];
    return *e > *s;
}

void p3d_steps_find(struct p3d_job *job, struct p3d_time_res *t)
{
    int n = -1;

    for (int i = 0; i < t->n; i++) {
        struct p3d_tl *tl = &t->tl[i];
        if (tl->n_ops < 4)
            continue;
        p3d_steps_rank(job, tl);
        if (!tl->n_iter)
            continue;
        p3d_steps_times(tl);
        n = n < 0 || tl->n_iter < n ? tl->n_iter : n;
    }
    t->n_iter = n < 0 ? 0 : n;
    for (int i = 0; i < t->n; i++)
        if (t->tl[i].n_iter)
            t->tl[i].first_it = t->tl[i].n_iter - t->n_iter;
}
