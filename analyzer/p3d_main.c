/*
 * p3d_main.c - the p3d-analyze command line.
 *
 *   p3d-analyze [options] DIR...     analyse the job(s) under DIR
 *   p3d-analyze --dump FILE...       print every record as text
 *
 * Exit status: 0 on success (problems found in a job are reported, not
 * errors), 2 on bad usage or unreadable input.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "p3d_chrome.h"
#include "p3d_compare.h"
#include "p3d_discover.h"
#include "p3d_html.h"
#include "p3d_dump.h"
#include "p3d_hang.h"
#include "p3d_json.h"
#include "p3d_label.h"
#include "p3d_layout.h"
#include "p3d_match.h"
#include "p3d_report.h"
#include "p3d_time.h"
#include "p3d_util.h"

struct p3d_opts {
    int dump, all, threads, match;
    const char *json, *layout;
    /* views (issue 8) */
    const char *chrome, *html;
    int compare;
    struct p3d_vsel sel;
};

static void p3d_usage(FILE *f)
{
    fprintf(f,
        "usage: p3d-analyze [options] DIR...\n"
        "       p3d-analyze --dump FILE...\n"
        "\n"
        "DIR is a job folder (rank-*.p3d files) or a folder of job folders.\n"
        "  --json FILE|-     also write the report as JSON (schema "
        "p3d-analyze/1);\n"
        "                    '-' writes it to stdout instead of the text\n"
        "  --layout SPEC     tp=2,pp=2,cp=1,ep=1,order=tp-cp-ep-dp-pp: use "
        "this layout\n"
        "                    (order: first axis fastest, Megatron's "
        "spelling; 'titan'\n"
        "                    = torchtitan's pp-dp-cp-tp mesh)\n"
        "  --all             analyse every job found, not only the newest\n"
        "  --chrome FILE     timeline as Chrome trace JSON (Perfetto, "
        "chrome://tracing)\n"
        "  --html FILE       self-contained HTML report with pictures\n"
        "  --window SPEC     --chrome/--html: iter:A-B (iterations from 0) "
        "or\n"
        "                    t:START-END (ms from the job's start)\n"
        "  --ranks LIST      --chrome/--html: only these ranks, e.g. "
        "0-7,12\n"
        "  --compare         every DIR is one run: print one table row per "
        "run\n"
        "                    (Markdown; with --json, a JSON array)\n"
        "  --dump            print the records of trace FILEs as text\n"
        "  --threads N       reader threads (default: online CPUs, max 8)\n"
        "  --no-match        skip cross-rank matching\n"
        "  -q, --quiet       no notes on stderr\n"
        "  -h, --help        this text\n");
}

static int p3d_parse_args(int argc, char **argv, struct p3d_opts *o)
{
    static const struct option lo[] = {
        {"json", required_argument, NULL, 'j'},
        {"layout", required_argument, NULL, 'l'},
        {"all", no_argument, NULL, 'a'},
        {"dump", no_argument, NULL, 'd'},
        {"threads", required_argument, NULL, 't'},
        {"no-match", no_argument, NULL, 'm'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"chrome", required_argument, NULL, 'C'},
        {"html", required_argument, NULL, 'H'},
        {"window", required_argument, NULL, 'W'},
        {"ranks", required_argument, NULL, 'R'},
        {"compare", no_argument, NULL, 'P'},
        {NULL, 0, NULL, 0}};
    int c;
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    memset(o, 0, sizeof(*o));
    o->threads = n > 8 ? 8 : n < 1 ? 1 : (int)n;
    o->match = 1;
    o->sel.iter_a = o->sel.iter_b = -1;
    o->sel.ms_b = -1;
    while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
        switch (c) {
        case 'j': o->json = optarg; break;
        case 'l': o->layout = optarg; break;
        case 'a': o->all = 1; break;
        case 'd': o->dump = 1; break;
        case 't': o->threads = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
        case 'm': o->match = 0; break;
        case 'q': p3d_quiet = 1; break;
        case 'h': p3d_usage(stdout); exit(0);
        case 'C': o->chrome = optarg; break;
        case 'H': o->html = optarg; break;
        case 'W': if (p3d_vsel_window(&o->sel, optarg)) return -1; break;
        case 'R': if (p3d_vsel_ranks(&o->sel, optarg)) return -1; break;
        case 'P': o->compare = 1; break;
        default: p3d_usage(stderr); return -1;
        }
    }
    if (optind >= argc) {
        p3d_error("no %s given", o->dump ? "trace file" : "trace folder");
        p3d_usage(stderr);
        return -1;
    }
    return 0;
}

static void p3d_print_rank_msgs(struct p3d_job *job)
{
    char miss[256];
    int n;

    for (int i = 0; i < job->n_ranks; i++) {
        struct p3d_rank *r = &job->ranks[i];
        if (r->err[0])
            p3d_error("%s", r->err);
        if (r->warn[0])
            p3d_warning("%s", r->warn);
        if (r->hdr.flags & P3D_F_DROPPED)
            p3d_warning("'%s': %" PRIu64 " records were dropped while "
                        "recording", r->path, r->hdr.dropped_records);
    }
    n = p3d_missing_ranks(job, miss, sizeof(miss));
    if (n)
        p3d_warning("job '%s': %d of %d ranks have no readable trace file "
                    "(ranks %s)", job->job_id, n, job->world_size, miss);
}

