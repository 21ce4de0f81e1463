/*
 * p3d_vsel.h - what part of a job the views show: the --window
 * (iterations or a time range) and --ranks selections, and the iteration
 * boundaries they need.
 *
 * Iterations come from the time analysis (issue 6) alone: where it found
 * none, the views have none (they once had a stand-in finder of their own,
 * which could disagree with the report).
 */
#ifndef P3D_VSEL_H
#define P3D_VSEL_H

#include "p3d_vrank.h"

struct p3d_viters {
    uint64_t *start; /* [n] iteration start, job ns */
    int n;           /* full iterations found */
    uint64_t end;    /* end of the last one */
    int period;      /* host calls per iteration, 0 if none found */
    int first_op;    /* index of the first call of iteration 0 */
    int warm;        /* leading warm-up iterations */
};

struct p3d_vsel {
    int iter_a, iter_b;  /* --window iter:A-B, -1 if not given */
    double ms_a, ms_b;   /* --window t:A-B in ms, ms_b < 0 if not given */
    int *ranks;          /* --ranks, ascending; NULL = all */
    int n_ranks;
};

/* Parse --window SPEC.  Returns 0, or -1 with a message printed. */
int p3d_vsel_window(struct p3d_vsel *s, const char *spec);
/* Parse --ranks SPEC ("0-7,12").  Returns 0 or -1 (message printed). */
int p3d_vsel_ranks(struct p3d_vsel *s, const char *spec);
/* Whether global rank r is selected. */
int p3d_vsel_has(const struct p3d_vsel *s, int r);
void p3d_vsel_free(struct p3d_vsel *s);

void p3d_viters_free(struct p3d_viters *it);

/* The iterations of the lowest selected rank of job (NULL sel: any), as
 * the time analysis found them; -1 when it found none. */
int p3d_viters_job(const struct p3d_job *job, const struct p3d_vsel *s,
                   struct p3d_viters *it);

/*
 * Turn the selection into a window on the job clock.  Returns 0, or -1
 * with a message printed when the iterations asked for do not exist.
 */
int p3d_vsel_resolve(const struct p3d_job *job, const struct p3d_vsel *s,
                     struct p3d_vwin *w);

#endif /* P3D_VSEL_H */
