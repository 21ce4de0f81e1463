/*
 * p3d_hang_text.c - the hang section of the text report: the root(s),
 * what they owe and their call site, the chain of waits, the frontiers,
 * aborts and mismatches (the JSON's is views/p3d_hang_json.c; both print
 * the hang analysis's own words, hang/p3d_hang_words.c).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_hang_int.h"
#include "p3d_names.h"
#include "p3d_report.h"
#include "p3d_label.h"
#include "p3d_match.h"
#include "p3d_symbol.h"
#include "p3d_util.h"
#include "p3d_vfmt.h"





#define P3D_PROXY_SHOWN 6 /* transfer lines without --detail=hang */

/*
 * Where the waiting ranks' network transfers stood at the shim's watchdog
 * report (NCCL's proxy events), nearest the root first: the evidence for
 * "waits for the peer's data" against "stuck in the network".
 */
static void p3d_ho_proxy(FILE *f, const struct p3d_job *job, int all)
{
    static char line[16][P3D_HANG_PROXY_LEN];
    const struct p3d_hang_res *res = job->hang;
    int shown = 0, more = 0;

    for (int i = 0; i < res->n_waiting; i++) {
        int n = p3d_hang_proxy_lines(job, res->wait[i].rank, line, 16);
        for (int k = 0; k < n; k++) {
            if (!all && shown == P3D_PROXY_SHOWN) {
                more += n - k;
                break;
            }
            if (shown++ == 0)
                fprintf(f, "  network transfers in flight at the watchdog's "
                        "report (NCCL's proxy events; transfers inside a "
                        "node have none):\n");
            fprintf(f, "    rank %d: %s\n", res->wait[i].rank, line[k]);
        }
    }
    if (more)
        fprintf(f, "    ... and %d more (--detail=hang lists them)\n", more);
}

/* Print the symbolized frames of stack `id` of rank r.  Frames of a call
 * site the report shows: the innermost, where the rank
 * is; --detail=hang shows them all (up to 12). */
#define P3D_FRAMES_SHOWN 6

static void p3d_ho_stack(FILE *f, const struct p3d_job *job, int r,
                         uint32_t id, const char *ind, unsigned frames)
{
    const struct p3d_hrank *h = p3d_hang_rank_of(job, r);
    const struct p3d_rec_stack *s = h ? p3d_hang_stack(h, id) : NULL;
    char line[1024];

    if (s == NULL) {
        fprintf(f, "%scall site: not recorded (P3D_STACKS off, or no "
                "libunwind where it ran)\n", ind);
        return;
    }
    fprintf(f, "%scall site:\n", ind);
    for (uint32_t i = 0; i < s->n_frames && i < 12; i++) {
        if (i == frames) {
            fprintf(f, "%s  ... %u more frames (--detail=hang)\n", ind,
                    (s->n_frames < 12 ? s->n_frames : 12) - i);
            break;
        }
        p3d_symbol_pc(line, sizeof(line), s->pc[i], h->mods, h->n_mods);
        fprintf(f, "%s  #%u %s\n", ind, i, line);
    }
}

static const char *p3d_ho_owed_how(int how)
{
    return how == 1 ? "its next op, per a rank of the same stage"
           : how == 2 ? "the only op waited on" : "earliest wait on it";
}

