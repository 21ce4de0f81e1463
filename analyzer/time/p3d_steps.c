/*
 * p3d_steps.c - iterations of each rank from the repetition of its op
 * sequence.
 *
 * Every op gets a signature (communicator, op, bytes, peer).  The period
 * is the shortest P whose longest P-periodic stretch of the sequence
 * (sig[i] == sig[i + P]) is the longest and spans two periods or more; a
 * multiple of the true period covers no more, a sub-pattern (the
 * micro-batch loop) breaks at the optimizer, and set-up or tear-down ops
 * before the first or after the last iteration (Megatron's extra
 * all-reduces) only shorten the stretch; an irregular first iteration
 * just before it is recognised by how it starts (p3d_steps_lead).  The
 * phase comes from the schedule: an iteration ends with a run of
 * step-level collectives (DP gradient reduce-scatter, optimizer, MP/WORLD
 * all-reduces), so the op after the longest such run starts the next
 * one; without such ops, the op after the largest host gap does.  Ranks'
 * iterations are matched by start time (p3d_steps_find).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_time.h"
#include "p3d_util.h"

#define P3D_STEPS_SEARCH 16384 /* the period is looked for here */
#define P3D_STEPS_IDS 65536     /* signatures told apart in a search */

/* 4 x 16-bit ids from a (unaligned). */
static uint64_t p3d_steps_ld4(const uint16_t *a)
{
    uint64_t v;

    memcpy(&v, a, sizeof(v));
    return v;
}

/* Whether one of the 4 x 16-bit lanes of x is 0 (exact). */
static int p3d_steps_lane0(uint64_t x)
{
    return ((x - 0x0001000100010001ull) & ~x & 0x8000800080008000ull) != 0;
}

/* Length of the longest prefix of a[0..n) equal to b's (same: 1) or
 * different from it at every position (same: 0); four ids a load. */
static size_t p3d_steps_scan(const uint16_t *a, const uint16_t *b, size_t n,
                             int same)
{
    size_t k = 0;

    if (same) /* along a run */
        while (k + 4 <= n && p3d_steps_ld4(a + k) == p3d_steps_ld4(b + k))
            k += 4;
    else /* between runs */
        while (k + 4 <= n &&
               !p3d_steps_lane0(p3d_steps_ld4(a + k) ^ p3d_steps_ld4(b + k)))
            k += 4;
    while (k < n && (a[k] == b[k]) == same)
        k++;
    return k;
}

/*
 * Whether no P-periodic run reaches coverage `want` (run + p), known from
 * two positions.  A run [i, j) (j <= n - p) of length >= p covering want
 * starts at i <= n - want and ends at j >= want - p, so when
 * 2 want > n + p it holds every x in [n - want, want - p): its two ends
 * are checked.  One or two comparisons rule out nearly every period that
 * cannot win (scanning them was most of the search's time).
 */
static int p3d_steps_cannot_reach(const uint16_t *sig, size_t n, size_t p,
                                  size_t want)
{
    size_t x0, x1;

    if (want > n || 2 * want <= n + p)
        return 0;
    x0 = n - want;
    x1 = want - p - 1;
    return sig[x0] != sig[x0 + p] || sig[x1] != sig[x1 + p];
}

/* The largest run + p over the runs of sig[x] == sig[x + p] of length
 * >= p (0: none): what the search finds for p alone. */
static size_t p3d_steps_cov(const uint16_t *sig, size_t n, size_t p)
{
    size_t i = 0, j, cov = 0;

    while (i + p < n) {
        i += p3d_steps_scan(sig + i, sig + i + p, n - p - i, 0);
        if (i + p >= n)
            break;
        j = i + 1 + p3d_steps_scan(sig + i + 1, sig + i + 1 + p,
                                   n - p - i - 1, 1);
        if (j - i >= p && j - i + p > cov)
            cov = j - i + p;
        i = j;
    }
    return cov;
}

