/*
 * p3d_main.c - the p3d-analyze command line.
 *
 *   p3d-analyze [options] DIR...     analyse the job(s) under DIR
 *   p3d-analyze --dump FILE...       print every record as text
 *
 * Exit status: 0 on success (problems found in a job are reported, not
 * errors), 2 on bad usage or unreadable input.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "p3d_analyse.h"
#include "p3d_chrome.h"
#include "p3d_compare.h"
#include "p3d_discover.h"
#include "p3d_dist.h"
#include "p3d_dist_discover.h"
#include "p3d_dump.h"
#include "p3d_html.h"
#include "p3d_infer.h"
#include "p3d_json.h"
#include "p3d_layout.h"
#include "p3d_report.h"
#include "p3d_strbuf.h"
#include "p3d_util.h"

struct p3d_opts {
    int dump, all, threads, match;
    const char *json, *layout;
    /* views (issue 8) */
    const char *chrome, *html;
    const char *window, *ranks; /* the specs as given, for messages */
    int compare;
    int local;       /* --local (p3d-analyze-mpi) */
    unsigned detail; /* --detail: P3D_DETAIL_* */
    int quiet;       /* -q */
    struct p3d_vsel sel;
};

/* The outputs written so far, removed again when a run fails. */
struct p3d_outs {
    FILE *js;    /* --json, opened at the first job that passed */
    int multi;   /* --json holds an array (--all, several jobs) */
    int n_views; /* jobs whose --chrome/--html files were written */
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
        "                    = torchtitan's pp-dp-cp-tp mesh; etp=N: "
        "the experts'\n"
        "                    TP; dp_shard=N: torchtitan's HSDP); 'infer': "
        "from the\n"
        "                    traces alone, ignoring a recorded command "
        "line\n"
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
        "  --detail[=LIST]   add to the report: ranks, comms, map, time, "
        "hang\n"
        "                    (per rank, per communicator, the coordinate "
        "map stage\n"
        "                    by stage, per iteration and wait states, every "
        "waiting\n"
        "                    rank); no LIST: all of them\n"
        "  -q, --quiet       no notes on stderr, and no text report on "
        "stdout when\n"
        "                    --json, --chrome or --html writes a file\n"
        "  --local           p3d-analyze-mpi: each process reads the trace "
        "files in\n"
        "                    its own DIR (a node's local disk), and they "
        "analyse\n"
        "                    the union\n"
        "  -h, --help        this text\n");
}

static int p3d_parse_threads(const char *s, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < 1 || v > INT_MAX)
        return p3d_error("bad --threads '%s': expected a whole number, 1 "
                         "or more", s);
    *out = (int)v;
    return 0;
}

/* Options that mean nothing together: a usage error, not silence. */
static int p3d_check_combos(const struct p3d_opts *o)
{
    const char *view = o->chrome ? "--chrome" : o->html ? "--html" : NULL;
    const char *dumped = o->compare ? "--compare" : o->json ? "--json"
                         : view;

    if (o->dump && dumped)
        return p3d_error("--dump does not combine with %s (--dump only "
                         "prints the records of trace files as text)",
                         dumped);
    if (o->compare && view)
        return p3d_error("%s does not combine with --compare (it prints "
                         "one table row per run); run p3d-analyze %s FILE "
                         "DIR for one run's views", view, view);
    if ((o->window || o->ranks) && !view && !o->dump)
        p3d_warning("%s only %s what --chrome and --html draw; ignored "
                    "without them", o->window ? "--window" : "--ranks",
                    o->window && o->ranks ? "and --ranks choose" :
                    "chooses");
    return 0;
}

/* getopt's ':' (a value missing) or '?' (no such option). */
static void p3d_bad_option(int c, const char *arg)
{
    char shortopt[3] = {'-', (char)optopt, 0};

    if (c == '?' && optopt)
        arg = shortopt;
    p3d_error("%s '%s' (p3d-analyze --help lists the options)",
              c == ':' ? "no value given for option" : "unknown option", arg);
}

/* No DIR after the options: when an output option took the folder as its
 * file name, say so rather than that no folder was given. */
