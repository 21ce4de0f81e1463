/*
 * p3d_analyse.c - the pipeline (p3d_analyse.h): a table of passes, run in
 * order over one job.  Order matters and is written here once:
 *   scan    read every rank file once (model/p3d_rank.c); the matcher
 *           takes the ops as they stream by (its op sink)
 *   join    one communicator per commHash, with its members
 *   layout  the command line's layout, checked against the traces, or
 *           --layout, or inferred (layout/)
 *   labels  each communicator's group names under that layout
 *   match   close the matcher: mismatches, unmatched P2P, members behind
 *           (it needs the joined members and labels for its messages);
 *           over several processes each matched its communicators, and
 *           process 0 folds their results (p3d_dist_match.c)
 *   time    clocks, iterations, overlap, bubble, wait states (time/)
 *   hang    frontiers, wait graph, root (hang/; uses match and time);
 *           over several processes each reads its own files and sends
 *           process 0 what each rank keeps (hang/p3d_hang_dist.c)
 *   fetch   over several processes, where the others leave; with
 *           --local, process 0 first gets the files the views read
 *           from the nodes that hold them (p3d_dist_fetch.c)
 *   findings  what is worth acting on, with a next step (findings/)
 * A new analysis adds one row and its function, nothing else: it keeps
 * its result in the job (p3d_job_keep), which frees it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "p3d_analyse.h"
#include "p3d_dist_fetch.h"
#include "p3d_dist_match.h"
#include "p3d_dist_scan.h"
#include "p3d_findings.h"
#include "p3d_hang.h"
#include "p3d_infer.h"
#include "p3d_label.h"
#include "p3d_layout.h"
#include "p3d_match.h"
#include "p3d_progress.h"
#include "p3d_time.h"
#include "p3d_util.h"

/* One run of the pipeline: the options and what passes hand on. */
struct p3d_run {
    struct p3d_job *job;
    const struct p3d_analyse_opts *o;
    struct p3d_matcher *m;  /* from scan until match, NULL without */
    struct p3d_op_sink sink;
    struct p3d_progress *progress; /* NULL: none shown */
};

static void p3d_world(struct p3d_job *job)
{
    for (int i = 0; i < job->n_ranks; i++)
        if (job->ranks[i].rank >= job->world_size)
            job->world_size = job->ranks[i].rank + 1;
}

static void p3d_print_rank_msgs(struct p3d_job *job)
{
    char miss[256];
    int n;

    for (int i = 0; i < job->n_ranks; i++) {
        struct p3d_rank *r = &job->ranks[i];
        char who[32] = ""; /* --local: the process whose folder it is in */
        if (p3d_dist_active && p3d_dist_active->local && r->owner > 0)
            snprintf(who, sizeof(who), "process %d: ", r->owner);
        if (r->err[0])
            p3d_error("%s%s", who, r->err);
        if (r->warn[0])
            p3d_warning("%s%s", who, r->warn);
        if (r->hdr.flags & P3D_F_DROPPED)
            p3d_warning("'%s': %llu records were dropped while recording",
                        r->path, (unsigned long long)r->hdr.dropped_records);
    }
    n = p3d_missing_ranks(job, miss, sizeof(miss));
    if (n)
        p3d_warning("job '%s': %d of %d ranks have no readable trace file "
                    "(ranks %s)", job->job_id, n, job->world_size, miss);
}

static int p3d_pass_scan(struct p3d_run *run)
{
    struct p3d_job *job = run->job;

    p3d_world(job);
    if (run->o->match) {
        run->m = p3d_matcher_new();
        if (p3d_dist_active) /* its blocks of seqs (p3d_dist_scan.c) */
            p3d_matcher_split(run->m, p3d_dist_active->n,
                              p3d_dist_active->seq_block);
        run->sink = p3d_matcher_sink(run->m);
        for (int i = 0; i < job->n_ranks; i++)
            job->ranks[i].sink = &run->sink;
    }
    if (p3d_dist_active)
        p3d_dist_scan(p3d_dist_active, job, run->o->threads,
                      run->m ? &run->sink : NULL, run->m);
    else
        p3d_job_scan(job, run->o->threads);
    for (int i = 0; i < job->n_ranks; i++)
        job->ranks[i].sink = NULL;
    p3d_progress_clear(run->progress);
    p3d_print_rank_msgs(job);
    return 0;
}

static int p3d_pass_join(struct p3d_run *run)
{
    struct p3d_job *job = run->job;

    p3d_comm_join(job);
    for (int i = 0; i < job->n_ranks; i++)
        job->have_gpu |= job->ranks[i].n_gpu_ops > 0;
    return 0;
}

