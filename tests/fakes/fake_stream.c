/*
 * fake_stream.c - asynchronous streams for the fake cudart.
 *
 * With P3D_FAKE_ASYNC=1 a stream behaves like a GPU stream: the host only
 * enqueues (kernels, NCCL ops, event records, waits on events, copies) and
 * one worker thread per stream runs the items in order, so a rank blocked
 * on a peer blocks its stream, not its host thread.  Without it the fakes
 * stay synchronous and nothing here runs.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_stream.h"
#include "p3dfake.h"

enum { W_KERNEL, W_FN, W_EVENT, W_WAIT, W_STOP };

struct fake_work {
    int type;
    uint64_t dur;
    uint64_t target;
    char name[128];
    void (*fn)(void *);
    void *arg;
    struct fake_event *ev;
    struct fake_work *next;
};

struct fake_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct fake_work *head, *tail;
    int busy;
    pthread_t th;
    void *stream;
    int pins;   /* fake_queue_sync_all is waiting on it (under fq_reg) */
    struct fake_queue *next;
};

static pthread_mutex_t fq_reg = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fq_reg_cv = PTHREAD_COND_INITIALIZER; /* pins fell */
static struct fake_queue *fq_all;
static pthread_mutex_t fq_ev_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fq_ev_cv = PTHREAD_COND_INITIALIZER;

void fake_sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000ull),
                           (long)(ns % 1000000000ull) };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int fake_async(void)
{
    static int v = -1;

    if (v < 0) {
        const char *s = getenv("P3D_FAKE_ASYNC");

        v = s && strcmp(s, "1") == 0;
    }
    return v;
}

static void fq_event_done(struct fake_event *ev, uint64_t target)
{
    atomic_store(&ev->t_ns, p3dfake_now_ns());
    pthread_mutex_lock(&fq_ev_mu);
    if (atomic_load(&ev->completed) < target)
        atomic_store(&ev->completed, target);
    pthread_cond_broadcast(&fq_ev_cv);
    pthread_mutex_unlock(&fq_ev_mu);
}

static void fq_event_wait(struct fake_event *ev, uint64_t target)
{
    pthread_mutex_lock(&fq_ev_mu);
    while (atomic_load(&ev->completed) < target)
        pthread_cond_wait(&fq_ev_cv, &fq_ev_mu);
    pthread_mutex_unlock(&fq_ev_mu);
}

void fake_event_sync(struct fake_event *ev)
{
    fq_event_wait(ev, atomic_load(&ev->recorded));
}

static void fq_run(struct fake_queue *q, struct fake_work *w)
{
    uint64_t t0;

    switch (w->type) {
    case W_KERNEL:
        t0 = p3dfake_now_ns();
        if (w->dur)
            fake_sleep_ns(w->dur);
        p3dfake_report_kernel(w->name, q->stream, t0, p3dfake_now_ns(), 0);
        break;
    case W_FN:
        w->fn(w->arg);
        break;
    case W_EVENT:
        fq_event_done(w->ev, w->target);
        break;
    case W_WAIT:
        fq_event_wait(w->ev, w->target);
        break;
    default:
        break;
    }
}

