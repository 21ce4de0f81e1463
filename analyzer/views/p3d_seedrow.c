/*
 * p3d_seedrow.c - the time section of the text report (per-iteration,
 * per-host and wait-state lines only with --detail=time), a stage's
 * bubble as sums that add up, and the seed's record row: config | TP |
 * PP | CP | DP | micro-batches | max mem/rank | step time | tokens/s |
 * observations.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_hang.h"
#include "p3d_report.h"
#include "p3d_seedtab.h"
#include "p3d_time.h"
#include "p3d_util.h"
#include "p3d_vfmt.h"

static const char *const p3d_src_text[] = {
    "host call times only (no GPU times): NCCL times are "
    "enqueue-to-return on the host",
    "NCCL kernel spans attributed to ops by stream and order (no GPU_OP "
    "records)",
    "GPU kernel times (GPU_OP)"};

/* Some ranks have better op times than others (a damaged file): name
 * them, since the job is timed at the worst rank's source. */
static void p3d_tr_mixed_src(FILE *f, const struct p3d_time_res *t,
                             int worst, int best)
{
    int n = 0;

    fprintf(f, "  op times differ between ranks: %s for", p3d_src_text[best]);
    for (int i = 0; i < t->n; i++)
        n += t->tl[i].n_ops && t->tl[i].src == best;
    fprintf(f, " %d rank(s); rank(s)", n);
    for (int i = 0, k = 0; i < t->n; i++)
        if (t->tl[i].n_ops && t->tl[i].src == worst)
            fprintf(f, "%s %d", k++ ? "," : "", t->tl[i].rank);
    fprintf(f, " have less (a damaged or cut file?); the job is timed as "
               "below\n");
}

/* One host's clock against the reference host's. */
static void p3d_tr_host(FILE *f, const struct p3d_time_res *t, int h)
{
    const struct p3d_thost *x = &t->hosts[h];

    if (x->offset_unknown) {
        fprintf(f, "  clocks: host %s is %+.3f ms off host %s by the "
                "realtime anchors (%d collective instances)", x->name,
                (double)x->offset_ns / 1e6, t->hosts[0].name, x->n_inst);
        fprintf(f, "; its bounds contradict each other by more than an "
                "hour (the records break causality across hosts: clocks "
                "that drift during the run, or calls that returned before "
                "their peers entered), so the offset is not known");
    } else {
        fprintf(f, "  clocks: host %s is %+.3f ms (+- %.3f ms) off host %s "
                "(%d collective instances)", x->name,
                (double)x->offset_ns / 1e6, (double)x->uncert_ns / 1e6,
                t->hosts[0].name, x->n_inst);
        if (x->contra_ns)
            fprintf(f, "; its bounds contradict each other by %.3f ms (the "
                    "records break causality across hosts: clocks that "
                    "drift during the run, or calls that returned before "
                    "their peers entered), so the offset is their middle",
                    (double)x->contra_ns / 1e6);
    }
    fputc('\n', f);
}

/* All hosts in one line: the largest offset and the widest uncertainty
 * of the hosts whose bounds agree; those whose bounds contradict each
 * other are counted apart (their offsets are a guess). */
static void p3d_tr_hosts(FILE *f, const struct p3d_time_res *t)
{
    int big = 1, wide = -1, contra = 0;
    int64_t worst = 0;

    for (int h = 1; h < t->n_hosts; h++) {
        const struct p3d_thost *x = &t->hosts[h];
        if (llabs(x->offset_ns) > llabs(t->hosts[big].offset_ns))
            big = h;
        if (x->contra_ns) {
            contra++;
            worst = x->contra_ns > worst ? x->contra_ns : worst;
        } else if (wide < 0 || x->uncert_ns > t->hosts[wide].uncert_ns) {
            wide = h;
        }
    }
    if (t->n_hosts == 2) {
        p3d_tr_host(f, t, 1);
        return;
    }
    fprintf(f, "  clocks: %d hosts aligned to host %s; largest offset "
            "%+.3f ms (host %s)", t->n_hosts, t->hosts[0].name,
            (double)t->hosts[big].offset_ns / 1e6, t->hosts[big].name);
    if (wide >= 0)
        fprintf(f, ", widest uncertainty +- %.3f ms (host %s)",
                (double)t->hosts[wide].uncert_ns / 1e6,
                t->hosts[wide].name);
    if (t->n_clock_unknown)
        fprintf(f, "; on %d host(s) the bounds contradict each other by "
                "more than an hour (the records break causality across "
                "hosts): their offsets are not known (--detail=time)",
                contra);
    else if (contra)
        fprintf(f, "; on %d host(s) the bounds contradict each other, by "
                "up to %.3f ms: their offsets are a guess (--detail=time)",
                contra, (double)worst / 1e6);
    fputc('\n', f);
}