/*
 * A likely period and its coverage, to rule shorter periods out early:
 * among the first P3D_STEPS_GUESSES distances d from the middle op to a
 * later op with the same signature along which the next 16 ops repeat
 * too (the micro-batch loop is one of them), the one covering most.
 * Only a bound: a shorter period must cover at least as much to win, so
 * a poor guess costs time, never the answer.
 */
#define P3D_STEPS_GUESSES 8

static size_t p3d_steps_guess(const uint16_t *sig, size_t n, size_t *p_out)
{
    size_t x = n / 2, k, cov, best = 0;
    int tries = 0;

    *p_out = 0;
    for (size_t d = 1; d <= n / 2 && x + d + 16 < n && best < n &&
                       tries < P3D_STEPS_GUESSES;
         d++) {
        if (sig[x + d] != sig[x])
            continue;
        for (k = 1; k < 16 && sig[x + k] == sig[x + d + k]; k++)
            ;
        if (k < 16)
            continue;
        tries++;
        if ((cov = p3d_steps_cov(sig, n, d)) > best) {
            best = cov;
            *p_out = d;
        }
    }
    return best;
}

/* The search on ids (equal where the signatures are). */
static size_t p3d_steps_search(const uint16_t *sig, size_t n, size_t *r0,
                               size_t *r1)
{
    size_t best = 0, best_cov = 0, guess, guess_cov;

    *r0 = *r1 = 0;
    guess_cov = p3d_steps_guess(sig, n, &guess);
    for (size_t p = 1; p <= n / 2 && best_cov < n; p++) {
        size_t i = 0, j;
        /* i + p < n, and a run through the rest must beat best_cov:
         * n - i > best_cov (exact) */
        size_t lim = n - (p > best_cov ? p : best_cov);
        /* below the guess only a coverage of guess_cov or more can win
         * (the first p to reach the maximum does) */
        size_t want = p < guess && guess_cov > best_cov ? guess_cov
                                                        : best_cov + 1;
        if (p3d_steps_cannot_reach(sig, n, p, want))
            continue;
        while (i < lim) {
            i += p3d_steps_scan(sig + i, sig + i + p, lim - i, 0);
            if (i >= lim)
                break;
            j = i + 1;
            /* sig[x] == sig[x + best] on [r0, r1 - best): so
             * sig[x] == sig[x + p] on [r0, r1 - p) for a multiple p */
            if (best && p % best == 0 && j >= *r0 && j + p < *r1)
                j = *r1 - p;
            j += p3d_steps_scan(sig + j, sig + j + p, n - p - j, 1);
            if (j - i >= p && j - i + p > best_cov) {
                best = p;
                best_cov = j - i + p;
                *r1 = j + p;
                *r0 = *r1 - best_cov;
                lim = n - (p > best_cov ? p : best_cov);
            }
            i = j;
        }
    }
    return best;
}

/*
 * Runs of sig[i] == sig[i + p] are taken whole: a run of length L ending
 * before j counts when L >= p and L + p beats the best (what checking at
 * every element of it ends with), and the bound that stops the search
 * only needs checking where a run could start (along a run, run + the
 * rest is constant).  A run of a multiple of the best period so far is
 * known along the best stretch, where it need not be compared.  The
 * search compares 16-bit ids of the signatures (at most 65,536 distinct
 * ones in a window of up to that many ops), four a load: it was most of
 * the time of finding a rank's iterations.
 */
