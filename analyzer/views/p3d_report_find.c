/*
 * p3d_report_find.c - the findings section of the text report: what the
 * findings analysis (analyzer/findings/) kept, most severe first, each
 * with the next step for the group it concerns.
 */
#include <stdio.h>

#include "p3d_findings.h"
#include "p3d_report.h"

#define P3D_FINDINGS_SHOWN 6

void p3d_report_findings(FILE *f, const struct p3d_job *job,
                         unsigned detail)
{
    const struct p3d_findings *fs = p3d_findings_of(job);

    if (!fs)
        return;
    if (!fs->n) {
        fprintf(f, "\nfindings: none (no group's exposed NCCL reaches 5%% "
                "of the step, no excess bubble, straggler, idle GPU, "
                "mismatch or hang)\n");
        return;
    }
    fprintf(f, "\nfindings (most severe first; each with a next step):\n");
    for (int i = 0; i < fs->n; i++) {
        if (i == P3D_FINDINGS_SHOWN && detail != P3D_DETAIL_ALL) {
            fprintf(f, "  ... %d more (--detail shows them)\n",
                    fs->n - i);
            break;
        }
        const struct p3d_finding *x = &fs->f[i];
        fprintf(f, "  %d. [%s] %s\n     next: %s\n", i + 1,
                p3d_sev_name[x->sev], x->what, x->next);
    }
}