/*
 * Ranks whose send/recv GPU times came from NCCL's profiler plugin: on
 * the H200 nccl-tests' sendrecv read 20-99% short with it (README, "Why
 * auto still takes CUDA events"), and the bubble and the wait states
 * read those times, so the report says so.
 */
static void p3d_tr_p2p_plugin(FILE *f, const struct p3d_job *job)
{
    int n = 0;

    for (int i = 0; i < job->n_ranks; i++) {
        const struct p3d_rank *r = &job->ranks[i];
        uint64_t p2p = 0;
        for (int c = 0; r->plugin_timed && c < r->n_comms; c++)
            p2p += r->comms[c].st[P3D_OP_SEND].calls +
                   r->comms[c].st[P3D_OP_RECV].calls;
        n += p2p > 0;
    }
    if (n)
        fprintf(f, "  send/recv times: %d rank(s) took them from NCCL's "
                   "profiler plugin (P3D_GPU_TIMING=plugin), which read "
                   "nccl-tests' sendrecv 20-99%% short on the H200; the "
                   "bubble and the waits use them (CUDA events, the "
                   "default, time the whole transfer)\n", n);
}

static void p3d_tr_clock(FILE *f, const struct p3d_time_res *t,
                         unsigned detail)
{
    int src = P3D_TSRC_GPU, best = P3D_TSRC_HOST;

    for (int i = 0; i < t->n; i++)
        if (t->tl[i].n_ops) {
            src = t->tl[i].src < src ? t->tl[i].src : src;
            best = t->tl[i].src > best ? t->tl[i].src : best;
        }
    if (best != src)
        p3d_tr_mixed_src(f, t, src, best);
    fprintf(f, "  op times: %s", p3d_src_text[src]);
    if (src == P3D_TSRC_SPAN) {
        size_t n = 0, g = 0;
        for (int i = 0; i < t->n; i++) {
            n += t->tl[i].n_ops;
            g += t->tl[i].n_placed;
        }
        fprintf(f, "; %zu of %zu ops placed", g, n);
    }
    fputc('\n', f);
    if (t->windowed)
        fprintf(f, "  kernel records: in windows (P3D_GPU_WINDOW); %d of %d "
                   "steady rank-iterations lie inside one\n", t->n_kern_it,
                t->n_steady_it);
    if (!t->have_compute)
        fprintf(f, "  no compute spans in the traces: overlap and idle "
                   "cannot be computed (compute counted as 0)\n");
    if (t->n_hosts < 2) {
        fprintf(f, "  clocks: one host, CLOCK_MONOTONIC as recorded\n");
        return;
    }
    if (detail & P3D_DETAIL_TIME)
        for (int h = 1; h < t->n_hosts; h++)
            p3d_tr_host(f, t, h);
    else
        p3d_tr_hosts(f, t);
    fprintf(f, "  clocks: %d receives complete before their send started "
               "after the alignment\n", t->clock_violations);
}

static void p3d_tr_steps(FILE *f, const struct p3d_time_res *t,
                         unsigned detail)
{
    fprintf(f, "  iterations: %d found", t->n_iter);
    if (t->warm == 1)
        fprintf(f, "; warm-up iteration 0 took %.3f ms (excluded)",
                t->warm_ms);
    else if (t->warm > 1)
        fprintf(f, "; warm-up iterations 0-%d took %.3f ms on average "
                   "(excluded)", t->warm - 1, t->warm_ms);
    fprintf(f, "\n  step time: %.3f ms median over %d steady iterations "
               "(%.3f .. %.3f)\n", t->step_ms, t->n_iter - t->warm,
            t->step_min_ms, t->step_max_ms);
    for (int k = 0; detail & P3D_DETAIL_TIME && k < t->n_iter; k++)
        fprintf(f, "    iteration %d: %.3f ms%s\n", k,
                (double)t->step[k] / 1e6, k < t->warm ? " (warm-up)" : "");
    if (t->tokens_per_s > 0)
        fprintf(f, "  throughput: %.0f tokens/s (global batch %d x "
                   "sequence %d)\n", t->tokens_per_s, t->gbs, t->seq_len);
    else if (t->samples_per_s > 0)
        fprintf(f, "  throughput: %.2f samples/s (no --seq-length on the "
                   "command line for tokens/s)\n", t->samples_per_s);
    else
        fputs("  throughput: not known (tokens/s needs the global batch and "
              "the sequence length: Megatron's --global-batch-size and "
              "--seq-length were not on the command line)\n", f);
}

/* Exposed PP time is largely the bubble: say how much, so the verdict
 * is not read as slow transfers. */
