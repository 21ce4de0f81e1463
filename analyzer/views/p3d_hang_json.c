/*
 * p3d_hang_json.c - the "hang" member of the JSON report (README.md's
 * schema: detected, root_ranks, chain[{rank, comm, label, op, seq,
 * waiting_for}], plus roots with what they owe, their last op and call
 * site, and mismatches on the chain), in the words of
 * hang/p3d_hang_words.c as the text section.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_hang_int.h"
#include "p3d_json.h"
#include "p3d_label.h"
#include "p3d_match.h"
#include "p3d_names.h"
#include "p3d_symbol.h"
#include "p3d_util.h"

static void p3d_hj_stack(FILE *f, const struct p3d_job *job, int r,
                         uint32_t id)
{
    const struct p3d_hrank *h = p3d_hang_rank_of(job, r);
    const struct p3d_rec_stack *s = h ? p3d_hang_stack(h, id) : NULL;
    char line[1024];

    fputs("\"stack\": [", f);
    for (uint32_t i = 0; s != NULL && i < s->n_frames && i < 12; i++) {
        p3d_symbol_pc(line, sizeof(line), s->pc[i], h->mods, h->n_mods);
        fputs(i ? ", " : "", f);
        p3d_json_str(f, line, strlen(line));
    }
    fputs("]", f);
}

static void p3d_hj_root(FILE *f, const struct p3d_job *job,
                        const struct p3d_hang_root *rt, int first)
{
    const struct p3d_hrank *h = p3d_hang_rank_of(job, rt->rank);

    fprintf(f, "%s\n      {\"rank\": %d, \"state\": \"%s\", \"since_s\": %.6f, "
            "\"ops_issued\": %zu, \"waiters\": %d, ", first ? "" : ",",
            rt->rank, p3d_hang_state_name[rt->state],
            (double)rt->since_ns / 1e9, h ? h->n_ops : 0, rt->n_waiters);
    if (rt->wd_silent) /* its trace lost records: the watchdog's word */
        fprintf(f, "\"watchdog_silent_s\": %.3f, ",
                (double)rt->wd_timeout_ns / 1e9);
    if (rt->owed_op >= 0)
        fprintf(f, "\"owed\": {\"comm\": \"0x%016" PRIx64 "\", \"label\": "
                "\"%s\", \"op\": \"%s\", \"seq\": %" PRIu64 ", \"how\": "
                "\"%s\", \"issued_on_comm\": %" PRIu64 ", \"members\": [",
                rt->owed_comm, p3d_hang_lbl_name(rt->owed_label),
                p3d_hang_op_name(rt->owed_op), rt->owed_seq, rt->owed_how == 1
                ? "twin" : rt->owed_how == 2 ? "only" : "earliest",
                rt->issued_on_comm);
    for (int i = 0; rt->owed_op >= 0 && i < rt->n_owed_members; i++)
        fprintf(f, "%s%d", i ? ", " : "", rt->owed_members[i]);
    if (rt->owed_op >= 0)
        fputs("]}, ", f);
    else
        fputs("\"owed\": null, ", f);
    if (rt->last != NULL) {
        fprintf(f, "\"last_op\": {\"op\": \"%s\", \"comm\": \"0x%016" PRIx64
                "\", \"label\": \"%s\", \"seq\": %" PRIu64 "}, ",
                p3d_hang_op_name(rt->last->op), rt->last->comm_hash,
                p3d_hang_lbl_name(p3d_hang_label(job, rt->last->comm_hash)),
                rt->last->seq);
        p3d_hj_stack(f, job, rt->rank, rt->last->stack_id);
    } else {
        fputs("\"last_op\": null, \"stack\": []", f);
    }
    fputs("}", f);
}