static void p3d_set_layout(struct p3d_job *job, const struct p3d_opts *o)
{
    struct p3d_layout user;

    for (int i = 0; i < job->n_ranks && !job->hint.valid; i++)
        if (!job->ranks[i].failed && job->ranks[i].cmdline)
            p3d_layout_from_cmdline(&job->hint, job->ranks[i].cmdline,
                                    job->ranks[i].cmdline_len,
                                    job->world_size);
    p3d_layout_infer(job, job->hint.valid ? &job->hint : NULL, 0,
                     &job->layout);
    job->hint_fits = job->hint.valid && !job->layout.contradicted;
    if (!o->layout)
        return;
    if (p3d_layout_parse(&user, o->layout, job->world_size) < 0)
        exit(P3D_EXIT_BAD);
    p3d_layout_infer(job, &user, 1, &job->layout);
}

static void p3d_world(struct p3d_job *job)
{
    for (int i = 0; i < job->n_ranks; i++)
        if (job->ranks[i].rank >= job->world_size)
            job->world_size = job->ranks[i].rank + 1;
}

static void p3d_analyse(struct p3d_job *job, const struct p3d_opts *o)
{
    struct p3d_matcher *m = o->match ? p3d_matcher_new() : NULL;

    p3d_world(job);
    for (int i = 0; i < job->n_ranks; i++)
        job->ranks[i].matcher = m;
    p3d_job_scan(job, o->threads);
    p3d_print_rank_msgs(job);
    p3d_comm_join(job);
    for (int i = 0; i < job->n_ranks; i++)
        job->have_gpu |= job->ranks[i].n_gpu_ops > 0;
    p3d_set_layout(job, o);
    p3d_label_all(job);
    if (m)
        p3d_matcher_finish(m, job);
    p3d_time_job(job); /* p3d_time.h: clocks, steps, bubble, waits */
    p3d_hang_analyze(job);  /* issue 7 */
}

static void p3d_say_jobs(const struct p3d_jobset *set, int all)
{
    const struct p3d_job *j = &set->jobs[set->n - 1];
    char when[64];

    if (set->n < 2)
        return;
    p3d_job_started(j, when, sizeof(when));
    if (all)
        p3d_note("found %d jobs; analysing each (oldest first)", set->n);
    else
        p3d_warning("found traces of %d jobs; analysing the newest, job "
                    "'%s' started %s (use --all for every job)", set->n,
                    j->job_id, when);
}

static FILE *p3d_open_json(const char *path)
{
    FILE *f;

    if (!path)
        return NULL;
    if (!strcmp(path, "-"))
        return stdout;
    f = fopen(path, "w");
    if (!f)
        p3d_die("cannot write '%s'", path);
    return f;
}

/* --chrome and --html of one job (the k-th analysed: FILE-k after the
 * first when --all gives several). */
static void p3d_views(struct p3d_job *job, const struct p3d_opts *o, int k)
{
    char path[4096];
    const char *out[2] = {o->chrome, o->html};

    for (int v = 0; v < 2; v++) {
        if (!out[v])
            continue;
        if (k)
            snprintf(path, sizeof(path), "%s-%d", out[v], k);
        else
            snprintf(path, sizeof(path), "%s", out[v]);
        if (v == 0)
            p3d_chrome_write(path, job, &o->sel);
        else
            p3d_html_write(path, job, &o->sel);
    }
}

static void p3d_compare_one(struct p3d_job *job, void *ctx)
{
    p3d_analyse(job, ctx);
}

static int p3d_run(struct p3d_opts *o, char **paths, int n)
{
    struct p3d_jobset set;
    FILE *js;
    int first;

    p3d_discover(paths, n, &set);
    if (!set.n) {
        p3d_error("no readable trace files found");
        return P3D_EXIT_BAD;
    }
    p3d_say_jobs(&set, o->all);
    js = p3d_open_json(o->json);
    first = o->all ? 0 : set.n - 1;
    if (js && o->all && set.n > 1)
        fputs("[\n", js);
    for (int i = first; i < set.n; i++) {
        p3d_analyse(&set.jobs[i], o);
        if (js != stdout)
            p3d_report_text(stdout, &set.jobs[i]);
        if (js)
            p3d_json_write(js, &set.jobs[i]);
        if (js && o->all && set.n > 1)
            fputs(i + 1 < set.n ? ",\n" : "]\n", js);
        p3d_views(&set.jobs[i], o, i - first);
        p3d_time_free(&set.jobs[i]);
        p3d_hang_free(&set.jobs[i]);
        p3d_job_free(&set.jobs[i]);
    }
    for (int i = 0; i < first; i++)
        p3d_job_free(&set.jobs[i]);
    if (js && js != stdout && fclose(js))
        p3d_error("cannot write '%s'", o->json);
    free(set.jobs);
    return p3d_n_errors ? P3D_EXIT_BAD : 0;
}

int main(int argc, char **argv)
{
    struct p3d_opts o;
    int ret = 0;

    p3d_malloc_tune();

    if (p3d_parse_args(argc, argv, &o) < 0)
        return P3D_EXIT_BAD;
    if (o.layout && p3d_layout_parse(&(struct p3d_layout){0}, o.layout, 0))
        return P3D_EXIT_BAD;
    if (o.compare)
        ret = p3d_compare_run(argv + optind, argc - optind, o.json,
                              p3d_compare_one, &o);
    else if (!o.dump)
        ret = p3d_run(&o, argv + optind, argc - optind);
    else
        for (int i = optind; i < argc; i++)
            if (p3d_dump_file(stdout, argv[i]) != 0)
                ret = P3D_EXIT_BAD;
    p3d_vsel_free(&o.sel);
    if (fflush(stdout) != 0)
        ret = P3D_EXIT_BAD;
    return ret;
}