static void p3d_ho_root(FILE *f, const struct p3d_job *job,
                        const struct p3d_hang_root *rt, unsigned frames)
{
    const struct p3d_hrank *h = p3d_hang_rank_of(job, rt->rank);

    fprintf(f, "  root rank %d: %s\n", rt->rank, p3d_hang_state_text(rt->state));
    if (rt->wd_silent)
        fprintf(f, "    its trace lost %" PRIu64 " records (P3D_MAX_MB), but "
                "its watchdog (P3D_HANG_TIMEOUT %.1f s), alive until "
                "SIGTERM, reported no op pending that long, while a rank "
                "waiting on it had: it was not waiting inside NCCL, and "
                "issued what they wait for less than %.1f s before its "
                "end, if at all\n",
                h ? h->r->hdr.dropped_records : 0,
                (double)rt->wd_timeout_ns / 1e9,
                (double)rt->wd_timeout_ns / 1e9);
    if (rt->owed_op == P3D_HANG_OP_INIT)
        fprintf(f, "    never created the (%s) communicator the others "
                "wait to make [%s]\n", p3d_hang_lbl_name(rt->owed_label),
                rt->owed_how == 1 ? "its next op, per a rank of the same "
                "stage" : rt->owed_how == 2 ? "the only one waited on"
                : "earliest wait on it");
    else if (rt->owed_op >= 0 && rt->state == P3D_HS_DROPPED)
        fprintf(f, "    its peers wait for its part of %s #%" PRIu64
                " on comm 0x%016" PRIx64 " (%s) [%s]; %" PRIu64 " of its "
                "records were dropped, so whether it issued it is not "
                "known (it recorded %" PRIu64 " ops on that comm)\n",
                p3d_hang_op_name(rt->owed_op), rt->owed_seq, rt->owed_comm,
                p3d_hang_lbl_name(rt->owed_label), p3d_ho_owed_how(rt->owed_how),
                h ? h->r->hdr.dropped_records : 0, rt->issued_on_comm);
    else if (rt->owed_op >= 0 && rt->state == P3D_HS_NO_TRACE)
        fprintf(f, "    its peers wait for its part of %s #%" PRIu64
                " on comm 0x%016" PRIx64 " (%s) [%s]; with no trace of it, "
                "what it issued is not known\n",
                p3d_hang_op_name(rt->owed_op), rt->owed_seq, rt->owed_comm,
                p3d_hang_lbl_name(rt->owed_label), p3d_ho_owed_how(rt->owed_how));
    else if (rt->owed_op >= 0 && rt->wd_silent)
        fprintf(f, "    its peers wait for its part of %s #%" PRIu64
                " on comm 0x%016" PRIx64 " (%s) [%s]; it recorded %" PRIu64
                " ops on that comm before its trace filled\n",
                p3d_hang_op_name(rt->owed_op), rt->owed_seq, rt->owed_comm,
                p3d_hang_lbl_name(rt->owed_label), p3d_ho_owed_how(rt->owed_how),
                rt->issued_on_comm);
    else if (rt->owed_op >= 0)
        fprintf(f, "    never issued: %s #%" PRIu64 " on comm 0x%016" PRIx64
                " (%s) [%s]; it issued %" PRIu64 " ops on that comm\n",
                p3d_hang_op_name(rt->owed_op), rt->owed_seq, rt->owed_comm,
                p3d_hang_lbl_name(rt->owed_label), p3d_ho_owed_how(rt->owed_how),
                rt->issued_on_comm);
    if (rt->last != NULL) {
        fprintf(f, "    last op: %s seq %" PRIu64 " on comm 0x%016" PRIx64
                " (%s), %.3f s before the trace ends; %zu ops in all\n",
                p3d_hang_op_name(rt->last->op), rt->last->seq,
                rt->last->comm_hash,
                p3d_hang_lbl_name(p3d_hang_label(job, rt->last->comm_hash)),
                (double)rt->since_ns / 1e9, h ? h->n_ops : 0);
        p3d_ho_stack(f, job, rt->rank, rt->last->stack_id, "    ", frames);
    }
}


/*
 * Waits alike but for their rank and how long (a world collective half of
 * a 16k job never reached has 8k of them): one line each hid the answer
 * behind the first sixteen.  Alike: the same op instance, the same ranks
 * waited for, the same depth and evidence.
 */
static int p3d_ho_alike_wait(const struct p3d_job *job,
                             const struct p3d_hang_wait *a,
                             const struct p3d_hang_wait *b)
{
    return !a->inferred && !b->inferred && a->depth == b->depth &&
           a->comm == b->comm && a->op == b->op && a->seq == b->seq &&
           a->peer == b->peer && a->label == b->label &&
           a->proven == b->proven && a->unknown == b->unknown &&
           a->n_for == b->n_for && a->n_for_op == b->n_for_op &&
           !memcmp(a->waiting_for, b->waiting_for,
                   sizeof(a->waiting_for[0]) * (size_t)a->n_for) &&
           p3d_hang_wait_placed(job, a) == p3d_hang_wait_placed(job, b);
}

