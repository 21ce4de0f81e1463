/*
 * p3d_env.c - read the launcher's environment: ranks, world size, trace
 * directory and the job sub-folder name that every rank of one job
 * derives identically without talking to the others.
 *
 * Numbers are parsed strictly (no atoi): a malformed value is ignored and
 * the next source is tried.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "p3d_env.h"
#include "p3d_shim.h"

static const char *const p3d_rank_vars[] = {
    P3D_ENV_RANK, "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
    "SLURM_PROCID", NULL};
static const char *const p3d_world_vars[] = {
    P3D_ENV_WORLD_SIZE, "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
    "SLURM_NTASKS", NULL};
static const char *const p3d_local_rank_vars[] = {
    "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
    "SLURM_LOCALID", NULL};
static const char *const p3d_local_world_vars[] = {
    "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
    NULL};

int p3d_env_parse_int(const char *s, int *out)
{
    char *end;
    long v;

    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0')
        return -1;
    if (v < INT_MIN || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

int32_t p3d_env_first_int(const char *const *names)
{
    int v;

    for (; *names != NULL; names++) {
        if (p3d_env_parse_int(getenv(*names), &v) == 0 && v >= 0)
            return v;
    }
    return -1;
}

/* Keep [A-Za-z0-9._-], map anything else to '_'; never "." or "..". */
static void p3d_env_sanitise(char *s)
{
    char *p;

    for (p = s; *p != '\0'; p++) {
        int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                 (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
                 *p == '-';
        if (!ok)
            *p = '_';
    }
    if (s[0] == '.')
        s[0] = '_';
}

static int p3d_env_set(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && *v != '\0';
}

void p3d_env_job_id(char *buf, size_t n)
{
    const char *v;

    if (p3d_env_set(P3D_ENV_JOB_ID)) {
        snprintf(buf, n, "%s", getenv(P3D_ENV_JOB_ID));
    } else if (p3d_env_set("SLURM_JOB_ID")) {
        snprintf(buf, n, "slurm-%s", getenv("SLURM_JOB_ID"));
    } else if (p3d_env_set("TORCHELASTIC_RUN_ID") &&
               strcmp(getenv("TORCHELASTIC_RUN_ID"), "none") != 0) {
        snprintf(buf, n, "run-%s", getenv("TORCHELASTIC_RUN_ID"));
    } else if (p3d_env_set("MASTER_ADDR") && p3d_env_set("MASTER_PORT")) {
        v = getenv("MASTER_ADDR");
        snprintf(buf, n, "%s-%s", v, getenv("MASTER_PORT"));
    } else {
        snprintf(buf, n, "pid-%ld", (long)getpid());
    }
    p3d_env_sanitise(buf);
}

static uint64_t p3d_env_max_bytes(void)
{
    int mb;

    if (p3d_env_parse_int(getenv(P3D_ENV_MAX_MB), &mb) != 0 || mb <= 0)
        return 0;
    return (uint64_t)mb << 20;
}

void p3d_cfg_load(struct p3d_cfg *cfg)
{
    const char *dir = getenv(P3D_ENV_TRACE_DIR);
    const char *dis = getenv(P3D_ENV_DISABLE);

    memset(cfg, 0, sizeof(*cfg));
    cfg->disabled = dis != NULL && strcmp(dis, "1") == 0;
    cfg->rank = p3d_env_first_int(p3d_rank_vars);
    cfg->world_size = p3d_env_first_int(p3d_world_vars);
    cfg->local_rank = p3d_env_first_int(p3d_local_rank_vars);
    cfg->local_world_size = p3d_env_first_int(p3d_local_world_vars);
    cfg->max_bytes = p3d_env_max_bytes();
    if (dir == NULL || *dir == '\0')
        dir = P3D_DEFAULT_TRACE_DIR;
    snprintf(cfg->dir, sizeof(cfg->dir), "%s", dir);
    p3d_env_job_id(cfg->job_id, sizeof(cfg->job_id));
}

/* Test hook: signed clock offset in ns; 0 if unset or malformed. */
int64_t p3d_env_test_clock_offset(void)
{
    const char *s = getenv("P3D_TEST_CLOCK_OFFSET_NS");
    char *end;
    long long v;

    if (s == NULL || *s == '\0')
        return 0;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return 0;
    return (int64_t)v;
}

/* Test hook: the hostname to record instead of gethostname's. */
const char *p3d_env_test_hostname(void)
{
    const char *s = getenv("P3D_TEST_HOSTNAME");

    return s != NULL && *s != '\0' ? s : NULL;
}

void p3d_env_hostname(char *buf, size_t n)
{
    const char *test = p3d_env_test_hostname();

    if (test)
        strncpy(buf, test, n - 1);
    else
        gethostname(buf, n - 1);
    buf[n - 1] = '\0';
}

void p3d_cfg_job_dir(const struct p3d_cfg *cfg, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", cfg->dir, cfg->job_id);
}