static void p3d_hj_wait(FILE *f, const struct p3d_job *job,
                        const struct p3d_hang_wait *w, int first)
{
    fprintf(f, "%s\n      {\"rank\": %d, \"comm\": \"0x%016" PRIx64 "\", "
            "\"label\": \"%s\", \"op\": \"%s\", \"seq\": %" PRId64 ", "
            "\"peer\": %d, \"depth\": %d, \"inferred\": %s, "
            "\"proven_by_peers\": %s, \"peers_gpu_unknown\": %s, "
            "\"pending_s\": %.6f, \"waiting_for\": [", first ? "" : ",",
            w->rank, w->comm,
            p3d_hang_lbl_name(w->label), p3d_hang_op_name(w->op),
            w->seq == UINT64_MAX ? (int64_t)-1 : (int64_t)w->seq, w->peer,
            w->depth, w->inferred ? "true" : "false",
            w->proven ? "true" : "false", w->unknown ? "true" : "false",
            p3d_hang_waited_s(job, w));
    for (int k = 0; k < w->n_for_op; k++)
        fprintf(f, "%s%d", k ? ", " : "", w->waiting_for[k]);
    fputs("], \"others_pending_wait_for\": [", f);
    for (int k = w->n_for_op; k < w->n_for; k++)
        fprintf(f, "%s%d", k > w->n_for_op ? ", " : "", w->waiting_for[k]);
    fputs("], ", f);
    p3d_hj_stack(f, job, w->rank, w->stack_id);
    fputs("}", f);
}

static void p3d_hj_mm(FILE *f, const struct p3d_job *job)
{
    const struct p3d_hang_res *res = job->hang;

    fputs("\"mismatches\": [", f);
    for (int i = 0; i < res->n_mm; i++) {
        const struct p3d_hang_mm *m = &res->mm[i];

        struct p3d_json_mm j = {m->comm,
                                p3d_hang_lbl_name(p3d_hang_label(job, m->comm)),
                                m->op, m->seq, m->field,
                                {m->rank_a, m->rank_b}, {m->va, m->vb}};
        fputs(i ? ", " : "", f);
        p3d_json_mm_write(f, &j, "odd_rank", "odd_value", "other_rank",
                          "other_value");
    }
    fputs("]", f);
}

/* JSON "behind": the members behind of a job with no rank waiting. */
static void p3d_hj_behind(FILE *f, const struct p3d_job *job)
{
    const struct p3d_match_res *m = job->match;
    int first = 1;

    fputs(",\n    \"behind\": [", f);
    for (int i = 0; m && !job->hang->detected && i < m->n_kept; i++) {
        const struct p3d_mismatch *x = &m->mm[i];

        if (x->field != P3D_MM_ISSUED)
            continue;
        fprintf(f, "%s{\"comm\": \"0x%016" PRIx64 "\", \"label\": \"%s\", "
                "\"rank\": %d, \"issued\": %" PRId64 ", \"peer\": %d, "
                "\"peer_issued\": %" PRId64 ", \"incomplete_seq\": %" PRId64
                "}", first ? "" : ", ", x->comm,
                p3d_hang_lbl_name(p3d_hang_label(job, x->comm)), x->rank_b, x->vb,
                x->rank_a, x->va, x->vb);
        first = 0;
    }
    fputs("]", f);
}

static void p3d_hj_aborts(FILE *f, const struct p3d_job *job)
{
    const struct p3d_hjob *hj = job->hang->priv;
    int first = 1;

    fputs(",\n    \"aborts\": [", f);
    for (int a = 0; a < hj->world; a++)
        for (int k = 0; k < hj->hr[a].n_abort; k++, first = 0)
            fprintf(f, "%s{\"rank\": %d, \"comm\": \"0x%016" PRIx64 "\", "
                    "\"reason\": \"%s\", \"pending_ops\": %u}",
                    first ? "" : ", ", a, hj->hr[a].abort[k]->comm_hash,
                    p3d_nccl_result_name(hj->hr[a].abort[k]->last_async_error),
                    hj->hr[a].abort[k]->pending_ops);
    fputs("]", f);
}

