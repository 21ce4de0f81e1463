/*
 * test_analyse.c - the pipeline (analyzer/analyse/) on the committed
 * example job (traces/example-tp2pp2dp2, recorded by the shim from the
 * simulated TP=2 PP=2 DP=2 job), and what its passes and writers leave:
 * the wait states (time/p3d_wait.c), the hang analysis of a job that
 * exited (hang/), the findings, and the Chrome and HTML writers' files;
 * and on the real hang recorded on the H200 (tests/data/h200-mesh-hang:
 * rank 5 skipped its dp reduce-scatters), the hang graph's root and
 * chain (hang/p3d_hang_graph.c) with and without GPU times.
 * The example's timings differ each time it is recorded; these checks
 * hold for any recording of that job.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "p3d_analyse.h"
#include "p3d_chrome.h"
#include "p3d_discover.h"
#include "p3d_findings.h"
#include "p3d_hang.h"
#include "p3d_html.h"
#include "p3d_time.h"
#include "p3d_util.h"

static char example[600], src_dir[512];

static struct p3d_jobset load_dir(const char *dir, const char *layout)
{
    struct p3d_analyse_opts o = {2, 1, layout, 0};
    char *dirs[1] = {(char *)dir};
    struct p3d_jobset set;

    assert_int_equal(p3d_discover(dirs, 1, &set), 0);
    assert_int_equal(set.n, 1);
    if (layout && strcmp(layout, "infer"))
        assert_int_equal(p3d_analyse_job(&set.jobs[0], &o), -1);
    else
        assert_int_equal(p3d_analyse_job(&set.jobs[0], &o), 0);
    return set;
}

static struct p3d_jobset load(const char *layout)
{
    return load_dir(example, layout);
}

static void unload(struct p3d_jobset *set)
{
    for (int i = 0; i < set->n; i++)
        p3d_analysed_free(&set->jobs[i]);
    free(set->jobs);
}

static int member_of_label(const struct p3d_job *job, int label, int rank)
{
    for (int i = 0; i < job->n_comms; i++)
        if (job->comms[i].label == label)
            for (int k = 0; k < job->comms[i].n_members; k++)
                if (job->comms[i].members[k] == rank)
                    return 1;
    return 0;
}

static void test_waits(void **state)
{
    struct p3d_jobset set = load(NULL);
    const struct p3d_job *job = &set.jobs[0];
    const struct p3d_time_res *t = job->time;

    (void)state;
    assert_non_null(t);
    assert_int_equal(t->n_iter, 3);
    assert_true(t->n_wait_inst > 0);
    /* TP's collectives wait for their last member; the rank most often
     * last is one of TP's members */
    assert_true(t->nxn_ms[P3D_LBL_TP] > 0);
    assert_true(member_of_label(job, P3D_LBL_TP, t->late_rank[P3D_LBL_TP]));
    assert_true(t->late_sender_ms >= 0 && t->late_receiver_ms >= 0);
    assert_true(t->n_strag > 0);
    for (int i = 1; i < t->n_strag; i++) /* ranked by waiting caused */
        assert_true(t->strag[i - 1].caused_ms >= t->strag[i].caused_ms);
    /* the shares of the step add up */
    assert_true(t->f_compute + t->f_exposed + t->f_idle + t->f_copy <= 1.001);
    assert_true(t->f_compute + t->f_exposed + t->f_idle + t->f_copy >= 0.95);
    unload(&set);
}

static void test_no_hang(void **state)
{
    struct p3d_jobset set = load(NULL);
    const struct p3d_job *job = &set.jobs[0];

    (void)state;
    assert_non_null(job->hang);
    assert_false(job->hang->detected);
    assert_int_equal(job->hang->n_roots, 0);
    assert_non_null(p3d_findings_of(job));
    for (int i = 0; i < p3d_findings_of(job)->n; i++) {
        assert_non_null(p3d_findings_of(job)->f[i].next);
        assert_null(strstr(p3d_findings_of(job)->f[i].what, "HUNG"));
    }
    unload(&set);
}