static void p3d_no_dir_given(const struct p3d_opts *o)
{
    const char *name[] = {"--json", "--chrome", "--html"};
    const char *val[] = {o->json, o->chrome, o->html};
    struct stat st;

    for (int i = 0; i < 3; i++)
        if (val[i] && !stat(val[i], &st) && S_ISDIR(st.st_mode)) {
            p3d_error("%s takes a file name, and '%s' is a folder: give "
                      "the output file first, e.g. %s report DIR (or %s - "
                      "for stdout)", name[i], val[i], name[i], name[i]);
            return;
        }
    p3d_error("no %s given", o->dump ? "trace file" : "trace folder");
    p3d_usage(stderr);
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
        {"detail", optional_argument, NULL, 'D'},
        {"local", no_argument, NULL, 'L'},
        {NULL, 0, NULL, 0}};
    int c;
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    memset(o, 0, sizeof(*o));
    o->threads = n > 8 ? 8 : n < 1 ? 1 : (int)n;
    o->match = 1;
    o->sel.iter_a = o->sel.iter_b = -1;
    o->sel.ms_b = -1;
    opterr = 0; /* its messages name argv[0]; ours say p3d-analyze */
    while ((c = getopt_long(argc, argv, ":qh", lo, NULL)) != -1) {
        switch (c) {
        case 'j': o->json = optarg; break;
        case 'l': o->layout = optarg; break;
        case 'a': o->all = 1; break;
        case 'd': o->dump = 1; break;
        case 't':
            if (p3d_parse_threads(optarg, &o->threads))
                return -1;
            break;
        case 'm': o->match = 0; break;
        case 'q': p3d_quiet = o->quiet = 1; break;
        case 'D':
            if (!optarg)
                o->detail = P3D_DETAIL_ALL;
            else if (p3d_detail_parse(optarg, &o->detail))
                return -1;
            break;
        case 'h': p3d_usage(stdout); exit(0);
        case 'C': o->chrome = optarg; break;
        case 'H': o->html = optarg; break;
        case 'W':
            o->window = optarg;
            if (p3d_vsel_window(&o->sel, optarg))
                return -1;
            break;
        case 'R':
            o->ranks = optarg;
            if (p3d_vsel_ranks(&o->sel, optarg))
                return -1;
            break;
        case 'P': o->compare = 1; break;
        case 'L': o->local = 1; break;
        default: p3d_bad_option(c, argv[optind - 1]); return -1;
        }
    }
    if (optind >= argc) {
        p3d_no_dir_given(o);
        return -1;
    }
    return p3d_check_combos(o);
}

/* 0 if path can be written, else the errno saying why not. */
static int p3d_out_errno(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    struct stat st;

    if (!stat(path, &st))
        return S_ISDIR(st.st_mode) ? EISDIR
               : access(path, W_OK) ? errno : 0;
    if (errno != ENOENT)
        return errno;
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s",
                 slash == path ? 1 : (int)(slash - path), path);
    return access(dir, W_OK | X_OK) ? errno : 0;
}

/*
 * Whether an output file can be written, checked before any work so that
 * a long analysis does not end in "cannot write".  "-" is stdout.
 */
static int p3d_check_out(const char *opt, const char *path)
{
    int e;

    if (!path || !strcmp(path, "-"))
        return 0;
    if (!*path)
        return p3d_error("%s: empty file name", opt);
    e = p3d_out_errno(path);
    if (e)
        return p3d_error("%s: cannot write '%s': %s", opt, path,
                         strerror(e));
    return 0;
}

static int p3d_check_outs(const struct p3d_opts *o)
{
    int bad = p3d_check_out("--json", o->json) < 0;

    bad |= p3d_check_out("--chrome", o->chrome) < 0;
    bad |= p3d_check_out("--html", o->html) < 0;
    return bad ? -1 : 0;
}

/*
 * Only process 0 writes the outputs, so only it checks them (the others
 * may run where it cannot write), and it tells the others the answer:
 * a process that went on alone would wait for the rest until the
 * deadline.
 */
static int p3d_outs_writable(const struct p3d_opts *o)
{
    struct p3d_dist *d = p3d_dist_active;
    struct p3d_bytes b = {0};
    char ok;

    if (!d)
        return p3d_check_outs(o);
    if (d->self == 0) {
        ok = p3d_check_outs(o) == 0;
        p3d_bytes_put(&b, &ok, 1);
    }
    d->bcast(d, &b);
    ok = b.n == 1 && b.p[0];
    p3d_bytes_free(&b);
    return ok ? 0 : -1;
}