static void p3d_tr_pp_share(FILE *f, const struct p3d_time_res *t)
{
    double pp = t->f_lbl[P3D_LBL_PP];

    if (t->measured >= 0.5 * pp)
        fprintf(f, "    PP is %.1f%% of the step and the pipeline bubble "
                   "%.1f%% (below): exposed PP time is mostly stages "
                   "waiting on the schedule, which more micro-batches or "
                   "interleaving shrink, not slow transfers\n",
                100 * pp, 100 * t->measured);
    else
        fprintf(f, "    PP is %.1f%% of the step, of which the pipeline "
                   "bubble (stages waiting on the schedule, below) is "
                   "%.1f%%; the rest is transfer\n", 100 * pp,
                100 * t->measured);
}

static void p3d_tr_where(FILE *f, const struct p3d_job *job,
                         const struct p3d_time_res *t)
{
    if (t->windowed)
        fprintf(f, "  where the time goes (the %d of %d steady rank-"
                   "iterations inside a kernel window, mean):", t->n_kern_it,
                t->n_steady_it);
    else
        fprintf(f, "  where the time goes (steady iterations, mean over "
                   "ranks):");
    fprintf(f, "\n    compute %.1f%%, NCCL busy %.1f%%, exposed NCCL %.1f%%,"
               " overlapped NCCL %.1f%%, copy %.1f%%, idle %.1f%%\n",
            100 * t->f_compute, 100 * t->f_nccl, 100 * t->f_exposed,
            100 * t->f_overlapped, 100 * t->f_copy, 100 * t->f_idle);
    fprintf(f, "    exposed NCCL by group:");
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        if (t->f_lbl[l] >= 0.0005)
            fprintf(f, " %s %.1f%%", p3d_label_name[l], 100 * t->f_lbl[l]);
    fprintf(f, "\n    busbw by group (bus bandwidth as nccl-tests counts "
               "it, GB/s; time = the shortest member's kernel, i.e. the "
               "transfer without waiting):");
    if (t->best_busbw <= 0)
        fprintf(f, " none (no GPU times)");
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        if (t->busbw[l] > 0)
            fprintf(f, " %s %.2f (%.0f%% of best)", p3d_label_name[l],
                    t->busbw[l], t->best_busbw > 0
                                     ? 100 * t->busbw[l] / t->best_busbw
                                     : 0);
    if (t->best_busbw > 0)
        fprintf(f, "; best single op %.2f GB/s on %s",
                t->best_busbw, p3d_label_name[t->best_lbl]);
    fprintf(f, "\n  verdict: %s\n", t->why);
    if (t->pp > 1 && t->stages && t->f_lbl[P3D_LBL_PP] >= 0.005)
        p3d_tr_pp_share(f, t);
    (void)job;
}


/* 1 if the busiest stage computes 10 % more than the least busy. */
static int p3d_tr_uneven(const struct p3d_time_res *t)
{
    double lo = 1e300, hi = 0;

    for (int s = 0; s < t->n_stages; s++) {
        double b = t->stages[s].busy_frac;
        lo = b < lo ? b : lo;
        hi = b > hi ? b : hi;
    }
    return hi > 1.1 * lo;
}

static void p3d_tr_bubble(FILE *f, const struct p3d_time_res *t)
{
    if (t->pp < 2 || !t->stages)
        return;
    fprintf(f, "  pipeline bubble: p=%d m=%d v=%d (m from %s): theory "
               "(p-1)/(m+p-1)/v = %.1f%%, measured %.1f%% (excess %+.1f "
               "points)\n", t->pp, t->m, t->v,
            t->m_src == 1 ? "the schedule" : t->m_src == 2 ? "the command "
                                                           "line" : "nowhere",
            100 * t->theory, 100 * t->measured,
            100 * (t->measured - t->theory));
    fprintf(f, "    (bubble: time a stage waits on a pipeline send/recv "
               "with no compute running, as a share of the step)\n");
    if (t->measured < t->theory - 0.02)
        fprintf(f, "    below theory: only time without compute waiting "
                   "on a PP receive counts as bubble; stages that wait on "
                   "a step-level collective instead (gradients, grad norm: "
                   "see the wait states) or a job bound by communication "
                   "rather than compute show less\n");
    if (t->m_src == 1 && t->m_cmd && t->m_cmd != t->m)
        fprintf(f, "    note: the command line says m=%d (global batch / "
                   "(micro-batch x DP)), the schedule shows %d\n", t->m_cmd,
                t->m);
    for (int s = 0; s < t->n_stages; s++) {
        const struct p3d_tstage *g = &t->stages[s];
        char b[400];
        p3d_fmt_stage(b, sizeof(b), g);
        fprintf(f, "    %s\n", b);
    }
    if (p3d_tr_uneven(t))
        fprintf(f, "    busiest stage (sets the pace): %d\n", t->worst_stage);
    else
        fprintf(f, "    stages about equally busy (compute within 10%%)\n");
}