static void test_layout_misfit(void **state)
{
    struct p3d_jobset set = load("tp=4,pp=4"); /* 16 ranks: not 8 */

    (void)state;
    assert_null(p3d_findings_of(&set.jobs[0])); /* the pipeline stopped */
    unload(&set);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = p3d_xmalloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static int count(const char *s, const char *what)
{
    int n = 0;

    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static void test_writers(void **state)
{
    struct p3d_jobset set = load(NULL);
    struct p3d_vsel sel;
    char path[64];
    char *s;
    int depth = 0, min = 0;

    (void)state;
    memset(&sel, 0, sizeof(sel));
    sel.iter_a = sel.iter_b = -1;
    sel.ms_b = -1;
    snprintf(path, sizeof(path), "/tmp/p3d-analyse-%d.json", (int)getpid());
    assert_int_equal(p3d_chrome_write(path, &set.jobs[0], &sel), 0);
    s = slurp(path);
    assert_non_null(strstr(s, "\"traceEvents\""));
    for (const char *p = s; *p; p++) { /* braces balance (no strings hold
                                          one in this job) */
        depth += (*p == '{') - (*p == '}');
        min = depth < min ? depth : min;
    }
    assert_int_equal(depth, 0);
    assert_int_equal(min, 0);
    assert_true(count(s, "\"ph\": \"X\"") + count(s, "\"ph\":\"X\"") > 0);
    free(s);
    unlink(path);
    snprintf(path, sizeof(path), "/tmp/p3d-analyse-%d.html", (int)getpid());
    assert_int_equal(p3d_html_write(path, &set.jobs[0], &sel), 0);
    s = slurp(path);
    assert_non_null(strstr(s, "<section id=\"findings\">"));
    assert_non_null(strstr(s, "<section id=\"bars\">"));
    assert_int_equal(count(s, "<svg"), count(s, "</svg>"));
    assert_null(strstr(s, "nan%"));  /* no figure printed from a NaN */
    assert_null(strstr(s, ">nan"));
    assert_null(strstr(s, "-nan"));
    assert_null(strstr(s, "<script"));
    free(s);
    unlink(path);
    unload(&set);
}

/* Unpack tests/data/TARBALL into dir (made), so a test can load it. */
static void extract(const char *dir, const char *tarball)
{
    char cmd[1200];

    snprintf(cmd, sizeof(cmd), "mkdir -p %s && tar -xzf %s/tests/data/%s "
             "-C %s", dir, src_dir, tarball, dir);
    assert_int_equal(system(cmd), 0);
}

/* The job's hang analysis found a hang with exactly this one root. */
static const struct p3d_hang_res *one_root(const struct p3d_jobset *set,
                                           int rank)
{
    const struct p3d_hang_res *h = set->jobs[0].hang;

    assert_non_null(h);
    assert_true(h->detected);
    assert_int_equal(h->n_roots, 1);
    assert_int_equal(h->roots[0].rank, rank);
    return h;
}

/* Remove what extract unpacked. */
static void extract_rm(const char *dir)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* The H200 hang, one GPU timing: extracted under /tmp, analysed. */
static void check_mesh_hang(const char *mode)
{
    char dir[64], tarball[96];
    struct p3d_jobset set;
    const struct p3d_hang_res *h;
    int waits_on_5 = 0;

    snprintf(dir, sizeof(dir), "/tmp/p3d-mesh-%s-%d", mode, (int)getpid());
    snprintf(tarball, sizeof(tarball), "h200-mesh-hang/%s.tar.gz", mode);
    extract(dir, tarball);
    set = load_dir(dir, NULL);
    h = one_root(&set, 5);
    assert_true(h->n_waiting >= 1);
    /* with GPU times every rank is inside NCCL, the root too (its op
     * disagrees); host records only: it never issued its op */
    for (int i = 0; i < h->n_waiting; i++)
        for (int k = 0; k < h->wait[i].n_for; k++)
            waits_on_5 |= h->wait[i].rank != 5 &&
                          h->wait[i].waiting_for[k] == 5;
    assert_true(waits_on_5); /* another rank's wait ends at the root */
    assert_non_null(p3d_findings_of(&set.jobs[0]));
    assert_int_equal(p3d_findings_of(&set.jobs[0])->f[0].sev, P3D_SEV_BAD);
    assert_non_null(strstr(p3d_findings_of(&set.jobs[0])->f[0].what, "root rank 5"));
    unload(&set);
    extract_rm(dir);
}

/*
 * A victim whose peer has no GPU completion times (tests/data/
 * sim-hang-nogpu-peer): the killed rank 3 is the one root; rank 6 waits
 * on rank 2, whose part is of unknown completion, and is not a root.
 */
static void test_hang_peer_without_gpu_times(void **state)
{
    char dir[64], job[80];
    struct p3d_jobset set;
    const struct p3d_hang_res *h;
    int six = 0;

    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/p3d-nogpu-%d", (int)getpid());
    extract(dir, "sim-hang-nogpu-peer/kill3.tar.gz");
    snprintf(job, sizeof(job), "%s/k3", dir);
    set = load_dir(job, NULL);
    h = one_root(&set, 3);
    for (int i = 0; i < h->n_waiting; i++)
        if (h->wait[i].rank == 6) {
            six = 1;
            assert_true(h->wait[i].unknown);
            assert_true(h->wait[i].n_for_op >= 1);
            assert_int_equal(h->wait[i].waiting_for[0], 2);
        }
    assert_true(six);
    unload(&set);
    extract_rm(dir);
}

static void test_real_hang_gpu(void **state)
{
    (void)state;
    check_mesh_hang("auto");
}

static void test_real_hang_host_only(void **state)
{
    (void)state;
    check_mesh_hang("off");
}

int main(void)
{
    const char *src = getenv("P3D_SRC");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waits),
        cmocka_unit_test(test_no_hang),
        cmocka_unit_test(test_layout_misfit),
        cmocka_unit_test(test_writers),
        cmocka_unit_test(test_hang_peer_without_gpu_times),
        cmocka_unit_test(test_real_hang_gpu),
        cmocka_unit_test(test_real_hang_host_only),
    };

    snprintf(src_dir, sizeof(src_dir), "%s", src ? src : ".");
    snprintf(example, sizeof(example), "%s/traces/example-tp2pp2dp2",
             src_dir);
    if (access(example, R_OK)) {
        printf("skip: no %s\n", example);
        return 0;
    }
    p3d_quiet = 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