/* The waits w[0..n) (alike) on one line: "rank 3 waits" or "ranks 0-7
 * (8) wait", since the shortest to the longest of them. */
static void p3d_ho_wait(FILE *f, const struct p3d_job *job,
                        const struct p3d_hang_wait *w, int n)
{
    char who[128], also[128], more[40] = "", ranks[160];
    double s0 = p3d_hang_waited_s(job, w), s1 = s0;
    int *r = p3d_xcalloc((size_t)n + 1, sizeof(*r));

    for (int i = 0; i < n; i++) {
        double s = p3d_hang_waited_s(job, &w[i]);
        r[i] = w[i].rank;
        s0 = s < s0 ? s : s0;
        s1 = s > s1 ? s : s1;
    }
    p3d_fmt_ranks(ranks, sizeof(ranks), r, n);
    free(r);
    p3d_fmt_ranks(who, sizeof(who), w->waiting_for, w->n_for_op);
    p3d_fmt_ranks(also, sizeof(also), w->waiting_for + w->n_for_op,
                  w->n_for - w->n_for_op);
    if (w->inferred) {
        fprintf(f, "    rank %d is outside NCCL, blocked creating its next "
                "(%s) communicator, whose NCCL id rank(s) %s never made "
                "[inferred from a rank of its stage]\n", w->rank,
                p3d_hang_lbl_name(w->label), who);
        return;
    }
    if (n == 1)
        fprintf(f, "    rank %d waits", w->rank);
    else
        fprintf(f, "    ranks %s (%d) wait", ranks, n);
    fprintf(f, " in %s #%" PRIu64 " on comm 0x%016" PRIx64 " (%s)",
            p3d_hang_op_name(w->op), w->seq == UINT64_MAX ? 0 : w->seq,
            w->comm, p3d_hang_lbl_name(w->label));
    if (w->peer >= 0)
        fprintf(f, " %s rank %d", w->op == P3D_OP_RECV ? "from"
                : w->op == P3D_OP_SEND ? "to" : "root", w->peer);
    if (!p3d_hang_wait_placed(job, w))
        fprintf(f, " since a time the trace does not place,");
    else if (s1 - s0 >= 0.0005) /* differs as printed */
        fprintf(f, " since %.3f-%.3f s,", s0, s1);
    else
        fprintf(f, " since %.3f s,", s0);
    if (w->n_for_op == P3D_HANG_WAITFOR) /* a stalled collective: many */
        snprintf(more, sizeof(more), " (the list stops at %d)",
                 P3D_HANG_WAITFOR);
    fprintf(f, " for %s%s%s%s",
            w->n_for_op ? "rank(s) " : "", w->n_for_op ? who
            : w->op == P3D_HANG_OP_INIT ? "members not known (no rank of "
              "its stage made this communicator)"
            : "no missing member (all arrived)",
            more,
            w->proven ? " [its call returned, but it cannot have completed:"
                        " they never issued their part]"
            : w->unknown ? " [they issued their part, but have no GPU "
                           "completion times: whether they ran it is not "
                           "known, so this rank is not named a root on it]"
            : "");
    if (w->n_for > w->n_for_op)
        fprintf(f, "; its other pending ops wait for rank(s) %s", also);
    fputc('\n', f);
}

static void p3d_ho_mm(FILE *f, const struct p3d_hang_res *res,
                      const struct p3d_job *job)
{
    for (int i = 0; i < res->n_mm; i++) {
        const struct p3d_hang_mm *m = &res->mm[i];
        char a[32], b[32];

        fprintf(f, "    mismatch: %s #%" PRIu64 " on comm 0x%016" PRIx64
                " (%s): rank %d has %s %s, rank %d has %s\n",
                p3d_hang_op_name(m->op), m->seq, m->comm,
                p3d_hang_lbl_name(p3d_hang_label(job, m->comm)), m->rank_a,
                p3d_mm_field_name[m->field],
                p3d_mm_value(m->field, m->va, a, sizeof(a)), m->rank_b,
                p3d_mm_value(m->field, m->vb, b, sizeof(b)));
    }
}

