/*
 * sim_driver.c - launches the ranks of a simulated job and reaps them.
 *
 * Like torchrun: fork+exec one process per rank with RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR/PORT; when one rank fails the
 * others are terminated after a grace period, and after --timeout the
 * whole job is (SIGTERM, then SIGKILL a second later).
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"
#include "sim_driver.h"

static double sim_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int sim_mkdirs(const char *path)
{
    char buf[PATH_MAX + 128];

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* What a run leaves in its job folder; nothing else there is touched. */
static int sim_is_ours(const char *name)
{
    return !strcmp(name, "truth.json") ||
           (!strncmp(name, "rank-", 5) && strstr(name, ".p3d")) ||
           !strncmp(name, ".gpu-", 5);
}

static int sim_rm_one(const char *p, const struct stat *st, int flag,
                      struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

static void sim_rm_rf(const char *path)
{
    nftw(path, sim_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Old traces of the same job id would mix with ours: remove them (and
 * only them). */
static void sim_clean_job(const char *jobdir)
{
    char path[PATH_MAX + 300];
    struct dirent *e;
    DIR *d = opendir(jobdir);

    if (d == NULL) {
        sim_mkdirs(jobdir);
        return;
    }
    while ((e = readdir(d)) != NULL)
        if (sim_is_ours(e->d_name) &&
            snprintf(path, sizeof(path), "%s/%s", jobdir, e->d_name) <
                (int)sizeof(path))
            remove(path);
    closedir(d);
}

static void sim_setenv_int(const char *k, long long v)
{
    char buf[32];

    snprintf(buf, sizeof(buf), "%lld", v);
    setenv(k, buf, 1);
}

static void sim_child_env(const struct sim_cfg *c, const struct sim_run *run,
                          int r)
{
    int hosts = c->hosts > 0 ? c->hosts : 1, per = c->world / hosts;
    int h = sim_host_of(c, r);
    char buf[PATH_MAX + 16];

    sim_setenv_int("RANK", r);
    sim_setenv_int("WORLD_SIZE", c->world);
    sim_setenv_int("LOCAL_RANK", r % per);
    sim_setenv_int("LOCAL_WORLD_SIZE", per);
    sim_setenv_int("GROUP_RANK", h);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    sim_setenv_int("MASTER_PORT", run->port);
    setenv("P3D_TRACE_DIR", c->out, 1);
    setenv("P3D_JOB_ID", c->job_id, 1);
    snprintf(buf, sizeof(buf), "%s/shm", run->scratch);
    setenv("P3D_FAKE_SHM_DIR", buf, 1);
    sim_setenv_int("P3D_FAKE_NDEV", per);
    sim_setenv_int("P3DSIM_RANK", r);
    setenv("P3DSIM_SCRATCH", run->scratch, 1);
    if (c->hosts > 1) {
        snprintf(buf, sizeof(buf), "simhost-%d", h);
        setenv("P3D_TEST_HOSTNAME", buf, 1);
        sim_setenv_int("P3D_TEST_CLOCK_OFFSET_NS", sim_host_offset(c, h));
    }
    if (c->async)
        setenv("P3D_FAKE_ASYNC", "1", 1);
    if (c->shim[0])
        setenv("LD_PRELOAD", c->shim, 1);
}

static int sim_launch(const struct sim_cfg *c, struct sim_run *run,
                      char **argv)
{
    pid_t parent = getpid();

    for (int r = 0; r < c->world; r++) {
        pid_t pid = fork();

        if (pid < 0)
            return -1;
        if (pid == 0) {
            /* a rank never outlives its driver: were the driver to die,
             * hung ranks would otherwise wait forever (and load CI) */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(127);
            sim_child_env(c, run, r);
            execv("/proc/self/exe", argv);
            _exit(127);
        }
        run->pid[r] = pid;
        run->alive++;
    }
    return 0;
}

static void sim_signal_all(struct sim_run *run, int world, int sig)
{
    for (int r = 0; r < world; r++)
        if (run->pid[r] > 0 && !run->reaped[r])
            kill(run->pid[r], sig);
}

static void sim_reap(struct sim_run *run, int world, pid_t pid, int st,
                     double now, double grace)
{
    for (int r = 0; r < world; r++) {
        if (run->pid[r] != pid)
            continue;
        run->reaped[r] = 1;
        run->status[r] = st;
        run->alive--;
        if ((!WIFEXITED(st) || WEXITSTATUS(st) != 0) && !run->fail_at)
            run->fail_at = now + grace;
    }
}

/* Whether process pid is running or runnable ('R' in /proc/PID/stat). */
static int sim_running(pid_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'R';
}

/*
 * --stop-when-hung: the hang has formed when the injected rank has stopped
 * (--hang: it sleeps "in compute"; --kill: it is gone) and no live rank
 * has issued an op for SIM_QUIET_SAMPLES samples in a row, each finding
 * every live rank asleep (blocked, not starved: a rank a loaded machine
 * keeps waiting for a CPU is runnable).  A wait for that event, not a
 * fixed time, so a slow machine only makes it come later.
 */
#define SIM_QUIET_SAMPLES 5
static int sim_hang_formed(const struct sim_cfg *c, struct sim_run *run)
{
    int quiet = 1, stopped = 0;

    for (int r = 0; r < c->world; r++) {
        uint64_t issued = 0;
        int st = 0;

        if (run->reaped[r]) {
            stopped |= r == c->kill_rank;
            continue;
        }
        if (sim_truth_progress(run, r, &issued, &st) != 0 ||
            sim_running(run->pid[r]) || issued != run->issued[r])
            quiet = 0;
        run->issued[r] = issued;
        stopped |= st != 0 && r == c->hang_rank;
    }
    run->quiet_samples = quiet && stopped ? run->quiet_samples + 1 : 0;
    return run->quiet_samples >= SIM_QUIET_SAMPLES;
}

/* SIGTERM/SIGINT to p3d-sim itself: end the job as on its timeout (the
 * ranks terminated, truth written), so a test can stop it at an event. */
static volatile sig_atomic_t sim_stop_req;
static void sim_on_term(int sig)
{
    (void)sig;
    sim_stop_req = 1;
}

static void sim_wait(const struct sim_cfg *c, struct sim_run *run)
{
    double start = sim_now(), kill_at = 0, sample_at = 0;
    struct timespec nap = { 0, 10000000 };

    while (run->alive > 0) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        double now = sim_now();

        if (pid > 0) {
            sim_reap(run, c->world, pid, st, now, c->grace_s);
            continue;
        }
        if (!run->term_sent && (now - start >= c->timeout_s || sim_stop_req))
            run->timed_out = 1;
        if (c->stop_when_hung && !run->term_sent && now >= sample_at) {
            sample_at = now + 0.1;
            if (sim_hang_formed(c, run))
                run->timed_out = run->hung_stop = 1;
        }
        if (!run->term_sent && run->hung_stop && c->stop_when_hung == 2) {
            sim_signal_all(run, c->world, SIGKILL);   /* kill -9 of a hang */
            run->term_sent = 1;
            kill_at = now;
        }
        if (!run->term_sent &&
            (run->timed_out || (run->fail_at && now >= run->fail_at))) {
            sim_signal_all(run, c->world, SIGTERM);
            run->term_sent = 1;
            kill_at = now + 1.0;
        }
        if (run->term_sent && now >= kill_at)
            sim_signal_all(run, c->world, SIGKILL);
        nanosleep(&nap, NULL);
    }
    run->wall_s = sim_now() - start;
}

static int sim_scratch(struct sim_run *run)
{
    char sub[PATH_MAX + 8];
    const char *names[] = { "ids", "truth", "shm" };

    snprintf(run->scratch, sizeof(run->scratch), "/dev/shm/p3dsim-XXXXXX");
    if (!mkdtemp(run->scratch)) {
        snprintf(run->scratch, sizeof(run->scratch), "/tmp/p3dsim-XXXXXX");
        if (!mkdtemp(run->scratch))
            return -1;
    }
    for (int i = 0; i < 3; i++) {
        snprintf(sub, sizeof(sub), "%s/%s", run->scratch, names[i]);
        if (mkdir(sub, 0700) != 0)
            return -1;
    }
    return 0;
}

static int sim_summary(const struct sim_cfg *c, const struct sim_run *run)
{
    int bad = 0;

    for (int r = 0; r < c->world; r++) {
        int st = run->status[r];

        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            continue;
        bad++;
        if (!c->quiet)
            fprintf(stderr, "p3d-sim: rank %d %s %d\n", r,
                    WIFSIGNALED(st) ? "killed by signal" : "exited with",
                    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
    if (!c->quiet)
        printf("p3d-sim: %d ranks (tp=%d pp=%d dp=%d cp=%d, m=%d, %d iters) "
               "%s in %.2f s%s; traces and truth.json in %s\n",
               c->world, c->size[SA_TP], c->size[SA_PP], c->size[SA_DP],
               c->size[SA_CP], c->m, c->iters, bad ? "FAILED" : "ok",
               run->wall_s, run->timed_out ? " (timed out)" : "",
               run->jobdir);
    return bad ? 1 : 0;
}

int sim_drive(const struct sim_cfg *c, char **argv)
{
    static struct sim_run run;
    int rc;

    snprintf(run.jobdir, sizeof(run.jobdir), "%s/%s", c->out, c->job_id);
    run.port = 20000 + (int)(getpid() % 20000);
    if (sim_scratch(&run) != 0) {
        fprintf(stderr, "p3d-sim: error: cannot create a scratch dir\n");
        return 2;
    }
    sim_clean_job(run.jobdir);
    signal(SIGTERM, sim_on_term);
    signal(SIGINT, sim_on_term);
    if (sim_launch(c, &run, argv) != 0) {
        fprintf(stderr, "p3d-sim: error: fork failed\n");
        sim_signal_all(&run, c->world, SIGKILL);
    }
    sim_wait(c, &run);
    rc = sim_summary(c, &run);
    if (sim_write_truth(c, &run) != 0) {
        fprintf(stderr, "p3d-sim: error: cannot write %s/truth.json\n",
                run.jobdir);
        rc = 2;
    }
    sim_rm_rf(run.scratch);
    return rc;
}