static int p3d_pass_layout(struct p3d_run *run)
{
    struct p3d_job *job = run->job;
    const char *want = run->o->layout;
    struct p3d_layout user;

    for (int i = 0; i < job->n_ranks && !job->hint.valid; i++)
        if (!job->ranks[i].failed && job->ranks[i].cmdline)
            p3d_layout_from_cmdline(&job->hint, job->ranks[i].cmdline,
                                    job->ranks[i].cmdline_len,
                                    job->world_size);
    p3d_layout_infer(job, job->hint.valid ? &job->hint : NULL, 0,
                     &job->layout);
    job->hint_fits = job->hint.valid && !job->layout.contradicted;
    if (!want)
        return 0;
    if (!strcmp(want, "infer")) { /* the traces alone */
        p3d_layout_infer(job, NULL, 0, &job->layout);
        return 0;
    }
    if (p3d_layout_parse(&user, want, job->world_size) < 0)
        return -1;
    p3d_layout_infer(job, &user, 1, &job->layout);
    return 0;
}

static int p3d_pass_match(struct p3d_run *run)
{
    if (run->m && p3d_dist_active)
        p3d_dist_match(p3d_dist_active, run->m, run->job); /* frees it */
    else if (run->m)
        p3d_matcher_finish(run->m, run->job);
    run->m = NULL;
    return 0;
}

/* The last pass of the processes other than 0: they leave here. */
static int p3d_pass_fetch(struct p3d_run *run)
{
    struct p3d_dist *d = p3d_dist_active;

    if (!d)
        return 0;
    p3d_dist_fetch(d, run->job, run->o->views);
    if (d->self != 0)
        d->done(d);
    if (d->fetched)
        d->fetched(d);
    return 0;
}

/*
 * A pass either needs the run (what earlier passes hand on, the options)
 * or only the job, whose model and earlier results it reads and to which
 * it adds its own (a new analysis: `job`, with p3d_job_keep).
 */
static const struct {
    const char *name;
    int (*run)(struct p3d_run *run);
    void (*job)(struct p3d_job *job);
    int dist_only; /* runs (and is shown) over several processes only */
} p3d_passes[] = {
    {"reading the rank files", p3d_pass_scan, NULL, 0},
    {"joining communicators", p3d_pass_join, NULL, 0},
    {"finding the layout", p3d_pass_layout, NULL, 0},
    {"labelling groups", NULL, p3d_label_all, 0},
    {"matching across ranks", p3d_pass_match, NULL, 0},
    {"timing", NULL, p3d_time_job, 0},
    {"hang analysis", NULL, p3d_hang_analyze, 0},
    {"fetching rank files", p3d_pass_fetch, NULL, 1},
    {"findings", NULL, p3d_findings_job, 0},
};
#define P3D_N_PASSES ((int)(sizeof(p3d_passes) / sizeof(p3d_passes[0])))

/*
 * P3D_DEBUG_PASSES=1: each pass's wall time on stderr, for bench/ (where
 * the analyzer's time goes, without a profiler or a throwaway build).
 */
static double p3d_pass_clock(clockid_t id)
{
    struct timespec t;

    clock_gettime(id, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Wall and CPU (all threads) ms of a pass: CPU over wall is how many
 * cores it kept busy. */
static void p3d_pass_timed(const char *name, double t0, double c0)
{
    static int on = -1;

    if (on < 0)
        on = getenv("P3D_DEBUG_PASSES") != NULL;
    if (on)
        fprintf(stderr, "p3d-analyze: %-24s %8.1f ms, CPU %8.1f ms\n", name,
                p3d_pass_clock(CLOCK_MONOTONIC) - t0,
                p3d_pass_clock(CLOCK_PROCESS_CPUTIME_ID) - c0);
}

static int p3d_pass_applies(int k)
{
    return !p3d_passes[k].dist_only || p3d_dist_active;
}

int p3d_analyse_job(struct p3d_job *job, const struct p3d_analyse_opts *o)
{
    struct p3d_run run = {job, o, NULL, {0}, NULL};
    int ret = 0, n = 0, shown = 0;

    for (int k = 0; k < P3D_N_PASSES; k++)
        n += p3d_pass_applies(k);
    if (o->progress)
        run.progress = p3d_progress_start(job, n);
    for (int k = 0; k < P3D_N_PASSES && !ret; k++) {
        if (!p3d_pass_applies(k))
            continue;
        double t0 = p3d_pass_clock(CLOCK_MONOTONIC);
        double c0 = p3d_pass_clock(CLOCK_PROCESS_CPUTIME_ID);
        p3d_progress_pass(run.progress, shown++, p3d_passes[k].name);
        if (p3d_passes[k].run)
            ret = p3d_passes[k].run(&run);
        else
            p3d_passes[k].job(job);
        p3d_pass_timed(p3d_passes[k].name, t0, c0);
    }
    p3d_progress_stop(run.progress);
    if (run.m)
        p3d_matcher_finish(run.m, job); /* a pass failed: free it */
    return ret;
}

void p3d_analysed_free(struct p3d_job *job)
{
    p3d_time_free(job);
    p3d_hang_free(job);
    p3d_job_free(job); /* with the results passes kept in it */
}
