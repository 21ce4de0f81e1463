/*
 * p3d_html_sum.h - the numbers the HTML report and the comparison table
 * share: which steady iterations to show, step time, micro-batches, the
 * per-rank time breakdown over those iterations and memory peaks.
 */
#ifndef P3D_HTML_SUM_H
#define P3D_HTML_SUM_H

#include "p3d_vsel.h"
#include "p3d_vrank.h"
#include "p3d_html_time.h"
#include "p3d_time.h"

#define P3D_HTML_MAX_ROWS 64 /* ranks drawn in the timeline and bars */

struct p3d_vjob {
    struct p3d_viters it;     /* iterations of the reference rank */
    int iter_a, iter_b;       /* iterations shown, -1 if none found */
    uint64_t w0, w1;          /* window shown, job ns */
    double step_ms;           /* median steady step, 0 unknown */
    double tokens_s;          /* 0 unknown */
    int micro_batches;        /* 0 unknown */
    double bubble_theory;     /* (p-1)/(m+p-1)/v, -1 unknown */
    struct p3d_vbreak *br;    /* [job->n_ranks] */
    struct p3d_vbreak total;  /* summed over ranks */
    int bars_steady;          /* br are the time analysis's steady
                                 iterations, not the window drawn */
    uint64_t *peak;           /* [job->n_ranks] device memory peak */
    struct p3d_vrank *vr;     /* [job->n_ranks]: the window's events of
                                 the ranks the timeline draws, kept from
                                 the one read (v[i].ev NULL: not kept) */
    int n_vr;
    int peak_used;            /* peaks are device-wide used memory */
    uint64_t max_peak;
    int max_peak_rank;
    const struct p3d_time_res *time; /* the time analysis, NULL if none */
    const struct p3d_vsel *sel;      /* --ranks: the ranks drawn */
};

/* Fill s for job (sel: the user's --window, may be NULL). */
void p3d_vjob_sum(const struct p3d_job *job, const struct p3d_vsel *sel,
                  struct p3d_vjob *s);
void p3d_vjob_free(struct p3d_vjob *s);
/* Whether job->ranks[i] is drawn (readable and selected by --ranks). */
int p3d_vjob_shown(const struct p3d_job *job, const struct p3d_vjob *s,
                   int i);

/* Fraction helpers over the summed breakdown (0 when span is 0). */
double p3d_vfrac(uint64_t part, uint64_t span);

#endif /* P3D_HTML_SUM_H */