/*
 * Collectives a member never issued while a peer did, in a job that left
 * no rank waiting (every call returned: GPU timing off, or the ranks
 * exited).  NCCL completes a collective only once every member has
 * entered it, so the peer's op cannot have completed: the member behind
 * is where the schedules came apart (or its trace lost its last records).
 * Returns how many there are.
 */
static int p3d_ho_n_behind(const struct p3d_job *job)
{
    const struct p3d_match_res *m = job->match;
    int n = 0;

    for (int i = 0; m && i < m->n_kept; i++)
        n += m->mm[i].field == P3D_MM_ISSUED;
    return n;
}

static void p3d_ho_behind(FILE *f, const struct p3d_job *job)
{
    const struct p3d_match_res *m = job->match;

    for (int i = 0; m && i < m->n_kept; i++) {
        const struct p3d_mismatch *x = &m->mm[i];

        if (x->field != P3D_MM_ISSUED)
            continue;
        fprintf(f, "    rank %d issued %" PRId64 " collectives on comm 0x%016"
                PRIx64 " (%s), rank %d issued %" PRId64 ": rank %d's "
                "collective #%" PRId64 " on it cannot have completed; rank %d"
                " never entered it\n", x->rank_b, x->vb, x->comm,
                p3d_hang_lbl_name(p3d_hang_label(job, x->comm)), x->rank_a, x->va,
                x->rank_a, x->vb + 1, x->rank_b);
    }
}


/* ncclCommAbort calls (PyTorch's watchdog aborts on its timeout): 1 if
 * one had ops pending or an async error, worth a line. */
static int p3d_ho_abort_says(const struct p3d_rec_comm_end *e)
{
    return e->pending_ops || e->last_async_error;
}

/* Every ncclCommAbort; without --detail=hang the quiet ones (nothing
 * pending, no async error) are counted in one line. */
static void p3d_ho_aborts(FILE *f, const struct p3d_job *job, int all)
{
    const struct p3d_hjob *hj = job->hang->priv;
    int quiet = 0, ranks = 0;

    for (int a = 0; a < hj->world; a++) {
        int mine = 0;
        for (int k = 0; k < hj->hr[a].n_abort; k++) {
            const struct p3d_rec_comm_end *e = hj->hr[a].abort[k];
            if (!all && !p3d_ho_abort_says(e)) {
                quiet++;
                ranks += !mine++;
                continue;
            }
            fprintf(f, "  rank %d called ncclCommAbort on comm 0x%016" PRIx64
                    " (%s) %.3f s before the end; reason (last async "
                    "error): %s; %u op(s) pending\n", a, e->comm_hash,
                    p3d_hang_lbl_name(p3d_hang_label(job, e->comm_hash)),
                    job->hang->t_end > e->t_enter
                    ? (double)(job->hang->t_end - e->t_enter) / 1e9 : 0.0,
                    p3d_nccl_result_name(e->last_async_error), e->pending_ops);
        }
    }
    if (quiet)
        fprintf(f, "  %d ncclCommAbort call(s) on %d rank(s), none with an "
                "op pending or an async error (--detail=hang lists them)\n",
                quiet, ranks);
}

/* A communicator of more members than a line lists: each state's count
 * and ranks (as ranges). */
static void p3d_ho_frontier_states(FILE *f, const struct p3d_hang_frontier *fr)
{
    const int *r = fr->by_state;
    char buf[160];

    fprintf(f, " %d members:", fr->n_members);
    for (int s = 0, sep = 0; s < 3; r += fr->count[s++]) {
        if (!fr->count[s])
            continue;
        p3d_fmt_ranks(buf, sizeof(buf), r, fr->count[s]);
        fprintf(f, "%s %d %s (%s)", sep++ ? "," : "", fr->count[s],
                p3d_hang_fr_name[s], buf);
    }
}