/* The pipeline's options from the command line's. */
static struct p3d_analyse_opts p3d_pipeline_opts(const struct p3d_opts *o)
{
    struct p3d_analyse_opts a = {o->threads, o->match, o->layout, 1,
                                 o->chrome || o->html};

    return a;
}

/* Returns -1 (message printed) when --layout does not fit the job. */
static int p3d_analyse(struct p3d_job *job, const struct p3d_opts *o)
{
    struct p3d_analyse_opts a = p3d_pipeline_opts(o);

    return p3d_analyse_job(job, &a);
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
        p3d_die("--json: cannot write '%s': %s", path, strerror(errno));
    return f;
}

/* The k-th analysed job's --chrome or --html file: FILE-k after the
 * first when --all gives several. */
static void p3d_view_path(char *buf, size_t n, const char *out, int k)
{
    if (k)
        snprintf(buf, n, "%s-%d", out, k);
    else
        snprintf(buf, n, "%s", out);
}

/* --chrome and --html of one job (the k-th analysed). */
static void p3d_views(struct p3d_job *job, const struct p3d_opts *o, int k)
{
    char path[4096];
    const char *out[2] = {o->chrome, o->html};

    for (int v = 0; v < 2; v++) {
        if (!out[v])
            continue;
        p3d_view_path(path, sizeof(path), out[v], k);
        if (v == 0)
            p3d_chrome_write(path, job, &o->sel);
        else
            p3d_html_write(path, job, &o->sel);
    }
}

/* "ranks 0-7" (or "rank 0") of a job of n ranks, into buf. */
static void p3d_rank_range(char *buf, size_t len, int n)
{
    if (n <= 1)
        snprintf(buf, len, "rank 0");
    else
        snprintf(buf, len, "ranks 0-%d", n - 1);
}

/* --ranks against the job: none of its ranks is an error. */
static int p3d_check_ranks(const struct p3d_job *job,
                           const struct p3d_opts *o)
{
    int drawn = 0, outside = 0;
    char range[64];

    for (int i = 0; i < job->n_ranks; i++)
        drawn += !job->ranks[i].failed &&
                 p3d_vsel_has(&o->sel, job->ranks[i].rank);
    for (int i = 0; i < o->sel.n_ranks; i++)
        outside += o->sel.ranks[i] >= job->world_size;
    p3d_rank_range(range, sizeof(range), job->world_size);
    if (outside == o->sel.n_ranks)
        return p3d_error("--ranks %s: job '%s' has no such rank (it has "
                         "%s)", o->ranks, job->job_id, range);
    if (!drawn)
        return p3d_error("--ranks %s: none of these ranks of job '%s' has "
                         "a readable trace", o->ranks, job->job_id);
    if (outside)
        p3d_warning("--ranks %s: %d of the ranks given are not in job '%s' "
                    "(it has %s)", o->ranks, outside, job->job_id, range);
    return 0;
}

/*
 * The views' selection against an analysed job, before anything of it is
 * written.  Returns -1 (message printed) when it selects nothing.
 */
static int p3d_check_sel(const struct p3d_job *job, const struct p3d_opts *o)
{
    struct p3d_vwin w;

    if (!o->chrome && !o->html)
        return 0;
    if (o->ranks && p3d_check_ranks(job, o) < 0)
        return -1;
    if (o->sel.iter_a >= 0 || o->sel.ms_b >= 0)
        return p3d_vsel_resolve(job, &o->sel, &w);
    return 0;
}

/* A failed run leaves no output file behind (stdout aside). */
static void p3d_remove_outs(const struct p3d_opts *o, struct p3d_outs *out)
{
    const char *v[2] = {o->chrome, o->html};
    char path[4096];

    if (out->js && out->js != stdout) {
        fclose(out->js);
        unlink(o->json);
    }
    out->js = NULL;
    for (int k = 0; k < out->n_views; k++)
        for (int i = 0; i < 2; i++) {
            if (!v[i] || !strcmp(v[i], "-"))
                continue;
            p3d_view_path(path, sizeof(path), v[i], k);
            unlink(path);
        }
}

