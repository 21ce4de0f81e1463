/*
 * p3d_job.c - small facts about a job that several reports print the same
 * way (the text report, the HTML page, the JSON, the job chooser), so
 * they cannot drift apart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "p3d_job.h"
#include "p3d_util.h"

int p3d_job_ranks_found(const struct p3d_job *job)
{
    int found = 0;

    for (int i = 0; i < job->n_ranks; i++)
        found += !job->ranks[i].failed;
    return found;
}

int p3d_job_world(const struct p3d_job *job)
{
    return job->world_size > 0 ? job->world_size : job->n_ranks;
}

int p3d_job_host_first(const struct p3d_job *job, int i)
{
    const char *h = job->ranks[i].hdr.hostname;

    if (!h[0])
        return 0;
    for (int k = 0; k < i; k++)
        if (!strncmp(job->ranks[k].hdr.hostname, h, P3D_HOST_LEN))
            return 0;
    return 1;
}

void p3d_job_started(const struct p3d_job *job, char *buf, size_t n)
{
    time_t t = (time_t)(job->start_ns / 1000000000ull);
    struct tm tm;

    if (n == 0)
        return;
    if (!gmtime_r(&t, &tm) ||
        strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(buf, n, "?");
}

int p3d_missing_ranks(const struct p3d_job *job, char *buf, size_t n)
{
    int *miss = malloc(sizeof(int) * (size_t)(job->world_size + 1)), k = 0;

    for (int r = 0; miss && r < job->world_size; r++) {
        const struct p3d_rank *rk = p3d_job_rank(job, r);
        if (!rk || rk->failed)
            miss[k++] = r;
    }
    p3d_fmt_ranks(buf, n, miss, k);
    free(miss);
    return k;
}