/* NCCL's network transfers in flight at each rank's watchdog report. */
static void p3d_hj_transfers(FILE *f, const struct p3d_job *job)
{
    static char line[16][P3D_HANG_PROXY_LEN];
    int first = 1;

    fputs(",\n    \"network_transfers\": [", f);
    for (int a = 0; a < job->world_size; a++) {
        int n = p3d_hang_proxy_lines(job, a, line, 16);
        for (int k = 0; k < n; k++, first = 0) {
            fprintf(f, "%s{\"rank\": %d, \"text\": ", first ? "" : ", ", a);
            p3d_json_str(f, line[k], strlen(line[k]));
            fputs("}", f);
        }
    }
    fputs("]", f);
}

static void p3d_hj_frontiers(FILE *f, const struct p3d_hang_res *res)
{
    fputs(",\n    \"frontiers\": [", f);
    for (int i = 0; i < res->n_fr; i++) {
        const struct p3d_hang_frontier *fr = &res->fr[i];
        fprintf(f, "%s{\"comm\": \"0x%016" PRIx64 "\", \"label\": \"%s\", "
                "\"max_enqueued_seq\": %" PRId64 ", \"min_incomplete_seq\": %"
                PRId64 ", \"members\": {", i ? ", " : "", fr->comm,
                p3d_hang_lbl_name(fr->label), fr->max_enqueued, fr->min_incomplete);
        for (int k = 0; k < fr->n; k++)
            fprintf(f, "%s\"%d\": \"%s\"", k ? ", " : "", fr->rank[k],
                    p3d_hang_fr_name[fr->st[k]]);
        fputs("}, \"member_counts\": {", f); /* of all, listed or not */
        for (int s = 0; s < 3; s++)
            fprintf(f, "%s\"%s\": %d", s ? ", " : "", p3d_hang_fr_name[s],
                    fr->count[s]);
        fputs("}}", f);
    }
    fputs("]", f);
}

void p3d_hang_json(FILE *f, const struct p3d_job *job)
{
    const struct p3d_hang_res *res = job->hang;

    if (res == NULL) {
        fputs("null", f);
        return;
    }
    p3d_symbol_run_start(job->start_ns);
    fprintf(f, "{\"detected\": %s, \"stall\": %s, ",
            res->detected ? "true" : "false",
            res->detected && res->stall ? "true" : "false");
    if (res->stopped.n_in_nccl) /* p3d_hang_stop.c */
        fprintf(f, "\"stopped_running\": {\"in_nccl\": %d, "
                "\"longest_wait_s\": %.6f, \"longest_step_s\": %.6f}, ",
                res->stopped.n_in_nccl,
                (double)res->stopped.longest_wait_ns / 1e9,
                (double)res->stopped.step_bound_ns / 1e9);
    fputs("\"root_ranks\": [", f);
    for (int i = 0; i < res->n_roots; i++)
        fprintf(f, "%s%d", i ? ", " : "", res->roots[i].rank);
    fputs("],\n    \"roots\": [", f);
    for (int i = 0; i < res->n_roots; i++)
        p3d_hj_root(f, job, &res->roots[i], i == 0);
    fputs("],\n    \"chain\": [", f);
    for (int i = 0; i < res->n_waiting; i++)
        p3d_hj_wait(f, job, &res->wait[i], i == 0);
    fputs("],\n    \"states\": [", f);
    for (int a = 0; a < job->world_size; a++)
        fprintf(f, "%s\"%s\"", a ? ", " : "",
                p3d_hang_state_name[res->state[a]]);
    fputs("],\n    ", f);
    p3d_hj_mm(f, job);
    p3d_hj_behind(f, job);
    p3d_hj_aborts(f, job);
    p3d_hj_transfers(f, job);
    p3d_hj_frontiers(f, res);
    fputs("}", f);
}
