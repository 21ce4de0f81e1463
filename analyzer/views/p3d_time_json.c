/*
 * p3d_time_json.c - the time analysis in the JSON report (schema
 * p3d-analyze/1): per-rank step/NCCL/exposed/idle/bubble fractions and
 * peak memory, "steps", "bubble", "verdict", "clock", "wait".
 */
#include <inttypes.h>
#include <string.h>

#include "p3d_json.h"
#include "p3d_time.h"
#include "p3d_util.h"

static void p3d_jnum(FILE *f, const char *key, double v, int ok)
{
    if (ok)
        fprintf(f, ", \"%s\": %.6g", key, v);
    else
        fprintf(f, ", \"%s\": null", key);
}

static void p3d_tj_iters(FILE *f, const struct p3d_time_res *t,
                         const struct p3d_tl *tl)
{
    fputs(", \"iters\": [", f);
    for (int k = 0; k < t->n_iter; k++) {
        const struct p3d_tbreak *b = &tl->br[k];
        int kern = !b->nokern; /* else no compute times: null */
        fprintf(f, "%s{\"step_ms\": %.6g", k ? ", " : "",
                (double)b->step / 1e6);
        p3d_jnum(f, "compute_ms", (double)b->compute / 1e6, kern);
        p3d_jnum(f, "nccl_ms", (double)b->nccl / 1e6, 1);
        p3d_jnum(f, "exposed_ms", (double)b->exposed / 1e6, kern);
        p3d_jnum(f, "pp_wait_ms", (double)b->pp_wait / 1e6, kern);
        fputc('}', f);
    }
    fputc(']', f);
}

void p3d_time_json_rank(FILE *f, const struct p3d_job *job, int i)
{
    const struct p3d_time_res *t = job->time;
    const struct p3d_tl *tl = t && i < t->n ? &t->tl[i] : NULL;
    double sum[6] = {0}, all[2] = {0};
    int ok;

    for (int k = t ? t->warm : 0; tl && tl->br && k < t->n_iter; k++) {
        all[0] += (double)tl->br[k].step;
        all[1] += 1;
        if (tl->br[k].nokern)
            continue; /* the fractions need compute times */
        sum[0] += (double)tl->br[k].step;
        sum[1] += (double)tl->br[k].nccl;
        sum[2] += (double)tl->br[k].exposed;
        sum[3] += (double)tl->br[k].idle;
        sum[4] += (double)tl->br[k].pp_wait;
        sum[5] += 1;
    }
    ok = sum[0] > 0;
    if (tl && tl->peak_mem)
        fprintf(f, ", \"peak_mem_bytes\": %" PRIu64, tl->peak_mem);
    else
        fputs(", \"peak_mem_bytes\": null", f);
    p3d_jnum(f, "step_time_ms", all[0] > 0 ? all[0] / all[1] / 1e6 : 0,
             all[0] > 0);
    p3d_jnum(f, "nccl_frac", ok ? sum[1] / sum[0] : 0, ok);
    p3d_jnum(f, "exposed_comm_frac", ok ? sum[2] / sum[0] : 0, ok);
    p3d_jnum(f, "idle_frac", ok ? sum[3] / sum[0] : 0, ok);
    p3d_jnum(f, "bubble_frac", ok ? sum[4] / sum[0] : 0, ok && t->pp > 1);
    if (tl && tl->br)
        p3d_tj_iters(f, t, tl);
    if (tl)
        fprintf(f, ", \"stage\": %d, \"clock_offset_ns\": %" PRId64
                ", \"waiting_caused_ms\": %.6g, \"waiting_suffered_ms\": "
                "%.6g", tl->stage, t->n_hosts > 1
                                       ? t->hosts[tl->host].offset_ns : 0,
                (double)tl->nxn[P3D_TW_LAYER].caused / 1e6,
                (double)tl->nxn[P3D_TW_LAYER].suffered / 1e6);
}