static void p3d_ho_frontiers(FILE *f, const struct p3d_job *job)
{
    const struct p3d_hang_res *res = job->hang;

    if (res->n_fr)
        fprintf(f, "  communicators on the chain (frontier: highest "
                "collective seq issued / lowest never completed):\n");
    for (int i = 0; i < res->n_fr; i++) {
        const struct p3d_hang_frontier *fr = &res->fr[i];
        if (fr->max_enqueued < 0)
            fprintf(f, "    0x%016" PRIx64 " (%s): send/recv only;",
                    fr->comm, p3d_hang_lbl_name(fr->label));
        else
            fprintf(f, "    0x%016" PRIx64 " (%s): %" PRId64 " / %" PRId64
                    ";", fr->comm, p3d_hang_lbl_name(fr->label), fr->max_enqueued,
                    fr->min_incomplete);
        if (fr->n < fr->n_members)
            p3d_ho_frontier_states(f, fr);
        else
            for (int k = 0; k < fr->n; k++)
                fprintf(f, " %d %s", fr->rank[k], p3d_hang_fr_name[fr->st[k]]);
        fputc('\n', f);
    }
}

/* Ranks in neither list: not in NCCL and nobody waits on them. */
static void p3d_ho_others(FILE *f, const struct p3d_job *job)
{
    const struct p3d_hang_res *res = job->hang;
    int *idle = p3d_xcalloc((size_t)job->world_size + 1, sizeof(int)), n = 0;
    char *root = p3d_xcalloc((size_t)job->world_size + 1, 1), buf[256];

    for (int i = 0; i < res->n_roots; i++)
        if (res->roots[i].rank >= 0 && res->roots[i].rank < job->world_size)
            root[res->roots[i].rank] = 1;
    for (int a = 0; a < job->world_size; a++)
        if (res->state[a] != P3D_HS_WAITING && !root[a])
            idle[n++] = a;
    free(root);
    p3d_fmt_ranks(buf, sizeof(buf), idle, n);
    if (n)
        fprintf(f, "  not inside NCCL, nobody waits on them: rank(s) %s\n",
                buf);
    free(idle);
}

/* Ranks without GPU completions: an op that returned counts as done. */
static void p3d_ho_no_gpu(FILE *f, const struct p3d_job *job)
{
    const struct p3d_hjob *hj = job->hang->priv;
    int *r = p3d_xcalloc((size_t)hj->world + 1, sizeof(int)), n = 0;
    char buf[256];

    for (int a = 0; a < hj->world; a++)
        if (hj->hr[a].open && !hj->hr[a].have_gpu)
            r[n++] = a;
    p3d_fmt_ranks(buf, sizeof(buf), r, n);
    if (n)
        fprintf(f, "  note: no GPU completion times on rank(s) %s: there "
                "an op counts as incomplete if its call never returned, or "
                "if a member it needs never issued its part (then it "
                "cannot have completed, nor what its stream ran after "
                "it)\n", buf);
    free(r);
}

/* Whether every root is a rank whose trace lost records (a candidate,
 * not a finding). */
static int p3d_ho_roots_lost(const struct p3d_hang_res *res)
{
    for (int i = 0; i < res->n_roots; i++)
        if (res->roots[i].state != P3D_HS_DROPPED)
            return 0;
    return res->n_roots > 0;
}

/* With no hang found: ranks whose traces lost records, whose end (and a
 * hang in it) the traces do not show. */
static void p3d_ho_lost(FILE *f, const struct p3d_job *job)
{
    char buf[256];

    if (p3d_fmt_lost_ranks(buf, sizeof(buf), job, NULL))
        fprintf(f, "  but rank(s) %s lost records while recording "
                "(P3D_MAX_MB reached, or full buffers): what they did after "
                "their last record, a hang included, is not in the traces\n",
                buf);
}

/*
 * Root blocks shown without --detail=hang.  A job of thousands of ranks
 * can have thousands of roots (half of the world never reached a world
 * collective): four lines each would bury the answer, so the rest are
 * one line per kind (state, and the op their peers wait for).
 */
