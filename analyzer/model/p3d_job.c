/*
 * p3d_job.c - small facts about a job that several reports print the same
 * way (the text report, the HTML page, the JSON, the job chooser), so
 * they cannot drift apart; and the results the later passes keep in the
 * job under their own keys (p3d_job_keep), so that adding a pass does not
 * touch the job's struct.
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

static struct p3d_job_result *p3d_job_slot(const struct p3d_job *job,
                                           const void *key)
{
    for (size_t i = 0; i < job->n_results; i++)
        if (job->results[i].key == key)
            return &job->results[i];
    return NULL;
}

void p3d_job_drop(struct p3d_job *job, const void *key)
{
    struct p3d_job_result *s = p3d_job_slot(job, key);

    if (s == NULL)
        return;
    if (s->free)
        s->free(s->res);
    *s = job->results[--job->n_results]; /* order does not matter */
    if (job->n_results == 0) { /* none kept: nothing left to free */
        free(job->results);
        job->results = NULL;
        job->cap_results = 0;
    }
}

void p3d_job_keep(struct p3d_job *job, const void *key, void *res,
                  void (*free_fn)(void *res))
{
    p3d_job_drop(job, key);
    job->cap_results = p3d_grow((void **)&job->results, job->cap_results,
                                job->n_results, sizeof(*job->results));
    job->results[job->n_results++] =
        (struct p3d_job_result){key, res, free_fn};
}

void *p3d_job_result(const struct p3d_job *job, const void *key)
{
    const struct p3d_job_result *s = p3d_job_slot(job, key);

    return s ? s->res : NULL;
}

void p3d_job_free(struct p3d_job *job)
{
    /* the later passes' results may point into the model: freed first
     * (the last drop frees their array) */
    while (job->n_results > 0)
        p3d_job_drop(job, job->results[job->n_results - 1].key);
    for (int i = 0; i < job->n_ranks; i++)
        p3d_rank_free(&job->ranks[i]);
    for (int i = 0; i < job->n_comms; i++) {
        free(job->comms[i].slot);
        free(job->comms[i].members);
    }
    free(job->ranks);
    free(job->comms);
    free(job->match);
    p3d_map_free(&job->comm_idx);
    memset(job, 0, sizeof(*job));
}
