/*
 * p3d_hang_brief.c - the hang analysis' answer in one line ("HUNG: root
 * rank 3 (stuck in NCCL)"), for the findings, the HTML and --compare's
 * observations, which have room for no more.
 */
#include <stdio.h>

#include "p3d_hang.h"

static const char *p3d_hang_state_word(int s)
{
    switch (s) {
    case P3D_HS_NOT_IN_NCCL: return "stopped outside NCCL";
    case P3D_HS_KILLED: return "killed";
    case P3D_HS_EXITED: return "exited early";
    case P3D_HS_NO_TRACE: return "no trace";
    case P3D_HS_STUCK: return "stuck in NCCL";
    case P3D_HS_MISMATCH: return "mismatched op";
    case P3D_HS_CYCLE: return "circular wait";
    default: return p3d_hang_state_name[s];
    }
}

void p3d_hang_brief(const struct p3d_job *job, char *buf, size_t n)
{
    const struct p3d_hang_res *res = job->hang;
    size_t k;

    buf[0] = 0;
    if (res == NULL || !res->detected || n < 2)
        return;
    if (res->stall) {
        snprintf(buf, n, "HUNG: no root (all arrived, none completed: an "
                 "NCCL or network stall)");
        return;
    }
    k = (size_t)snprintf(buf, n, "HUNG: root rank");
    for (int i = 0; i < res->n_roots && i < 4 && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s %d (%s)", i ? "," : "",
                              res->roots[i].rank,
                              p3d_hang_state_word(res->roots[i].state));
    if (res->n_roots > 4 && k < n)
        k += (size_t)snprintf(buf + k, n - k, " and %d more",
                              res->n_roots - 4);
    if (!res->n_roots && k < n)
        snprintf(buf + k, n - k, " not found");
}
