/*
 * p3d_compare.h - --compare DIR DIR ...: one row per run in the seed's
 * record template (config | TP | PP | CP | DP | micro-batches |
 * max mem/rank | step time | tokens/s | observations), as Markdown or a
 * JSON array.
 */
#ifndef P3D_COMPARE_H
#define P3D_COMPARE_H

#include <stdio.h>

#include "p3d_html_sum.h"
#include "p3d_job.h"
#include "p3d_time.h"

/* Analyses one run's job; -1 (message printed) when it cannot be, e.g.
 * --layout does not fit its world: the run's row then says so. */
typedef int (*p3d_analyse_fn)(struct p3d_job *job, void *ctx);

struct p3d_crow {
    char config[128];
    int tp, pp, cp, dp, ep;      /* 0 unknown */
    int micro_batches;           /* 0 unknown */
    uint64_t max_mem;            /* 0 unknown */
    int max_mem_rank;
    double step_ms, tokens_s;    /* 0 unknown */
    char obs[512];
};

/* Fill a row from an analysed job and its summary; config = name. */
void p3d_compare_row(const struct p3d_job *job, const struct p3d_vjob *s,
                     const char *name, struct p3d_crow *row);
/* The observations of a run, from its findings, into buf. */
void p3d_compare_obs(const struct p3d_job *job, const struct p3d_vjob *s,
                     char *buf, size_t n);
/* The same observations from the time analysis alone: the text report's
 * seed row, so that it reads as the --compare row does. */
void p3d_compare_obs_time(const struct p3d_job *job,
                          const struct p3d_time_res *t, char *buf, size_t n);
void p3d_compare_md_head(FILE *f);
void p3d_compare_md_row(FILE *f, const struct p3d_crow *row);
void p3d_compare_json_row(FILE *f, const struct p3d_crow *row);

/*
 * Analyse the newest job under each of dirs[0..n) with fn and print one
 * row per run to stdout (Markdown), or a JSON array to json ("-" =
 * stdout) when json is set.  Returns the exit status.
 */
int p3d_compare_run(char **dirs, int n, const char *json, p3d_analyse_fn fn,
                    void *ctx);

#endif /* P3D_COMPARE_H */