static void p3d_tj_steps(FILE *f, const struct p3d_time_res *t)
{
    fprintf(f, "  \"steps\": {\"count\": %d, \"warmup\": %d", t->n_iter,
            t->warm);
    p3d_jnum(f, "step_time_ms", t->step_ms, t->n_iter > t->warm);
    p3d_jnum(f, "step_time_min_ms", t->step_min_ms, t->n_iter > t->warm);
    p3d_jnum(f, "step_time_max_ms", t->step_max_ms, t->n_iter > t->warm);
    p3d_jnum(f, "tokens_per_s", t->tokens_per_s, t->tokens_per_s > 0);
    p3d_jnum(f, "samples_per_s", t->samples_per_s, t->samples_per_s > 0);
    p3d_jnum(f, "micro_batches", t->m, t->m > 0);
    fputs(", \"per_iter_ms\": [", f);
    for (int k = 0; k < t->n_iter; k++)
        fprintf(f, "%s%.6g", k ? ", " : "", (double)t->step[k] / 1e6);
    fprintf(f, "], \"compute_frac\": %.6g, \"nccl_frac\": %.6g, "
               "\"exposed_comm_frac\": %.6g, \"overlapped_comm_frac\": "
               "%.6g, \"idle_frac\": %.6g, \"exposed_by_label\": {",
            t->f_compute, t->f_nccl, t->f_exposed, t->f_overlapped,
            t->f_idle);
    for (int l = 0, n = 0; l < P3D_LBL_COUNT; l++)
        if (t->f_lbl[l] > 0)
            fprintf(f, "%s\"%s\": %.6g", n++ ? ", " : "", p3d_label_name[l],
                    t->f_lbl[l]);
    fputs("}},\n", f);
}

static void p3d_tj_bubble(FILE *f, const struct p3d_time_res *t)
{
    if (t->pp < 2 || !t->stages) {
        fputs("  \"bubble\": null,\n", f);
        return;
    }
    fprintf(f, "  \"bubble\": {\"pp\": %d, \"m\": %d, \"v\": %d, "
               "\"m_source\": \"%s\"", t->pp, t->m, t->v,
            t->m_src == 1 ? "schedule" : t->m_src == 2 ? "cmdline" : "none");
    p3d_jnum(f, "m_cmdline", t->m_cmd, t->m_cmd > 0);
    p3d_jnum(f, "theory_frac", t->theory, t->m > 0);
    p3d_jnum(f, "measured_frac", t->measured, 1);
    fprintf(f, ", \"busiest_stage\": %d, \"per_stage\": [", t->worst_stage);
    for (int s = 0; s < t->n_stages; s++) {
        const struct p3d_tstage *g = &t->stages[s];
        fprintf(f, "%s{\"stage\": %d, \"ranks\": %d, \"bubble_frac\": %.6g, "
                   "\"fill_frac\": %.6g, \"steady_frac\": %.6g, "
                   "\"late_sender_frac\": %.6g, \"transfer_frac\": %.6g, "
                   "\"rest_frac\": %.6g, "
                   "\"compute_frac\": %.6g, \"per_iter\": [", s ? ", " : "",
                g->stage, g->n_ranks, g->bubble_frac, g->fill_frac,
                g->steady_frac, g->late_frac, g->transfer_frac,
                g->rest_frac, g->busy_frac);
        for (int k = 0, n = 0; k < t->n_iter; k++) {
            double w = 0, st = 0;
            for (int i = 0; i < t->n; i++)
                if (t->tl[i].stage == s && t->tl[i].br) {
                    w += (double)t->tl[i].br[k].pp_wait;
                    st += (double)t->tl[i].br[k].step;
                }
            fprintf(f, "%s%.6g", n++ ? ", " : "", st > 0 ? w / st : 0);
        }
        fputs("]}", f);
    }
    fputs("]},\n", f);
}

