/*
 * p3d_seedtab.h - the seed's record template, a run as one row: config |
 * TP | PP | CP | DP | micro-batches | max mem/rank | step time | tokens/s
 * | observations.  The text report ends with its row, --compare prints one
 * per run, the HTML lists the observations.
 */
#ifndef P3D_SEEDTAB_H
#define P3D_SEEDTAB_H

#include <stdio.h>

#include "p3d_html_sum.h"
#include "p3d_job.h"
#include "p3d_strbuf.h"
#include "p3d_time.h"

struct p3d_crow {
    char config[128];
    int tp, pp, cp, dp, ep;      /* 0 unknown */
    int micro_batches;           /* 0 unknown */
    uint64_t max_mem;            /* 0 unknown */
    int max_mem_rank;
    double step_ms, tokens_s;    /* 0 unknown */
    struct p3d_sb obs;           /* "; "-separated observations */
};

/* An empty row of job named `name` with its layout columns (n/a when the
 * layout is unknown). */
void p3d_seed_row_init(struct p3d_crow *row, const struct p3d_job *job,
                       const char *name);
/* Fill a row from an analysed job and its summary; config = name. */
void p3d_seed_row(const struct p3d_job *job, const struct p3d_vjob *s,
                     const char *name, struct p3d_crow *row);
/* The observations of a run, from its findings, appended to sb. */
void p3d_seed_obs(const struct p3d_job *job, const struct p3d_vjob *s,
                  struct p3d_sb *sb);
/* The same observations from the time analysis alone: the text report's
 * seed row, so that it reads as the --compare row does. */
void p3d_seed_obs_time(const struct p3d_job *job,
                       const struct p3d_time_res *t, struct p3d_sb *sb);
/* Free what a filled row holds. */
void p3d_seed_row_free(struct p3d_crow *row);
void p3d_seed_md_head(FILE *f);
void p3d_seed_md_row(FILE *f, const struct p3d_crow *row);
void p3d_seed_json_row(FILE *f, const struct p3d_crow *row);

#endif /* P3D_SEEDTAB_H */
