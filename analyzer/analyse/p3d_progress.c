/*
 * p3d_progress.c - the progress line (p3d_progress.h).  A thread wakes
 * every 250 ms and redraws the line once the threshold has passed; the
 * pipeline tells it the pass, the scan counts the files it has read
 * (job->n_read).  The line is drawn under a lock that the pipeline also
 * takes to clear it before printing messages.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "p3d_progress.h"
#include "p3d_util.h"

struct p3d_progress {
    const struct p3d_job *job;
    pthread_t tid;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, shown, pass, n_passes;
    const char *name;
    double t0, after;
};

static double p3d_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Draw the line (lock held). */
static void p3d_progress_draw(struct p3d_progress *p)
{
    int read = __atomic_load_n(&p->job->n_read, __ATOMIC_RELAXED);

    if (!p->name || p3d_now() - p->t0 < p->after)
        return;
    fprintf(stderr, "\r\033[Kp3d-analyze: job '%s': %s (pass %d of %d)",
            p->job->job_id, p->name, p->pass + 1, p->n_passes);
    if (p->pass == 0)
        fprintf(stderr, ", %d of %d rank files read", read,
                p->job->n_ranks);
    fflush(stderr);
    p->shown = 1;
}

static void *p3d_progress_main(void *arg)
{
    struct p3d_progress *p = arg;

    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 250000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT)
            p3d_progress_draw(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

struct p3d_progress *p3d_progress_start(const struct p3d_job *job,
                                        int n_passes)
{
    const char *env = getenv("P3D_PROGRESS_AFTER");
    struct p3d_progress *p;

    if (p3d_quiet || !isatty(2))
        return NULL;
    p = p3d_xcalloc(1, sizeof(*p));
    p->job = job;
    p->n_passes = n_passes;
    p->t0 = p3d_now();
    p->after = env && *env ? atof(env) : 2.0;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pthread_create(&p->tid, NULL, p3d_progress_main, p)) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        free(p);
        return NULL;
    }
    return p;
}

void p3d_progress_pass(struct p3d_progress *p, int k, const char *name)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->pass = k;
    p->name = name;
    p3d_progress_draw(p);
    pthread_mutex_unlock(&p->mu);
}

void p3d_progress_clear(struct p3d_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    if (p->shown)
        fputs("\r\033[K", stderr);
    p->shown = 0;
    pthread_mutex_unlock(&p->mu);
}

void p3d_progress_stop(struct p3d_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->tid, NULL);
    p3d_progress_clear(p);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}