static void p3d_tj_verdict(FILE *f, const struct p3d_time_res *t)
{
    fprintf(f, "  \"verdict\": {\"nccl_dominates\": %s, \"why\": ",
            t->no_verdict ? "null" : t->dominates ? "true" : "false");
    p3d_json_str(f, t->why, strlen(t->why));
    fputs(", \"group\": ", f);
    if (t->top_lbl >= 0)
        fprintf(f, "\"%s\"", p3d_label_name[t->top_lbl]);
    else
        fputs("null", f);
    fputs(", \"busbw_gbps\": {", f);
    for (int l = 0, n = 0; l < P3D_LBL_COUNT; l++)
        if (t->busbw[l] > 0)
            fprintf(f, "%s\"%s\": %.6g", n++ ? ", " : "", p3d_label_name[l],
                    t->busbw[l]);
    fprintf(f, "}, \"best_busbw_gbps\": %.6g", t->best_busbw);
    if (t->windowed) /* the fractions are over these rank-iterations */
        fprintf(f, ", \"kernel_windows\": {\"steady_rank_iterations\": "
                   "%d, \"covered\": %d}", t->n_steady_it, t->n_kern_it);
    fputs("},\n", f);
}

static void p3d_tj_clock(FILE *f, const struct p3d_time_res *t)
{
    fputs("  \"clock\": {\"hosts\": [", f);
    for (int h = 0; h < t->n_hosts; h++) {
        const struct p3d_thost *x = &t->hosts[h];
        fprintf(f, "%s{\"host\": ", h ? ", " : "");
        p3d_json_str(f, x->name, strlen(x->name));
        fprintf(f, ", \"offset_ns\": %" PRId64, x->offset_ns);
        if (x->offset_unknown) /* the figures would be the solver's floor */
            fputs(", \"uncertainty_ns\": null", f);
        else
            fprintf(f, ", \"uncertainty_ns\": %" PRId64, x->uncert_ns);
        fprintf(f, ", \"realtime_error_ns\": %" PRId64 ", \"instances\": "
                "%d", x->anchor_err_ns, x->n_inst);
        if (x->offset_unknown)
            fputs(", \"bounds_contradict_ns\": null, \"offset_known\": "
                  "false", f);
        else if (x->contra_ns)
            fprintf(f, ", \"bounds_contradict_ns\": %" PRId64, x->contra_ns);
        fputc('}', f);
    }
    fprintf(f, "], \"violations\": %d, \"hosts_offset_unknown\": %d},\n",
            t->clock_violations, t->n_clock_unknown);
}

static void p3d_tj_wait(FILE *f, const struct p3d_time_res *t)
{
    fprintf(f, "  \"wait\": {\"instances\": %" PRIu64 ", \"late_sender_ms\":"
               " %.6g, \"late_receiver_ms\": %.6g, \"nxn_ms\": {",
            t->n_wait_inst, t->late_sender_ms, t->late_receiver_ms);
    for (int l = 0, n = 0; l < P3D_LBL_COUNT; l++)
        if (t->nxn_ms[l] > 0)
            fprintf(f, "%s\"%s\": {\"ms\": %.6g, \"late_rank\": %d}",
                    n++ ? ", " : "", p3d_label_name[l], t->nxn_ms[l],
                    t->late_rank[l]);
    fprintf(f, "}, \"stragglers_by\": \"%s\", \"stragglers\": [",
            t->strag_by == P3D_STRAG_P2P    ? "pipeline_p2p"
            : t->strag_by == P3D_STRAG_STEP ? "step_collectives"
                                            : "layer_groups");
    for (int i = 0; i < t->n_strag; i++)
        fprintf(f, "%s{\"rank\": %d, \"caused_ms\": %.6g, \"suffered_ms\": "
                   "%.6g, \"late_count\": %" PRId64 ", \"p2p_caused_ms\": "
                   "%.6g}", i ? ", " : "", t->strag[i].rank,
                t->strag[i].caused_ms, t->strag[i].suffered_ms,
                t->strag[i].late_count, t->strag[i].p2p_ms);
    fputs("]},\n", f);
}

void p3d_time_json(FILE *f, const struct p3d_job *job)
{
    const struct p3d_time_res *t = job->time;

    if (!t || !t->n_iter) {
        fputs("  \"steps\": null,\n  \"bubble\": null,\n  \"verdict\": "
              "null,\n", f);
        return;
    }
    p3d_tj_steps(f, t);
    p3d_tj_bubble(f, t);
    p3d_tj_verdict(f, t);
    p3d_tj_clock(f, t);
    p3d_tj_wait(f, t);
}