static void *fq_main(void *arg)
{
    struct fake_queue *q = arg;

    pthread_mutex_lock(&q->mu);
    for (;;) {
        struct fake_work *w;

        while (!q->head)
            pthread_cond_wait(&q->cv, &q->mu);
        w = q->head;
        q->head = w->next;
        if (!q->head)
            q->tail = NULL;
        if (w->type == W_STOP) {
            free(w);
            pthread_cond_broadcast(&q->cv); /* a sync_all may wait on it */
            break;
        }
        q->busy = 1;
        pthread_mutex_unlock(&q->mu);
        fq_run(q, w);
        free(w);
        pthread_mutex_lock(&q->mu);
        q->busy = 0;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

struct fake_queue *fake_queue_get(struct fake_queue **slot, void *stream)
{
    struct fake_queue *q;

    if (!fake_async())
        return NULL;
    pthread_mutex_lock(&fq_reg);
    q = *slot;
    if (!q && (q = calloc(1, sizeof(*q)))) {
        pthread_mutex_init(&q->mu, NULL);
        pthread_cond_init(&q->cv, NULL);
        q->stream = stream;
        if (pthread_create(&q->th, NULL, fq_main, q) != 0) {
            free(q);
            q = NULL;
        } else {
            q->next = fq_all;
            fq_all = q;
            *slot = q;
        }
    }
    pthread_mutex_unlock(&fq_reg);
    return q;
}

static void fq_push(struct fake_queue *q, struct fake_work *w)
{
    pthread_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = w;
    else
        q->head = w;
    q->tail = w;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static struct fake_work *fq_new(int type)
{
    struct fake_work *w = calloc(1, sizeof(*w));

    if (!w)
        abort();   /* a test double: out of memory is fatal */
    w->type = type;
    return w;
}

void fake_queue_kernel(struct fake_queue *q, const char *name, uint64_t dur)
{
    struct fake_work *w = fq_new(W_KERNEL);

    w->dur = dur;
    snprintf(w->name, sizeof(w->name), "%s", name);
    fq_push(q, w);
}

void fake_queue_fn(struct fake_queue *q, void (*fn)(void *), void *arg)
{
    struct fake_work *w = fq_new(W_FN);

    w->fn = fn;
    w->arg = arg;
    fq_push(q, w);
}

void fake_queue_event(struct fake_queue *q, struct fake_event *ev)
{
    struct fake_work *w = fq_new(W_EVENT);

    w->ev = ev;
    w->target = atomic_fetch_add(&ev->recorded, 1) + 1;
    fq_push(q, w);
}

void fake_queue_wait(struct fake_queue *q, struct fake_event *ev)
{
    struct fake_work *w = fq_new(W_WAIT);

    w->ev = ev;
    w->target = atomic_load(&ev->recorded);
    fq_push(q, w);
}

int fake_queue_idle(struct fake_queue *q)
{
    int idle;

    pthread_mutex_lock(&q->mu);
    idle = !q->head && !q->busy;
    pthread_mutex_unlock(&q->mu);
    return idle;
}

void fake_queue_sync(struct fake_queue *q)
{
    pthread_mutex_lock(&q->mu);
    while (q->head || q->busy)
        pthread_cond_wait(&q->cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

/*
 * cudaDeviceSynchronize: wait for the streams that exist now, without
 * holding the registry while waiting.  A GPU lets other threads create
 * streams and record events while one thread waits on the device; holding
 * fq_reg here blocked them (the shim's GPU thread, recording its reference
 * event on a new stream, stalled for good behind a rank's sync on a stream
 * that never drains: the hang matrix's flaky kill case).  The queues are
 * pinned so that fake_queue_destroy does not free one being waited on.
 */
void fake_queue_sync_all(void)
{
    struct fake_queue *q, **snap;
    size_t n = 0, k = 0;

    pthread_mutex_lock(&fq_reg);
    for (q = fq_all; q; q = q->next)
        n++;
    snap = calloc(n + 1, sizeof(*snap));
    if (!snap)
        abort();   /* a test double: out of memory is fatal */
    for (q = fq_all; q; q = q->next) {
        q->pins++;
        snap[k++] = q;
    }
    pthread_mutex_unlock(&fq_reg);
    for (k = 0; k < n; k++)
        fake_queue_sync(snap[k]);
    pthread_mutex_lock(&fq_reg);
    for (k = 0; k < n; k++)
        snap[k]->pins--;
    pthread_cond_broadcast(&fq_reg_cv);
    pthread_mutex_unlock(&fq_reg);
    free(snap);
}

void fake_queue_destroy(struct fake_queue *q)
{
    struct fake_queue **pp;

    fake_queue_sync(q);
    fq_push(q, fq_new(W_STOP));
    pthread_join(q->th, NULL);
    pthread_mutex_lock(&fq_reg);
    for (pp = &fq_all; *pp; pp = &(*pp)->next)
        if (*pp == q) {
            *pp = q->next;
            break;
        }
    while (q->pins)
        pthread_cond_wait(&fq_reg_cv, &fq_reg);
    pthread_mutex_unlock(&fq_reg);
    free(q);
}
