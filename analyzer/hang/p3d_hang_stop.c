/*
 * p3d_hang_stop.c - a job stopped while it ran is not a hang.
 *
 * torchrun stops its workers with SIGTERM (on a time limit, when another
 * node's worker failed, on Ctrl-C), and so do Slurm and the user.  Ops
 * are in flight at any moment of a running job, so the traces then show
 * ranks "waiting inside NCCL" and others "not inside NCCL": the shape of
 * a hang, minus its one mark, that the waits had gone on for long.
 * Before this rule a healthy p3d-sim job stopped by its --timeout was
 * reported as "HANG: root rank(s) 4,5", and a real PyTorch job on the
 * H200 stopped mid-run (tests/gpu/hang_run.sh with --fill-ops) as a stall
 * in NCCL.
 *
 * What marks a hang, and what we take as evidence that there was none:
 *   - a watchdog report (P3D_REC_HANG: an op pending past
 *     P3D_HANG_TIMEOUT, shim/p3d_watchdog.c) on any rank is a hang's mark:
 *     the rule does not apply;
 *   - so is a rank that died (no SIGTERM note, file not closed) or exited
 *     while others waited, a mismatch, a rank with no trace: the rule
 *     applies only when every rank with a trace noted SIGTERM;
 *   - a running job's ranks wait at most about one step: a step contains
 *     each of its waits (the slowest rank's data loading, the pipeline's
 *     fill); and a wait of a running job is no longer than that rank's
 *     waits that completed before.  So when every wait at the end,
 *     measured on the waiting rank's own clock (its op's enter time to
 *     the SIGTERM), is shorter than the longest steady step the time
 *     analysis found and than the longest op of that rank that completed
 *     (ops of seq 0, which pay for NCCL's lazy connection setup, left
 *     out), the traces show a job stopped while it ran.
 * A hang stopped that soon after forming looks the same; the report says
 * so, and what would show it (a shorter P3D_HANG_TIMEOUT, a later stop).
 * Without steady steps, or a completed op, there is no bound and the rule
 * does not apply.  Both bounds must hold: a job whose steps are long (a
 * pipeline stage computing for seconds) and that hung less than a step
 * ago still shows waits longer than any its ranks had completed (p3d-sim
 * with 1.5 s steps stopped 0.5 s after rank 6 hung: waits of 0.6-1.4 s,
 * tests/integration/test_hang_stopped.sh).
 */
#include "p3d_hang_int.h"
#include "p3d_match.h"
#include "p3d_time.h"

/* The longest steady step of the job, 0 when none was found. */
static uint64_t p3d_hs_step_bound(const struct p3d_job *job)
{
    const struct p3d_time_res *t = job->time;

    if (t == NULL || t->n_iter - t->warm < 1 || t->step_max_ms <= 0)
        return 0;
    return (uint64_t)(t->step_max_ms * 1e6);
}

/* Every rank with a trace was alive until SIGTERM, none reported. */
static int p3d_hs_all_termed(const struct p3d_hjob *hj)
{
    int n = 0;

    for (int a = 0; a < hj->world; a++) {
        const struct p3d_hrank *h = &hj->hr[a];
        if (h->r == NULL || !h->open)
            return 0;
        if (!h->term || h->n_hang > 0 || h->n_abort > 0)
            return 0;
        n++;
    }
    return n > 0;
}

/*
 * How long rank a's wait had lasted when SIGTERM came (its note's time),
 * else when its trace closed, on its own clock.  Not the close when the
 * time is known: a rank whose peer died of the signal first waits on in
 * its op until its own close, up to half a second later.
 */
static uint64_t p3d_hs_waited(const struct p3d_hjob *hj,
                              const struct p3d_hang_wait *w)
{
    const struct p3d_hrank *h = &hj->hr[w->rank];
    uint64_t end = h->t_term  ? h->t_term
                   : h->t_close ? h->t_close : h->t_last;

    return w->t_enter && end > w->t_enter ? end - w->t_enter : 0;
}

int p3d_hang_stopped_running(const struct p3d_job *job,
                             const struct p3d_hjob *hj,
                             struct p3d_hang_res *res)
{
    uint64_t bound = p3d_hs_step_bound(job), longest = 0;

    if (!bound || res->n_waiting == 0 || res->n_mm > 0 ||
        (job->match && job->match->n_mismatch > 0) ||
        !p3d_hs_all_termed(hj))
        return 0;
    for (int i = 0; i < res->n_waiting; i++) {
        const struct p3d_hang_wait *w = &res->wait[i];
        uint64_t d = p3d_hs_waited(hj, w);
        if (w->inferred || w->op == P3D_HANG_OP_INIT || !w->t_enter ||
            d >= bound || d >= hj->hr[w->rank].longest_done_ns)
            return 0;
        longest = d > longest ? d : longest;
    }
    res->stopped.n_in_nccl = res->n_waiting;
    res->stopped.longest_wait_ns = longest;
    res->stopped.step_bound_ns = bound;
    return 1;
}
