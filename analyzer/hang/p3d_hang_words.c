/*
 * p3d_hang_words.c - the hang analysis's results in words and the
 * figures its views print (p3d_hang.h): op, group and state names, how
 * long a rank had waited, NCCL's result codes, and the answer in one line
 * ("HUNG: root rank 3 (stuck in NCCL)") for the findings, the HTML and
 * --compare's observations, which have room for no more.  The text and
 * JSON hang sections (views/p3d_hang_text.c, p3d_hang_json.c) both read
 * them, so they cannot drift apart.
 */
#include <stdio.h>
#include <stdlib.h>

#include "p3d_hang_int.h"
#include "p3d_label.h"
#include "p3d_util.h"

const char *const p3d_hang_fr_name[] = {"done", "waiting", "not_arrived"};

const char *p3d_hang_op_name(int op)
{
    if (op == P3D_HANG_OP_INIT)
        return "CommInit";
    return op >= 0 && op < P3D_OP_COUNT ? p3d_op_name[op] : "?";
}

const char *p3d_hang_lbl_name(int l)
{
    return l >= 0 && l < P3D_LBL_COUNT ? p3d_label_name[l] : "?";
}

const char *p3d_hang_state_text(int s)
{
    switch (s) {
    case P3D_HS_NOT_IN_NCCL:
        return "not inside NCCL (alive until SIGTERM: compute, data "
               "loading, a host wait ...)";
    case P3D_HS_KILLED:
        return "killed (trace not closed, nothing pending: no records "
               "after its last op)";
    case P3D_HS_EXITED: return "exited cleanly while others waited";
    case P3D_HS_NO_TRACE: return "left no readable trace";
    case P3D_HS_STUCK:
        return "inside NCCL, but every peer it needs arrived (mismatch, "
               "deadlock or a network/NCCL fault)";
    case P3D_HS_CYCLE:
        return "inside NCCL in a circular wait (deadlock): it waits on "
               "ranks that wait on it, and most waits end at it; look "
               "for an op it skipped or reordered";
    case P3D_HS_DROPPED:
        return "its trace lost records (the P3D_MAX_MB size cap was "
               "reached, or its buffers were full), and nothing after its "
               "last record is known: it may have issued what the others "
               "wait for (then every member arrived: a stall in NCCL or "
               "the network), or not (then it is the root)";
    case P3D_HS_MISMATCH:
        return "inside NCCL with an op that disagrees with what its peers "
               "(and the other groups of its kind) issued at the same "
               "point: it skipped, reordered or mis-sized a collective "
               "(the mismatch below)";
    default: return p3d_hang_state_name[s];
    }
}

const struct p3d_hrank *p3d_hang_rank_of(const struct p3d_job *job, int r)
{
    const struct p3d_hjob *hj = job->hang->priv;

    return r >= 0 && r < hj->world ? &hj->hr[r] : NULL;
}

/*
 * Seconds rank w had waited when the trace ended.  A wait whose start
 * lies after the job's last record (a clock the alignment could not
 * place, or no start recorded) has waited 0 s as far as the traces show,
 * never the unsigned wrap-around of a negative time.
 */
int p3d_hang_wait_placed(const struct p3d_job *job,
                         const struct p3d_hang_wait *w)
{
    return w->t_enter && job->hang->t_end > w->t_enter;
}

double p3d_hang_waited_s(const struct p3d_job *job,
                         const struct p3d_hang_wait *w)
{
    return p3d_hang_wait_placed(job, w)
               ? (double)(job->hang->t_end - w->t_enter) / 1e9 : 0.0;
}


const char *p3d_nccl_result_name(int e)
{
    static const char *const n[] = {
        "none", "ncclUnhandledCudaError", "ncclSystemError",
        "ncclInternalError", "ncclInvalidArgument", "ncclInvalidUsage",
        "ncclRemoteError", "ncclInProgress"};

    return e >= 0 && e < 8 ? n[e] : "?";
}

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
    case P3D_HS_DROPPED: return "trace lost records: not known";
    default: return p3d_hang_state_name[s];
    }
}

void p3d_hang_fmt_roots(char *buf, size_t n, const struct p3d_hang_res *res)
{
    int *r = p3d_xcalloc((size_t)res->n_roots + 1, sizeof(*r));

    for (int i = 0; i < res->n_roots; i++)
        r[i] = res->roots[i].rank;
    p3d_fmt_ranks(buf, n, r, res->n_roots);
    free(r);
}

/* "HUNG: 2048 root ranks 2048-4095 (stopped outside NCCL)": the roots as
 * ranges, with the first one's state (and "and others" if they differ). */
static void p3d_hang_brief_many(const struct p3d_hang_res *res, char *buf,
                                size_t n)
{
    int same = 1;
    char list[96];

    for (int i = 0; i < res->n_roots; i++)
        same &= res->roots[i].state == res->roots[0].state;
    p3d_hang_fmt_roots(list, sizeof(list), res);
    snprintf(buf, n, "HUNG: %d root ranks %s (%s%s)", res->n_roots, list,
             p3d_hang_state_word(res->roots[0].state),
             same ? "" : " and others");
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
    if (res->n_roots > 4) { /* thousands, at 10k+ ranks: as ranges */
        p3d_hang_brief_many(res, buf, n);
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