/* -q with an output file: that file is the output, stdout stays empty. */
static int p3d_quiet_stdout(const struct p3d_opts *o)
{
    const char *file[] = {o->json, o->chrome, o->html};

    for (int i = 0; o->quiet && i < 3; i++)
        if (file[i] && strcmp(file[i], "-"))
            return 1;
    return 0;
}

/* Analyse one job (the k-th) and write its outputs. */
static int p3d_run_job(struct p3d_job *job, const struct p3d_opts *o,
                       struct p3d_outs *out, int k, int last)
{
    if (p3d_analyse(job, o) < 0 || p3d_check_sel(job, o) < 0)
        return -1;
    if (o->json && !out->js) {
        out->js = p3d_open_json(o->json);
        if (out->multi)
            fputs("[\n", out->js);
    }
    if (out->js != stdout && !p3d_quiet_stdout(o))
        p3d_report_text(stdout, job, o->detail);
    if (out->js)
        p3d_json_write(out->js, job);
    if (out->js && out->multi)
        fputs(last ? "]\n" : ",\n", out->js);
    p3d_views(job, o, k);
    out->n_views = k + 1;
    return 0;
}

/* --compare's analysis of one run (-1: --layout does not fit it). */
static int p3d_compare_one(struct p3d_job *job, void *ctx)
{
    return p3d_analyse(job, ctx);
}

/* "no readable trace files found under 'a', 'b'" */
static void p3d_no_traces(char **paths, int n)
{
    struct p3d_sb list = P3D_SB_INIT;

    for (int i = 0; i < n; i++)
        p3d_sb_addf(&list, "%s'%s'", i ? ", " : "", paths[i]);
    p3d_error("no readable trace files found under %s", p3d_sb_str(&list));
    p3d_sb_free(&list);
}

static int p3d_run(struct p3d_opts *o, char **paths, int n)
{
    struct p3d_jobset set;
    struct p3d_outs out;
    int first, failed = 0;

    if (o->local && p3d_dist_active)
        p3d_dist_discover(p3d_dist_active, paths, n, &set);
    else
        p3d_discover(paths, n, &set);
    if (!set.n) {
        p3d_no_traces(paths, n);
        free(set.jobs);
        return P3D_EXIT_BAD;
    }
    p3d_discover_say(&set, o->all, NULL);
    first = o->all ? 0 : set.n - 1;
    if (p3d_dist_active && set.n - first > 1) {
        p3d_error("p3d-analyze-mpi analyses one job at a time; --all "
                  "found %d (run it once per job folder)", set.n - first);
        for (int i = 0; i < set.n; i++)
            p3d_job_free(&set.jobs[i]);
        free(set.jobs);
        return P3D_EXIT_BAD;
    }
    memset(&out, 0, sizeof(out));
    out.multi = o->all && set.n > 1;
    for (int i = first; i < set.n && !failed; i++) {
        failed = p3d_run_job(&set.jobs[i], o, &out, i - first,
                             i + 1 == set.n) < 0;
        p3d_analysed_free(&set.jobs[i]);
    }
    for (int i = 0; i < set.n; i++)
        if (set.jobs[i].ranks) /* not analysed */
            p3d_job_free(&set.jobs[i]);
    if (failed)
        p3d_remove_outs(o, &out);
    if (out.js && out.js != stdout && fclose(out.js))
        p3d_error("--json: cannot write '%s': %s", o->json,
                  strerror(errno));
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
    if (o.layout && strcmp(o.layout, "infer") &&
        p3d_layout_parse(&(struct p3d_layout){0}, o.layout, 0))
        return P3D_EXIT_BAD;
    if (o.local && !p3d_dist_mpi) {
        p3d_error("--local is for p3d-analyze-mpi (each MPI process reads "
                  "its own folder); p3d-analyze reads every DIR given");
        return P3D_EXIT_BAD;
    }
    if (p3d_dist_active)
        p3d_dist_active->local = o.local;
    if (p3d_outs_writable(&o) < 0)
        return P3D_EXIT_BAD;
    if (o.compare && p3d_dist_active) {
        p3d_error("--compare runs one process (p3d-analyze, or mpirun -n "
                  "1)");
        return P3D_EXIT_BAD;
    }
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
