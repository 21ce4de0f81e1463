/*
 * p3d_findings.h - what the analyses found, worth acting on, computed
 * once: each finding is a figure with its unit, a severity, the group it
 * concerns and the next step for that group.  The views print these; they
 * do not judge the figures again.
 */
#ifndef P3D_FINDINGS_H
#define P3D_FINDINGS_H

#include "p3d_job.h"

enum p3d_sev { P3D_SEV_NOTE, P3D_SEV_WARN, P3D_SEV_BAD };
extern const char *const p3d_sev_name[]; /* "note", "warn", "bad" */

struct p3d_finding {
    int sev;        /* P3D_SEV_* */
    int label;      /* P3D_LBL_* of the group concerned, -1: the job */
    double value;   /* the figure, in unit */
    const char *unit;  /* "% of step", "ms", "ranks", ... */
    char what[320]; /* the finding in words, with its figure */
    const char *next;  /* the next step, for that group */
};

#define P3D_MAX_FINDINGS 12
struct p3d_findings {
    int n;
    struct p3d_finding f[P3D_MAX_FINDINGS]; /* most severe, largest first */
};

/* After the match, time and hang analyses: the findings, kept in the
 * job (p3d_job_keep) until p3d_job_free or p3d_findings_free. */
void p3d_findings_job(struct p3d_job *job);
/* The job's findings, NULL before p3d_findings_job. */
const struct p3d_findings *p3d_findings_of(const struct p3d_job *job);
void p3d_findings_free(struct p3d_job *job);

#endif /* P3D_FINDINGS_H */