size_t p3d_steps_period(const uint64_t *sig, size_t n, size_t *r0,
                        size_t *r1)
{
    size_t best = 0, w = n > P3D_STEPS_IDS ? n - P3D_STEPS_IDS : 0;
    uint16_t *id = p3d_xmalloc((n - w + 1) * sizeof(*id));
    struct p3d_map m = {0};
    int n_id = 0;

    /* more ops than ids: the longest stretch's period within the last
     * P3D_STEPS_IDS of them (p3d_steps_rank never asks for more) */
    for (size_t i = w; i < n; i++) {
        int k = p3d_map_get(&m, sig[i]);
        if (k < 0)
            p3d_map_put(&m, sig[i], k = n_id++);
        id[i - w] = (uint16_t)k;
    }
    p3d_map_free(&m);
    best = p3d_steps_search(id, n - w, r0, r1);
    if (best) {
        *r0 += w;
        *r1 += w;
    }
    free(id);
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

/* Signatures of ops [base, base + n). */
static uint64_t *p3d_steps_sigs(const struct p3d_tl *tl, size_t base,
                                size_t n)
{
    uint64_t *sig = p3d_xcalloc(n + 1, sizeof(*sig));

    for (size_t i = 0; i < n; i++)
        sig[i] = p3d_sig(&tl->ops[base + i]);
    return sig;
}

/*
 * An irregular first iteration (Megatron's first has an extra
 * all-reduce) just before the periodic stretch: it starts with the
 * iteration's first op after a step-level op, about a period earlier.
 * Returns its first op, or `first` if there is none.
 */
static size_t p3d_steps_lead(const struct p3d_job *job,
                             const struct p3d_tl *tl, const uint64_t *sig,
                             size_t first, size_t p)
{
    size_t d = p / 4 + 1, best = first, j;

    j = first > p + d ? first - p - d : 0;
    for (; j + p / 2 <= first && j + p <= first + d; j++) {
        if (sig[j] != sig[first] || j + p + d < first)
            continue;
        if (j > 0 && !p3d_step_level(job, &tl->ops[j - 1]))
            continue;
        if (best == first || (j + p > first ? j + p - first : first - j - p) <
                                 (best + p > first ? best + p - first
                                                   : first - best - p))
            best = j;
    }
    return best;
}

static void p3d_steps_rank(const struct p3d_job *job, struct p3d_tl *tl)
{
    size_t n = tl->n_ops, w = n > P3D_STEPS_SEARCH ? P3D_STEPS_SEARCH : n;
    uint64_t *sig = p3d_steps_sigs(tl, 0, n);
    size_t r0, r1, p = p3d_steps_period(sig + n - w, w, &r0, &r1), b, c, l;
    int k = 0;

    r0 += n - w;
    r1 += n - w;
    while (p && r0 > 0 && sig[r0 - 1] == sig[r0 - 1 + p])
        r0--;
    while (p && r1 < n && sig[r1] == sig[r1 - p])
        r1++;
    if (!p) {
        free(sig);
        return;
    }
    c = p3d_steps_phase(job, tl, r1 - p, p);
    b = r1 - p + c; /* start of the last iteration, maybe cut */
    while (b >= r0 + p)
        b -= p;
    tl->period = p;
    tl->it_op = p3d_xcalloc((r1 - b) / p + 3, sizeof(*tl->it_op));
    if (b + p <= r1 && (l = p3d_steps_lead(job, tl, sig, b, p)) < b)
        tl->it_op[k++] = l;
    free(sig);
    for (; b + p <= r1; b += p)
        tl->it_op[k++] = b;
    if (!k)
        return;
    tl->n_iter = k;
    tl->it_op[k] = tl->it_op[k - 1] + p;
}

/* The last iteration ends when the GPU work running at its last op's
 * return is done (asynchronous streams drain after the host).  Unions
 * are disjoint and sorted: only the interval holding `end` can move it. */
static int64_t p3d_steps_drain(const struct p3d_tl *tl, int64_t end)
{
    const struct p3d_ivs *l[3] = {&tl->compute, &tl->copy, &tl->nccl};

    for (int j = 0; j < 3; j++) {
        size_t lo = 0, hi = l[j]->n;
        while (lo < hi) { /* first interval ending after end */
            size_t mid = lo + (hi - lo) / 2;
            if (l[j]->v[mid].e <= end)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < l[j]->n && l[j]->v[lo].s < end)
            end = l[j]->v[lo].e;
    }
    return end;
}

/* End of the work of iteration k: its ops' returns and GPU ends. */
static int64_t p3d_steps_work_end(const struct p3d_tl *tl, int k)
{
    int64_t end = 0;

    for (size_t i = tl->it_op[k]; i < tl->it_op[k + 1]; i++) {
        const struct p3d_top *o = &tl->ops[i];
        end = o->hg > end ? o->hg : end;
        end = o->e > end ? o->e : end;
    }
    return p3d_steps_drain(tl, end);
}

static int p3d_i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

/*
 * Iteration k runs from its first op's call to the next one's.  The last
 * has no next: it ends at the end of its work plus the (lower) median
 * tail the others had between their work and the next iteration (host
 * sync, logging, data loading); the lower one, as one stall in two
 * iterations must not stretch the last.
 */
static void p3d_steps_times(struct p3d_tl *tl)
{
    int n = tl->n_iter;
    int64_t *tail = p3d_xcalloc((size_t)n + 1, sizeof(*tail));

    tl->it_t = p3d_xcalloc((size_t)n + 1, sizeof(*tl->it_t));
    for (int k = 0; k < n; k++)
        tl->it_t[k] = tl->ops[tl->it_op[k]].h0;
    for (int k = 0; k + 1 < n; k++) {
        tail[k] = tl->it_t[k + 1] - p3d_steps_work_end(tl, k);
        if (tail[k] < 0)
            tail[k] = 0;
    }
    qsort(tail, (size_t)(n - 1), sizeof(*tail), p3d_i64_cmp);
    tl->it_t[n] = p3d_steps_work_end(tl, n - 1) + (n > 1 ? tail[(n - 2) / 2]
                                                          : 0);
    free(tail);
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

/* The reference iteration whose start is nearest to rank tl's first. */
static int p3d_steps_offset(const struct p3d_tl *ref, const struct p3d_tl *tl)
{
    int best = 0;
    int64_t d = INT64_MAX;

    for (int j = 0; j < ref->n_iter; j++) {
        int64_t x = llabs(ref->it_t[j] - tl->it_t[0]);
        if (x < d) {
            d = x;
            best = j;
        }
    }
    return best;
}

/* Iterations of one loaded rank, in its own numbering. */
void p3d_steps_rank_find(const struct p3d_job *job, struct p3d_tl *tl)
{
    if (tl->n_ops < 4)
        return;
    p3d_steps_rank(job, tl);
    if (tl->n_iter)
        p3d_steps_times(tl);
}

/*
 * Job iterations: every rank's iterations are matched by start time to
 * those of the rank with the most (a rank killed or hung early has
 * fewer); the job keeps the iterations every rank has.
 */
void p3d_steps_match(struct p3d_job *job, struct p3d_time_res *t)
{
    struct p3d_tl *ref = NULL;
    int lo = 0, hi = INT32_MAX;

    (void)job;
    for (int i = 0; i < t->n; i++)
        if (t->tl[i].n_iter && (!ref || t->tl[i].n_iter > ref->n_iter))
            ref = &t->tl[i];
    if (!ref)
        return;
    for (int i = 0; i < t->n; i++) {
        struct p3d_tl *tl = &t->tl[i];
        if (!tl->n_iter)
            continue;
        tl->first_it = p3d_steps_offset(ref, tl); /* reference index */
        lo = tl->first_it > lo ? tl->first_it : lo;
        hi = tl->first_it + tl->n_iter < hi ? tl->first_it + tl->n_iter : hi;
    }
    t->n_iter = hi > lo ? hi - lo : 0;
    for (int i = 0; i < t->n; i++)
        if (t->tl[i].n_iter)
            t->tl[i].first_it = lo - t->tl[i].first_it;
}

/* All ranks held in memory (tl->ops). */
void p3d_steps_find(struct p3d_job *job, struct p3d_time_res *t)
{
    for (int i = 0; i < t->n; i++)
        p3d_steps_rank_find(job, &t->tl[i]);
    p3d_steps_match(job, t);
}