/* Scalasca's wait states, each term said in words where it is used. */
static void p3d_tr_wait_states(FILE *f, const struct p3d_time_res *t)
{
    fprintf(f, "  wait states (steady; Scalasca's terms): %" PRIu64
               " collective instances, %" PRIu64 " pipeline send/recv "
               "pairs\n", t->n_wait_inst, t->n_p2p);
    fprintf(f, "    wait at NxN = time members of a collective spend "
               "waiting for its last member to arrive, summed over "
               "members:\n");
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        if (t->nxn_ms[l] > 0)
            fprintf(f, "    %-6s wait at NxN %.3f ms, last to arrive most "
                       "often: rank %d\n", p3d_label_name[l], t->nxn_ms[l],
                    t->late_rank[l]);
    fprintf(f, "    PP Late Sender %.3f ms (receives waiting for their send "
               "to start), Late Receiver %.3f ms (sends waiting for their "
               "receive)\n", t->late_sender_ms, t->late_receiver_ms);
}

static void p3d_tr_wait(FILE *f, const struct p3d_time_res *t,
                        unsigned detail)
{
    int n = t->n_strag < 5 ? t->n_strag : 5;

    if (detail & P3D_DETAIL_TIME)
        p3d_tr_wait_states(f, t);
    fprintf(f, "  stragglers (waiting each caused %s):",
            t->strag_by == P3D_STRAG_P2P
                ? "on pipeline send/recv: its receives' peers waiting for "
                  "its late sends, and its sends' for its late receives"
            : t->strag_by == P3D_STRAG_STEP
                ? "its peers at the step's collectives; no TP/CP group "
                  "or pipeline"
                : "its TP/CP group peers");
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s rank %d %.3f ms", i ? "," : "", t->strag[i].rank,
                t->strag[i].caused_ms);
        if (t->strag_by != P3D_STRAG_P2P)
            fprintf(f, " (last %" PRId64 " times)", t->strag[i].late_count);
    }
    fputc('\n', f);
    if (t->n_clock_unknown)
        fprintf(f, "    (the clock offsets of %d host(s) are not known, "
                   "above: waits between ranks on different hosts, and so "
                   "these figures, may be wrong)\n", t->n_clock_unknown);
}

/* The seed row, filled and printed as --compare's row for this run. */
static void p3d_tr_seed(FILE *f, const struct p3d_job *job,
                        const struct p3d_time_res *t)
{
    struct p3d_crow row;

    p3d_seed_row_init(&row, job, job->job_id);
    row.micro_batches = t->m;
    row.max_mem_rank = -1;
    for (int i = 0; i < t->n; i++)
        if (t->tl[i].peak_mem > row.max_mem) {
            row.max_mem = t->tl[i].peak_mem;
            row.max_mem_rank = t->tl[i].rank;
        }
    row.step_ms = t->step_ms;
    row.tokens_s = t->tokens_per_s;
    p3d_seed_obs_time(job, t, &row.obs);
    fprintf(f, "\nseed table row:\n");
    p3d_seed_md_head(f);
    p3d_seed_md_row(f, &row);
    p3d_seed_row_free(&row);
}

void p3d_time_report(FILE *f, const struct p3d_job *job, unsigned detail)
{
    const struct p3d_time_res *t = job->time;

    if (!t)
        return;
    fprintf(f, "\ntime:\n");
    if (job->hang && job->hang->detected && !(detail & P3D_DETAIL_TIME)) {
        fprintf(f, "  the job hung: its time analysis (of what the ranks "
                   "recorded before it) is behind --detail=time\n");
        return;
    }
    if (job->hang && job->hang->detected)
        fprintf(f, "  the job hung (see the hang analysis): what follows "
                   "comes from what the ranks recorded before it, and a "
                   "job that hung in its first step has no full "
                   "iteration (a repeating micro-batch may be taken for "
                   "one)\n");
    p3d_tr_p2p_plugin(f, job);
    if (!t->n_iter) {
        fprintf(f, "  no repeating op pattern found: no iterations, step "
                   "time or bubble\n");
        return;
    }
    p3d_tr_clock(f, t, detail);
    p3d_tr_steps(f, t, detail);
    p3d_tr_where(f, job, t);
    p3d_tr_bubble(f, t);
    p3d_tr_wait(f, t, detail);
}

void p3d_seed_report(FILE *f, const struct p3d_job *job)
{
    if (job->time && job->time->n_iter)
        p3d_tr_seed(f, job, job->time);
}