#define P3D_ROOTS_SHOWN 4
#define P3D_ROOT_KINDS_SHOWN 4

static int p3d_ho_alike(const struct p3d_hang_root *a,
                        const struct p3d_hang_root *b)
{
    return a->state == b->state && a->owed_op == b->owed_op &&
           a->owed_comm == b->owed_comm && a->owed_seq == b->owed_seq;
}

/* One line for roots[i] and every later root alike not yet told (told
 * marks them). */
static void p3d_ho_root_kind(FILE *f, const struct p3d_hang_res *res, int i,
                             uint8_t *told, int *r)
{
    const struct p3d_hang_root *rt = &res->roots[i];
    char buf[256];
    int n = 0;

    for (int j = i; j < res->n_roots; j++)
        if (!told[j] && p3d_ho_alike(rt, &res->roots[j])) {
            told[j] = 1;
            r[n++] = res->roots[j].rank;
        }
    p3d_fmt_ranks(buf, sizeof(buf), r, n);
    fprintf(f, "    %d: rank(s) %s: %s", n, buf,
            p3d_hang_state_text(rt->state));
    if (rt->owed_op == P3D_HANG_OP_INIT)
        fprintf(f, "; never created the (%s) communicator the others wait "
                "to make", p3d_hang_lbl_name(rt->owed_label));
    else if (rt->owed_op >= 0)
        fprintf(f, "; their peers wait for their part of %s #%" PRIu64
                " on comm 0x%016" PRIx64 " (%s)",
                p3d_hang_op_name(rt->owed_op), rt->owed_seq, rt->owed_comm,
                p3d_hang_lbl_name(rt->owed_label));
    fputc('\n', f);
}

/* The roots after the first `from`, by kind. */
static void p3d_ho_more_roots(FILE *f, const struct p3d_hang_res *res,
                              int from)
{
    uint8_t *told = p3d_xcalloc((size_t)res->n_roots + 1, 1);
    int *r = p3d_xcalloc((size_t)res->n_roots + 1, sizeof(*r));
    int kinds = 0, left = res->n_roots - from;

    fprintf(f, "  ... and %d more root ranks (--detail=hang shows each), "
            "by kind:\n", left);
    for (int i = from; i < res->n_roots; i++) {
        if (told[i])
            continue;
        if (kinds++ == P3D_ROOT_KINDS_SHOWN) {
            fprintf(f, "    %d more of other kinds\n", left);
            break;
        }
        p3d_ho_root_kind(f, res, i, told, r);
        left = 0;
        for (int j = i; j < res->n_roots; j++)
            left += !told[j];
    }
    free(told);
    free(r);
}

/* Every root rank, as ranges, with their count when many. */
static void p3d_ho_root_list(char *buf, size_t n,
                             const struct p3d_hang_res *res)
{
    size_t len;

    p3d_hang_fmt_roots(buf, n - 24, res);
    len = strlen(buf);
    if (res->n_roots > 8)
        snprintf(buf + len, n - len, " (%d ranks)", res->n_roots);
}

void p3d_hang_report(FILE *f, const struct p3d_job *job, unsigned detail)
{
    unsigned frames = detail & P3D_DETAIL_HANG ? 12 : P3D_FRAMES_SHOWN;
    const struct p3d_hang_res *res = job->hang;
    char roots[256];

    if (res == NULL)
        return;
    p3d_symbol_run_start(job->start_ns);
    if (!res->detected && res->stopped.n_in_nccl) {
        /* first: its members behind are the ops in flight */
        fprintf(f, "\nhang analysis: no hang shown: every rank was stopped "
                "by SIGTERM while the job ran. %d rank(s) were inside NCCL, "
                "for at most %.1f ms, less than its longest step (%.1f ms) "
                "and than each had waited in ops that completed, and no "
                "watchdog report (P3D_HANG_TIMEOUT) was written. A hang "
                "stopped that soon after forming would look the same: a "
                "later stop, or a shorter P3D_HANG_TIMEOUT, would show "
                "it\n", res->stopped.n_in_nccl,
                (double)res->stopped.longest_wait_ns / 1e6,
                (double)res->stopped.step_bound_ns / 1e6);
    } else if (!res->detected && p3d_ho_n_behind(job)) {
        fprintf(f, "\nhang analysis: no rank was left waiting, but "
                "collectives cannot have completed (NCCL completes one only "
                "once every member has entered it; their calls returned "
                "with it pending). The members behind are where the "
                "schedules came apart:\n");
        p3d_ho_behind(f, job);
    } else if (!res->detected) {
        fprintf(f, "\nhang analysis: no hang: every recorded op "
                "completed%s\n", res->n_mm ? "; but ops disagree:" : "");
    }
    if (!res->detected) {
        p3d_ho_lost(f, job);
        p3d_ho_mm(f, res, job);
        p3d_ho_aborts(f, job, detail & P3D_DETAIL_HANG);
        p3d_ho_no_gpu(f, job);
        return;
    }
    p3d_ho_root_list(roots, sizeof(roots), res);
    if (res->stall)
        fprintf(f, "\nhang analysis: HANG: %d rank(s) wait inside NCCL; no "
                "root rank: every member of the communicators they wait on "
                "entered the op, none completed, and no op disagrees. That "
                "is not a desync but a stall in NCCL or the network: "
                "NCCL_RAS_ENABLE=1 (ncclras lists the peers' states), "
                "NCCL_DEBUG=INFO, and the NICs' and links' error counters "
                "would tell\n", res->n_waiting);
    else if (p3d_ho_roots_lost(res))
        fprintf(f, "\nhang analysis: HANG: %d rank(s) wait inside NCCL, "
                "for rank(s) %s, whose traces lost records: the root is not "
                "known (them, or a stall if they issued their part)\n",
                res->n_waiting, roots);
    else
        fprintf(f, "\nhang analysis: HANG: %d rank(s) wait inside NCCL; "
                "root rank(s) %s\n", res->n_waiting, roots);
    for (int i = 0; i < res->n_roots; i++) {
        if (i == P3D_ROOTS_SHOWN && !(detail & P3D_DETAIL_HANG) &&
            res->n_roots > P3D_ROOTS_SHOWN + 1) {
            p3d_ho_more_roots(f, res, i);
            break;
        }
        p3d_ho_root(f, job, &res->roots[i], frames);
    }
    fprintf(f, "  chain of waits (nearest the root first):\n");
    for (int i = 0, j, lines = 0; i < res->n_waiting; i = j, lines++) {
        if (lines == P3D_CHAIN_SHOWN && !(detail & P3D_DETAIL_HANG)) {
            fprintf(f, "    ... and %d more waiting ranks "
                    "(--detail=hang lists them)\n", res->n_waiting - i);
            break;
        }
        for (j = i + 1; j < res->n_waiting &&
                        p3d_ho_alike_wait(job, &res->wait[i], &res->wait[j]);
             j++)
            ;
        p3d_ho_wait(f, job, &res->wait[i], j - i);
    }
    if (res->n_waiting > 0) {
        fprintf(f, "    rank %d's wait:\n", res->wait[0].rank);
        if (res->wait[0].op == P3D_HANG_OP_INIT || res->wait[0].inferred)
            fprintf(f, "      call site: not recorded for communicator "
                    "creation (stacks are taken for NCCL ops)\n");
        else
            p3d_ho_stack(f, job, res->wait[0].rank, res->wait[0].stack_id,
                         "      ", frames);
    }
    p3d_ho_proxy(f, job, detail & P3D_DETAIL_HANG);
    p3d_ho_frontiers(f, job);
    p3d_ho_others(f, job);
    p3d_ho_aborts(f, job, detail & P3D_DETAIL_HANG);
    p3d_ho_no_gpu(f, job);
    if (res->n_mm)
        fprintf(f, "  mismatched ops on the chain:\n");
    p3d_ho_mm(f, res, job);
}
